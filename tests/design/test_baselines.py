"""Baselines: NDLF, DLFDP, DeepPrivacy-ERG, random topologies and the exhaustive optimum."""

import itertools

import networkx as nx
import numpy as np
import pytest

from topokit import Network, Topology, evaluate, load_example
from topokit.design import autotag
from topokit.design.baselines import dlfdp, erg, ndlf, optimum, random_topology
from topokit.errors import InvalidInputError
from topokit.testing.naive_autotag import random_network


@pytest.fixture(scope="module")
def toy():
    return load_example("toy")


def test_ndlf_is_the_social_graph_without_dp(toy):
    topology = ndlf(toy)
    assert set(topology.edges) == {tuple(sorted(e)) for e in toy.social.edges}
    assert not topology.dp_devices
    assert topology.validate(toy, require_connected=True)


def test_dlfdp_links_every_finite_pair_and_everyone_is_dp(toy):
    topology = dlfdp(toy)
    assert topology.n_links == 14 and ("A", "E") not in topology.edges  # d_AE = inf
    assert topology.dp_devices == frozenset(toy.nodes)
    topology.validate(toy, require_connected=True)


@pytest.mark.parametrize("seed", range(5))
def test_erg_is_connected_valid_and_reproducible(seed):
    net = random_network(10, seed)
    topology = erg(net, 15, seed=seed)
    topology.validate(net, require_connected=True)
    assert topology.n_links == 15
    assert topology.dp_devices == {x for e in topology.non_social_edges(net) for x in e}
    assert erg(net, 15, seed=seed) == topology
    assert erg(net, 15, seed=seed + 100) != topology


def test_erg_defaults_to_autotags_link_count(toy):
    design = autotag(toy)
    assert erg(toy, seed=0, reference=design).n_links == design.topology.n_links
    assert erg(toy, seed=0, reference=design.topology).n_links == design.topology.n_links
    assert erg(toy, seed=0).n_links == design.topology.n_links


def test_erg_rejects_impossible_link_counts(toy):
    with pytest.raises(InvalidInputError, match="n_links"):
        erg(toy, 4, seed=0)  # fewer than |V| - 1
    with pytest.raises(InvalidInputError, match="n_links"):
        erg(toy, 15, seed=0)  # only 14 finite pairs


@pytest.mark.parametrize("seed", range(10))
def test_random_topology_is_valid_and_connected(seed):
    net = random_network(8, seed)
    topology = random_topology(net, seed=seed)
    topology.validate(net, require_connected=True)
    fixed = random_topology(net, n_links=10, n_dp=4, seed=seed)
    fixed.validate(net, require_connected=True)
    assert fixed.n_links == 10 and len(fixed.dp_devices) == 4
    assert random_topology(net, n_dp=0, seed=seed).non_social_edges(net) == []


def _brute_force(net):
    """Every connected link set, scored with evaluate() (DP = ends of non-social links)."""
    pairs = [(u, v) for u, v in itertools.combinations(net.nodes, 2)
             if np.isfinite(net.delay[net.index[u], net.index[v]])]
    best = np.inf
    for size in range(net.n_devices - 1, len(pairs) + 1):
        for edges in itertools.combinations(pairs, size):
            graph = nx.Graph(edges)
            if graph.number_of_nodes() < net.n_devices or not nx.is_connected(graph):
                continue
            ends = {x for u, v in edges if not net.social.has_edge(u, v) for x in (u, v)}
            best = min(best, evaluate(net, Topology(edges, ends)).pseudo_time)
    return best


@pytest.mark.parametrize("seed", range(3))
def test_optimum_matches_a_brute_force_with_evaluate(seed):
    net = random_network(4, seed, p=0.4, inf_fraction=0.0)  # 64 link sets; evaluate() is slow
    best = optimum(net)
    assert best.metrics.pseudo_time == pytest.approx(_brute_force(net), rel=1e-9)
    best.topology.validate(net, require_connected=True)


def test_optimum_candidates_are_monotone_and_bound_the_baselines(toy):
    best = optimum(toy)
    values = [c.metrics.pseudo_time for c in best.candidates]
    assert values == sorted(values, reverse=True)
    assert [c.n for c in best.candidates] == list(range(7))
    assert all(len(c.topology.dp_devices) <= c.n for c in best.candidates)
    assert best.metrics.pseudo_time <= evaluate(toy, ndlf(toy)).pseudo_time
    assert best.metrics.pseudo_time <= evaluate(toy, toy.topology).pseudo_time
    assert best.metrics.pseudo_time <= autotag(toy).metrics.pseudo_time


def test_optimum_refuses_large_networks():
    net = Network(nx.path_graph(8), np.ones(8), np.ones((8, 8)))
    with pytest.raises(InvalidInputError, match="at most 7 devices"):
        optimum(net)
