"""H and the spectral gap of a graph's Lazy-Metropolis walk, fused in one pass.

Private kernels.  They never validate: :func:`topokit.kernels.hitting_time_and_gap` does, and
hands them a contiguous float64 adjacency (any non-zero off-diagonal entry is
a link; the diagonal is ignored) with a symmetric support.

Per graph (:func:`_hitting_time_and_gap`), all in a caller-owned workspace so
that a stack allocates once per chunk of graphs, not once per graph:

1. connectivity (a bit-mask sweep up to 64 nodes, else a depth-first search);
   a disconnected graph gives (inf, 0.0) at once;
2. the Lazy-Metropolis matrix A (DeepPrivacy eq. 4) and K = I - A + J/n
   (:func:`_weights_and_k`: integer degrees and column sums, which vectorise);
3. Z = K^{-1} by Gauss-Jordan in place.  K is symmetric positive definite
   (eigenvalues 1 and 1 - lambda_i >= gap > 0), so no pivoting is needed.
   H = max_ij (z_jj - z_ij) / pi_j with pi = 1/n (Kemeny & Snell);
4. the spectral gap 1 - lambda_2: Householder tridiagonalisation of A, then
   lambda_2 by Sturm counts and Laguerre (:func:`._gap.eigenvalue_of_rank`, as
   :func:`topokit.kernels.spectral_gap`), to the last bit a bisection would give.
   A has a_ii >= 1/2, so by Gershgorin every eigenvalue lies in [0, 1] and
   |lambda_n| <= lambda_2: the smallest eigenvalue, which
   :func:`topokit.kernels.spectral_gap` also needs for a general symmetric
   matrix, is not computed.

Without ``fastmath`` a floating-point reduction does not vectorise, so the
loops are written over whole rows of distinct arrays (axpy form) where they can.

One matrix too large for the serial kernel (:func:`hitting_time_and_gap_large`)
takes one Cholesky inverse in LAPACK for both H and the gap (Lanczos on Z).

The unfused kernels of :mod:`._hitting` and :mod:`._gap` and the plain-numpy twins
of ``topokit/testing/naive_kernels.py`` check these results in ``tests/kernels/test_kernels.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numpy.typing import NDArray

from . import _router
from ._config import NJIT_FLAGS, PARALLEL_FLAGS
from ._connectivity import support_connected
from ._gap import (
    _tridiagonalize_in_place,
    eigenvalue_of_rank,
    gap_eigvalsh,
    gap_from_fundamental,
    lazy_spectrum,
    spectral_gap_routed,
    trusted,
)
from ._hitting import (
    _invert_spd_in_place,
    _largest_time,
    fundamental_upper,
    largest_time_from_upper,
    max_hitting_time_routed,
)
from ._weights import lazy_metropolis_one
from ._workspace import _DIAGONAL, _HALF_INVERSE_DEGREE, _N_VECTORS, _OFF_SQUARED, _P, _V


@njit(**NJIT_FLAGS)
def _weights_and_k(adjacency, work, fundamental, half_inverse, row_sum):
    """The Lazy-Metropolis matrix A into ``work`` and K = I - A + J/n into ``fundamental``.

    Weights 1 / (2 max(deg_i, deg_j)) = min(1/(2 deg_i), 1/(2 deg_j)) (rounding
    is monotone, so the two agree to the bit), written branch-free.  Without
    fastmath a float reduction does not vectorise, so the degrees are integer
    counts and the off-diagonal row sums are summed as column sums, row after
    row: the weights are exactly symmetric, so column j summed over i in order
    is row j summed over j in order, the same additions to the bit.
    ``half_inverse`` and ``row_sum`` are length-n workspaces.
    """
    n = adjacency.shape[0]
    for i in range(n):
        degree = 0
        for j in range(n):
            degree += 1 if adjacency[i, j] != 0.0 else 0
        degree -= 1 if adjacency[i, i] != 0.0 else 0
        half_inverse[i] = 0.5 / degree
        row_sum[i] = 0.0
    for i in range(n):
        hi = half_inverse[i]
        for j in range(n):
            hj = half_inverse[j]
            work[i, j] = (hi if hi < hj else hj) if adjacency[i, j] != 0.0 else 0.0
        work[i, i] = 0.0
        for j in range(n):
            row_sum[j] += work[i, j]
    uniform = 1.0 / n
    for i in range(n):
        for j in range(n):
            fundamental[i, j] = uniform - work[i, j]
        self_weight = 1.0 - row_sum[i]
        work[i, i] = self_weight
        fundamental[i, i] = 1.0 - self_weight + uniform


@njit(**NJIT_FLAGS)
def _hitting_time_and_gap(adjacency, fundamental, work, vectors, seen, stack):
    """(H, gap) of one graph in the given workspaces (all n x n or length n).

    ``fundamental`` and ``work`` are (n, n) float64, ``vectors`` is
    (_N_VECTORS, n) float64, ``seen`` and ``stack`` are int64 of length n.
    """
    n = adjacency.shape[0]
    if n == 1:
        return 0.0, 1.0
    if not support_connected(adjacency, seen, stack):
        return np.inf, 0.0
    _weights_and_k(adjacency, work, fundamental, vectors[_HALF_INVERSE_DEGREE], vectors[_V])
    _invert_spd_in_place(fundamental, vectors[_P])
    largest = _largest_time(fundamental, vectors[_V])  # H = max_ij (z_jj - z_ij) / pi_j
    _tridiagonalize_in_place(work, vectors)
    second = eigenvalue_of_rank(vectors[_DIAGONAL], vectors[_OFF_SQUARED], n, n - 2, True)
    return largest, 1.0 - abs(second)


@njit(**NJIT_FLAGS)
def hitting_time_and_gap_one(adjacency):
    """(H, gap) of one (n, n) adjacency, serial: no thread pool."""
    n = adjacency.shape[0]
    fundamental = np.empty((n, n))
    work = np.empty((n, n))
    vectors = np.zeros((_N_VECTORS, n))
    seen = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    return _hitting_time_and_gap(adjacency, fundamental, work, vectors, seen, stack)


@njit(**PARALLEL_FLAGS)
def hitting_time_and_gap_stack(adjacency, chunks):
    """(H, gap) of each graph of a (k, n, n) adjacency stack, parallel over ``chunks`` chunks.

    Each chunk allocates its workspace once and runs its graphs serially.
    """
    k = adjacency.shape[0]
    n = adjacency.shape[1]
    largest = np.empty(k)
    gap = np.empty(k)
    chunks = max(1, min(k, chunks))
    for chunk in prange(chunks):
        fundamental = np.empty((n, n))
        work = np.empty((n, n))
        vectors = np.zeros((_N_VECTORS, n))
        seen = np.empty(n, dtype=np.int64)
        stack = np.empty(n, dtype=np.int64)
        for g in range(chunk * k // chunks, (chunk + 1) * k // chunks):
            largest[g], gap[g] = _hitting_time_and_gap(
                adjacency[g], fundamental, work, vectors, seen, stack
            )
    return largest, gap


def hitting_time_and_gap_symmetric(weights: NDArray[np.float64]) -> tuple[float, float] | None:
    """(H, gap) of a connected Lazy-Metropolis matrix from one Cholesky inverse, or None."""
    upper = fundamental_upper(weights)
    if upper is None:
        return None
    hitting = largest_time_from_upper(upper)
    # Z is at hand: Lanczos on it costs a few dozen products, far below eigvalsh at any size.
    gap = trusted(gap_from_fundamental(upper)) if lazy_spectrum(weights) else None
    return hitting, gap_eigvalsh(weights) if gap is None else gap


def hitting_time_and_gap_large(adjacency: NDArray[np.float64]) -> tuple[float, float]:
    """One large graph: Cholesky in LAPACK, or the serial kernels if the graph is disconnected."""
    weights = np.empty_like(adjacency)
    lazy_metropolis_one(adjacency, weights)
    route = _router.route(weights)
    if route.dense and route.symmetric and route.connected:
        result = hitting_time_and_gap_symmetric(weights)
        if result is not None:
            return result
    # The gap of a graph this route takes stays on the serial kernel (dense_gap=False).
    return (max_hitting_time_routed(weights, route),
            spectral_gap_routed(weights, route._replace(dense_gap=False)))
