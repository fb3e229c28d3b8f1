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
(k, n, n), and process stacks in parallel.  They validate, then call the
private kernels, one module per quantity:

===============================  ========================================================
module                           holds
===============================  ========================================================
:mod:`._validation`              the input checks, one compiled pass over a stack
:mod:`._router`                  :func:`~._router.route`: a single matrix classified once
                                 (symmetric? connected? size class) into a ``Route``
:mod:`._weights`                 Lazy-Metropolis and Metropolis weights
:mod:`._hitting`                 hitting times and H: the general kernel, the symmetric
                                 fast path, LAPACK (Cholesky or LU) for one large matrix
:mod:`._gap`                     the spectral gap: Sturm counts and Laguerre's method, or
                                 LAPACK (dsyevr, Lanczos) for one large matrix
:mod:`._fused`                   weights, H and gap of a graph in one kernel
:mod:`._connectivity`            symmetry and connectivity tests of a matrix's support
:mod:`._workspace`               the per-matrix workspace of the kernels above
:mod:`._sparse`, :mod:`._large`  large sparse graphs: Lanczos gap, bounds on H
:mod:`._fmmc`                    fastest-mixing weights [3]_: an SDP for small graphs, a
                                 smoothed accelerated subgradient method beyond
:mod:`._config`                  Numba flags (``NJIT_FLAGS``, ``PARALLEL_FLAGS``), chunks
:mod:`.unchecked`                entry points that trust their input, for topokit's own
                                 callers that already hold valid matrices
===============================  ========================================================

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

import numpy as np
from numpy.typing import NDArray

from . import _weights
from . import unchecked as unchecked
from ._config import NJIT_FLAGS as NJIT_FLAGS
from ._config import PARALLEL_FLAGS as PARALLEL_FLAGS
from ._config import chunks
from ._fmmc import SDP_MAX_NODES, FastestMixing, fastest_mixing_weights
from ._large import HittingTimeBounds, hitting_time_bounds, sparse_spectral_gap
from ._router import FUSED_SINGLE_MAX as FUSED_SINGLE_MAX
from ._validation import available_memory as available_memory
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
    "SDP_MAX_NODES",
]

# Also public, outside __all__ (names for topokit's own compiled code): NJIT_FLAGS and
# PARALLEL_FLAGS, the Numba flags of every kernel; FUSED_SINGLE_MAX; available_memory (what
# the large-network paths check before allocating); and the module topokit.kernels.unchecked,
# entry points that trust their input.


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
        _weights.lazy_metropolis_one(stack[0], weights)
        return weights
    return _weights.metropolis_family_stack(stack, 2.0, 0.0, chunks())


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
        _weights.metropolis_one(stack[0], weights)
        return weights
    return _weights.metropolis_family_stack(stack, 1.0, 1.0, chunks())


def _transition_stack(transition: Any) -> tuple[NDArray[np.float64], bool]:
    return checked_matrices(transition, "A", stochastic=True)


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
    return unchecked.hitting_times_unchecked(stack[0] if single else stack)


def max_hitting_time(transition: Any) -> float | NDArray[np.float64]:
    """The hitting time of a topology, H = max_ij m_ij (DeepPrivacy Definition 6).

    Returns a float for one matrix, an array of shape (k,) for a stack;
    ``inf`` for a disconnected graph.
    """
    stack, single = _transition_stack(transition)
    return unchecked.max_hitting_time_unchecked(stack[0] if single else stack)


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
    return unchecked.spectral_gap_unchecked(stack[0] if single else stack)


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
    gap; see :mod:`topokit.kernels._fused`).  For graphs too large for a dense
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
    tridiagonalisation, Sturm counts and Laguerre's method, to the last bit
    (the pair of floats a Sturm-count bisection ends on).

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
    return unchecked.hitting_time_and_gap_unchecked(stack[0] if single else stack)
