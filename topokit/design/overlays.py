"""Marfoq et al.'s overlays as baselines, and their max-plus cycle time next to L.

Marfoq, Xu, Neglia and Vidal, "Throughput-Optimal Topology Design for
Cross-Silo Federated Learning", NeurIPS 2020 [1]_, model a round of
decentralized training as a max-plus linear system: device j starts round
k + 1 once it has finished its own step and received the round-k model of
every in-neighbour i, which takes ``r_i + d_ij`` after i started round k.
The time per round in the long run is the **cycle time** of the overlay's
delay digraph, its maximum cycle mean (Karp's algorithm [2]_).  This module
computes it (:func:`cycle_time`, :func:`max_cycle_mean`) and builds their
overlays as topokit topologies over the pairs with a finite delay:

- :func:`ring_overlay` (:func:`ring_tour`): a Hamiltonian ring, Christofides' tour;
- :func:`mst_overlay`: the minimum spanning tree;
- :func:`mbst_overlay`: a delta-MBST, a spanning tree of degree <= delta with a
  small bottleneck (their delta-Prim heuristic).

Links outside the social graph get DP devices at both ends, as
:func:`topokit.design.baselines.erg` does; on the bundled underlays
(``load_example("gaia")`` ...) the social graph is complete, so none does.

**Cycle time versus topokit's local iterate** L = max over links of
d_ij + max(r_i, r_j) (DeepPrivacy eq. 8).  topokit's links carry models
both ways; the delay digraph then has arcs i -> j and j -> i of weights
r_i + d_ij and r_j + d_ij, and a self-loop r_i at every device (its own
step).  What holds (:func:`round_times`, tested):

1. Any overlay, directed or not: a cycle's mean is at most its largest arc,
   so ``cycle_time <= max(max_i r_i, max over arcs of r_i + d_ij)
   <= max(L, max_i r_i)``, which is L when every device has a link.
2. Undirected overlay (a :class:`~topokit.network.Topology`): a simple
   cycle and its reverse together use every link of the cycle once each way,
   so the cycle's mean is the average of its links' two-arc means
   d_ij + (r_i + r_j) / 2.  Hence, exactly,
   ``cycle_time = max(max_i r_i, max over links of d_ij + (r_i + r_j) / 2)``,
   at least ``L - max over links |r_i - r_j| / 2``: **equal to L when every
   device computes equally fast** (Marfoq's setting, and the bundled
   underlays) and every device has a link.
3. A directed ring (Marfoq's ring: one arc per tour step) has one cycle of
   length n besides the self-loops, so its cycle time is
   ``max(max_i r_i, (sum_i r_i + tour length) / n)``, at most L and usually
   well below: a model crosses one tour step per round.

References
----------
.. [1] O. Marfoq, C. Xu, G. Neglia, R. Vidal, "Throughput-Optimal Topology
   Design for Cross-Silo Federated Learning", NeurIPS 2020,
   arXiv:2010.12229; https://github.com/omarfoq/communication-in-cross-silo-fl
   (Apache-2.0; topokit's code is its own, written from the paper).
.. [2] R. M. Karp, "A characterization of the minimum cycle mean in a
   digraph", Discrete Mathematics 23 (1978) 309-311.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import NamedTuple

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import check_int_at_least
from ..errors import InvalidInputError, NodeNotFoundError
from ..network.core import Network, Topology
from ..network.quantities import local_iterate

__all__ = ["ring_tour", "ring_overlay", "mst_overlay", "mbst_overlay", "max_cycle_mean",
           "cycle_time", "round_times", "RoundTimes"]


def _check_net(net: Network) -> Network:
    if not isinstance(net, Network):
        raise InvalidInputError(f"net must be a topokit Network; got {type(net).__name__}")
    return net


def _finite_graph(net: Network, weight: NDArray[np.float64]) -> nx.Graph:
    """The pairs with a finite delay, each with ``weight[i, j]`` as ``weight``."""
    if net.n_devices < 2:
        raise InvalidInputError("an overlay needs at least 2 devices")
    rows, cols = np.nonzero(np.triu(np.isfinite(net.delay), 1))
    graph = nx.Graph()
    graph.add_nodes_from(net.nodes)
    graph.add_weighted_edges_from(
        (net.nodes[i], net.nodes[j], float(weight[i, j])) for i, j in zip(rows, cols, strict=True))
    if not nx.is_connected(graph):
        raise InvalidInputError("the pairs with a finite delay do not connect every device, "
                                "so no spanning overlay exists")
    return graph


def _topology(net: Network, edges: Iterable[tuple[Hashable, Hashable]]) -> Topology:
    """The links ``edges``; the ends of non-social links are DP devices."""
    edges = list(edges)
    ends = {x for u, v in edges if not net.social.has_edge(u, v) for x in (u, v)}
    return Topology(edges, ends).validate(net)


def ring_tour(net: Network) -> list[Hashable]:
    """The device order of Marfoq's ring: a travelling-salesman tour of the delays d_ij.

    Their ring is the tour Christofides' algorithm finds on the connectivity
    graph; topokit runs networkx's
    ``approximation.traveling_salesman_problem(..., method=christofides)`` on
    the pairs with a finite delay (which works on their shortest-path
    closure, so the 3/2 guarantee holds for it) and shortcuts repeated
    devices.  Weighting a step by d_ij rather than their r_i + d_ij changes
    nothing: every tour adds each r_i once.

    Returns
    -------
    list
        Every device once, starting at ``net.nodes[0]``; the ring closes from the
        last back to the first.

    Raises
    ------
    InvalidInputError
        The finite-delay pairs do not connect the devices, or no ring over them
        was found (a shortcut step joins a pair without a finite delay).

    Examples
    --------
    >>> from topokit import load_example
    >>> tour = ring_tour(load_example("gaia"))
    >>> len(tour), tour[0]
    (11, 'Virginia')
    """
    graph = _finite_graph(_check_net(net), net.delay)
    if net.n_devices == 2:
        return list(net.nodes)
    walk = nx.approximation.traveling_salesman_problem(
        graph, weight="weight", cycle=True, method=nx.approximation.christofides)
    tour = list(dict.fromkeys(walk))  # shortcut: keep each device's first visit
    start = tour.index(net.nodes[0])
    tour = tour[start:] + tour[:start]
    for u, v in zip(tour, tour[1:] + tour[:1], strict=True):
        if not graph.has_edge(u, v):
            raise InvalidInputError(f"no ring over the pairs with a finite delay was found "
                                    f"({u!r}-{v!r} has none)")
    return tour


def ring_overlay(net: Network) -> Topology:
    """Marfoq's ring overlay as an undirected topology: the links of :func:`ring_tour`.

    Marfoq's ring sends one way only; for its cycle time pass the tour's arcs
    to :func:`cycle_time` (see there).  Two devices give one link.

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("gaia")
    >>> ring = ring_overlay(net)
    >>> ring.n_links, sorted(d for _, d in ring.graph(net.nodes).degree)[-1]
    (11, 2)
    """
    tour = ring_tour(net)
    return _topology(net, zip(tour, tour[1:] + tour[:1], strict=True))


def mst_overlay(net: Network) -> Topology:
    """Marfoq's MST overlay: the minimum spanning tree of the link times d_ij + max(r_i, r_j).

    A minimum spanning tree is also a minimum *bottleneck* spanning tree, so
    no spanning tree has a smaller local iterate L (eq. 8).  With equal r_i
    (Marfoq's setting) the weights are theirs, r + d_ij, and the tree is also
    the spanning tree of least cycle time (see the module docstring, point 2).
    networkx's ``minimum_spanning_tree`` (Kruskal) builds it.

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("gaia")
    >>> mst_overlay(net).n_links
    10
    """
    graph = _finite_graph(_check_net(net), net.link_times)
    tree = nx.minimum_spanning_tree(graph, weight="weight", algorithm="kruskal")
    return _topology(net, tree.edges)


def mbst_overlay(net: Network, delta: int) -> Topology:
    """Marfoq's delta-MBST overlay: a spanning tree of degree <= delta with a small bottleneck.

    The minimum bottleneck spanning tree of bounded degree is NP-hard for
    every fixed delta >= 2 (delta = 2 is a Hamiltonian path), and Marfoq et
    al. build it with the delta-Prim heuristic (Prim's algorithm that grows
    only from tree devices of degree < delta), as topokit does here, from
    ``net.nodes[0]``, on the two-arc means d_ij + (r_i + r_j) / 2 (their
    weight, up to a factor 2) so that the tree's bottleneck is its cycle time
    (module docstring, point 2).  They run it for every delta from 2 to n - 1
    and keep the tree of least cycle time; do the same with
    ``min((mbst_overlay(net, d) for d in range(2, n)), key=lambda t: cycle_time(net, t))``.
    Their delta = 2 candidate from the cube of the MST is not built.

    Parameters
    ----------
    net : Network
    delta : int
        The largest degree, >= 2.

    Raises
    ------
    InvalidInputError
        ``delta`` < 2, or delta-Prim stuck (every tree device full or without
        a finite-delay pair to a device outside).

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("geant")
    >>> tree = mbst_overlay(net, 3)
    >>> tree.n_links, max(d for _, d in tree.graph(net.nodes).degree) <= 3
    (39, True)
    >>> mbst_overlay(net, 1)
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: delta must be an integer >= 2; got 1
    """
    delta = check_int_at_least(delta, "delta", 2)
    r = _check_net(net).compute_time
    weight = net.delay + (r[:, None] + r[None, :]) / 2
    _finite_graph(net, weight)
    n = net.n_devices
    inside = np.zeros(n, dtype=bool)
    inside[0] = True
    degree = np.zeros(n, dtype=np.int64)
    edges = []
    for _ in range(n - 1):
        open_rows = inside & (degree < delta)
        candidates = np.where(open_rows[:, None] & ~inside[None, :], weight, np.inf)
        flat = int(np.argmin(candidates))
        i, j = divmod(flat, n)
        if not np.isfinite(candidates[i, j]):
            raise InvalidInputError(f"delta-Prim is stuck at {int(inside.sum())} of {n} devices "
                                    f"with delta={delta}; try a larger delta")
        edges.append((net.nodes[i], net.nodes[j]))
        inside[j] = True
        degree[i] += 1
        degree[j] += 1
    return _topology(net, edges)


def max_cycle_mean(weights: ArrayLike) -> float:
    """The maximum cycle mean of a weighted digraph, by Karp's algorithm, in O(n m).

    Parameters
    ----------
    weights : array-like of shape (n, n)
        ``weights[i, j]`` is the weight of arc i -> j, ``-inf`` where there is
        none (max-plus zero); the diagonal holds self-loops.

    Returns
    -------
    float
        max over cycles C of (sum of C's weights) / (arcs of C); ``-inf`` if
        the digraph has no cycle.

    Notes
    -----
    Karp (1978) with every node a source: D_k(v), the heaviest walk of k
    arcs ending at v, for k = 0..n (D_0 = 0); then
    ``max_v min_{0<=k<n} (D_n(v) - D_k(v)) / (n - k)`` over the v with a
    walk of n arcs.  One pass over the m arcs per k.

    Examples
    --------
    >>> ninf = -np.inf
    >>> max_cycle_mean([[ninf, 4.0, ninf], [ninf, ninf, 1.0], [1.0, 6.0, ninf]])
    3.5
    """
    matrix = np.asarray(weights, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise InvalidInputError(f"weights must be a non-empty square matrix; got shape "
                                f"{matrix.shape}")
    if np.isnan(matrix).any() or np.isposinf(matrix).any():
        raise InvalidInputError("weights must be finite or -inf (no arc); got NaN or +inf")
    n = matrix.shape[0]
    heads, tails = np.nonzero(matrix.T > -np.inf)  # sorted by head
    if heads.size == 0:
        return -np.inf
    arc_weight = matrix[tails, heads]
    targets, starts = np.unique(heads, return_index=True)
    walks = np.full((n + 1, n), -np.inf)
    walks[0] = 0.0
    for k in range(1, n + 1):
        walks[k, targets] = np.maximum.reduceat(walks[k - 1, tails] + arc_weight, starts)
    last = walks[n]
    ends = last > -np.inf
    if not ends.any():
        return -np.inf
    with np.errstate(invalid="ignore"):
        ratios = (last[ends] - walks[:n, ends]) / (n - np.arange(n))[:, None]
    return float(np.max(np.min(ratios, axis=0)))


def _arc_indices(net: Network, overlay: Topology | Iterable[Sequence[Hashable]]
                 ) -> tuple[NDArray[np.int64], NDArray[np.int64], bool]:
    _check_net(net)
    if isinstance(overlay, Topology):
        overlay.validate(net)
        pairs, directed = list(overlay.edges), False
    else:
        try:
            pairs = [tuple(arc) for arc in overlay]
        except TypeError:
            raise InvalidInputError("overlay must be a Topology or an iterable of (i, j) "
                                    f"arcs; got {type(overlay).__name__}") from None
        directed = True
    tails, heads = [], []
    for pair in pairs:
        if len(pair) != 2:
            raise InvalidInputError(f"an arc must be a pair (i, j); got {pair!r}")
        for node in pair:
            if node not in net.index:
                raise NodeNotFoundError(f"arc {pair!r}: {node!r} is not a device of the network")
        i, j = net.index[pair[0]], net.index[pair[1]]
        if i == j or not np.isfinite(net.delay[i, j]):
            raise InvalidInputError(f"arc {pair!r} joins a device to itself or a pair "
                                    "without a finite delay")
        tails.append(i)
        heads.append(j)
    tails_a, heads_a = np.asarray(tails, dtype=np.int64), np.asarray(heads, dtype=np.int64)
    if not directed:
        tails_a, heads_a = np.concatenate([tails_a, heads_a]), np.concatenate([heads_a, tails_a])
    return tails_a, heads_a, directed


def cycle_time(net: Network, overlay: Topology | Iterable[Sequence[Hashable]]) -> float:
    """Marfoq et al.'s cycle time of an overlay: seconds per round in the long run.

    The maximum cycle mean (:func:`max_cycle_mean`) of the delay digraph with
    arc i -> j of weight r_i + d_ij (device j receives i's model of a round
    that long after i started it) and a self-loop r_i at every device.

    Parameters
    ----------
    net : Network
    overlay : Topology or iterable of (i, j)
        A topology (every link both ways) or arcs, one way each: Marfoq's
        directed ring is ``zip(tour, tour[1:] + tour[:1], strict=True)`` of :func:`ring_tour`.

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("gaia")
    >>> tour = ring_tour(net)
    >>> one_way = cycle_time(net, zip(tour, tour[1:] + tour[:1], strict=True))
    >>> both_ways = cycle_time(net, ring_overlay(net))
    >>> bool(one_way < both_ways)
    True
    """
    tails, heads, _ = _arc_indices(net, overlay)
    r = net.compute_time
    weights = np.full((net.n_devices, net.n_devices), -np.inf)
    weights[tails, heads] = r[tails] + net.delay[tails, heads]
    np.fill_diagonal(weights, r)
    return max_cycle_mean(weights)


class RoundTimes(NamedTuple):
    """One overlay's time per round under both models, in seconds (:func:`round_times`)."""

    #: Marfoq et al.'s max-plus cycle time (:func:`cycle_time`).
    cycle_time: float
    #: topokit's local iterate L (eq. 8) of the overlay's pairs.
    local_iterate: float


def round_times(net: Network, overlay: Topology | Iterable[Sequence[Hashable]]) -> RoundTimes:
    """The cycle time and topokit's local iterate L of an overlay, side by side.

    L is taken over the overlay's pairs (for arcs, their undirected pairs).
    ``cycle_time <= max(L, max_i r_i)`` always, with equality for a
    topology on devices that compute equally fast (module docstring).

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("gaia")
    >>> times = round_times(net, mst_overlay(net))
    >>> bool(np.isclose(times.cycle_time, times.local_iterate))   # equal r_i
    True
    """
    tails, heads, _ = _arc_indices(net, overlay)
    pairs = Topology([(net.nodes[i], net.nodes[j]) for i, j in zip(tails, heads, strict=True)])
    return RoundTimes(cycle_time(net, overlay), local_iterate(net, pairs))
