"""The spectral gap 1 - max(|lambda_2|, |lambda_n|) of a symmetric stochastic matrix.

Private kernels; they never validate.  Two routes, chosen once per matrix by
:func:`._router.route` (a stack's kernel tests each matrix's connectivity):

* Numba: Householder tridiagonalisation, then the eigenvalue of a given rank
  by Sturm-count multisection until it is isolated, safeguarded Laguerre and
  Sturm counts for the last bit (:func:`eigenvalue_of_rank`, also the fused
  kernel's); lambda_n only when Gershgorin's discs do not already
  show every eigenvalue >= 0 (a_ii >= 1/2 for a lazy walk);
* LAPACK for one large matrix: ``dsyevr`` for lambda_2 alone (about half of
  ``eigvalsh``'s time), or, for n >= ``LANCZOS_GAP_THRESHOLD`` and whenever
  Z = (I - A + J/n)^{-1} is at hand, 1 / theta with theta the largest
  eigenvalue of Z, by Lanczos (ARPACK): a few dozen products with Z or solves
  with the Cholesky factor of K = I - A + J/n, far fewer flops than a
  tridiagonalisation; the relative accuracy is that of ``eigvalsh``'s
  lambda_2, about eps / gap.  Anything else (a possible negative eigenvalue,
  rows not summing to 1 within 1e-13, K not numerically positive definite,
  ARPACK not converging) takes ``eigvalsh``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange
from numpy.typing import NDArray
from scipy.linalg import blas, lapack
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

from ._config import NJIT_FLAGS, PARALLEL_FLAGS
from ._connectivity import support_connected
from ._hitting import cholesky
from ._workspace import _DIAGONAL, _OFF_SQUARED, _P, _V, workspace

if TYPE_CHECKING:
    from ._router import Route

#: From this many nodes on, the gap of a single matrix comes from Cholesky and Lanczos
#: rather than dsyevr (2 idle cores: 28 ms for both at n = 1,000, 70 ms against 96 ms at
#: n = 1,500; numpy's eigvalsh, all eigenvalues, takes about twice dsyevr's time).
LANCZOS_GAP_THRESHOLD = 1200

#: Rows must sum to 1 this closely for the Lanczos gap (K's eigenvalues are then 1 - lambda_i).
_ROW_SUM_EXACT = 1e-13

#: Gershgorin's discs may reach this far below 0 (rounding of the row sums): lambda_n >= -1e-12.
_NEGATIVE_SLACK = 1e-12

#: Laguerre stops after a step this small relative to its iterate (see :func:`_laguerre`).
_LAGUERRE_STOP = 1e-8

#: Lanczos basis size and the fixed seed of its start vector (results are reproducible).
_LANCZOS_VECTORS = 24
_LANCZOS_SEED = 20_240_519


# --- Numba -----------------------------------------------------------------------------------


@njit(**NJIT_FLAGS)
def _tridiagonalize_in_place(work, vectors):
    """Householder reduction of the symmetric ``work`` (destroyed) to tridiagonal form.

    Writes the diagonal to ``vectors[_DIAGONAL]`` and the squared off-diagonal
    (what Sturm counts use) to ``vectors[_OFF_SQUARED, :n - 1]``.  Step k
    reflects row k of the trailing block (equal to its column: the block stays
    exactly symmetric).  The loops run over whole rows, with v and p zero
    outside the trailing block, so that they vectorise.
    """
    n = work.shape[0]
    v = vectors[_V]
    p = vectors[_P]
    for i in range(n):
        v[i] = 0.0
    for k in range(n - 2):
        v[k] = 0.0
        norm = 0.0
        for i in range(k + 1, n):
            norm += work[k, i] * work[k, i]
        if norm == 0.0:
            continue
        head = work[k, k + 1]
        norm = np.sqrt(norm)
        alpha = -norm if head > 0 else norm
        # v = (x - alpha e_1) / |x - alpha e_1|, |x - alpha e_1|^2 = 2 |x| (|x| + |x_1|).
        inverse = 1.0 / np.sqrt(2.0 * norm * (norm + abs(head)))
        for i in range(k + 1, n):
            v[i] = work[k, i] * inverse
        v[k + 1] = (head - alpha) * inverse
        # S <- H S H with H = I - 2 v v^T on the trailing block: S - 2 (v q^T + q v^T),
        # q = S v - (v^T S v) v.
        for i in range(n):
            p[i] = 0.0
        for j in range(k + 1, n):
            vj = v[j]
            for i in range(n):
                p[i] += work[j, i] * vj
        for i in range(k + 1):
            p[i] = 0.0
        c = 0.0
        for i in range(k + 1, n):
            c += v[i] * p[i]
        for i in range(n):
            p[i] -= c * v[i]
        for i in range(k + 1, n):
            vi2 = 2.0 * v[i]
            pi2 = 2.0 * p[i]
            for j in range(n):
                work[i, j] -= vi2 * p[j] + pi2 * v[j]
        work[k, k + 1] = alpha
    for i in range(n):
        vectors[_DIAGONAL, i] = work[i, i]
    for i in range(n - 1):
        vectors[_OFF_SQUARED, i] = work[i, i + 1] * work[i, i + 1]


@njit(**NJIT_FLAGS)
def _sturm_counts(diagonal, off_squared, n, x1, x2, x3):
    """How many eigenvalues of the tridiagonal matrix lie below x1, x2 and x3.

    Three LDL^T recurrences (the Sturm count of LAPACK's dstebz) in one loop:
    one recurrence is a chain of dependent divisions, three overlap.
    """
    q1 = diagonal[0] - x1
    q2 = diagonal[0] - x2
    q3 = diagonal[0] - x3
    c1 = 1 if q1 < 0.0 else 0
    c2 = 1 if q2 < 0.0 else 0
    c3 = 1 if q3 < 0.0 else 0
    for i in range(1, n):
        e2 = off_squared[i - 1]
        d = diagonal[i]
        q1 = d - x1 - e2 / (q1 if q1 != 0.0 else 1e-300)
        q2 = d - x2 - e2 / (q2 if q2 != 0.0 else 1e-300)
        q3 = d - x3 - e2 / (q3 if q3 != 0.0 else 1e-300)
        c1 += 1 if q1 < 0.0 else 0
        c2 += 1 if q2 < 0.0 else 0
        c3 += 1 if q3 < 0.0 else 0
    return c1, c2, c3


@njit(**NJIT_FLAGS)
def _gershgorin_bracket(diagonal, off_squared, n):
    low = np.inf
    high = -np.inf
    for i in range(n):
        radius = 0.0
        if i > 0:
            radius += np.sqrt(off_squared[i - 1])
        if i < n - 1:
            radius += np.sqrt(off_squared[i])
        low = min(low, diagonal[i] - radius)
        high = max(high, diagonal[i] + radius)
    return low, high


@njit(**NJIT_FLAGS)
def _count_and_log_derivatives(diagonal, off_squared, n, x):
    """(eigenvalues below x, G, H) for f = det(T - x I): G = f'/f, H = G^2 - f''/f.

    f = prod q_i of the LDL^T recurrence, so G = sum q_i' / q_i and
    H = -(log f)'' = sum (q_i' / q_i)^2 - q_i'' / q_i, with
    q_i' = -1 + e_i^2 q_{i-1}' / q_{i-1}^2 and
    q_i'' = e_i^2 (q_{i-1}'' - 2 q_{i-1}'^2 / q_{i-1}) / q_{i-1}^2.  The derivatives
    are multiplications off the chain of divisions, so they cost little more than a count.
    """
    q = diagonal[0] - x
    count = 1 if q < 0.0 else 0
    first = -1.0
    second = 0.0
    reciprocal = 1.0 / (q if q != 0.0 else 1e-300)
    g = first * reciprocal
    h = g * g
    for i in range(1, n):
        e2 = off_squared[i - 1]
        q = diagonal[i] - x - e2 * reciprocal
        scale = e2 * reciprocal * reciprocal
        second = scale * (second - 2.0 * first * first * reciprocal)
        first = -1.0 + scale * first
        count += 1 if q < 0.0 else 0
        reciprocal = 1.0 / (q if q != 0.0 else 1e-300)
        ratio = first * reciprocal
        g += ratio
        h += ratio * ratio - second * reciprocal
    return count, g, h


@njit(**NJIT_FLAGS)
def _laguerre(diagonal, off_squared, n, target, low, high):
    """Safeguarded Laguerre on det(T - x I) inside a bracket holding one eigenvalue only.

    Laguerre's step n / (G +- sqrt((n - 1)(n H - G^2))) converges cubically to a
    simple root of a polynomial with real roots (Newton: quadratically), for
    about the cost of a Newton step.  Every iterate's Sturm count also shrinks
    the bracket; a step that leaves it is replaced by bisection.  Returns after
    a step below ``_LAGUERRE_STOP`` relative: with cubic convergence the error
    of that iterate is of the order of the step cubed (over the squared
    distance to the neighbouring eigenvalues), at the last bit; the caller's
    Sturm counts confirm the root and fall back to multisection if it is not.
    """
    x = 0.5 * (low + high)
    for _ in range(100):
        count, g, h = _count_and_log_derivatives(diagonal, off_squared, n, x)
        if count > target:
            high = x
        else:
            low = x
        root = np.sqrt(max((n - 1) * (n * h - g * g), 0.0))
        denominator = g + root if g >= 0.0 else g - root
        following = x - n / denominator if denominator != 0.0 else np.nan
        if abs(following - x) <= _LAGUERRE_STOP * abs(x):
            return following
        if not (low < following < high):  # also catches NaN and infinity
            following = 0.5 * (low + high)
            if not (low < following < high):
                return following
        x = following
    return x


@njit(**NJIT_FLAGS)
def _bisect(diagonal, off_squared, n, target, low, high):
    """The last bits by bisection; invariant count(low) <= target < count(high)."""
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle <= low or middle >= high:
            break
        count, _, _ = _sturm_counts(diagonal, off_squared, n, middle, middle, middle)
        if count > target:
            high = middle
        else:
            low = middle
    return 0.5 * (low + high)


@njit(**NJIT_FLAGS)
def _confirmed(diagonal, off_squared, n, target, root):
    """The eigenvalue of rank ``target`` to the last bit near ``root``, or NaN if it is not there.

    The answer is the midpoint of two neighbouring floats across which the
    Sturm count passes ``target``: the pair a pure bisection ends on (the same
    pair wherever the count is monotone in x, but at the bracket's ends; see
    :func:`eigenvalue_of_rank`).  Laguerre's root is almost
    always within one ulp of it (every one of 1,000 random graphs of 16, 32 and
    64 nodes): the two pairs around the root are tried first (one count of
    three points), then 8 ulps either side and bisection.
    """
    below = np.nextafter(root, -np.inf)
    above = np.nextafter(root, np.inf)
    c1, c2, c3 = _sturm_counts(diagonal, off_squared, n, below, root, above)
    if c1 <= target < c2:
        return 0.5 * (below + root)
    if c2 <= target < c3:
        return 0.5 * (root + above)
    margin = 8.0 * 2.220446049250313e-16 * max(abs(root), 1e-300)
    c1, c2, c3 = _sturm_counts(diagonal, off_squared, n, root - margin, root, root + margin)
    if c1 <= target < c2:
        return _bisect(diagonal, off_squared, n, target, root - margin, root)
    if c2 <= target < c3:
        return _bisect(diagonal, off_squared, n, target, root, root + margin)
    return np.nan


@njit(**NJIT_FLAGS)
def eigenvalue_of_rank(diagonal, off_squared, n, target, laguerre):
    """The eigenvalue of rank ``target`` (0 = smallest) of a symmetric tridiagonal matrix.

    Quadrisection by Sturm counts (three per step) until the bracket is a few
    ulps wide, then bisection: the one bisection of the package.  With
    ``laguerre=True`` (the fused kernel's lambda_2 and :func:`spectral_gap`'s),
    once the bracket holds that eigenvalue alone, safeguarded Laguerre (cubic
    convergence instead of two bits per three counts), then the last bit
    around its root by Sturm counts (:func:`_confirmed`): the result is the
    bracket a pure bisection would give, except for an eigenvalue on an end of
    the Gershgorin bracket (where the bisection never counts, and ends 1-2 ulps
    outside the crossing Laguerre finds; for the fused lambda_2 only a multiple
    eigenvalue can sit there, and that is bisected).  A multiple eigenvalue is
    never isolated and is bisected all the way.
    """
    low, high = _gershgorin_bracket(diagonal, off_squared, n)
    below_low, below_high = 0, n  # invariant: below_low <= target < below_high
    for _ in range(200):
        if laguerre and below_low == target and below_high == target + 1:
            laguerre = False  # once: if its root is not confirmed, keep multisecting
            root = _laguerre(diagonal, off_squared, n, target, low, high)
            value = _confirmed(diagonal, off_squared, n, target, root)
            if not np.isnan(value):
                return value
        width = high - low
        x1 = low + 0.25 * width
        x2 = low + 0.5 * width
        x3 = low + 0.75 * width
        if not (low < x1 < x2 < x3 < high):
            break
        c1, c2, c3 = _sturm_counts(diagonal, off_squared, n, x1, x2, x3)
        if c1 > target:
            high, below_high = x1, c1
        elif c2 > target:
            low, high, below_low, below_high = x1, x2, c1, c2
        elif c3 > target:
            low, high, below_low, below_high = x2, x3, c2, c3
        else:
            low, below_low = x3, c3
    return _bisect(diagonal, off_squared, n, target, low, high)


@njit(**NJIT_FLAGS)
def _symmetrised_copy(matrix, work):
    """Copy the lower triangle of ``matrix`` to both triangles of ``work`` (LAPACK's 'L').

    Returns whether Gershgorin's discs show every eigenvalue >= 0
    (a_ii >= sum_{j != i} |a_ij| for every row).
    """
    n = matrix.shape[0]
    nonnegative = True
    for i in range(n):
        for j in range(i + 1):
            work[i, j] = matrix[i, j]
            work[j, i] = matrix[i, j]
    for i in range(n):
        radius = 0.0
        for j in range(n):
            radius += abs(work[i, j])
        radius -= abs(work[i, i])
        nonnegative = nonnegative and work[i, i] - radius >= 0.0
    return nonnegative


@njit(**NJIT_FLAGS)
def _spectral_gap_connected(symmetric, work, vectors):
    """1 - max(|lambda_2|, |lambda_n|) of one connected symmetric stochastic matrix, n >= 2."""
    n = symmetric.shape[0]
    nonnegative = _symmetrised_copy(symmetric, work)
    _tridiagonalize_in_place(work, vectors)
    diagonal = vectors[_DIAGONAL]
    off_squared = vectors[_OFF_SQUARED]
    rho = abs(eigenvalue_of_rank(diagonal, off_squared, n, n - 2, True))
    if not nonnegative:  # otherwise 0 <= lambda_n <= lambda_2
        rho = max(rho, abs(eigenvalue_of_rank(diagonal, off_squared, n, 0, True)))
    return 1.0 - rho


@njit(**NJIT_FLAGS)
def spectral_gap_connected_one(symmetric):
    """The gap of one connected symmetric stochastic matrix (n >= 2), serial: no thread pool."""
    matrix, vectors, _, _ = workspace(symmetric.shape[0])
    return _spectral_gap_connected(symmetric, matrix, vectors)


@njit(**PARALLEL_FLAGS)
def spectral_gap_stack(symmetric, chunks):
    """The spectral gap of each matrix of a (k, n, n) stack of symmetric stochastic matrices."""
    k = symmetric.shape[0]
    gap = np.empty(k)
    chunks = max(1, min(k, chunks))
    for chunk in prange(chunks):
        matrix, vectors, seen, stack = workspace(symmetric.shape[1])
        for g in range(chunk * k // chunks, (chunk + 1) * k // chunks):
            if symmetric.shape[1] == 1:
                gap[g] = 1.0
            elif not support_connected(symmetric[g], seen, stack):
                gap[g] = 0.0
            else:
                gap[g] = _spectral_gap_connected(symmetric[g], matrix, vectors)
    return gap


# --- LAPACK: one large matrix ---------------------------------------------------------------


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

    Then, where lambda_2 >= 1e-12 (see :func:`trusted`), 1 - max(|lambda_2|,
    |lambda_n|) = 1 - lambda_2, the smallest eigenvalue of K.
    """
    diagonal = np.diagonal(symmetric)
    row_sum = symmetric.sum(axis=1)
    radius = row_sum - diagonal
    return bool((diagonal - radius >= -_NEGATIVE_SLACK).all()
                and np.abs(row_sum - 1.0).max() <= _ROW_SUM_EXACT)


def trusted(gap: float | None) -> float | None:
    """The Lanczos gap, unless lambda_2 is so small that |lambda_n| might exceed it."""
    return gap if gap is not None and 1.0 - gap >= _NEGATIVE_SLACK else None


def gap_eigvalsh(symmetric: NDArray[np.float64]) -> float:
    eigenvalues = np.linalg.eigvalsh(symmetric)
    return float(1.0 - max(abs(eigenvalues[-2]), abs(eigenvalues[0])))


def _gap_dsyevr(symmetric: NDArray[np.float64]) -> float | None:
    """1 - lambda_2 from LAPACK's dsyevr asked for lambda_2 alone (tridiagonalisation, then
    one eigenvalue): about half of eigvalsh's time.  For a spectrum known to be >= 0."""
    n = symmetric.shape[0]
    result = lapack.dsyevr(symmetric, compute_v=0, range="I", il=n - 1, iu=n - 1, lower=1)
    values, info = result[0], result[-1]  # (w, z, m, isuppz, info)
    return trusted(float(1.0 - values[0])) if info == 0 else None


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
            gap = trusted(None if factor is None else gap_from_cholesky(factor))
        if gap is None:
            gap = _gap_dsyevr(symmetric)
        if gap is not None:
            return gap
    return gap_eigvalsh(symmetric)


def spectral_gap_routed(symmetric: NDArray[np.float64], route: Route) -> float:
    """The gap of one symmetric stochastic matrix: LAPACK when large, else the serial kernel."""
    if route.n == 1:
        return 1.0
    if not route.connected:
        return 0.0
    if route.dense_gap:
        return spectral_gap_dense(symmetric)
    return float(spectral_gap_connected_one(symmetric))
