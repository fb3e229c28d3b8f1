"""Network model, physical model, topologies, file format, metrics and predictor."""

import json

import networkx as nx
import numpy as np
import pytest

from topokit import (
    GlobalIteratePredictor,
    Network,
    Topology,
    evaluate,
    load_example,
    load_network,
    load_topology,
    save_network,
    save_topology,
)
from topokit.errors import (
    DisconnectedGraphError,
    InvalidInputError,
    InvalidTopologyError,
    NetworkFileError,
    NetworkFileNotFoundError,
    NodeNotFoundError,
)
from topokit.network.physical import LTE_RATE_MBPS, pairwise_delays


@pytest.fixture
def toy():
    return load_example("toy")


def test_example_3_pseudo_time(toy):
    metrics = evaluate(toy, toy.topology)
    assert metrics.local_iterate == 52.0  # Example 1: link DE, 45 + 7
    assert metrics.phi == 0.5
    assert metrics.hitting_time == pytest.approx(25.967, abs=1e-3)
    # Example 3 rounds H to 26 (G' = 87.672, 4558.96); with the exact H it is 87.662 / 4558.4.
    assert metrics.predicted_global_iterate == pytest.approx(87.662, abs=1e-3)
    assert metrics.pseudo_time == pytest.approx(4559.0, abs=1.0)
    assert GlobalIteratePredictor().predict([[26, 0.5]])[0] * 52 == pytest.approx(4558.96, abs=0.01)


def test_toy_dominant_link_is_de(toy):
    times = toy.link_times
    i, j = toy.index["D"], toy.index["E"]
    assert times[i, j] == 52.0
    finite = [times[toy.index[u], toy.index[v]]
              for u, v in toy.topology.edges if {u, v} != {"D", "E"}]
    assert max(finite) < 52.0


def test_social_graph_of_toy_is_connected_without_topology_links(toy):
    toy.require_connected()
    assert not toy.social.has_edge("C", "E") and not toy.social.has_edge("D", "E")


def test_metrics_to_dict_keys(toy):
    record = evaluate(toy).to_dict()
    for key in ("hitting_time", "spectral_gap", "phi", "local_iterate",
                "predicted_global_iterate", "pseudo_time"):
        assert isinstance(record[key], float)
    json.dumps(record)


def test_phi_counts_ends_of_non_social_links_only(toy):
    # Declaring F a DP device does not change phi: F is on no non-social link.
    topology = Topology(toy.topology.edges, toy.topology.dp_devices | {"F"})
    assert evaluate(toy, topology).phi == 0.5
    assert evaluate(toy, topology).n_dp_devices == 4


def test_topology_rules(toy):
    with pytest.raises(InvalidTopologyError, match="not a DP device"):
        Topology([("C", "E")], dp_devices=["C"]).validate(toy)
    with pytest.raises(InvalidTopologyError, match="infinite delay"):
        Topology([("A", "E")], dp_devices=["A", "E"]).validate(toy)
    with pytest.raises(NodeNotFoundError, match="'Z' is not in the network"):
        Topology([("A", "Z")]).validate(toy)
    with pytest.raises(InvalidTopologyError, match="self-loop"):
        Topology([("A", "A")])
    problems = Topology([("C", "E"), ("A", "E")], dp_devices=["C"]).violations(toy)
    assert len(problems) == 3
    assert Topology([("A", "B")]).violations(toy, require_connected=True)[-1].startswith(
        "the topology is disconnected"
    )


def test_topology_canonical_and_hashable():
    first = Topology([("B", "A"), ("A", "B"), ("C", "A")], ["C"])
    second = Topology([("A", "C"), ("A", "B")], {"C"})
    assert first == second and hash(first) == hash(second)
    assert first.edges == (("A", "B"), ("A", "C"))
    mixed = Topology([(1, "a"), ("a", 2)])
    assert len(mixed.edges) == 2


def test_disconnected_topology_metrics(toy):
    metrics = evaluate(toy, Topology([("A", "B")]))
    assert metrics.hitting_time == np.inf and metrics.spectral_gap == 0.0
    assert not metrics.connected and metrics.pseudo_time == np.inf


@pytest.mark.parametrize("suffix", [".json", ".graphml"])
def test_round_trip(tmp_path, toy, suffix):
    path = save_network(toy, tmp_path / f"net{suffix}")
    loaded = load_network(path)
    if suffix == ".graphml":  # GraphML node ids are strings; the toy uses strings already
        assert loaded.nodes == toy.nodes
    assert loaded == toy
    assert np.array_equal(loaded.delay, toy.delay)


def test_round_trip_positions_and_integer_nodes(tmp_path):
    social = nx.cycle_graph(5)
    rng = np.random.default_rng(1)
    positions = rng.uniform(0, 300, size=(5, 2))
    net = Network.from_positions(social, positions, compute_time=["rpi2", "rpi3", "rpi4", 100, 50],
                                 lte=["cat-m1", "cat-m2", "cat-m2", "cat-m1", "cat-m2"])
    loaded = load_network(save_network(net, tmp_path / "n.json"))
    assert loaded == net and loaded.nodes == [0, 1, 2, 3, 4]
    assert loaded.compute_time[:3].tolist() == [770.0, 312.0, 114.0]


def test_physical_model():
    positions = np.array([[0.0, 0.0], [50.0, 0.0], [500.0, 0.0]])
    delay = pairwise_delays(positions, lte=["cat-m1", "cat-m2", "cat-m2"])
    assert delay[0, 1] == pytest.approx(32 / 72.2)  # Wi-Fi under 100 m
    assert delay[0, 2] == pytest.approx(37.6)  # Cat-M1 end is the slower: Table I's 37.6 s
    assert delay[1, 2] == pytest.approx(9.4)  # both Cat-M2: Table I's 9.4 s
    assert LTE_RATE_MBPS["cat-m1"] == pytest.approx(0.851, abs=1e-3)
    far = pairwise_delays(positions, max_range_m=200)
    assert np.isinf(far[0, 2]) and np.isfinite(far[0, 1])


def test_network_input_errors():
    social = nx.path_graph(3)
    with pytest.raises(InvalidInputError, match="shape"):
        Network(social, [1, 1, 1], np.zeros((2, 2)))
    with pytest.raises(InvalidInputError, match="NaN"):
        Network(social, [1, 1, 1], np.full((3, 3), np.nan))
    with pytest.raises(InvalidInputError, match="symmetric"):
        Network(social, [1, 1, 1], np.arange(9.0).reshape(3, 3))
    with pytest.raises(InvalidInputError, match="one value per node"):
        Network(social, [1, 1], np.zeros((3, 3)))
    with pytest.raises(InvalidInputError, match="unknown device class"):
        Network(social, ["rpi9"] * 3, np.zeros((3, 3)))
    net = Network(nx.Graph([(0, 1), (2, 3)]), [1] * 4, np.zeros((4, 4)))
    with pytest.raises(DisconnectedGraphError, match="2 components"):
        net.require_connected()


def test_file_errors(tmp_path):
    with pytest.raises(NetworkFileNotFoundError, match="no such file"):
        load_network(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(NetworkFileError, match="malformed JSON at line 1"):
        load_network(bad)
    bad.write_text(json.dumps({"nodes": [{"id": 0}], "edges": []}))
    with pytest.raises(NetworkFileError, match="compute_time"):
        load_network(bad)
    bad.write_text(json.dumps([1, 2]))
    with pytest.raises(NetworkFileError, match="node-link"):
        load_network(bad)


def test_topology_file_round_trip(tmp_path, toy):
    path = save_topology(toy.topology, tmp_path / "t.json")
    assert load_topology(path) == toy.topology


def test_predictor_fit_save_load(tmp_path):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(20, 120, 50), rng.uniform(0, 1, 50)])
    y = 0.5 * X[:, 0] + 40 * X[:, 1] + 10 + rng.normal(0, 0.01, 50)
    predictor = GlobalIteratePredictor().fit(X, y)
    np.testing.assert_allclose(predictor.coef_, [0.5, 40], atol=0.01)
    loaded = GlobalIteratePredictor.load(predictor.save(tmp_path / "p.json"))
    np.testing.assert_allclose(loaded.predict(X), predictor.predict(X))
    with pytest.raises(InvalidInputError, match="expected 2 features"):
        predictor.predict(np.ones((2, 3)))


def test_predictor_with_noise_variance_must_be_fitted():
    with pytest.raises(ValueError, match="fit this predictor"):
        GlobalIteratePredictor(use_noise_variance=True).predict([[1.0, 0.5, 0.1]])


def test_predictor_sklearn_conventions():
    from sklearn.base import clone

    predictor = GlobalIteratePredictor(positive=True)
    assert clone(predictor).get_params() == predictor.get_params()
