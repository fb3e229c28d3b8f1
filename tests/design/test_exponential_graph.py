"""The static exponential graph of Ying et al. (NeurIPS 2021) with DeepPrivacy's DP ends."""

import networkx as nx
import numpy as np
import pytest

from topokit import Network, load_example
from topokit.design.baselines import exponential_graph
from topokit.errors import InvalidInputError
from topokit.network.siot import siot


def complete_delay_network(n: int) -> Network:
    """n devices on a social path, every pair with the same finite delay."""
    return Network(nx.path_graph(n), [1.0] * n, np.ones((n, n)))


def neighbours(topology, node) -> set:
    return {v for u, v in topology.edges if u == node} | {u for u, v in topology.edges if v == node}


# Distinct offsets +/- 2^k mod n for k = 0..floor(log2(n - 1)), counted by hand:
# n = 8: 1, 2, 4, 6, 7 (4 = -4); n = 16: 1, 2, 4, 8, 12, 14, 15 (8 = -8);
# n = 13: 1, 2, 4, 8 and 12, 11, 9, 5.
@pytest.mark.parametrize(("n", "degree"), [(8, 5), (16, 7), (13, 8)])
def test_every_device_has_the_exponential_degree(n, degree):
    net = complete_delay_network(n)
    for seed in (None, 0):
        topology = exponential_graph(net, seed=seed)
        assert all(len(neighbours(topology, node)) == degree for node in net.nodes)
        assert topology.n_links == n * degree // 2


def test_node_order_ring_links_i_to_i_plus_minus_powers_of_two():
    net = complete_delay_network(13)
    topology = exponential_graph(net)
    for i in range(13):
        expected = {(i + s * 2**k) % 13 for k in range(4) for s in (1, -1)}
        assert neighbours(topology, i) == expected


@pytest.mark.parametrize("name", ["toy", "siot16", "siot32"])
def test_valid_connected_and_dp_ends_are_the_non_social_ends(name):
    net = load_example(name)
    for seed in (None, 3):
        topology = exponential_graph(net, seed=seed)
        topology.validate(net, require_connected=True)
        assert nx.is_connected(topology.graph(net.nodes))
        ends = {x for u, v in topology.edges if not net.social.has_edge(u, v) for x in (u, v)}
        assert topology.dp_devices == frozenset(ends)
        assert all(np.isfinite(net.delay[net.index[u], net.index[v]]) for u, v in topology.edges)


def test_infinite_delay_pairs_are_left_out_on_the_toy():
    net = load_example("toy")  # A-E cannot connect
    topology = exponential_graph(net)
    assert ("A", "E") not in topology.edges
    # 6 devices: offsets 1, 2, 4, 5, so every pair except those 3 apart: 12 links, A-E gone.
    assert topology.n_links == 11


def test_a_disconnected_ring_is_joined_by_the_fastest_links():
    # Only pairs 3 (or 5) apart can connect, and those are exactly the pairs the 8-device
    # exponential graph lacks: the graph is empty until the joining links are added.
    n = 8
    delay = np.full((n, n), np.inf)
    ring = [(i, (i + 3) % n) for i in range(n)]
    for i, j in ring:
        delay[i, j] = delay[j, i] = 1.0
    delay[0, 3] = delay[3, 0] = 10.0  # the one slow link: the spanning path avoids it
    social = nx.Graph()
    social.add_nodes_from(range(n))  # node order 0..7: the ring order
    social.add_edges_from(ring)
    net = Network(social, [1.0] * n, delay)
    topology = exponential_graph(net)
    assert set(topology.edges) == {tuple(sorted(e)) for e in ring if set(e) != {0, 3}}
    assert not topology.dp_devices  # every joining link is social
    topology.validate(net, require_connected=True)


def test_no_connected_topology_is_one_clear_error():
    delay = np.full((4, 4), np.inf)
    delay[0, 1] = delay[1, 0] = delay[2, 3] = delay[3, 2] = 1.0
    net = Network(nx.path_graph(4), [1.0] * 4, delay)
    with pytest.raises(InvalidInputError, match="cannot connect every device"):
        exponential_graph(net)


def test_the_seed_reproduces_the_ring_order():
    net = siot(24, seed=5, colocation_range_m=100.0)
    assert exponential_graph(net, seed=7) == exponential_graph(net, seed=7)
    assert exponential_graph(net, seed=7) != exponential_graph(net, seed=8)
    assert exponential_graph(net) == exponential_graph(net, seed=None)


def test_one_and_two_devices():
    assert exponential_graph(complete_delay_network(1)).n_links == 0
    topology = exponential_graph(complete_delay_network(2))
    assert topology.edges == ((0, 1),) and not topology.dp_devices


@pytest.mark.parametrize("n", [8, 13, 16])
def test_the_spectrum_is_the_circulant_one(n):
    """On a ring in node order with every pair usable, the exponential graph's mixing matrix
    is circulant, so its eigenvalues are the discrete Fourier transform of its first row,
    sum_j W[0, j] cos(2 pi k j / n) (the matrix is symmetric): an independent reference."""
    net = complete_delay_network(n)
    W = exponential_graph(net).mixing_matrix(net.nodes)
    assert np.allclose(W, np.roll(np.roll(W, 1, axis=0), 1, axis=1))  # circulant
    k, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    expected = np.sort((W[0] * np.cos(2 * np.pi * k * j / n)).sum(axis=1))
    assert np.allclose(np.sort(np.linalg.eigvalsh(W)), expected, atol=1e-12)
    # One eigenvalue 1 (consensus), every other strictly inside: a positive spectral gap.
    assert np.isclose(expected[-1], 1.0) and expected[-2] < 1 - 1e-9


def test_validate_trains_the_exponential_graph():
    from topokit import validate

    net = load_example("toy")
    result = validate(net, "exponential,ndlf", trials=1, rounds=3, targets=[0.5],
                      audit_rounds=0)
    assert result.topologies["exponential"] == exponential_graph(net)
    assert set(result.frame["kind"]) == {"exponential", "ndlf"}
