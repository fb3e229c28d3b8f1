"""Baseline topologies of the DeepPrivacy paper and the exhaustive CoTOPO optimum.

- :func:`ndlf`: non-DP decentralized learning, E_c = E_s, nobody adds noise.
- :func:`dlfdp`: DP decentralized learning, the complete graph over the pairs
  the physical network can connect, every device adds noise.
- :func:`erg`: DeepPrivacy-ERG (Sec. VI-C), a connected Erdős-Rényi graph; the
  ends of its non-social links add noise.
- :func:`exponential_graph`: the static exponential graph of Ying et al.
  (NeurIPS 2021) over the finite-delay pairs; the ends of its non-social
  links add noise.
- :func:`random_topology`: any valid connected topology, drawn at random.
- :func:`optimum`: the true optimum of CoTOPO under the predictor, by
  exhaustive search, for networks of at most 7 devices.
"""

from __future__ import annotations

import time
from typing import Any

import networkx as nx
import numpy as np
from numba import njit, prange

from .._random import SeedLike, check_random_state, sample_connected_edges
from ..errors import InvalidInputError
from ..kernels import PARALLEL_FLAGS
from ..kernels.unchecked import hitting_times_one, lazy_metropolis_one
from ..network.core import Network, Topology
from ._autotag import _linear_coefficients, _problem
from .metrics import evaluate
from .noise import dp_in_node_order, untold_noise
from .predictor import GlobalIteratePredictor
from .result import Candidate, Design

__all__ = ["ndlf", "dlfdp", "erg", "exponential_graph", "ring_order", "random_topology",
           "optimum", "MAX_OPTIMUM_DEVICES"]

#: :func:`optimum` refuses larger networks (7 devices: 2^21 link sets).
MAX_OPTIMUM_DEVICES = 7

_MAX_TRIES = 1000


def _finite_pairs(net: Network) -> list[tuple[Any, Any]]:
    problem = _problem(net)
    return [(net.nodes[i], net.nodes[j]) for i, j in zip(problem.pi, problem.pj, strict=True)]


def ndlf(net: Network) -> Topology:
    """NDLF: the social links (those with a finite delay), no DP device.

    Examples
    --------
    >>> from topokit import load_example
    >>> ndlf(load_example("toy")).n_links
    7
    """
    rows, cols = net._social_ends()
    usable = np.isfinite(net.delay[rows, cols])
    ends = np.column_stack([rows[usable], cols[usable]])
    nodes = np.asarray(net.nodes)
    if nodes.dtype.kind in "iu" and nodes.ndim == 1:  # a million links at numpy's pace
        return Topology(nodes[ends], ())
    return Topology([(net.nodes[i], net.nodes[j]) for i, j in ends.tolist()], ())


def dlfdp(net: Network) -> Topology:
    """DLFDP: every pair with a finite delay is linked and every device adds DP noise.

    Examples
    --------
    >>> from topokit import load_example
    >>> topology = dlfdp(load_example("toy"))   # A-E cannot connect
    >>> topology.n_links, len(topology.dp_devices)
    (14, 6)
    """
    return Topology(_finite_pairs(net), net.nodes)


def _with_dp_ends(net: Network, edges: list) -> Topology:
    ends = {x for u, v in edges if not net.social.has_edge(u, v) for x in (u, v)}
    return Topology(edges, ends)


def erg(
    net: Network,
    n_links: int | None = None,
    *,
    seed: SeedLike = None,
    reference: Design | Topology | None = None,
) -> Topology:
    """DeepPrivacy-ERG: a connected Erdős-Rényi G(n, m) graph over the finite-delay pairs.

    The m links are drawn uniformly among the pairs the physical network can
    connect, redrawn until the graph is connected; the ends of the links that
    are not social links become DP devices (as in the paper's Sec. VI-C).

    Parameters
    ----------
    net : Network
    n_links : int, optional
        m.  Default: as many links as AutoTag's design (``reference``, or
        ``autotag(net)`` if not given).  The paper does not say how many links
        its ERG has; matching AutoTag's count is our choice.
    seed : int, Generator or None
    reference : Design or Topology, optional
        Whose link count to copy when ``n_links`` is None.

    Raises
    ------
    InvalidInputError
        If m < |V| - 1, m exceeds the number of finite-delay pairs, or no
        connected draw is found in 1000 tries.
    """
    pairs = _finite_pairs(net)
    V = net.n_devices
    if n_links is None:
        if reference is None:
            from ._autotag import autotag

            reference = autotag(net)
        topology = reference.topology if isinstance(reference, Design) else reference
        if not isinstance(topology, Topology):
            raise InvalidInputError(
                f"reference must be a Design or a Topology; got {type(reference).__name__}"
            )
        n_links = topology.n_links
    n_links = _check_count(n_links, "n_links", max(V - 1, 0), len(pairs))
    rng = check_random_state(seed)
    pair_indices = np.array([(net.index[u], net.index[v]) for u, v in pairs], dtype=np.intp)
    chosen = sample_connected_edges(V, pair_indices.reshape(-1, 2), n_links, rng,
                                    max_draws=_MAX_TRIES)
    if chosen is not None:
        return _with_dp_ends(net, [pairs[k] for k in sorted(chosen)])
    raise InvalidInputError(
        f"no connected random graph with {n_links} links found in {_MAX_TRIES} draws; "
        "use more links (n_links)"
    )


def _exponential_offsets(n: int) -> list[int]:
    """The distinct ring offsets +/- 2^k mod n (k = 0..floor(log2(n - 1))), 0 left out."""
    if n < 2:
        return []
    top = (n - 1).bit_length() - 1  # floor(log2(n - 1))
    return sorted({sign * 2**k % n for k in range(top + 1) for sign in (1, -1)} - {0})


def _joining_links(net: Network, edges: list) -> list[tuple[Any, Any]]:
    """The fastest finite-delay links that join the components of ``edges`` (Kruskal).

    Raises InvalidInputError if even every finite-delay pair leaves the devices apart.
    """
    components = nx.utils.UnionFind(net.nodes)
    for u, v in edges:
        components.union(u, v)
    times, index = net.link_times, net.index
    # Fastest first; ties broken by node order, so the result does not depend on set order.
    pairs = sorted(_finite_pairs(net), key=lambda p: (times[index[p[0]], index[p[1]]],
                                                      index[p[0]], index[p[1]]))
    added = []
    for u, v in pairs:
        if components[u] != components[v]:
            components.union(u, v)
            added.append((u, v))
    if len({components[node] for node in net.nodes}) > 1:
        raise InvalidInputError(
            "the physical network cannot connect every device (the finite-delay pairs leave "
            "them in separate groups), so no connected topology exists; check the delays"
        )
    return added


def ring_order(net: Network, seed: SeedLike = None) -> list[Any]:
    """The devices in the order of the exponential graph's ring (and of the peers built like
    it, :mod:`topokit.design.peers`): position i holds ``ring_order(net)[i]``.

    None keeps the node order ``net.nodes`` (deterministic); an int or a
    Generator shuffles the devices at random (the same int, the same order).

    >>> from topokit import load_example
    >>> ring_order(load_example("toy"))
    ['A', 'B', 'C', 'D', 'E', 'F']
    """
    order = list(net.nodes)
    if seed is not None:
        order = [order[k] for k in check_random_state(seed).permutation(len(order))]
    return order


def exponential_graph(net: Network, *, seed: SeedLike = None) -> Topology:
    """The static exponential graph of Ying et al. over the finite-delay pairs.

    The devices are placed on a ring; the device at position i is linked to
    the devices at positions i + 2^k and i - 2^k (mod |V|) for k = 0, ...,
    floor(log2(|V| - 1)) [1]_, the undirected version of the paper's directed
    graph (whose node i sends to i + 2^k).  Every device then has about
    2 log2 |V| distinct neighbours (2m - 1 when |V| = 2^m).  Pairs with an
    infinite delay are left out; if that disconnects the graph, the fastest
    finite-delay links (smallest d_ij + max(r_i, r_j)) that join its
    components are added, Kruskal-style.  As in DeepPrivacy-ERG, the ends of
    the links that are not social links become the DP devices (the fewest a
    valid topology allows).

    Parameters
    ----------
    net : Network
    seed : int, Generator or None
        The ring order: None keeps the node order (``net.nodes``, so the
        result is deterministic); an int or a Generator shuffles the devices
        on the ring at random (the same int gives the same graph).

    Returns
    -------
    Topology
        Valid on ``net`` and connected.

    Raises
    ------
    InvalidInputError
        If no connected topology exists (the finite-delay pairs do not
        connect every device).

    References
    ----------
    .. [1] B. Ying, K. Yuan, Y. Chen, H. Hu, P. Pan and W. Yin, "Exponential
       graph is provably efficient for decentralized deep training", NeurIPS
       2021.

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> from topokit import Network
    >>> net = Network(nx.cycle_graph(8), [1.0] * 8, np.ones((8, 8)))
    >>> topology = exponential_graph(net)
    >>> sorted(v for u, v in topology.edges if u == 0)   # 0 +/- 1, 2, 4 (mod 8)
    [1, 2, 4, 6, 7]
    >>> sorted(topology.dp_devices) == list(range(8))   # every device ends a non-ring link
    True
    """
    order = ring_order(net, seed)
    n, finite = len(order), np.isfinite(net.delay)
    edges = [(order[p], order[(p + offset) % n]) for p in range(n)
             for offset in _exponential_offsets(n)
             if finite[net.index[order[p]], net.index[order[(p + offset) % n]]]]
    return _with_dp_ends(net, edges + _joining_links(net, edges))


def _check_count(value: Any, name: str, low: int, high: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise InvalidInputError(f"{name} must be an integer; got {value!r}")
    if not low <= value <= high:
        raise InvalidInputError(f"{name} must be between {low} and {high} here; got {value}")
    return int(value)


def random_topology(
    net: Network,
    *,
    n_links: int | None = None,
    n_dp: int | None = None,
    seed: SeedLike = None,
) -> Topology:
    """A random valid, connected topology.

    Draws a DP set D of ``n_dp`` devices; the allowed links are the social
    links and the pairs inside D (all with a finite delay); takes a random
    spanning tree of the allowed links and adds random allowed links up to
    ``n_links``.  ``dp_devices`` is D (some of them may end no non-social link).

    Parameters
    ----------
    n_links : int, optional
        Default: uniform between |V| - 1 and the number of allowed links.
    n_dp : int, optional
        Default: uniform in 0..|V|.
    seed : int, Generator or None

    Raises
    ------
    InvalidInputError
        If no DP set of that size gives a connected set of allowed links (in
        100 draws), or ``n_links`` is out of range for the drawn set.
    """
    rng = check_random_state(seed)
    V = net.n_devices
    if n_dp is None:
        n_dp = int(rng.integers(0, V + 1))
    n_dp = _check_count(n_dp, "n_dp", 0, V)
    pairs = _finite_pairs(net)
    for _ in range(100):
        dp = {net.nodes[k] for k in rng.choice(V, size=n_dp, replace=False)}
        allowed = [(u, v) for u, v in pairs if net.social.has_edge(u, v) or (u in dp and v in dp)]
        graph = nx.Graph()
        graph.add_nodes_from(net.nodes)
        for u, v in allowed:
            graph.add_edge(u, v, weight=float(rng.random()))
        if nx.is_connected(graph):
            break
    else:
        raise InvalidInputError(
            f"no DP set of {n_dp} devices lets social and DP links connect every device"
        )
    high = len(allowed)
    if n_links is None:
        n_links = int(rng.integers(V - 1, high + 1))
    n_links = _check_count(n_links, "n_links", V - 1, high)
    tree = {tuple(sorted(e, key=net.index.__getitem__))
            for e in nx.minimum_spanning_edges(graph, data=False)}
    rest = [p for p in allowed if tuple(sorted(p, key=net.index.__getitem__)) not in tree]
    extra = rng.choice(len(rest), size=n_links - len(tree), replace=False) if rest else []
    edges = list(tree) + [rest[k] for k in sorted(extra)]
    return Topology(edges, dp)


# ---------------------------------------------------------------------------------------------
# Exhaustive optimum
# ---------------------------------------------------------------------------------------------

@njit(**PARALLEL_FLAGS)
def _exhaustive(n_dev, pi, pj, social, t, coef_h, coef_phi, intercept, n_chunks):
    """Best pseudo time per number of DP ends, over every link set (bit k = pair k)."""
    P = pi.shape[0]
    total = 1 << P
    best = np.full((n_chunks, n_dev + 1), np.inf)
    best_mask = np.full((n_chunks, n_dev + 1), -1, dtype=np.int64)
    chunk = (total + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        adjacency = np.zeros((n_dev, n_dev))
        transition = np.empty((n_dev, n_dev))
        times = np.empty((n_dev, n_dev))
        parent = np.empty(n_dev, dtype=np.int64)
        dp = np.zeros(n_dev, dtype=np.bool_)
        for mask in range(c * chunk, min(total, (c + 1) * chunk)):
            for x in range(n_dev):
                parent[x] = x
                dp[x] = False
            components = n_dev
            L = 0.0
            for k in range(P):
                if (mask >> k) & 1:
                    a = pi[k]
                    b = pj[k]
                    if not social[k]:
                        dp[a] = True
                        dp[b] = True
                    if t[k] > L:
                        L = t[k]
                    while parent[a] != a:
                        a = parent[a]
                    while parent[b] != b:
                        b = parent[b]
                    if a != b:
                        parent[a] = b
                        components -= 1
            if components != 1:
                continue
            n_dp = 0
            for x in range(n_dev):
                if dp[x]:
                    n_dp += 1
            adjacency[:, :] = 0.0
            for k in range(P):
                if (mask >> k) & 1:
                    adjacency[pi[k], pj[k]] = 1.0
                    adjacency[pj[k], pi[k]] = 1.0
            lazy_metropolis_one(adjacency, transition)
            hitting_times_one(transition, times)
            H = times.max()
            pseudo = (coef_h * H + coef_phi * n_dp / n_dev + intercept) * L
            if pseudo < best[c, n_dp]:
                best[c, n_dp] = pseudo
                best_mask[c, n_dp] = mask
    return best, best_mask


def optimum(net: Network, predictor: GlobalIteratePredictor | None = None) -> Design:
    """The exact CoTOPO optimum under the predictor, by exhaustive search (|V| <= 7).

    Every set of finite-delay links is tried; its DP devices are the ends of
    its non-social links (the fewest a valid topology allows; extra DP devices
    would not change phi, which counts those ends).  Returns a :class:`Design`
    whose candidate n is the best topology with at most n DP devices, so it
    compares budget by budget with :func:`topokit.autotag`.

    Raises
    ------
    InvalidInputError
        If the network has more than 7 devices (2^(|V|(|V|-1)/2) link sets).
    DisconnectedGraphError
        If the social graph is disconnected.
    """
    V = net.n_devices
    if V > MAX_OPTIMUM_DEVICES:
        raise InvalidInputError(
            f"optimum() is exhaustive over 2^(|V|(|V|-1)/2) link sets and accepts at most "
            f"{MAX_OPTIMUM_DEVICES} devices; got {V}. Use topokit.autotag for larger networks."
        )
    net.require_connected()
    started = time.perf_counter()
    coef_h, coef_phi, intercept = _linear_coefficients(predictor)
    problem = _problem(net)
    nodes = net.nodes
    if V == 1:
        masks_by_ndp = {0: 0}
    else:
        n_chunks = 64 if problem.pi.shape[0] > 10 else 1
        best, best_mask = _exhaustive(V, problem.pi, problem.pj, problem.social, problem.t,
                                      coef_h, coef_phi, intercept, n_chunks)
        masks_by_ndp = {}
        for n_dp in range(V + 1):
            column = best[:, n_dp]
            if np.isfinite(column).any():
                masks_by_ndp[n_dp] = int(best_mask[int(np.argmin(column)), n_dp])

    def topology_of(mask: int) -> Topology:
        edges = [(nodes[problem.pi[k]], nodes[problem.pj[k]])
                 for k in range(problem.pi.shape[0]) if (mask >> k) & 1]
        return _with_dp_ends(net, edges)

    scored = {n_dp: (topology_of(mask), None) for n_dp, mask in masks_by_ndp.items()}
    scored = {n_dp: (topo, evaluate(net, topo, predictor)) for n_dp, (topo, _) in scored.items()}
    if not scored:
        raise InvalidInputError("no connected topology with finite-delay links exists")
    candidates = []
    running = None
    for n in range(V + 1):
        if n in scored and (running is None or scored[n][1].pseudo_time < running[1].pseudo_time):
            running = scored[n]
        if running is None:  # e.g. n = 0 when social links have infinite delay
            continue
        candidates.append(Candidate(n=n, topology=running[0], metrics=running[1],
                                    phase="optimum", step=-1))
    chosen = min(candidates, key=lambda c: (c.metrics.pseudo_time, c.n))
    return Design(
        topology=chosen.topology,
        metrics=chosen.metrics,
        candidates=tuple(candidates),
        n=chosen.n,
        stats={"n_devices": V, "link_sets": 1 << int(problem.pi.shape[0]),
               "seconds": time.perf_counter() - started},
        noise=untold_noise(dp_in_node_order(chosen.topology, net)),
    )
