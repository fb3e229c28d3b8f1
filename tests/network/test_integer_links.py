"""Topology's numpy path for integer node ids stores exactly what the general path does."""

from __future__ import annotations

import numpy as np
import pytest

from topokit import Topology
from topokit.errors import InvalidTopologyError
from topokit.network.core import _integer_pairs, node_sort_key


def general(edges):
    """The links as the general path orders them: canonical pairs by node_sort_key."""
    canonical = {(u, v) if node_sort_key(u) <= node_sort_key(v) else (v, u) for u, v in edges}
    return tuple(sorted(canonical, key=lambda p: (node_sort_key(p[0]), node_sort_key(p[1]))))


@pytest.mark.parametrize("seed", range(5))
def test_integer_links_are_stored_as_the_general_path_stores_them(seed):
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**6, size=40, replace=False) - 5 * 10**5  # negative ids too
    pairs = ids[rng.integers(0, 40, size=(300, 2))]
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]  # duplicates and both orientations stay
    as_tuples = [(int(u), int(v)) for u, v in pairs]
    expected = general(as_tuples)
    assert _integer_pairs(as_tuples) is not None  # the numpy path is taken
    for edges in (as_tuples, [tuple(p) for p in pairs], pairs, pairs.astype(np.int32)):
        stored = Topology(edges).edges
        assert stored == expected
        assert all(type(node) is int for pair in stored for node in pair)
    # An iterator takes the general path, to the same links.
    assert Topology(iter(as_tuples)).edges == expected


def test_ids_beyond_a_one_dimensional_key_are_sorted_as_rows():
    edges = [(0, 2**40), (2**40, 5), (-(2**40), 0), (5, 0)]
    assert Topology(edges).edges == general(edges)


def test_a_weight_sequence_follows_the_pairs_as_given():
    edges = [(2, 0), (1, 2), (0, 1)]
    weighted = Topology(edges, weights=[0.1, 0.2, 0.3])
    by_pair = dict(zip(weighted.edges, weighted.weights, strict=True))
    assert by_pair == {(0, 2): 0.1, (1, 2): 0.2, (0, 1): 0.3}


@pytest.mark.parametrize("edges", [
    [(True, 2)],  # a bool is a node id of its own, not 1
    [(1.0, 2)],
    [("a", "b")],
    [(1, 2, 3)],
    [(1, 2), (3,)],
    [(2**70, 1)],
])
def test_other_ids_and_malformed_links_take_the_general_path(edges):
    assert _integer_pairs(edges) is None


def test_a_bool_id_is_kept_as_given():
    stored = Topology([(True, 2)]).edges
    assert stored == general([(True, 2)]) and type(stored[0][0]) is bool


def test_a_self_loop_is_refused_in_the_same_words():
    with pytest.raises(InvalidTopologyError, match=r"^self-loop on node 3: a link must join"):
        Topology([(1, 2), (3, 3)])
    with pytest.raises(InvalidTopologyError, match=r"^self-loop on node 3: a link must join"):
        Topology(np.array([[1, 2], [3, 3]]))


def _network(ids, seed=0):
    import networkx as nx

    from topokit import Network

    rng = np.random.default_rng(seed)
    social = nx.relabel_nodes(nx.gnp_random_graph(len(ids), 0.3, seed=seed),
                              dict(enumerate(ids)))
    delay = rng.uniform(1.0, 5.0, size=(len(ids), len(ids)))
    delay = (delay + delay.T) / 2
    delay[0, 1] = delay[1, 0] = np.inf  # one pair the physical network cannot connect
    return Network(social, np.full(len(ids), 2.0), delay)


@pytest.mark.parametrize("ids", [
    list(range(30)),
    [7 * k - 40 for k in range(30)],  # negative, spread ids
    [k * 10**9 for k in range(30)],  # too spread for a table: the index path
    [f"d{k}" for k in range(30)],  # strings: the index path
], ids=["dense", "spread", "sparse", "strings"])
def test_link_lookups_agree_with_the_index(ids):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = _network(ids)
    rng = np.random.default_rng(1)
    pairs = [(ids[i], ids[j]) for i, j in rng.integers(0, len(ids), size=(200, 2)) if i != j]
    topology = Topology(pairs, dp_devices=ids[:10])
    rows, cols = net._link_ends(topology)
    assert rows.tolist() == [net.index[u] for u, _ in topology.edges]
    assert cols.tolist() == [net.index[v] for _, v in topology.edges]
    assert topology.non_social_edges(net) == [
        (u, v) for u, v in topology.edges if not net.social.has_edge(u, v)]
    assert np.array_equal(net.social_adjacency,
                          nx_adjacency(net))
    # Every broken rule is named as before, links in their stored order.
    problems = topology.violations(net)
    infinite = [p for p in problems if "infinite delay" in p]
    stored = [(u, v) for u, v in topology.edges
              if not np.isfinite(net.delay[net.index[u], net.index[v]])]
    assert infinite == [f"link {u!r}-{v!r} has infinite delay: the physical network cannot "
                        "connect it" for u, v in stored]


def nx_adjacency(net):
    import networkx as nx

    adjacency = nx.to_numpy_array(net.social, nodelist=net.nodes, weight=None)
    np.fill_diagonal(adjacency, 0.0)
    return (adjacency > 0).astype(float)


@pytest.mark.parametrize("unknown", [99, -1, 10**12])
def test_a_node_not_in_the_network_is_named(unknown):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = _network(list(range(30)))
    topology = Topology([(0, 2), (3, unknown)])
    with pytest.raises(KeyError):
        net._link_ends(topology)
    assert topology.violations(net) == [
        f"node {unknown!r} is not in the network (1 unknown node(s))"]
    assert tuple(sorted((3, unknown))) in topology.non_social_edges(net)  # not social


@pytest.mark.parametrize("weighted", [False, True])
def test_the_mixing_matrix_of_integer_ids_is_the_graphs_to_the_bit(weighted):
    rng = np.random.default_rng(3)
    ids = [int(k) for k in rng.permutation(60) * 3 + 7]  # unsorted, spread
    pairs = [(ids[i], ids[j]) for i, j in rng.integers(0, 50, size=(120, 2)) if i != j]
    topology = Topology(pairs)  # devices 50-59 have no link
    if weighted:
        degrees = np.bincount([ids.index(node) for pair in topology.edges for node in pair],
                              minlength=60)
        topology = topology.with_weights([1.0 / (1 + max(degrees[ids.index(u)],
                                                         degrees[ids.index(v)]))
                                          for u, v in topology.edges])
    named = {node: f"n{node}" for node in ids}  # the same topology through the graph path
    general_path = Topology([(named[u], named[v]) for u, v in topology.edges],
                            weights=topology.weights)
    assert topology._ends_among(ids) is not None
    assert general_path._ends_among([named[node] for node in ids]) is None
    assert np.array_equal(topology.mixing_matrix(ids),
                          general_path.mixing_matrix([named[node] for node in ids]))


def test_a_missing_or_repeated_node_still_takes_the_general_path():
    from topokit.errors import NodeNotFoundError

    topology = Topology([(0, 1), (1, 5)])
    with pytest.raises(NodeNotFoundError, match="links device 5"):
        topology.mixing_matrix([0, 1, 2])
    with pytest.raises(NodeNotFoundError, match="names a device twice"):
        topology.mixing_matrix([0, 1, 5, 5])


def test_a_set_or_a_graphs_edge_view_takes_the_numpy_path_too():
    import networkx as nx

    graph = nx.gnp_random_graph(40, 0.2, seed=4)
    expected = general(list(graph.edges))
    assert _integer_pairs(graph.edges) is not None
    assert _integer_pairs(set(graph.edges)) is not None
    assert Topology(graph.edges).edges == Topology(set(graph.edges)).edges == expected


def test_a_social_graph_changed_in_place_is_read_again():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = _network(list(range(30)))
    u, v = next((a, b) for a in range(30) for b in range(a + 1, 30)
                if not net.social.has_edge(a, b))
    link = Topology([(u, v)])
    assert link.non_social_edges(net) == [(u, v)]
    net.social.add_edge(u, v)
    assert link.non_social_edges(net) == []
    assert net.social_adjacency[net.index[u], net.index[v]] == 1.0
