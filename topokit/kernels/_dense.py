"""LAPACK paths for single large matrices.

For one matrix of a few hundred nodes or more, LAPACK's blocked, multithreaded
routines beat the serial Numba kernels; stacks of small matrices stay on the
Numba kernels, parallel over the stack.

The common input, a connected symmetric doubly stochastic matrix A such as a
Lazy-Metropolis matrix, takes the symmetric route: K = I - A + J/n is
symmetric positive definite, so

* Z = K^{-1} comes from a Cholesky factorisation (``dpotrf`` + ``dpotri``,
  n^3 flops) instead of an LU inverse (2 n^3 flops), and only its upper
  triangle is formed;
* the spectral gap 1 - lambda_2: LAPACK's ``dsyevr`` for lambda_2 alone
  (about half of ``eigvalsh``'s time, which finds every eigenvalue), or, for
  n >= ``LANCZOS_GAP_THRESHOLD`` and whenever Z is at hand, the smallest
  eigenvalue of K (its eigenvalues are 1 and 1 - lambda_i, all <= 1 when
  every lambda_i >= 0), that is 1 / theta with theta the largest eigenvalue of
  Z.  Lanczos (ARPACK) finds theta in a few dozen products with Z or solves
  with the Cholesky factor, far fewer flops than a tridiagonalisation
  (4/3 n^3, half of it memory-bound); the relative accuracy is that of
  ``eigvalsh``'s lambda_2, about eps / gap.

Anything else (not symmetric, rows not summing to 1 within 1e-13, a possible
negative eigenvalue, K not numerically positive definite, ARPACK not
converging) takes the general LU inverse or ``eigvalsh``.  Reducible input is
left to the Numba kernel, which handles components.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray
from scipy.linalg import blas, lapack
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

from ._config import NJIT_FLAGS
from ._summary import _support_connected

#: From this many nodes on, a single matrix goes to LAPACK for its hitting times (Cholesky
#: inverse).  Measured on 2 idle cores: 0.27 ms against 0.25 ms for the Numba kernel at
#: n = 128, 0.28 ms against 0.43 ms at n = 160.
DENSE_THRESHOLD = 128

#: From this many nodes on, a single matrix goes to LAPACK for its spectral gap (2 idle
#: cores: Numba's tridiagonalisation 0.35 ms against 0.29 ms for LAPACK's dsyevr of
#: lambda_2 alone at n = 128, 0.16 ms against 0.17 ms at n = 96).
GAP_DENSE_THRESHOLD = 128

#: From this many nodes on, the gap of a single matrix comes from Cholesky and Lanczos
#: rather than dsyevr (2 idle cores: 28 ms for both at n = 1,000, 70 ms against 96 ms at
#: n = 1,500; numpy's eigvalsh, all eigenvalues, takes about twice dsyevr's time).
LANCZOS_GAP_THRESHOLD = 1200

#: Rows must sum to 1 this closely for the Lanczos gap (K's eigenvalues are then 1 - lambda_i).
_ROW_SUM_EXACT = 1e-13

#: Gershgorin's discs may reach this far below 0 (rounding of the row sums): lambda_n >= -1e-12.
_NEGATIVE_SLACK = 1e-12

#: Lanczos basis size and the fixed seed of its start vector (results are reproducible).
_LANCZOS_VECTORS = 24
_LANCZOS_SEED = 20_240_519


def connected_symmetric(matrix: NDArray[np.float64]) -> bool:
    """Whether the support of a symmetric matrix is connected (one O(n^2) compiled pass)."""
    n = matrix.shape[0]
    return bool(_support_connected(matrix, np.empty(n, dtype=np.int64),
                                   np.empty(n, dtype=np.int64)))


def strongly_connected(matrix: NDArray[np.float64]) -> bool:
    support = csr_matrix(matrix > 0)
    count, _ = connected_components(support, directed=True, connection="strong")
    return count == 1


def hitting_times_dense(transition: NDArray[np.float64]) -> NDArray[np.float64]:
    """Fundamental-matrix hitting times of an irreducible chain (the general LU route).

    See ``_numba._hitting_times_irreducible``.
    """
    n = transition.shape[0]
    if np.allclose(transition.sum(axis=0), 1.0, rtol=0, atol=1e-12):
        stationary = np.full(n, 1.0 / n)
    else:
        system = np.eye(n) - transition.T + 1.0
        stationary = np.linalg.solve(system, np.ones(n))
    fundamental = np.linalg.inv(np.eye(n) - transition + stationary[None, :])
    times = (np.diag(fundamental)[None, :] - fundamental) / stationary[None, :]
    np.fill_diagonal(times, 0.0)
    return times


def symmetric_doubly_stochastic(transition: NDArray[np.float64]) -> bool:
    """Exactly symmetric, columns summing to 1 within 1e-12 (the Numba kernels' test)."""
    return bool(np.array_equal(transition, transition.T)
                and np.abs(transition.sum(axis=0) - 1.0).max() <= 1e-12)


def _shifted_laplacian(transition: NDArray[np.float64]) -> NDArray[np.float64]:
    """K = I - A + J/n of a symmetric A, Fortran-ordered (its transpose) for LAPACK."""
    n = transition.shape[0]
    uniform = 1.0 / n
    shifted = np.subtract(uniform, transition)
    diagonal = np.arange(n)
    shifted[diagonal, diagonal] = (1.0 - transition[diagonal, diagonal]) + uniform
    return shifted.T  # K is symmetric: its C-ordered buffer is K in Fortran order


def cholesky(transition: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Upper Cholesky factor of K = I - A + J/n (Fortran-ordered); None if K is not SPD."""
    return cholesky_in_place(_shifted_laplacian(transition))


def cholesky_in_place(shifted: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Upper Cholesky factor of a Fortran-ordered SPD matrix, overwriting it; None if not SPD."""
    factor, info = lapack.dpotrf(shifted, lower=0, clean=0, overwrite_a=1)
    return factor if info == 0 else None


def inverse_in_place(factor: NDArray[np.float64] | None) -> NDArray[np.float64] | None:
    """Upper triangle of K^{-1} from K's upper Cholesky factor, overwriting it."""
    if factor is None:
        return None
    inverse, info = lapack.dpotri(factor, lower=0, overwrite_c=1)
    return inverse if info == 0 else None


def fundamental_upper(transition: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Upper triangle of Z = (I - A + J/n)^{-1} (Fortran-ordered), or None if K is not SPD."""
    return inverse_in_place(cholesky(transition))


def largest_time_from_upper(upper: NDArray[np.float64]) -> float:
    """H = n max_ij (z_jj - z_ij) from the upper triangle of Z (Fortran-ordered)."""
    return float(_largest_time_lower(upper.T))


@njit(**NJIT_FLAGS)
def _largest_time_lower(lower):
    """H = max_ij (z_jj - z_ij) / pi_j, pi = 1/n, from the lower triangle of a symmetric Z."""
    n = lower.shape[0]
    column_min = np.empty(n)
    for j in range(n):
        column_min[j] = lower[j, j]
    for j in range(n):
        row_min = lower[j, j]
        for i in range(j):  # lower[j, i] = z_ij = z_ji
            value = lower[j, i]
            column_min[i] = value if value < column_min[i] else column_min[i]
            row_min = value if value < row_min else row_min
        column_min[j] = row_min if row_min < column_min[j] else column_min[j]
    largest = 0.0
    for j in range(n):
        largest = max(largest, lower[j, j] - column_min[j])
    return largest / (1.0 / n)


@njit(**NJIT_FLAGS)
def _times_from_lower(lower, out):
    """m_ij = (z_jj - z_ij) / pi_j, pi = 1/n, from the lower triangle of a symmetric Z."""
    n = lower.shape[0]
    inverse_uniform = 1.0 / n
    for i in range(n):
        for j in range(n):
            value = lower[i, j] if j <= i else lower[j, i]
            out[i, j] = (lower[j, j] - value) / inverse_uniform
        out[i, i] = 0.0


def max_hitting_time_symmetric(transition: NDArray[np.float64]) -> float | None:
    """H of a connected symmetric doubly stochastic matrix by Cholesky; None if K is not SPD."""
    upper = fundamental_upper(transition)
    return None if upper is None else largest_time_from_upper(upper)


def hitting_times_symmetric(transition: NDArray[np.float64]) -> NDArray[np.float64] | None:
    upper = fundamental_upper(transition)
    if upper is None:
        return None
    times = np.empty_like(transition)
    _times_from_lower(upper.T, times)
    return times


def _largest_eigenvalue(operator: LinearOperator) -> float | None:
    """The largest eigenvalue of a symmetric operator by ARPACK to machine precision."""
    n = operator.shape[0]
    start = np.random.default_rng(_LANCZOS_SEED).standard_normal(n)
    try:
        values = eigsh(operator, k=1, which="LA", tol=0, v0=start,
                       ncv=min(n, _LANCZOS_VECTORS), return_eigenvectors=False)
    except (ArpackNoConvergence, ArpackError):
        return None
    return float(values[0])


def gap_from_fundamental(upper: NDArray[np.float64]) -> float | None:
    """1 - lambda_2 = 1 / theta_max(Z) from the upper triangle of Z (every lambda_i >= 0)."""
    n = upper.shape[0]

    def product(vector: NDArray[np.float64]) -> NDArray[np.float64]:
        return blas.dsymv(1.0, upper, vector, lower=0)

    theta = _largest_eigenvalue(LinearOperator((n, n), matvec=product, dtype=np.float64))
    return None if theta is None or theta <= 0 else 1.0 / theta


def gap_from_cholesky(factor: NDArray[np.float64]) -> float | None:
    """1 - lambda_2 = 1 / theta_max(K^{-1}), solving with K's Cholesky factor."""
    n = factor.shape[0]

    def solve(vector: NDArray[np.float64]) -> NDArray[np.float64]:
        return lapack.dpotrs(factor, vector, lower=0)[0]

    theta = _largest_eigenvalue(LinearOperator((n, n), matvec=solve, dtype=np.float64))
    return None if theta is None or theta <= 0 else 1.0 / theta


def lazy_spectrum(symmetric: NDArray[np.float64]) -> bool:
    """Gershgorin shows every eigenvalue >= -1e-12 and rows sum to 1 within 1e-13?

    Then, where lambda_2 >= 1e-12 (see :func:`_trusted`), 1 - max(|lambda_2|,
    |lambda_n|) = 1 - lambda_2, the smallest eigenvalue of K.
    """
    diagonal = np.diagonal(symmetric)
    row_sum = symmetric.sum(axis=1)
    radius = row_sum - diagonal
    return bool((diagonal - radius >= -_NEGATIVE_SLACK).all()
                and np.abs(row_sum - 1.0).max() <= _ROW_SUM_EXACT)


def _trusted(gap: float | None) -> float | None:
    """The Lanczos gap, unless lambda_2 is so small that |lambda_n| might exceed it."""
    return gap if gap is not None and 1.0 - gap >= _NEGATIVE_SLACK else None


def _gap_eigvalsh(symmetric: NDArray[np.float64]) -> float:
    eigenvalues = np.linalg.eigvalsh(symmetric)
    return float(1.0 - max(abs(eigenvalues[-2]), abs(eigenvalues[0])))


def _gap_dsyevr(symmetric: NDArray[np.float64]) -> float | None:
    """1 - lambda_2 from LAPACK's dsyevr asked for lambda_2 alone (tridiagonalisation, then
    one eigenvalue): about half of eigvalsh's time.  For a spectrum known to be >= 0."""
    n = symmetric.shape[0]
    result = lapack.dsyevr(symmetric, compute_v=0, range="I", il=n - 1, iu=n - 1, lower=1)
    values, info = result[0], result[-1]  # (w, z, m, isuppz, info)
    return _trusted(float(1.0 - values[0])) if info == 0 else None


def spectral_gap_dense(symmetric: NDArray[np.float64]) -> float:
    """1 - max(|lambda_2|, |lambda_n|) of a connected symmetric stochastic matrix.

    Where the spectrum is known to be >= 0: lambda_2 alone by dsyevr, or from
    ``LANCZOS_GAP_THRESHOLD`` nodes on by Cholesky and Lanczos; else ``eigvalsh``.
    """
    if lazy_spectrum(symmetric):
        gap = None
        if symmetric.shape[0] >= LANCZOS_GAP_THRESHOLD:
            exact = symmetric if np.array_equal(symmetric, symmetric.T) \
                else np.tril(symmetric) + np.tril(symmetric, -1).T
            factor = cholesky(exact)
            gap = _trusted(None if factor is None else gap_from_cholesky(factor))
        if gap is None:
            gap = _gap_dsyevr(symmetric)
        if gap is not None:
            return gap
    return _gap_eigvalsh(symmetric)


def hitting_time_and_gap_symmetric(weights: NDArray[np.float64]) -> tuple[float, float] | None:
    """(H, gap) of a connected Lazy-Metropolis matrix from one Cholesky inverse, or None."""
    upper = fundamental_upper(weights)
    if upper is None:
        return None
    hitting = largest_time_from_upper(upper)
    # Z is at hand: Lanczos on it costs a few dozen products, far below eigvalsh at any size.
    gap = _trusted(gap_from_fundamental(upper)) if lazy_spectrum(weights) else None
    return hitting, _gap_eigvalsh(weights) if gap is None else gap
