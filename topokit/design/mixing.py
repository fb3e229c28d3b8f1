"""Topologies that carry fastest-mixing weights (Boyd, Diaconis and Xiao [1]_).

A :class:`~topokit.network.Topology` may carry symmetric weights on
its links; training mixes with them and the features are computed from them
(:meth:`Topology.mixing_matrix <topokit.network.Topology.mixing_matrix>`).
:func:`fastest_mixing_topology` gives a topology the weights under which its
links mix fastest: those of least second-largest eigenvalue modulus, found by
:func:`topokit.kernels.fastest_mixing_weights` (an SDP for small networks, a
certified first-order method beyond).

References
----------
.. [1] S. Boyd, P. Diaconis and L. Xiao, "Fastest mixing Markov chain on a
   graph", SIAM Review 46(4):667-689, 2004.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

from .._checks import brief, check_collection, check_real
from .._random import SeedLike
from ..errors import (
    DisconnectedGraphError,
    InvalidInputError,
    NodeNotFoundError,
    TopokitWarning,
)
from ..kernels import fastest_mixing_weights
from ..network.core import Network, Topology, node_sort_key

__all__ = ["fastest_mixing_topology", "metropolis_hastings_topology"]


def _node_order(topology: Topology, nodes_or_net: Network | Iterable[Hashable]) -> list:
    """The devices in row order; a network also checks the topology's DeepPrivacy rules."""
    if isinstance(nodes_or_net, Network):
        topology.validate(nodes_or_net)
        return list(nodes_or_net.nodes)
    nodes = list(check_collection(nodes_or_net, "nodes_or_net",
                             "a topokit Network or an iterable of node ids"))
    try:
        distinct = set(nodes)
    except TypeError:
        raise InvalidInputError(
            f"nodes_or_net: node ids must be strings, numbers or tuples; got {brief(nodes)}"
        ) from None
    if len(distinct) != len(nodes):
        raise InvalidInputError("nodes_or_net names a device twice; give every device once")
    unknown = sorted({node for edge in topology.edges for node in edge} - distinct,
                     key=node_sort_key)
    if unknown:
        raise NodeNotFoundError(
            f"the topology links device {unknown[0]!r}, which is not among the nodes given"
        )
    return nodes


def _checked_links(topology: Any, nodes_or_net: Network | Iterable[Hashable]
                   ) -> tuple[list, NDArray[np.intp], NDArray[np.intp]]:
    """The device order of a topology to weight, which must be a connected Topology, and
    the row and column of each of its links in that order."""
    if not isinstance(topology, Topology):
        raise InvalidInputError(
            f"topology must be a topokit Topology; got {type(topology).__name__}"
        )
    nodes = _node_order(topology, nodes_or_net)
    index = {node: k for k, node in enumerate(nodes)}
    rows = np.array([index[u] for u, _ in topology.edges], dtype=np.intp)
    cols = np.array([index[v] for _, v in topology.edges], dtype=np.intp)
    if not _connected(len(nodes), rows, cols):
        raise DisconnectedGraphError(
            "the topology is not connected: no mixing weights make its parts agree; link them"
        )
    return nodes, rows, cols


def _start_matrix(warm_start: Any, nodes: list) -> NDArray[np.float64] | None:
    """The mixing matrix of a warm start on ``nodes`` (None without one)."""
    if warm_start is None:
        return None
    if not isinstance(warm_start, Topology):
        raise InvalidInputError(
            f"warm_start must be a topokit Topology (an earlier fastest_mixing_topology "
            f"result) or None; got {type(warm_start).__name__}"
        )
    return warm_start.mixing_matrix(nodes)


def _connected(n: int, rows: NDArray, cols: NDArray) -> bool:
    graph = csr_array((np.ones(rows.size), (rows, cols)), shape=(n, n))
    return connected_components(graph, directed=False)[0] <= 1


def fastest_mixing_topology(
    topology: Topology,
    nodes_or_net: Network | Iterable[Hashable],
    *,
    method: str = "auto",
    tol: float | None = None,
    max_iter: int | None = None,
    seed: SeedLike = None,
    min_weight: float = 1e-6,
    warm_start: Topology | None = None,
) -> Topology:
    """The topology with the weights under which its links mix fastest.

    Among the symmetric, doubly stochastic, non-negative W that are zero off
    the topology's links, finds the one of least second-largest eigenvalue
    modulus (Boyd, Diaconis and Xiao, 2004, Sec. 1.1),

    .. math:: \\min_w \\; \\mu(W(w)) = \\|W(w) - \\mathbf{1}\\mathbf{1}^T/n\\|_2,
              \\qquad W(w) = I - \\sum_l w_l (e_i - e_j)(e_i - e_j)^T,
              \\quad w \\ge 0, \\; \\sum_{l \\ni i} w_l \\le 1

    (their edge form, Sec. 5), with
    :func:`topokit.kernels.fastest_mixing_weights`, and returns the same links
    and DP devices carrying those weights.  The weights mix at least as fast
    as the Lazy-Metropolis ones, which are feasible.

    Parameters
    ----------
    topology : Topology
        Connected on the devices; any weights it carries are replaced.
    nodes_or_net : Network or iterable of node ids
        Every device (a network's are ``net.nodes``; a network also checks
        the topology against DeepPrivacy's rules).
    method : {"auto", "sdp", "subgradient"}, default "auto"
        The solver, as in :func:`~topokit.kernels.fastest_mixing_weights`:
        the SDP (exact; up to about 48 devices for "auto"), or the first-order
        method beyond.
    tol, max_iter : optional
        The solver's tolerance and iteration limit (see
        :func:`~topokit.kernels.fastest_mixing_weights`).
    seed : int, numpy.random.Generator or None
        Used by the first-order method beyond 128 devices only.
    min_weight : float, default 1e-6
        Links whose optimal weight is at most this are dropped, unless that
        would disconnect the topology.  The optimum often leaves some links
        unused (weight 0, or ~1e-9 from the SDP); a link carries a weight
        > 0 or is no link, and a dropped link no longer lengthens a round
        (eq. 8).  Dropping weights w changes the SLEM by at most
        2 max_i sum_{dropped l on i} w_l.  0 keeps every link of positive
        weight.
    warm_start : Topology, optional
        Where the first-order method starts: a topology on the same devices
        whose mixing matrix (its weights, or Lazy-Metropolis without) is the
        first guess, typically an earlier result of this function on a subset
        or superset of the links (see ``initial_weights`` of
        :func:`~topokit.kernels.fastest_mixing_weights`).  Saves most of the
        steps when the optimum moves little; the result is certified within
        ``tol`` either way, but is not bit for bit that of a cold start.
        Ignored by the SDP.

    Returns
    -------
    Topology
        The kept links, the same DP devices, and ``weights``.

    Raises
    ------
    DisconnectedGraphError
        If the topology does not connect the devices.
    InvalidTopologyError
        If it breaks a DeepPrivacy rule on the network given.
    NodeNotFoundError
        If it links a device not among ``nodes_or_net``.
    InvalidInputError
        A bad ``method``, ``tol``, ``max_iter``, ``min_weight`` or ``warm_start``.

    Warns
    -----
    TopokitWarning
        If the first-order method stops at ``max_iter`` before its SLEM is
        certified within ``tol`` of the optimum (the weights are valid, and
        no slower than Metropolis-Hastings ones, but may not be optimal).

    Notes
    -----
    Unlike Lazy-Metropolis weights (self-weights >= 1/2), fastest-mixing ones
    are not lazy: self-weights may be 0 and eigenvalues negative.  Training
    needs only a symmetric, doubly stochastic, non-negative W, which these
    are.  The predictors shipped with topokit (``load_predictor("default")``
    and eq. 15) were fitted on runs that mixed with Lazy-Metropolis weights
    only: their predictions for weighted topologies extrapolate from the
    features (hitting time, spectral gap, noise) of the weighted W.

    Examples
    --------
    On a path the optimum puts 1/2 on every link (Boyd, Diaconis, Sun and
    Xiao, 2006), SLEM cos(pi / n):

    >>> path = Topology([("a", "b"), ("b", "c"), ("c", "d")])
    >>> fastest = fastest_mixing_topology(path, ["a", "b", "c", "d"])
    >>> [round(w, 3) for w in fastest.weights]
    [0.5, 0.5, 0.5]
    >>> from topokit.kernels import spectral_gap
    >>> round(1 - spectral_gap(fastest.mixing_matrix(["a", "b", "c", "d"])), 4)
    0.7071
    >>> round(1 - spectral_gap(path.mixing_matrix(["a", "b", "c", "d"])), 4)  # Lazy-Metropolis
    0.8536
    """
    nodes, rows, cols = _checked_links(topology, nodes_or_net)
    min_weight = check_real(min_weight, "min_weight", low=0)
    adjacency = np.zeros((len(nodes), len(nodes)))
    adjacency[rows, cols] = adjacency[cols, rows] = 1.0
    result = fastest_mixing_weights(adjacency, method=method, tol=tol, max_iter=max_iter,
                                    seed=seed, initial_weights=_start_matrix(warm_start, nodes))
    if not result.converged:
        warnings.warn(
            f"fastest-mixing weights not certified within tol after {result.n_iter} steps "
            f"(SLEM {result.slem:.6g}, lower bound {result.lower_bound:.6g}); they are valid "
            "but may mix slower than the optimum: raise max_iter or tol",
            TopokitWarning, stacklevel=2,
        )
    weights = result.weights[rows, cols]
    kept = weights > min_weight
    if not _connected(len(nodes), rows[kept], cols[kept]):
        kept = weights > 0.0  # a light bridge is still a bridge
    edges = [edge for edge, keep in zip(topology.edges, kept, strict=True) if keep]
    return Topology(edges, topology.dp_devices, weights[kept].tolist())


def metropolis_hastings_topology(topology: Topology,
                                 nodes_or_net: Network | Iterable[Hashable]) -> Topology:
    """The topology with (non-lazy) Metropolis-Hastings weights 1 / (1 + max(d_i, d_j)).

    The simple alternative to :func:`fastest_mixing_topology`: the same links,
    the weights of :func:`topokit.metropolis` (the Metropolis-Hastings weights of
    Xiao and Boyd's "Fast linear iterations for distributed averaging", 2004;
    each device keeps the rest of its row).  Unlike the
    Lazy-Metropolis weights of the paper (self-weight at least 1/2), they do
    not halve the speed of mixing.

    Parameters
    ----------
    topology : Topology
    nodes_or_net : Network or iterable of node ids
        The device order; a network also checks the DeepPrivacy rules.

    Returns
    -------
    Topology
        The same links and DP devices, with weights.

    Raises
    ------
    InvalidInputError
        ``topology`` is not a Topology, or the nodes do not fit it.
    DisconnectedGraphError
        The topology is not connected.

    Examples
    --------
    >>> from topokit import Topology
    >>> path = metropolis_hastings_topology(Topology([(0, 1), (1, 2)]), [0, 1, 2])
    >>> path.weights  # 1 / (1 + max degree 2) on both links
    (0.3333333333333333, 0.3333333333333333)
    """
    from ..kernels import metropolis

    nodes, rows, cols = _checked_links(topology, nodes_or_net)
    matrix = metropolis(topology.graph(nodes))
    return topology.with_weights(matrix[rows, cols].tolist())
