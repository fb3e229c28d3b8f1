"""Topologies, designs and networks of numpy-integer node ids are JSON.

A networkx graph whose nodes are ``numpy.int64`` (``nx.relabel_nodes`` with an
array's values, or ids read from a numpy table) gave topologies whose
``to_dict()`` kept the numpy ids, and ``json.dumps`` refused them.
"""

import json

import networkx as nx
import numpy as np
import pytest

import topokit
from topokit import Topology, load_network, save_network
from topokit.network.formats import network_to_graph

N_DEVICES = 7


def _numpy_id_network(n: int = N_DEVICES) -> topokit.Network:
    """A ring with one chord on ``numpy.int64`` ids, delays from random positions."""
    ids = {i: np.int64(i) for i in range(n)}
    social = nx.relabel_nodes(nx.cycle_graph(n), ids)
    social.add_edge(ids[0], ids[n // 2])
    positions = np.random.default_rng(0).uniform(0, 100, size=(n, 2))
    delay = np.linalg.norm(positions[:, None] - positions[None], axis=2) / 100 + 0.01
    np.fill_diagonal(delay, 0.0)
    return topokit.Network(social, [1.0] * n, delay)


@pytest.fixture(scope="module")
def net():
    return _numpy_id_network()


@pytest.fixture(scope="module")
def design(net):
    return topokit.optimize(net, seed=0)


def _ids(data: dict) -> list:
    return [node for edge in data["edges"] for node in edge] + list(data["dp_devices"])


def test_the_network_keeps_numpy_ids(net):
    assert all(isinstance(node, np.int64) for node in net.nodes)


def test_topology_to_dict_is_json_and_reads_back_equal(design):
    data = design.topology.to_dict()
    assert _ids(data) and all(type(node) is int for node in _ids(data))
    text = json.dumps(data)
    assert Topology.from_dict(json.loads(text)) == design.topology


def test_design_to_dict_is_json_and_its_topology_reads_back_equal(design):
    text = json.dumps(design.to_dict(include_timings=True))
    data = json.loads(text)
    assert Topology.from_dict(data["topology"]) == design.topology
    assert [Topology.from_dict(c["topology"]) for c in data["candidates"]] == [
        c.topology for c in design.candidates]


def test_weights_are_plain_floats():
    topology = Topology([(np.int64(0), np.int64(1))], weights=[np.float64(0.25)])
    data = topology.to_dict()
    assert data == {"edges": [[0, 1]], "dp_devices": [], "weights": [0.25]}
    assert type(data["weights"][0]) is float
    assert Topology.from_dict(json.loads(json.dumps(data))) == topology


def test_ordinary_ids_are_written_as_before():
    strings = Topology([("hub", "a"), ("hub", "b")], dp_devices=["a"], weights=[0.5, 0.25])
    assert strings.to_dict() == {"edges": [["a", "hub"], ["b", "hub"]], "dp_devices": ["a"],
                                 "weights": [0.5, 0.25]}
    integers = Topology([(2, 1), (1, 0)], dp_devices=[2])
    assert integers.to_dict() == {"edges": [[0, 1], [1, 2]], "dp_devices": [2]}


def test_tuple_ids_with_numpy_parts_stay_tuples_of_plain_values():
    u, v = ("row", np.int64(1)), ("row", np.int64(2))
    data = Topology([(u, v)], dp_devices=[u]).to_dict()
    assert data == {"edges": [[("row", 1), ("row", 2)]], "dp_devices": [("row", 1)]}
    assert type(data["edges"][0][0][1]) is int
    assert Topology.from_dict(json.loads(json.dumps(data))) == Topology([(u, v)], [u])


def test_network_with_numpy_ids_saves_and_loads(net, design, tmp_path):
    path = save_network(net.with_topology(design.topology), tmp_path / "network.json")
    loaded = load_network(path)
    assert loaded.nodes == [int(node) for node in net.nodes]
    assert loaded.topology == design.topology
    assert sorted(map(sorted, loaded.social.edges)) == sorted(map(sorted, net.social.edges))
    np.testing.assert_array_equal(loaded.delay, net.delay)


def test_network_to_graph_has_plain_ids(net):
    graph = network_to_graph(net)
    assert all(type(node) is int for node in graph)
    assert all(type(u) is int and type(v) is int for u, v in graph.edges)
    json.dumps(nx.node_link_data(graph, edges="edges"))


def test_round_trip_from_ten_numpy_ids():
    # numpy ids order as their values (np.int64(10) after np.int64(2)), as plain ints do.
    ids = [np.int64(i) for i in (1, 2, 10)]
    topology = Topology([(ids[0], ids[1]), (ids[1], ids[2])], dp_devices=[ids[2]])
    assert Topology.from_dict(json.loads(json.dumps(topology.to_dict()))) == topology
