"""Private Numba kernels of the unfused public steps: H, hitting times and spectral gap.

They never validate: the public wrappers of :mod:`topokit.kernels` do, and hand
them contiguous float64 arrays.  Each quantity has a per-matrix kernel that
works in a caller-owned workspace (:func:`workspace`), a serial entry point for
one matrix (no thread pool) and a parallel one for a (k, n, n) stack that
allocates one workspace per chunk of matrices, as :mod:`topokit.kernels._summary`
does for the fused kernel.

The common input, a symmetric doubly stochastic matrix such as
``lazy_metropolis(graph)``, takes a fast path:

* hitting times: K = I - A + J/n is symmetric positive definite (eigenvalues 1
  and 1 - lambda_i >= gap > 0) on a connected graph, so it is inverted in place
  by Gauss-Jordan without pivoting (n^3 flops, no second matrix, no LAPACK call
  and so no OpenBLAS threads inside Numba's);
* spectral gap: Householder tridiagonalisation and Sturm-count multisection
  (the fused kernel's steps) for lambda_2; lambda_n only when Gershgorin's
  discs do not already show every eigenvalue >= 0 (a_ii >= 1/2 for a lazy walk).

Any other row-stochastic matrix (not symmetric, or not doubly stochastic to
1e-12) takes the general kernel ``_numba.hitting_times_one``, unchanged.
The plain-numpy twins of ``topokit/testing/naive_kernels.py`` check them in
``tests/kernels/test_kernels.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._config import NJIT_FLAGS, PARALLEL_FLAGS
from ._numba import OK, hitting_times_one
from ._summary import (
    _DIAGONAL,
    _N_VECTORS,
    _OFF_SQUARED,
    _P,
    _V,
    _invert_spd_in_place,
    _sturm_counts,
    _support_connected,
    _tridiagonalize_in_place,
)


@njit(**NJIT_FLAGS)
def workspace(n):
    """(matrix (n, n), vectors (_N_VECTORS, n), seen (n,), stack (n,)) for one matrix at a time."""
    return (np.empty((n, n)), np.zeros((_N_VECTORS, n)),
            np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))


@njit(**NJIT_FLAGS)
def _symmetric_doubly_stochastic(matrix, column_sum):
    """Exactly symmetric with every column summing to 1 within 1e-12 (the test of
    ``_numba._hitting_times_irreducible``, summed in the same order)?"""
    n = matrix.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            if matrix[i, j] != matrix[j, i]:
                return False
    for j in range(n):
        column_sum[j] = 0.0
    for i in range(n):
        for j in range(n):
            column_sum[j] += matrix[i, j]
    for j in range(n):
        if abs(column_sum[j] - 1.0) > 1e-12:
            return False
    return True


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
def _max_hitting_time(transition, fundamental, vectors, seen, stack):
    """(H, status) of one row-stochastic matrix in the given workspace."""
    n = transition.shape[0]
    if n == 1:
        return 0.0, OK
    if not _symmetric_doubly_stochastic(transition, vectors[_V]):
        times = np.empty((n, n))
        status = hitting_times_one(transition, times)
        return times.max(), status
    if not _support_connected(transition, seen, stack):
        return np.inf, OK  # a symmetric support has no transient states
    _fundamental_in_place(transition, fundamental, vectors[_P])
    return _largest_time(fundamental, vectors[_V]), OK


@njit(**NJIT_FLAGS)
def _hitting_times(transition, out, fundamental, vectors, seen, stack):
    """All-pairs hitting times of one row-stochastic matrix into ``out``; returns the status."""
    n = transition.shape[0]
    if (n == 1 or not _symmetric_doubly_stochastic(transition, vectors[_V])
            or not _support_connected(transition, seen, stack)):
        return hitting_times_one(transition, out)  # general, or per component
    _fundamental_in_place(transition, fundamental, vectors[_P])
    inverse_uniform = 1.0 / n
    for i in range(n):
        for j in range(n):
            out[i, j] = (fundamental[j, j] - fundamental[i, j]) / inverse_uniform
        out[i, i] = 0.0
    return OK


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
def _count_and_log_derivative(diagonal, off_squared, n, x):
    """(eigenvalues below x, f'(x) / f(x)) for f = det(T - x I), by the LDL^T recurrence.

    f = prod q_i, so f'/f = sum q_i' / q_i with q_i' = -1 + e_i^2 q_{i-1}' / q_{i-1}^2.
    """
    q = diagonal[0] - x
    count = 1 if q < 0.0 else 0
    derivative = -1.0
    reciprocal = 1.0 / (q if q != 0.0 else 1e-300)
    ratio = derivative * reciprocal
    for i in range(1, n):
        e2 = off_squared[i - 1]
        q = diagonal[i] - x - e2 * reciprocal
        derivative = -1.0 + e2 * derivative * reciprocal * reciprocal
        count += 1 if q < 0.0 else 0
        reciprocal = 1.0 / (q if q != 0.0 else 1e-300)
        ratio += derivative * reciprocal
    return count, ratio


@njit(**NJIT_FLAGS)
def _newton(diagonal, off_squared, n, target, low, high):
    """Safeguarded Newton on det(T - x I) inside a bracket holding one eigenvalue only.

    Every iterate's Sturm count also shrinks the bracket; a step that leaves it
    is replaced by bisection.  Returns the last iterate.
    """
    x = 0.5 * (low + high)
    for _ in range(100):
        count, ratio = _count_and_log_derivative(diagonal, off_squared, n, x)
        if count > target:
            high = x
        else:
            low = x
        following = x - 1.0 / ratio if ratio != 0.0 else np.nan
        if abs(following - x) <= 4e-16 * abs(x):
            return following  # converged (the bracket check would refuse a step to its edge)
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
def _eigenvalue_of_rank(diagonal, off_squared, n, target):
    """The eigenvalue of rank ``target`` (0 = smallest) of a symmetric tridiagonal matrix.

    Multisection by Sturm counts (three per step, as the fused kernel's
    ``_second_largest_eigenvalue``) until the bracket holds that eigenvalue
    alone, then safeguarded Newton (quadratic convergence instead of one bit
    per count), then bisection to the last bit around Newton's root, checked
    by Sturm counts: the result is the bracket a pure bisection would give.
    A multiple eigenvalue is never isolated and is bisected all the way.
    """
    low, high = _gershgorin_bracket(diagonal, off_squared, n)
    below_low, below_high = 0, n  # invariant: below_low <= target < below_high
    newton = True
    for _ in range(200):
        if newton and below_low == target and below_high == target + 1:
            newton = False  # once: if its root is not confirmed, keep multisecting
            root = _newton(diagonal, off_squared, n, target, low, high)
            margin = 8.0 * 2.220446049250313e-16 * max(abs(root), 1e-300)
            c1, c2, c3 = _sturm_counts(diagonal, off_squared, n, root - margin, root,
                                       root + margin)
            if c1 <= target < c2:
                return _bisect(diagonal, off_squared, n, target, root - margin, root)
            if c2 <= target < c3:
                return _bisect(diagonal, off_squared, n, target, root, root + margin)
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
def _spectral_gap(symmetric, work, vectors, seen, stack):
    """1 - max(|lambda_2|, |lambda_n|) of one symmetric stochastic matrix; 0 if disconnected."""
    n = symmetric.shape[0]
    if n == 1:
        return 1.0
    if not _support_connected(symmetric, seen, stack):
        return 0.0
    nonnegative = _symmetrised_copy(symmetric, work)
    _tridiagonalize_in_place(work, vectors)
    diagonal = vectors[_DIAGONAL]
    off_squared = vectors[_OFF_SQUARED]
    rho = abs(_eigenvalue_of_rank(diagonal, off_squared, n, n - 2))
    if not nonnegative:  # otherwise 0 <= lambda_n <= lambda_2
        rho = max(rho, abs(_eigenvalue_of_rank(diagonal, off_squared, n, 0)))
    return 1.0 - rho


# --- entry points: one matrix (serial) and stacks (parallel over chunks) ------------------


@njit(**NJIT_FLAGS)
def max_hitting_time_one(transition):
    matrix, vectors, seen, stack = workspace(transition.shape[0])
    return _max_hitting_time(transition, matrix, vectors, seen, stack)


@njit(**NJIT_FLAGS)
def hitting_times_one_fast(transition, out):
    matrix, vectors, seen, stack = workspace(transition.shape[0])
    return _hitting_times(transition, out, matrix, vectors, seen, stack)


@njit(**NJIT_FLAGS)
def spectral_gap_one(symmetric):
    matrix, vectors, seen, stack = workspace(symmetric.shape[0])
    return _spectral_gap(symmetric, matrix, vectors, seen, stack)


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
            largest[g], status[g] = _max_hitting_time(transitions[g], matrix, vectors, seen, stack)
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
            status[g] = _hitting_times(transitions[g], out[g], matrix, vectors, seen, stack)
    return out, status


@njit(**PARALLEL_FLAGS)
def spectral_gap_stack(symmetric, chunks):
    """The spectral gap of each matrix of a (k, n, n) stack of symmetric stochastic matrices."""
    k = symmetric.shape[0]
    gap = np.empty(k)
    chunks = max(1, min(k, chunks))
    for chunk in prange(chunks):
        matrix, vectors, seen, stack = workspace(symmetric.shape[1])
        for g in range(chunk * k // chunks, (chunk + 1) * k // chunks):
            gap[g] = _spectral_gap(symmetric[g], matrix, vectors, seen, stack)
    return gap
