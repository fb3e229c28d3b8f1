"""Marfoq et al.'s overlays and the max-plus cycle time (topokit.design.overlays)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from topokit.design.overlays import (
    cycle_time,
    max_cycle_mean,
    mbst_overlay,
    mst_overlay,
    ring_overlay,
    ring_tour,
    round_times,
)
from topokit.errors import InvalidInputError, NodeNotFoundError
from topokit.network.core import Network, Topology
from topokit.network.examples import load_example
from topokit.network.quantities import local_iterate

UNDERLAY_NAMES = ["gaia", "aws_na", "geant", "exodus", "ebone"]


def _brute_max_cycle_mean(weights: np.ndarray) -> float:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(weights)))
    graph.add_edges_from(zip(*np.nonzero(weights > -np.inf), strict=True))
    means = [sum(weights[a, b] for a, b in zip(c, c[1:] + c[:1], strict=True)) / len(c)
             for c in nx.simple_cycles(graph)]
    return max(means, default=-np.inf)


def _random_net(rng: np.random.Generator, n: int, *, missing: float = 0.0,
                equal_r: bool = False) -> Network:
    points = rng.uniform(0, 10, size=(n, 2))
    delay = np.linalg.norm(points[:, None] - points[None], axis=-1)
    holes = np.triu(rng.random((n, n)) < missing, 1)
    delay[holes | holes.T] = np.inf
    r = np.full(n, 3.0) if equal_r else rng.uniform(0.5, 6.0, n)
    social = nx.gnp_random_graph(n, 0.6, seed=int(rng.integers(1 << 30)))
    return Network(social, r, delay)


def test_karp_equals_brute_force_on_random_digraphs():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 8))
        weights = np.where(rng.random((n, n)) < 0.45, rng.normal(0, 5, (n, n)), -np.inf)
        assert max_cycle_mean(weights) == pytest.approx(_brute_max_cycle_mean(weights),
                                                        abs=1e-9)


def test_karp_no_cycle_and_bad_input():
    assert max_cycle_mean(np.triu(np.ones((4, 4)), 1) - np.tril(np.full((4, 4), np.inf))
                          ) == -np.inf
    for bad in ([[np.nan]], [[np.inf]], np.ones((2, 3))):
        with pytest.raises(InvalidInputError) as error:
            max_cycle_mean(bad)
        assert "\n" not in str(error.value)


def test_undirected_cycle_time_closed_form_and_bound():
    """Point 2 of the module docstring: max(max r, max over links d + (r_i + r_j) / 2) <= L."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        net = _random_net(rng, int(rng.integers(2, 8)))
        edges = [e for e in itertools.combinations(net.nodes, 2) if rng.random() < 0.5]
        topology = Topology(edges, net.nodes)
        r, d = net.compute_time, net.delay
        pair = [d[i, j] + (r[i] + r[j]) / 2 for i, j in edges]
        expected = max([r.max(), *pair])
        times = round_times(net, topology)
        assert times.cycle_time == pytest.approx(expected, abs=1e-12)
        assert times.cycle_time <= max(local_iterate(net, topology), r.max()) + 1e-12
        assert times.local_iterate == pytest.approx(local_iterate(net, topology))


def test_directed_ring_cycle_time_is_the_tour_mean():
    rng = np.random.default_rng(11)
    for _ in range(20):
        net = _random_net(rng, int(rng.integers(3, 8)))
        tour = list(rng.permutation(net.nodes))
        arcs = list(zip(tour, tour[1:] + tour[:1], strict=True))
        idx = [net.index[u] for u in tour]
        length = sum(net.delay[i, j] for i, j in zip(idx, idx[1:] + idx[:1], strict=True))
        expected = max(net.compute_time.max(), (net.compute_time.sum() + length) / len(idx))
        assert cycle_time(net, arcs) == pytest.approx(expected, abs=1e-12)
        # Point 1: no cycle mean exceeds the largest arc (or self-loop).
        assert cycle_time(net, arcs) <= round_times(net, arcs).local_iterate + 1e-12


@pytest.mark.parametrize("name", UNDERLAY_NAMES)
def test_overlays_on_the_underlays(name):
    net = load_example(name)
    n = net.n_devices
    tour = ring_tour(net)
    assert sorted(tour) == sorted(net.nodes) and tour[0] == net.nodes[0]
    ring = ring_overlay(net)
    for topology, links in ((ring, n), (mst_overlay(net), n - 1),
                            (mbst_overlay(net, 3), n - 1)):
        topology.validate(net, require_connected=True)
        assert topology.n_links == links and not topology.dp_devices
        graph = topology.graph(net.nodes)
        assert nx.is_connected(graph)
        assert max(d for _, d in graph.degree) <= (2 if links == n else n)
        times = round_times(net, topology)
        # Equal compute times: the cycle time of an undirected overlay is exactly L.
        assert times.cycle_time == pytest.approx(times.local_iterate, rel=1e-12)
    # One way round the ring is never slower than both ways.
    assert cycle_time(net, zip(tour, tour[1:] + tour[:1], strict=True)) <= cycle_time(net, ring)


def test_mbst_degree_bound_and_mst_bottleneck_against_all_spanning_trees():
    rng = np.random.default_rng(5)
    for _ in range(6):
        net = _random_net(rng, 5)
        times = net.link_times
        best_l = min(max(times[net.index[u], net.index[v]] for u, v in t.edges)
                     for t in nx.SpanningTreeIterator(nx.complete_graph(net.nodes)))
        mst = mst_overlay(net)
        assert local_iterate(net, mst) == pytest.approx(best_l)   # MST is a bottleneck tree
        # Unbounded delta-Prim is Prim on the two-arc means: the tree of least cycle time.
        r, d = net.compute_time, net.delay
        best_cycle = min(max(r.max(), *(d[net.index[u], net.index[v]]
                                        + (r[net.index[u]] + r[net.index[v]]) / 2
                                        for u, v in t.edges))
                         for t in nx.SpanningTreeIterator(nx.complete_graph(net.nodes)))
        assert cycle_time(net, mbst_overlay(net, 4)) == pytest.approx(best_cycle, abs=1e-12)
        for delta in (2, 3, 4):
            tree = mbst_overlay(net, delta).validate(net, require_connected=True)
            assert tree.n_links == 4
            assert max(d for _, d in tree.graph(net.nodes).degree) <= delta
        # Non-social links get DP devices at both ends.
        for topology in (mst, mbst_overlay(net, 2), ring_overlay(net)):
            non_social = [e for e in topology.edges if not net.social.has_edge(*e)]
            assert {x for e in non_social for x in e} == set(topology.dp_devices)


def test_ring_is_within_christofides_factor_of_the_best_tour():
    rng = np.random.default_rng(9)
    for _ in range(5):
        net = _random_net(rng, 7)          # Euclidean delays: metric
        first = net.nodes[0]

        def length(order, net=net):
            d = net.delay
            idx = [net.index[u] for u in order]
            return sum(d[i, j] for i, j in zip(idx, idx[1:] + idx[:1], strict=True))

        best = min(length([first, *rest]) for rest in itertools.permutations(net.nodes[1:]))
        assert length(ring_tour(net)) <= 1.5 * best + 1e-9


def test_bad_inputs_are_one_line():
    net = load_example("gaia")
    for call, error in ((lambda: mbst_overlay(net, 1), InvalidInputError),
                        (lambda: mbst_overlay(net, 2.0), InvalidInputError),
                        (lambda: cycle_time(net, [("Virginia", "Mars")]), NodeNotFoundError),
                        (lambda: cycle_time(net, [("Virginia",)]), InvalidInputError),
                        (lambda: mst_overlay("gaia"), InvalidInputError)):
        with pytest.raises(error) as raised:
            call()
        assert "\n" not in str(raised.value)
    # A star of finite delays: delta-Prim with delta = 2 gets stuck, the ring does not exist.
    delay = np.full((5, 5), np.inf)
    delay[0, :] = delay[:, 0] = 1.0
    np.fill_diagonal(delay, 0.0)
    star = Network(nx.star_graph(4), np.ones(5), delay)
    with pytest.raises(InvalidInputError, match="stuck"):
        mbst_overlay(star, 2)
    with pytest.raises(InvalidInputError, match="no ring"):
        ring_tour(star)
    assert mbst_overlay(star, 4).n_links == 4
