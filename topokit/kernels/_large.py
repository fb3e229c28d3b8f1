"""Large sparse graphs: the spectral gap by Lanczos and the hitting time H exactly where
a dense n x n matrix fits in memory, else between certified bounds.

Public functions re-exported by :mod:`topokit.kernels`:

* :func:`sparse_spectral_gap` -- the gap of the Lazy-Metropolis walk, the number
  :func:`topokit.kernels.hitting_time_and_gap` returns, from sparse products only;
* :func:`hitting_time_bounds` -- H exactly (one dense Cholesky inverse) or a
  certified interval ``lower <= H <= upper`` (:class:`HittingTimeBounds`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.sparse.csgraph import dijkstra

from .._checks import check_choice, check_int_at_least
from ..errors import InvalidInputError
from ._hitting import cholesky_in_place, inverse_in_place, largest_time_from_upper
from ._sparse import (
    SparseWalk,
    hitting_times_to,
    is_connected,
    lazy_metropolis_sparse,
    slowest_mode,
    sparse_adjacency,
)
from ._validation import available_memory, gib

__all__ = ["HittingTimeBounds", "sparse_spectral_gap", "hitting_time_bounds"]

#: ``method="auto"`` computes H exactly up to this many nodes (if the memory allows):
#: one dense Cholesky inverse, n^3 flops, about half a minute at 10^4 nodes on 2 cores.
AUTO_EXACT_MAX_NODES = 10_000

#: Bytes per node pair of the exact path: one dense float64 n x n matrix, factorised
#: and inverted in place.
_EXACT_BYTES_PER_PAIR = 8

#: Relative safety margin on both bounds, for the rounding of their arithmetic.
_ROUNDING_MARGIN = 1e-9

_METHODS = ("auto", "exact", "bound")


class HittingTimeBounds(NamedTuple):
    """``lower <= H <= upper`` for the Lazy-Metropolis walk on a graph.

    Attributes
    ----------
    lower, upper : float
        Certified bounds on H = max_ij m_ij; equal (H itself) when ``exact``;
        both ``inf`` for a disconnected graph.
    exact : bool
        Whether H was computed exactly (dense fundamental matrix).
    """

    lower: float
    upper: float
    exact: bool

    @property
    def factor(self) -> float:
        """upper / lower: how far apart the bounds are (1.0 when exact)."""
        if self.exact or self.lower == self.upper:
            return 1.0
        return self.upper / self.lower if self.lower > 0 else np.inf


def _walk(graph: Any) -> tuple[SparseWalk, bool]:
    """The sparse Lazy-Metropolis walk of a graph, and whether the graph is connected."""
    adjacency = sparse_adjacency(graph)
    return lazy_metropolis_sparse(adjacency), is_connected(adjacency)


def sparse_spectral_gap(graph: Any, *, tol: float = 0.0, max_iter: int | None = None) -> float:
    """Spectral gap of the Lazy-Metropolis walk on a large sparse graph, by Lanczos.

    The gap :func:`hitting_time_and_gap` returns, 1 - lambda_2 of
    ``lazy_metropolis(graph)``, without any dense n x n matrix: ARPACK's
    Lanczos iteration on P - J/n (the eigenvalue 1 deflated), sparse products
    only.  Memory O(n + m); about 2.5 s for 10^5 nodes and 3 x 10^5 links on 2 cores.

    Parameters
    ----------
    graph : networkx.Graph, scipy sparse matrix or array-like of shape (n, n)
        A graph (node order ``list(graph)``) or a symmetric adjacency matrix
        (any non-zero off-diagonal entry is a link; the diagonal is ignored).
    tol : float, default 0.0
        Relative accuracy of lambda_2 asked of ARPACK; 0 means machine
        precision, which makes the gap agree with the dense kernels to about
        1e-15 absolute.
    max_iter : int, optional
        ARPACK's limit on restarts (its default: 10 n).

    Returns
    -------
    float
        In (0, 1]; ``0.0`` for a disconnected graph, ``1.0`` for one node.

    Raises
    ------
    InvalidInputError
        If the adjacency is not square or symmetric, or has NaN, infinite or
        negative entries, or the graph is directed.
    TopokitError
        If Lanczos does not converge within ``max_iter`` (a very clustered
        slow end of the spectrum).

    See Also
    --------
    hitting_time_bounds : H of a large graph.
    hitting_time_and_gap : H and the gap from dense matrices.

    Examples
    --------
    >>> import networkx as nx
    >>> round(sparse_spectral_gap(nx.cycle_graph(4)), 12)
    0.5
    >>> sparse_spectral_gap(nx.Graph([(0, 1), (2, 3)]))
    0.0
    """
    walk, connected = _walk(graph)
    if walk.n == 1:
        return 1.0
    if not connected:
        return 0.0
    return slowest_mode(walk, tol=tol, max_iter=max_iter).gap


def _exact_fits(n: int, max_memory: float | None) -> bool:
    limit = available_memory() if max_memory is None else max_memory
    return _EXACT_BYTES_PER_PAIR * float(n) ** 2 <= limit


def _check_exact_fits(n: int, max_memory: float | None) -> None:
    """Raise before allocating if the dense n x n matrix of the exact path does not fit."""
    if _exact_fits(n, max_memory):
        return
    limit = available_memory() if max_memory is None else max_memory
    need = _EXACT_BYTES_PER_PAIR * float(n) ** 2
    raise InvalidInputError(
        f"exact hitting times of a {n:,}-node graph need a dense {n:,} x {n:,} matrix "
        f"({gib(need)}), more than the {gib(limit)} of memory available; use "
        "method='bound' (certified bounds from sparse solves) or method='auto'"
    )


def _exact_hitting_time(walk: SparseWalk) -> float:
    """H from the dense Z = (I - P + J/n)^{-1}: the numbers of ``max_hitting_time`` on
    ``lazy_metropolis(graph)`` (the same K, Cholesky-inverted in place)."""
    n = walk.n
    shifted = walk.weights.toarray()  # the one n x n allocation
    uniform = 1.0 / n
    np.subtract(uniform, shifted, out=shifted)
    self_weight = 1.0 - walk.row_sums
    diagonal = np.arange(n)
    shifted[diagonal, diagonal] = (1.0 - self_weight) + uniform
    upper = inverse_in_place(cholesky_in_place(shifted.T))
    if upper is None:  # numerically singular: a gap below round-off
        return np.inf
    return largest_time_from_upper(upper)


class _Sweep(NamedTuple):
    resistance_bound: float  # >= max_ij R_ij
    ends: tuple[int, int]  # the double sweep's ends, far apart in resistance


def _resistance_sweep(walk: SparseWalk) -> _Sweep:
    """An upper bound on max_ij R_ij, the effective resistance with conductances w_ij.

    R_ij <= d(i, j), the shortest path with lengths 1 / w_ij (one path is a
    sub-network), and d is a metric: R_ij <= d(i, c) + d(c, j) for any c.
    Dijkstra from a double sweep's ends and a centre between them; the
    smallest sum of the two largest distances from any of them.  On a tree
    R = d and the sweep's ends realise the diameter.
    """
    lengths = walk.weights.copy()
    lengths.data = 1.0 / lengths.data
    sources = [int(np.argmax(walk.row_sums))]
    distances = {}
    for _ in range(2):  # double sweep: the farthest node from the last source
        distances[sources[-1]] = dijkstra(lengths, indices=sources[-1])
        sources.append(int(np.argmax(distances[sources[-1]])))
    distances[sources[-1]] = dijkstra(lengths, indices=sources[-1])
    centre = int(np.argmin(np.maximum(distances[sources[1]], distances[sources[2]])))
    distances[centre] = dijkstra(lengths, indices=centre)
    best = min(float(np.partition(row, row.shape[0] - 2)[-2:].sum())
               for row in distances.values())
    return _Sweep(best, (sources[1], sources[2]))


def _targets(walk: SparseWalk, fiedler: NDArray[np.float64], ends: tuple[int, int],
             count: int) -> list[int]:
    """Candidate hard-to-hit targets: the sweep's ends, the lowest escape probability
    s_i, the ends of the Fiedler vector, then the next lowest s_i."""
    by_escape = np.argsort(walk.row_sums, kind="stable")
    candidates = [*ends, int(by_escape[0]), int(np.argmax(fiedler)), int(np.argmin(fiedler))]
    candidates += [int(i) for i in by_escape[1:count]]
    return list(dict.fromkeys(candidates))


def _lower_from_targets(walk: SparseWalk, queue: list[int], count: int) -> float:
    """max over up to ``count`` targets t of a certified lower bound on max_i m_it.

    After each target, the node farthest from it (in hitting time) is tried
    next: the two ends of the longest commute are the usual maximisers.
    """
    laplacian = walk.laplacian()
    done: set[int] = set()
    best = 0.0
    while queue and len(done) < count:
        target = queue.pop(0)
        if target in done:
            continue
        done.add(target)
        solved = hitting_times_to(laplacian, target)
        best = max(best, solved.lower)
        if solved.farthest not in done:
            queue.insert(0, solved.farthest)
    return best


def _bounds(walk: SparseWalk, n_targets: int) -> HittingTimeBounds:
    """Certified lower and upper bounds on H of a connected graph (see hitting_time_bounds)."""
    n = walk.n
    spectrum = slowest_mode(walk)
    gap = spectrum.gap
    sweep = _resistance_sweep(walk)
    spectral = 2.0 * (n - 1) / gap
    commute = n * sweep.resistance_bound - 1.0
    kemeny = 1.0 / gap + (n - 2)
    queue = _targets(walk, spectrum.fiedler, sweep.ends, n_targets)
    targets = _lower_from_targets(walk, queue, n_targets)
    lower = max(kemeny, targets) * (1.0 - _ROUNDING_MARGIN)
    upper = min(spectral, commute) * (1.0 + _ROUNDING_MARGIN)
    return HittingTimeBounds(lower, max(upper, lower), exact=False)


def hitting_time_bounds(
    graph: Any,
    *,
    method: str = "auto",
    n_targets: int = 8,
    max_memory: float | None = None,
) -> HittingTimeBounds:
    """H of the Lazy-Metropolis walk on a large sparse graph: exact, or certified bounds.

    Parameters
    ----------
    graph : networkx.Graph, scipy sparse matrix or array-like of shape (n, n)
        A graph (node order ``list(graph)``) or a symmetric adjacency matrix
        (any non-zero off-diagonal entry is a link; the diagonal is ignored).
    method : {"auto", "exact", "bound"}, default "auto"
        "exact": H from the dense fundamental matrix, the number
        ``max_hitting_time(lazy_metropolis(graph))`` gives (8 n^2 bytes, n^3
        flops); refused before allocating if that matrix does not fit.
        "bound": certified bounds from sparse computations only.  "auto":
        exact up to ``AUTO_EXACT_MAX_NODES`` nodes when the matrix fits, else
        bounds.
    n_targets : int, default 8
        Targets whose hitting times are solved for the lower bound (one sparse
        conjugate-gradient solve each).
    max_memory : float, optional
        Bytes the exact path may use; default: the memory available now.

    Returns
    -------
    HittingTimeBounds
        ``(lower, upper, exact)``; ``lower == upper == H`` when exact,
        ``(inf, inf, True)`` for a disconnected graph, ``(0.0, 0.0, True)``
        for one node.

    Raises
    ------
    InvalidInputError
        For a bad adjacency (as :func:`sparse_spectral_gap`), an unknown
        method, or ``method="exact"`` on a graph whose dense matrix does not
        fit in ``max_memory``: the message names the size and the alternative.

    See Also
    --------
    sparse_spectral_gap, max_hitting_time

    Notes
    -----
    The walk P = I - L is reversible with uniform pi, L = diag(s) - W the
    Laplacian with conductances w_ij.  Then m_ij = n (L^+_jj - L^+_ij) and the
    commute time is m_ij + m_ji = n R_ij, R the effective resistance [1]_.

    *Upper bound*, the smaller of

    * spectral: L^+_jj <= (1 - 1/n) / gap and |L^+_ij| <= sqrt(L^+_ii L^+_jj),
      so :math:`H \\le 2 (n - 1) / \\mathrm{gap}`;
    * commute time: m_ij <= n R_ij - m_ji <= n R_max - 1, with R_max bounded by
      shortest paths of lengths 1 / w_ij through a centre c (R is a metric and
      a path is a sub-network): R_max <= max_{i != j} d(i, c) + d(c, j).

    *Lower bound*, the larger of

    * Kemeny's constant, :math:`\\sum_{k \\ge 2} 1/(1 - \\lambda_k) \\le H`,
      at least 1/gap + n - 2 (every 1 - lambda_k <= 1 for a lazy walk);
    * max_i m_it for a few targets t (the ends of the resistance sweep, low
      escape probability s_t, the ends of the Fiedler vector, and the
      farthest node from each target solved),
      each from a conjugate-gradient solve certified by its residual: the
      grounded Laplacian's inverse is non-negative, so an approximate
      solution x with residual r gives m_it >= x_i / (1 + ||r||_inf).

    Both bounds hold up to the accuracy of the computed gap (Lanczos at
    machine precision) and a relative margin of 1e-9 for rounding.  Their
    ratio (``factor``) is at most 2 (n - 1) in the worst case and depends on
    the graph; measured on the test graphs: about 2 on preferential-attachment
    graphs (m = 3), trees, paths and stars (the lower bound is H itself, the
    commute-time or spectral bound twice it), about 4 on a sparser power-law
    graph, and tens on lattice-like or geometric graphs, whose spectral and
    path bounds are both loose.

    References
    ----------
    .. [1] A. K. Chandra, P. Raghavan, W. L. Ruzzo, R. Smolensky and P. Tiwari,
       "The electrical resistance of a graph captures its commute and cover
       times", *Computational Complexity* 6 (1996).

    Examples
    --------
    >>> import networkx as nx
    >>> exact = hitting_time_bounds(nx.cycle_graph(4))
    >>> exact.exact, round(exact.lower, 9), round(exact.upper, 9)
    (True, 8.0, 8.0)
    >>> bounds = hitting_time_bounds(nx.path_graph(50), method="bound")  # H = 4900
    >>> bounds.exact, bounds.lower <= 4900.0 <= bounds.upper, round(bounds.factor, 2)
    (False, True, 2.0)
    """
    check_choice(method, "method", _METHODS)
    n_targets = check_int_at_least(n_targets, "n_targets", 1)
    walk, connected = _walk(graph)
    if walk.n == 1:
        return HittingTimeBounds(0.0, 0.0, exact=True)
    if not connected:
        return HittingTimeBounds(np.inf, np.inf, exact=True)
    exact = method == "exact" or (method == "auto" and walk.n <= AUTO_EXACT_MAX_NODES
                                  and _exact_fits(walk.n, max_memory))
    if not exact:
        return _bounds(walk, n_targets)
    _check_exact_fits(walk.n, max_memory)
    hitting = _exact_hitting_time(walk)
    return HittingTimeBounds(hitting, hitting, exact=True)
