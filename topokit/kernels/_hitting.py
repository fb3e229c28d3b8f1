"""Hitting times: all pairs, and their maximum H, of a row-stochastic matrix.

Private kernels; they never validate (the public wrappers of
:mod:`topokit.kernels` do) and hand over contiguous float64 arrays.  Three
routes, chosen once per matrix by :func:`._router.route` (a stack's kernels
classify each matrix with the same compiled tests):

* the general Numba kernel (:func:`hitting_times_one`): any row-stochastic
  matrix, component by component, from the fundamental matrix
  Z = (I - P + 1 pi^T)^{-1} and m_ij = (z_jj - z_ij) / pi_j (Kemeny & Snell),
  one n x n inverse instead of the n^2 x n^2 system of DeepPrivacy eq. (11);
* the symmetric doubly stochastic fast path (the common input,
  ``lazy_metropolis(graph)``): on a connected graph K = I - A + J/n is
  symmetric positive definite (eigenvalues 1 and 1 - lambda_i >= gap > 0), so
  it is inverted in place by Gauss-Jordan without pivoting (no LAPACK call and
  so no OpenBLAS threads inside Numba's);
* LAPACK for one large matrix: a Cholesky inverse of K (``dpotrf`` +
  ``dpotri``, n^3 flops, only the upper triangle of Z formed) for a connected
  symmetric doubly stochastic matrix, else an LU inverse for an irreducible one.

The plain-numpy twins of ``topokit/testing/naive_kernels.py`` check them in
``tests/kernels/test_kernels.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange
from numpy.typing import NDArray
from scipy.linalg import lapack

from ..errors import InvalidInputError
from ._config import NJIT_FLAGS, PARALLEL_FLAGS
from ._connectivity import (
    reach,
    support_connected,
    symmetric_doubly_stochastic,
    symmetric_support,
    weak_components,
)
from ._workspace import _P, _V, workspace

if TYPE_CHECKING:
    from ._router import Route

#: Up to this size, matrices are inverted by the hand-written kernels below; a LAPACK
#: round trip costs more than the arithmetic for them.
SMALL_MATRIX = 48

# Status codes returned by the hitting-time kernels.
OK = 0
REDUCIBLE_WITH_TRANSIENT_STATES = 1


# --- Numba: the general kernel and the symmetric fast path -----------------------------------


@njit(**NJIT_FLAGS)
def _invert_spd_in_place(matrix, pivot_row):
    """Gauss-Jordan inverse of a symmetric positive definite matrix, in place, no pivoting.

    ``pivot_row`` (length n) holds the scaled pivot row, so that the
    elimination loops run over whole rows of distinct arrays and vectorise.
    """
    n = matrix.shape[0]
    for p in range(n):
        scale = 1.0 / matrix[p, p]
        for k in range(n):
            pivot_row[k] = matrix[p, k] * scale
        pivot_row[p] = scale
        for i in range(n):
            factor = matrix[i, p]
            for k in range(n):
                matrix[i, k] -= factor * pivot_row[k]
            matrix[i, p] = -factor * scale
        for k in range(n):
            matrix[p, k] = pivot_row[k]


@njit(**NJIT_FLAGS)
def _invert_in_place(matrix):
    """Gauss-Jordan inverse with partial pivoting; no LAPACK call, no workspace query.

    For the small, well-conditioned matrices I - A + 1 pi^T of a stack this is
    several times faster than a LAPACK round trip per matrix.
    """
    n = matrix.shape[0]
    inverse = np.eye(n)
    for col in range(n):
        pivot = col
        best = abs(matrix[col, col])
        for row in range(col + 1, n):
            if abs(matrix[row, col]) > best:
                best = abs(matrix[row, col])
                pivot = row
        if pivot != col:
            for k in range(n):
                matrix[col, k], matrix[pivot, k] = matrix[pivot, k], matrix[col, k]
                inverse[col, k], inverse[pivot, k] = inverse[pivot, k], inverse[col, k]
        scale = 1.0 / matrix[col, col]
        for k in range(n):
            matrix[col, k] *= scale
            inverse[col, k] *= scale
        for row in range(n):
            if row != col:
                factor = matrix[row, col]
                if factor != 0.0:
                    for k in range(n):
                        matrix[row, k] -= factor * matrix[col, k]
                        inverse[row, k] -= factor * inverse[col, k]
    return inverse


@njit(**NJIT_FLAGS)
def _hitting_times_irreducible(transition, out):
    """Hitting times of an irreducible chain from its fundamental matrix.

    Z = (I - P + 1 pi^T)^{-1} and m_ij = (z_jj - z_ij) / pi_j (Kemeny & Snell),
    one n x n inverse instead of the n^2 x n^2 system of DeepPrivacy eq. (11).
    A doubly stochastic P has pi = 1/n and skips the stationary solve.
    """
    n = transition.shape[0]
    if n == 1:
        out[0, 0] = 0.0
        return
    doubly = True
    for j in range(n):
        column = 0.0
        for i in range(n):
            column += transition[i, j]
        if abs(column - 1.0) > 1e-12:
            doubly = False
            break
    stationary = np.empty(n)
    if doubly:
        stationary[:] = 1.0 / n
    else:
        system = np.eye(n) - transition.T + 1.0
        stationary[:] = np.linalg.solve(system, np.ones(n))
    fundamental = np.eye(n) - transition
    for i in range(n):
        for j in range(n):
            fundamental[i, j] += stationary[j]
    if n <= SMALL_MATRIX:
        fundamental = _invert_in_place(fundamental)
    else:
        fundamental = np.linalg.inv(fundamental)
    for i in range(n):
        for j in range(n):
            if i == j:
                out[i, j] = 0.0
            else:
                out[i, j] = (fundamental[j, j] - fundamental[i, j]) / stationary[j]


@njit(**NJIT_FLAGS)
def hitting_times_one(transition, out):
    """All-pairs hitting times of one row-stochastic matrix; ``inf`` across components.

    Returns a status code: OK, or REDUCIBLE_WITH_TRANSIENT_STATES when a weak
    component is not strongly connected (expected times then depend on
    absorption probabilities; the public wrapper refuses such input).
    """
    n = transition.shape[0]
    labels, count = weak_components(transition)
    if count == 1:
        # With a symmetric support, weakly connected means strongly connected.
        if not symmetric_support(transition):
            everyone = np.ones(n, dtype=np.bool_)
            if not (reach(transition, 0, everyone, False).all()
                    and reach(transition, 0, everyone, True).all()):
                return REDUCIBLE_WITH_TRANSIENT_STATES
        _hitting_times_irreducible(transition, out)
        return OK
    out[:, :] = np.inf
    for component in range(count):
        members = labels == component
        index = np.nonzero(members)[0]
        root = index[0]
        forward = reach(transition, root, members, False)
        backward = reach(transition, root, members, True)
        for i in index:
            if not (forward[i] and backward[i]):
                return REDUCIBLE_WITH_TRANSIENT_STATES
        size = index.shape[0]
        block = np.empty((size, size))
        for a in range(size):
            for b in range(size):
                block[a, b] = transition[index[a], index[b]]
        block_out = np.empty((size, size))
        _hitting_times_irreducible(block, block_out)
        for a in range(size):
            for b in range(size):
                out[index[a], index[b]] = block_out[a, b]
    return OK


@njit(**NJIT_FLAGS)
def _fundamental_in_place(transition, fundamental, pivot_row):
    """Z = (I - A + J/n)^{-1} of a connected symmetric doubly stochastic A, in ``fundamental``.

    K is symmetric positive definite: Gauss-Jordan in place without pivoting
    (the fused kernel's ``_invert_spd_in_place``; n^3 multiply-adds over whole
    rows, which vectorise better than the half as many of a triangle-only sweep).
    """
    n = transition.shape[0]
    uniform = 1.0 / n
    for i in range(n):
        for j in range(n):
            fundamental[i, j] = uniform - transition[i, j]
        fundamental[i, i] = (1.0 - transition[i, i]) + uniform
    _invert_spd_in_place(fundamental, pivot_row)


@njit(**NJIT_FLAGS)
def _largest_time(fundamental, column_max):
    """H = max_ij (z_jj - z_ij) / pi_j with pi = 1/n; column maxima first (the rows vectorise)."""
    n = fundamental.shape[0]
    for j in range(n):
        column_max[j] = 0.0
    for i in range(n):
        for j in range(n):
            term = fundamental[j, j] - fundamental[i, j]
            column_max[j] = term if term > column_max[j] else column_max[j]
    largest = 0.0
    for j in range(n):
        largest = max(largest, column_max[j])
    return largest / (1.0 / n)  # division by a positive number commutes with max


@njit(**NJIT_FLAGS)
def _max_hitting_time_routed(transition, symmetric, connected, fundamental, vectors):
    """(H, status) of one row-stochastic matrix classified by :func:`._router.classify`.

    ``symmetric``: symmetric and doubly stochastic to 1e-12; ``connected``: its
    support is connected (read only when symmetric).
    """
    n = transition.shape[0]
    if n == 1:
        return 0.0, OK
    if not symmetric:
        times = np.empty((n, n))
        status = hitting_times_one(transition, times)
        return times.max(), status
    if not connected:
        return np.inf, OK  # a symmetric support has no transient states
    _fundamental_in_place(transition, fundamental, vectors[_P])
    return _largest_time(fundamental, vectors[_V]), OK


@njit(**NJIT_FLAGS)
def _hitting_times_routed(transition, out, symmetric, connected, fundamental, vectors):
    """All-pairs hitting times of one classified row-stochastic matrix into ``out``; the status."""
    n = transition.shape[0]
    if n == 1 or not symmetric or not connected:
        return hitting_times_one(transition, out)  # general, or per component
    _fundamental_in_place(transition, fundamental, vectors[_P])
    inverse_uniform = 1.0 / n
    for i in range(n):
        for j in range(n):
            out[i, j] = (fundamental[j, j] - fundamental[i, j]) / inverse_uniform
        out[i, i] = 0.0
    return OK


@njit(**NJIT_FLAGS)
def _classified(transition, vectors, seen, stack):
    """(symmetric doubly stochastic, support connected) of one matrix of a stack."""
    symmetric = symmetric_doubly_stochastic(transition, vectors[_V])
    return symmetric, symmetric and support_connected(transition, seen, stack)


@njit(**NJIT_FLAGS)
def max_hitting_time_one(transition, symmetric, connected):
    """(H, status) of one classified matrix, serial: no thread pool."""
    matrix, vectors, _, _ = workspace(transition.shape[0])
    return _max_hitting_time_routed(transition, symmetric, connected, matrix, vectors)


@njit(**NJIT_FLAGS)
def hitting_times_one_fast(transition, out, symmetric, connected):
    """All-pairs hitting times of one classified matrix into ``out``, serial; the status."""
    matrix, vectors, _, _ = workspace(transition.shape[0])
    return _hitting_times_routed(transition, out, symmetric, connected, matrix, vectors)


@njit(**PARALLEL_FLAGS)
def max_hitting_time_stack(transitions, chunks):
    """(H, status) of each matrix of a (k, n, n) stack, parallel over ``chunks`` chunks."""
    k = transitions.shape[0]
    largest = np.empty(k)
    status = np.zeros(k, dtype=np.int64)
    chunks = max(1, min(k, chunks))
    for chunk in prange(chunks):
        matrix, vectors, seen, stack = workspace(transitions.shape[1])
        for g in range(chunk * k // chunks, (chunk + 1) * k // chunks):
            symmetric, connected = _classified(transitions[g], vectors, seen, stack)
            largest[g], status[g] = _max_hitting_time_routed(
                transitions[g], symmetric, connected, matrix, vectors)
    return largest, status


@njit(**PARALLEL_FLAGS)
def hitting_times_stack(transitions, chunks):
    """All-pairs hitting times and status of each matrix of a (k, n, n) stack."""
    k = transitions.shape[0]
    out = np.empty_like(transitions)
    status = np.zeros(k, dtype=np.int64)
    chunks = max(1, min(k, chunks))
    for chunk in prange(chunks):
        matrix, vectors, seen, stack = workspace(transitions.shape[1])
        for g in range(chunk * k // chunks, (chunk + 1) * k // chunks):
            symmetric, connected = _classified(transitions[g], vectors, seen, stack)
            status[g] = _hitting_times_routed(transitions[g], out[g], symmetric, connected,
                                              matrix, vectors)
    return out, status


# --- LAPACK: one large matrix ---------------------------------------------------------------


def hitting_times_dense(transition: NDArray[np.float64]) -> NDArray[np.float64]:
    """Fundamental-matrix hitting times of an irreducible chain (the general LU route).

    See :func:`_hitting_times_irreducible`.
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


# --- one matrix, routed ----------------------------------------------------------------------


def raise_on_status(status: NDArray[np.int64]) -> None:
    """Refuse a chain with transient states (a status of the hitting-time kernels)."""
    bad = np.flatnonzero(status == REDUCIBLE_WITH_TRANSIENT_STATES)
    if bad.size:
        where = "" if status.size == 1 else f" (matrix {int(bad[0])} of the stack)"
        raise InvalidInputError(
            f"A has transient states{where}: some node can leave a group of nodes it can never "
            "return to, so hitting times depend on absorption probabilities. Use a symmetric "
            "weight matrix such as topokit.lazy_metropolis(G)."
        )


def hitting_times_routed(transition: NDArray[np.float64], route: Route) -> NDArray[np.float64]:
    """One matrix: Cholesky or LU in LAPACK when large, else the serial kernel."""
    if route.dense and route.symmetric and route.connected:
        times = hitting_times_symmetric(transition)
        if times is not None:
            return times
    if route.dense and route.irreducible:
        return hitting_times_dense(transition)
    times = np.empty_like(transition)
    status = hitting_times_one_fast(transition, times, route.symmetric, route.connected)
    raise_on_status(np.array([status]))
    return times


def max_hitting_time_routed(transition: NDArray[np.float64], route: Route) -> float:
    """H of one matrix: Cholesky or LU in LAPACK when large, else the serial kernel."""
    if route.dense and route.symmetric and route.connected:
        largest = max_hitting_time_symmetric(transition)
        if largest is not None:
            return largest
    if route.dense and route.irreducible:
        return float(hitting_times_dense(transition).max())
    largest, status = max_hitting_time_one(transition, route.symmetric, route.connected)
    raise_on_status(np.array([status]))
    return float(largest)
