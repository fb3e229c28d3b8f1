"""Graph kernels of the DeepPrivacy topology model (the hot path).

The quantities are those of DeepPrivacy's model of a communication topology
[1]_: Lazy-Metropolis weights, all-pairs hitting times of their random walk
(from the fundamental matrix [2]_), the maximum hitting time H and the
spectral gap.

==============================  ================================================
function                        computes
==============================  ================================================
:func:`lazy_metropolis`         Lazy-Metropolis weights of a graph (eq. 4)
:func:`metropolis`              Metropolis-Hastings weights of a graph
:func:`hitting_times`           all-pairs hitting times of a transition matrix
:func:`max_hitting_time`        H = max_ij m_ij of a transition matrix
:func:`spectral_gap`            1 - max(|lambda_2|, |lambda_n|) of a symmetric one
:func:`hitting_time_and_gap`    H and the gap of a graph, fused in one kernel
:func:`sparse_spectral_gap`     the gap of a large sparse graph (Lanczos)
:func:`hitting_time_bounds`     H of a large sparse graph, exact or bounded
:func:`fastest_mixing_weights`  the weights of least SLEM on a graph's links
==============================  ================================================

The dense functions accept one matrix of shape (n, n) or a stack of shape
(k, n, n), and process stacks in parallel.  They are validated wrappers over
private kernels: :mod:`._validation` (one compiled pass of input checks),
:mod:`._numba` (weights; the general hitting-time kernel), :mod:`._symmetric`
(H, hitting times and gap of symmetric doubly stochastic matrices, the common
input), :mod:`._summary` (weights, H and gap fused), :mod:`._dense` (LAPACK for
one large matrix: Cholesky and Lanczos), :mod:`._sparse` and :mod:`._large`
(large sparse graphs), :mod:`._fmmc` (fastest-mixing weights [3]_: an SDP
for small graphs, a smoothed accelerated subgradient method beyond).

A single matrix never enters Numba's thread pool: it runs on the calling
thread (or, when large, in LAPACK).  Waking the pool costs more than the
arithmetic of a small matrix, and its threads, spinning after a parallel
region, slow down the LAPACK calls that follow.

References
----------
.. [1] C.-W. Ching, H.-S. Huang, C.-A. Yang, Y.-C. Liu and J.-J. Kuo,
   "Efficient Communication Topology via Partially Differential Privacy for
   Decentralized Learning", eqs. (4), (11).
.. [2] J. G. Kemeny and J. L. Snell, *Finite Markov Chains*, 1960, Thm. 4.4.7
   (hitting times from the fundamental matrix).
.. [3] S. Boyd, P. Diaconis and L. Xiao, "Fastest mixing Markov chain on a
   graph", SIAM Review 46(4):667-689, 2004.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidInputError
from . import _dense, _numba, _summary, _symmetric
from ._fmmc import FastestMixing, fastest_mixing_weights
from ._large import HittingTimeBounds, hitting_time_bounds, sparse_spectral_gap
from ._validation import checked_adjacency, checked_matrices

__all__ = [
    "lazy_metropolis",
    "metropolis",
    "hitting_times",
    "max_hitting_time",
    "spectral_gap",
    "hitting_time_and_gap",
    "sparse_spectral_gap",
    "hitting_time_bounds",
    "HittingTimeBounds",
    "fastest_mixing_weights",
    "FastestMixing",
]

#: Up to this many nodes, :func:`hitting_time_and_gap` of one matrix runs the fused
#: serial kernel (the numbers :func:`topokit.evaluate` reports); larger single matrices go
#: to LAPACK (Cholesky inverse, Lanczos on it for the gap).  Measured on 2 idle cores at
#: n = 256: 4.0 ms fused, 1.9 ms LAPACK, 4.1 ms for numpy's inv and eigvalsh; the LAPACK
#: path is faster from about n = 160, but moving the limit would change the last bits of
#: the designs' metrics between 160 and 256 nodes.
FUSED_SINGLE_MAX = 256


def _chunks() -> int:
    """Chunks of a stack for the parallel kernels (each chunk allocates its workspace once)."""
    return _summary.CHUNKS_PER_THREAD * numba.get_num_threads()


def lazy_metropolis(graph: Any) -> NDArray[np.float64]:
    """Lazy-Metropolis communication matrix (DeepPrivacy Definition 1, eq. 4).

    .. math:: a_{ij} = \\frac{1}{2\\max(\\deg_i, \\deg_j)} \\text{ on links},\\quad
              a_{ii} = 1 - \\sum_{k \\ne i} a_{ik}

    Parameters
    ----------
    graph : networkx.Graph or array-like of shape (n, n) or (k, n, n)
        A graph (node order ``list(graph)``), a symmetric adjacency matrix
        (any non-zero off-diagonal entry is a link; the diagonal is ignored),
        or a stack of them.

    Returns
    -------
    ndarray of shape (n, n) or (k, n, n)
        Symmetric, doubly stochastic, with a_ii >= 1/2.

    Examples
    --------
    >>> import networkx as nx
    >>> lazy_metropolis(nx.path_graph(3)).round(3).tolist()
    [[0.75, 0.25, 0.0], [0.25, 0.5, 0.25], [0.0, 0.25, 0.75]]
    """
    stack, single = checked_adjacency(graph)
    if single:
        weights = np.empty_like(stack[0])
        _numba._lazy_metropolis_one(stack[0], weights)
        return weights
    return _numba.metropolis_family_stack(stack, 2.0, 0.0, _chunks())


def metropolis(graph: Any) -> NDArray[np.float64]:
    """Metropolis-Hastings weights a_ij = 1 / (1 + max(deg_i, deg_j)) on links.

    Symmetric and doubly stochastic with a_ii > 0, but the self-weight can be
    small (1 / (1 + deg) on a regular graph), unlike Lazy-Metropolis' a_ii >= 1/2.
    Used by :mod:`topokit.gfl` where the papers use plain Metropolis weights.
    Accepts the same inputs as :func:`lazy_metropolis`.
    """
    stack, single = checked_adjacency(graph)
    if single:
        weights = np.empty_like(stack[0])
        _numba._metropolis_one(stack[0], weights)
        return weights
    return _numba.metropolis_family_stack(stack, 1.0, 1.0, _chunks())


def _transition_stack(transition: Any) -> tuple[NDArray[np.float64], bool]:
    return checked_matrices(transition, "A", stochastic=True)


def _connected_symmetric(matrix: NDArray[np.float64]) -> bool:
    """A large single matrix that takes the Cholesky route (see :mod:`._dense`)?"""
    return (matrix.shape[0] >= _dense.DENSE_THRESHOLD
            and _dense.symmetric_doubly_stochastic(matrix) and _dense.connected_symmetric(matrix))


def _use_dense(stack: NDArray[np.float64]) -> bool:
    """One large irreducible matrix: LAPACK's threads beat a single Numba kernel."""
    return (
        stack.shape[0] == 1
        and stack.shape[1] >= _dense.DENSE_THRESHOLD
        and _dense.strongly_connected(stack[0])
    )


def _raise_on_status(status: NDArray[np.int64]) -> None:
    bad = np.flatnonzero(status == _numba.REDUCIBLE_WITH_TRANSIENT_STATES)
    if bad.size:
        where = "" if status.size == 1 else f" (matrix {int(bad[0])} of the stack)"
        raise InvalidInputError(
            f"A has transient states{where}: some node can leave a group of nodes it can never "
            "return to, so hitting times depend on absorption probabilities. Use a symmetric "
            "weight matrix such as topokit.lazy_metropolis(G)."
        )


def _hitting_times_single(transition: NDArray[np.float64]) -> NDArray[np.float64]:
    """One matrix: Cholesky or LU in LAPACK when large, else the serial kernel."""
    if _connected_symmetric(transition):
        times = _dense.hitting_times_symmetric(transition)
        if times is not None:
            return times
    if _use_dense(transition[None]):
        return _dense.hitting_times_dense(transition)
    times = np.empty_like(transition)
    status = _symmetric.hitting_times_one_fast(transition, times)
    _raise_on_status(np.array([status]))
    return times


def _max_hitting_time_single(transition: NDArray[np.float64]) -> float:
    if _connected_symmetric(transition):
        largest = _dense.max_hitting_time_symmetric(transition)
        if largest is not None:
            return largest
    if _use_dense(transition[None]):
        return float(_dense.hitting_times_dense(transition).max())
    largest, status = _symmetric.max_hitting_time_one(transition)
    _raise_on_status(np.array([status]))
    return float(largest)


def hitting_times(transition: Any) -> NDArray[np.float64]:
    """All-pairs expected hitting times of the random walk with transition matrix A.

    Solves DeepPrivacy eq. (11), :math:`m_{ii} = 0,\\ m_{ij} = 1 + \\sum_{k \\ne j}
    a_{ik} m_{kj}`, through the fundamental matrix
    :math:`Z = (I - A + \\mathbf{1}\\pi^T)^{-1}`, :math:`m_{ij} = (z_{jj} - z_{ij})/\\pi_j`:
    one n x n inverse instead of the paper's n^2 x n^2 system.

    Parameters
    ----------
    transition : array-like of shape (n, n) or (k, n, n)
        Row-stochastic matrix (rows are the start, columns the target), or a
        stack of them.  Need not be symmetric.

    Returns
    -------
    ndarray of shape (n, n) or (k, n, n)
        ``m[i, j]``, the expected number of steps from i to first reach j;
        ``inf`` where i and j lie in different components.

    Raises
    ------
    ValueError
        If A is not square, has NaN or negative entries, a row that does not
        sum to 1, or transient states.

    Examples
    --------
    >>> import networkx as nx
    >>> hitting_times(lazy_metropolis(nx.complete_graph(3))).round(6).tolist()
    [[0.0, 4.0, 4.0], [4.0, 0.0, 4.0], [4.0, 4.0, 0.0]]
    """
    stack, single = _transition_stack(transition)
    if single:
        return _hitting_times_single(stack[0])
    times, status = _symmetric.hitting_times_stack(stack, _chunks())
    _raise_on_status(status)
    return times


def max_hitting_time(transition: Any) -> float | NDArray[np.float64]:
    """The hitting time of a topology, H = max_ij m_ij (DeepPrivacy Definition 6).

    Returns a float for one matrix, an array of shape (k,) for a stack;
    ``inf`` for a disconnected graph.
    """
    stack, single = _transition_stack(transition)
    if single:
        return _max_hitting_time_single(stack[0])
    largest, status = _symmetric.max_hitting_time_stack(stack, _chunks())
    _raise_on_status(status)
    return largest


def spectral_gap(transition: Any) -> float | NDArray[np.float64]:
    """Spectral gap 1 - max(|lambda_2|, |lambda_n|) of a symmetric stochastic matrix.

    Returns a float (or (k,) array for a stack) in [0, 1]: ``0.0`` for a
    disconnected graph, ``1.0`` for a single node.

    Raises
    ------
    ValueError
        If A is not symmetric or not row-stochastic.
    """
    stack, single = checked_matrices(transition, "A", stochastic=True, symmetric=True)
    if single and stack.shape[1] >= _dense.GAP_DENSE_THRESHOLD \
            and _dense.connected_symmetric(stack[0]):
        return _dense.spectral_gap_dense(stack[0])
    if single:
        return float(_symmetric.spectral_gap_one(stack[0]))
    return _symmetric.spectral_gap_stack(stack, _chunks())


def hitting_time_and_gap(
    graph: Any,
) -> tuple[float, float] | tuple[NDArray[np.float64], NDArray[np.float64]]:
    """H and spectral gap of the Lazy-Metropolis walk on a graph, in one compiled call.

    The same numbers as ``max_hitting_time(A)`` and ``spectral_gap(A)`` with
    ``A = lazy_metropolis(graph)`` (to round-off), without building A, the
    hitting-time matrix or the eigenvalues in Python: one fused kernel per
    graph computes the weights, the fundamental matrix and lambda_2.  A stack
    is processed in parallel over its graphs; one matrix of up to
    ``FUSED_SINGLE_MAX`` nodes runs serially on the calling thread (no thread
    pool), which is what :func:`topokit.evaluate` uses; larger single
    matrices go to LAPACK (a Cholesky inverse for H, Lanczos on it for the
    gap; see :mod:`topokit.kernels._dense`).  For graphs too large for a dense
    n x n matrix, see :func:`sparse_spectral_gap` and :func:`hitting_time_bounds`.

    Parameters
    ----------
    graph : networkx.Graph or array-like of shape (n, n) or (k, n, n)
        A graph (node order ``list(graph)``), a symmetric adjacency matrix
        (any non-zero off-diagonal entry is a link; the diagonal is ignored),
        or a stack of them.

    Returns
    -------
    hitting_time : float or ndarray of shape (k,)
        H = max_ij m_ij (DeepPrivacy Definition 6); ``inf`` if disconnected.
    spectral_gap : float or ndarray of shape (k,)
        1 - max(|lambda_2|, |lambda_n|) of the Lazy-Metropolis matrix, in
        (0, 1]; ``0.0`` if disconnected, ``1.0`` for a single node.

    Raises
    ------
    ValueError
        If the adjacency is not square or not symmetric, or has NaN, infinite
        or negative entries.

    See Also
    --------
    lazy_metropolis, max_hitting_time, spectral_gap : the unfused steps.
    sparse_spectral_gap, hitting_time_bounds : large sparse graphs.

    Notes
    -----
    The Lazy-Metropolis matrix has :math:`a_{ii} \\ge 1/2`, so its eigenvalues
    lie in [0, 1] and the gap is :math:`1 - \\lambda_2`.  H comes from
    :math:`Z = (I - A + J/n)^{-1}` (symmetric positive definite for a
    connected graph, inverted without pivoting) as
    :math:`\\max_{ij} n (z_{jj} - z_{ij})`; :math:`\\lambda_2` by Householder
    tridiagonalisation and Sturm-count bisection.

    Examples
    --------
    >>> import networkx as nx
    >>> h, gap = hitting_time_and_gap(nx.cycle_graph(4))
    >>> round(h, 6), round(gap, 6)
    (8.0, 0.5)
    >>> hitting_time_and_gap(nx.Graph([(0, 1), (2, 3)]))
    (inf, 0.0)
    """
    # The fused kernels read any non-zero off-diagonal entry as a link: no 0/1 copy needed.
    stack, single = checked_adjacency(graph)
    n = stack.shape[-1]
    if single and n <= FUSED_SINGLE_MAX:
        hitting, gap = _summary.hitting_time_and_gap_one(stack[0])
        return float(hitting), float(gap)
    if single:
        return _hitting_time_and_gap_unfused(stack[0])
    return _summary.hitting_time_and_gap_stack(stack, _chunks())


def _hitting_time_and_gap_unfused(adjacency: NDArray[np.float64]) -> tuple[float, float]:
    """One large matrix: Cholesky in LAPACK, or the serial kernels if the graph is disconnected."""
    weights = np.empty_like(adjacency)
    _numba._lazy_metropolis_one(adjacency, weights)
    if _connected_symmetric(weights):
        result = _dense.hitting_time_and_gap_symmetric(weights)
        if result is not None:
            return result
    return _max_hitting_time_single(weights), float(_symmetric.spectral_gap_one(weights))
