"""Private fused Numba kernels: Lazy-Metropolis weights, H and spectral gap in one pass.

They never validate: :func:`topokit.kernels.hitting_time_and_gap` does, and
hands them a contiguous float64 adjacency (any non-zero off-diagonal entry is
a link; the diagonal is ignored) with a symmetric support.

Per graph (:func:`_hitting_time_and_gap`), all in a caller-owned workspace so
that a stack allocates once per chunk of graphs, not once per graph:

1. connectivity (a bit-mask sweep up to 64 nodes, else a depth-first search);
   a disconnected graph gives (inf, 0.0) at once;
2. the Lazy-Metropolis matrix A (DeepPrivacy eq. 4) and K = I - A + J/n;
3. Z = K^{-1} by Gauss-Jordan in place.  K is symmetric positive definite
   (eigenvalues 1 and 1 - lambda_i >= gap > 0), so no pivoting is needed.
   H = max_ij (z_jj - z_ij) / pi_j with pi = 1/n (Kemeny & Snell);
4. the spectral gap 1 - lambda_2: Householder tridiagonalisation of A, then
   lambda_2 by Sturm counts.  A has a_ii >= 1/2, so by Gershgorin every
   eigenvalue lies in [0, 1] and |lambda_n| <= lambda_2: the smallest
   eigenvalue, which :func:`topokit.kernels.spectral_gap` also needs for a
   general symmetric matrix, is not computed.

Without ``fastmath`` a floating-point reduction does not vectorise, so the
loops are written over whole rows of distinct arrays (axpy form) where they can.

The unfused kernels of :mod:`topokit.kernels._symmetric` and the plain-numpy twins
of ``topokit/testing/naive_kernels.py`` check these results in ``tests/kernels/test_kernels.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._config import NJIT_FLAGS, PARALLEL_FLAGS

#: Rows of the float workspace ``vectors`` (each of length n).
_HALF_INVERSE_DEGREE, _V, _P, _DIAGONAL, _OFF_SQUARED = 0, 1, 2, 3, 4
_N_VECTORS = 5

#: Chunks per thread in the stack kernel (each chunk allocates its workspace once).
CHUNKS_PER_THREAD = 4


@njit(**NJIT_FLAGS)
def _support_connected(matrix, seen, stack):
    """Whether the undirected support of ``matrix`` (a_ij > 0 or a_ji > 0, i != j) is connected.

    Up to 64 nodes the rows are bit masks (``stack`` holds them, symmetrised)
    and a sweep ORs the rows of the frontier; beyond, a depth-first search.
    """
    n = matrix.shape[0]
    if n <= 64:
        masks = stack.view(np.uint64)
        for i in range(n):
            masks[i] = np.uint64(0)
        for i in range(n):
            row = np.uint64(0)
            for j in range(n):
                link = np.uint64(matrix[i, j] != 0.0)
                row |= link << np.uint64(j)
                masks[j] |= link << np.uint64(i)
            masks[i] |= row
        one = np.uint64(1)
        everyone = ~np.uint64(0) if n == 64 else (one << np.uint64(n)) - one
        reached = one
        frontier = one
        while frontier != 0:
            grown = reached
            for i in range(n):
                if (frontier >> np.uint64(i)) & one:
                    grown |= masks[i]
            frontier = grown & ~reached
            reached = grown
        return reached == everyone
    for i in range(n):
        seen[i] = 0
    seen[0] = 1
    stack[0] = 0
    top = 1
    reached_count = 1
    while top > 0:
        top -= 1
        i = stack[top]
        for j in range(n):
            if seen[j] == 0 and (matrix[i, j] != 0.0 or matrix[j, i] != 0.0):
                seen[j] = 1
                stack[top] = j
                top += 1
                reached_count += 1
    return reached_count == n


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
def _second_largest_eigenvalue(vectors, n):
    """lambda_2 of the tridiagonal matrix in ``vectors``, to the last bit.

    Quadrisection (three Sturm counts per step) until the bracket is a few
    ulps wide, then bisection.
    """
    diagonal = vectors[_DIAGONAL]
    off_squared = vectors[_OFF_SQUARED]
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
    target = n - 2  # 0-based rank from below; invariant: count(low) <= target < count(high)
    for _ in range(200):
        width = high - low
        x1 = low + 0.25 * width
        x2 = low + 0.5 * width
        x3 = low + 0.75 * width
        if not (low < x1 < x2 < x3 < high):
            break
        c1, c2, c3 = _sturm_counts(diagonal, off_squared, n, x1, x2, x3)
        if c1 > target:
            high = x1
        elif c2 > target:
            low, high = x1, x2
        elif c3 > target:
            low, high = x2, x3
        else:
            low = x3
    for _ in range(200):  # the last ulps
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
def _hitting_time_and_gap(adjacency, fundamental, work, vectors, seen, stack):
    """(H, gap) of one graph in the given workspaces (all n x n or length n).

    ``fundamental`` and ``work`` are (n, n) float64, ``vectors`` is
    (_N_VECTORS, n) float64, ``seen`` and ``stack`` are int64 of length n.
    """
    n = adjacency.shape[0]
    if n == 1:
        return 0.0, 1.0
    if not _support_connected(adjacency, seen, stack):
        return np.inf, 0.0
    # Lazy-Metropolis weights 1 / (2 max(deg_i, deg_j)) = min(1/(2 deg_i), 1/(2 deg_j))
    # (rounding is monotone, so the two agree to the bit), written branch-free.
    half_inverse = vectors[_HALF_INVERSE_DEGREE]
    for i in range(n):
        degree = 0.0
        for j in range(n):
            degree += 1.0 if adjacency[i, j] != 0.0 else 0.0
        if adjacency[i, i] != 0.0:
            degree -= 1.0
        half_inverse[i] = 0.5 / degree
    uniform = 1.0 / n
    for i in range(n):
        hi = half_inverse[i]
        for j in range(n):
            hj = half_inverse[j]
            weight = (hi if hi < hj else hj) if adjacency[i, j] != 0.0 else 0.0
            work[i, j] = weight
            fundamental[i, j] = uniform - weight
        work[i, i] = 0.0
        row_sum = 0.0
        for j in range(n):
            row_sum += work[i, j]
        self_weight = 1.0 - row_sum
        work[i, i] = self_weight
        fundamental[i, i] = 1.0 - self_weight + uniform
    _invert_spd_in_place(fundamental, vectors[_P])
    # H = max_ij (z_jj - z_ij) / pi_j, column maxima first (whole-row loops vectorise).
    column_max = vectors[_V]
    for j in range(n):
        column_max[j] = 0.0
    for i in range(n):
        for j in range(n):
            term = fundamental[j, j] - fundamental[i, j]
            column_max[j] = term if term > column_max[j] else column_max[j]
    largest = 0.0
    for j in range(n):
        largest = max(largest, column_max[j] / uniform)
    _tridiagonalize_in_place(work, vectors)
    second = _second_largest_eigenvalue(vectors, n)
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
