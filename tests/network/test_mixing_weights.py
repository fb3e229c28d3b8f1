"""Topologies that carry mixing weights: construction, files, training, features, FMMC."""

from __future__ import annotations

import json
import warnings

import networkx as nx
import numpy as np
import pytest

from topokit import evaluate, load_example, save_network
from topokit.design.features import topology_features
from topokit.design.mixing import fastest_mixing_topology
from topokit.errors import (
    DisconnectedGraphError,
    InputFileError,
    InvalidInputError,
    InvalidTopologyError,
    NodeNotFoundError,
    TopokitWarning,
)
from topokit.kernels import lazy_metropolis
from topokit.network.core import Network, Topology
from topokit.network.formats import load_network, load_topology, save_topology
from topokit.testing import naive_kernels
from topokit.testing.naive_training import naive_train
from topokit.training import DPConfig, train

PATH_EDGES = [(0, 1), (1, 2), (2, 3)]


def independent_mixing(nodes, edges, weights) -> np.ndarray:
    """W = I - sum_l w_l (e_i - e_j)(e_i - e_j)^T, one rank-one term per link."""
    index = {node: k for k, node in enumerate(nodes)}
    matrix = np.eye(len(nodes))
    for (u, v), w in zip(edges, weights, strict=True):
        a = np.zeros(len(nodes))
        a[index[u]], a[index[v]] = 1.0, -1.0
        matrix -= w * np.outer(a, a)
    return matrix


def slem(matrix: np.ndarray) -> float:
    values = np.linalg.eigvalsh(matrix)  # ascending; the last is the consensus eigenvalue 1
    return float(max(abs(values[0]), abs(values[-2])))


def lazy_equal_weights(topology: Topology) -> list[float]:
    """The Lazy-Metropolis weights 1 / (2 max(deg_i, deg_j)) of every link (eq. 4)."""
    degree = nx.Graph(topology.edges).degree
    return [1.0 / (2.0 * max(degree[u], degree[v])) for u, v in topology.edges]


@pytest.fixture(scope="module")
def toy_fastest(toy):
    """The toy network's stored topology with fastest-mixing weights (the SDP)."""
    return fastest_mixing_topology(toy.topology, toy)


# --------------------------------------------------------------------------------------------
# Construction, equality, repr
# --------------------------------------------------------------------------------------------


def test_weights_follow_the_edges_as_given_and_are_stored_in_edge_order():
    topology = Topology([(2, 1), (0, 1)], weights=[0.3, 0.2])
    assert topology.edges == ((0, 1), (1, 2))
    assert topology.weights == (0.2, 0.3)
    assert Topology(topology.edges, topology.dp_devices, topology.weights) == topology
    by_mapping = Topology([(0, 1), (1, 2)], weights={(1, 0): 0.2, (2, 1): 0.3})
    assert by_mapping == topology and hash(by_mapping) == hash(topology)


def test_weights_by_edge_maps_each_stored_link_to_its_weight():
    topology = Topology([("b", "a"), ("c", "b")], weights=[0.3, 0.2])
    assert topology.weights_by_edge == {("a", "b"): 0.3, ("b", "c"): 0.2}
    assert Topology(topology.edges, (), topology.weights_by_edge) == topology
    assert Topology([("a", "b")]).weights_by_edge is None  # Lazy-Metropolis: nothing stored


def test_equality_and_hash_include_the_weights():
    plain = Topology(PATH_EDGES)
    weighted = plain.with_weights([0.5, 0.5, 0.5])
    assert weighted != plain
    assert weighted != plain.with_weights([0.5, 0.25, 0.5])
    assert weighted.with_weights(None) == plain
    assert len({plain, weighted, plain.with_weights([0.5, 0.5, 0.5])}) == 2


def test_derived_topologies_never_carry_weights_to_other_links():
    import dataclasses

    weighted = Topology(PATH_EDGES, [0], weights=[0.5, 0.25, 0.5])
    assert Topology(weighted.edges[:2], weighted.dp_devices).weights is None
    moved = dataclasses.replace(weighted, edges=[(0, 1), (0, 2), (0, 3)])
    assert moved.weights is None  # same link count, yet the weights are not reused
    assert weighted.with_weights([0.1, 0.2, 0.3]).weights == (0.1, 0.2, 0.3)


def test_repr_is_unchanged_without_weights_and_short_with_them():
    plain = Topology([("a", "b")], ["a"])
    assert repr(plain) == "Topology(edges=(('a', 'b'),), dp_devices=frozenset({'a'}))"
    assert repr(plain.with_weights([1 / 3])) == (
        "Topology(edges=(('a', 'b'),), dp_devices=frozenset({'a'}), weights=(0.333333,))"
    )


def test_topology_without_links_takes_empty_weights():
    empty = Topology((), (), weights=[])
    assert empty.weights == () and empty.mixing_matrix(["a", "b"]).tolist() == [[1, 0], [0, 1]]


@pytest.mark.parametrize(
    ("weights", "error", "message"),
    [
        pytest.param([-0.1, 0.2, 0.2], InvalidInputError, "link 0-1 must be a finite number > 0",
                     id="negative"),
        pytest.param([0.0, 0.2, 0.2], InvalidInputError, "leave the link out", id="zero"),
        pytest.param([np.nan, 0.2, 0.2], InvalidInputError, "got nan", id="nan"),
        pytest.param([np.inf, 0.2, 0.2], InvalidInputError, "got inf", id="inf"),
        pytest.param([True, 0.2, 0.2], InvalidInputError, "must be a number > 0; got True",
                     id="bool"),
        pytest.param(["0.2", 0.2, 0.2], InvalidInputError, "got '0.2'", id="text"),
        pytest.param([0.6, 0.6, 0.2], InvalidTopologyError,
                     "device 1 sum to 1.2 > 1, so its self-weight", id="node-sum-above-one"),
        pytest.param([0.2, 0.2], InvalidInputError, "one entry per edge given (3, in the same "
                     "order); got 2", id="too-few"),
        pytest.param([0.2] * 4, InvalidInputError, "got 4", id="too-many"),
        pytest.param({(0, 1): 0.2, (1, 2): 0.2, (2, 3): 0.2, (0, 3): 0.1}, InvalidTopologyError,
                     "weights names 0-3, which is not a link", id="weight-on-a-non-link"),
        pytest.param({(0, 1): 0.2, (1, 2): 0.2}, InvalidInputError,
                     "weights has no entry for link 2-3", id="link-without-weight"),
        pytest.param({(0, 1): 0.2, (1, 0): 0.3, (1, 2): 0.2, (2, 3): 0.2}, InvalidTopologyError,
                     "link 0-1 is given two weights", id="two-weights-for-one-link"),
        pytest.param(np.eye(4) * 0.1, InvalidInputError, "not an array of shape (4, 4)",
                     id="a-matrix"),
        pytest.param("0.2", InvalidInputError, "weights must be a mapping", id="a-string"),
        pytest.param(0.2, InvalidInputError, "weights must be a mapping", id="a-number"),
    ],
)
def test_bad_weights_are_one_clear_error(weights, error, message):
    with pytest.raises(error) as caught:
        Topology(PATH_EDGES, weights=weights)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_node_sums_may_exceed_one_by_round_off_only():
    # Solver weights summing to 1 + 1e-16 are accepted and give a self-weight of 0 ...
    almost = Topology([(0, 1), (1, 2)], weights=[0.7, 0.3 + 1e-15])
    assert almost.mixing_matrix([0, 1, 2])[1, 1] == 0.0
    # ... but 1 + 1e-9 is a real excess.
    with pytest.raises(InvalidTopologyError, match="sum to 1.000000001 > 1"):
        Topology([(0, 1), (1, 2)], weights=[0.7, 0.3 + 1e-9])


# --------------------------------------------------------------------------------------------
# The mixing matrix
# --------------------------------------------------------------------------------------------


def test_weighted_mixing_matrix_is_the_sum_of_rank_one_link_terms():
    rng = np.random.default_rng(0)
    graph = nx.connected_watts_strogatz_graph(12, 4, 0.3, seed=1)
    nodes = [f"d{k}" for k in graph]
    edges = [(nodes[u], nodes[v]) for u, v in graph.edges]
    weights = rng.uniform(0.01, 1.0, len(edges)) / (1 + max(d for _, d in graph.degree))
    topology = Topology(edges, weights=weights)
    order = list(rng.permutation(nodes))
    matrix = topology.mixing_matrix(order)
    np.testing.assert_allclose(matrix, independent_mixing(order, edges, weights), atol=1e-15)
    assert np.array_equal(matrix, matrix.T) and (matrix >= 0).all()
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-15)


def test_lazy_metropolis_equal_weights_give_lazy_metropolis_to_the_bit(toy):
    topology = toy.topology
    weighted = topology.with_weights(lazy_equal_weights(topology))
    expected = lazy_metropolis(topology.graph(toy.nodes))
    assert np.array_equal(weighted.mixing_matrix(toy.nodes), expected)
    assert np.array_equal(topology.mixing_matrix(toy.nodes), expected)


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def test_weights_round_trip_through_topology_and_network_files(tmp_path, toy, toy_fastest):
    path = save_topology(toy_fastest, tmp_path / "weighted.json")
    assert json.loads(path.read_text())["weights"] == list(toy_fastest.weights)
    assert load_topology(path) == toy_fastest  # floats are written with repr: exact
    net = toy.with_topology(toy_fastest)
    for name in ("net.json", "net.graphml"):
        loaded = load_network(save_network(net, tmp_path / name))
        assert loaded.topology == toy_fastest and loaded == net
    assert net != toy  # the network's equality sees the weights


def test_unweighted_files_are_written_byte_for_byte_as_before(tmp_path, toy):
    # The bundled toy network was written before topologies had weights.
    from topokit.network.examples import data_dir

    written = save_network(toy, tmp_path / "toy.json")
    assert written.read_bytes() == (data_dir() / "toy.json").read_bytes()
    topology = save_topology(Topology([("b", "a"), ("b", "c")], ["c"]), tmp_path / "t.json")
    assert topology.read_text() == (
        '{\n "edges": [\n  [\n   "a",\n   "b"\n  ],\n  [\n   "b",\n   "c"\n  ]\n ],\n'
        ' "dp_devices": [\n  "c"\n ]\n}\n'
    )


def test_file_weights_align_with_the_edges_of_the_file(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"edges": [[2, 1], [0, 1]], "dp_devices": [],
                                "weights": [0.3, 0.2]}))
    assert load_topology(path).weights == (0.2, 0.3)
    path.write_text(json.dumps({"edges": [[0, 1]], "dp_devices": [], "weights": None}))
    assert load_topology(path).weights is None


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ("0.5", "'weights' must be a list of numbers"),
        ([0.5, 0.5], "one entry per edge given (1, in the same order); got 2"),
        ([-0.5], "must be a finite number > 0"),
        ([None], "must be a number > 0; got None"),
        ([1.5], "sum to 1.5 > 1"),
    ],
)
def test_bad_weights_in_a_file_name_the_file(tmp_path, weights, message):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"edges": [[0, 1]], "dp_devices": [], "weights": weights}))
    with pytest.raises(InputFileError) as caught:
        load_topology(path)
    assert str(caught.value).startswith(str(path)) and message in str(caught.value)


# --------------------------------------------------------------------------------------------
# Training mixes with the weights
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"dp": DPConfig(max_grad_norm=0.5), "partition": 0.5}])
def test_training_with_weights_matches_the_per_device_reference(toy, digits, toy_fastest,
                                                                 kwargs):
    run = train(toy, toy_fastest, *digits, rounds=8, seed=3, **kwargs)
    rounds, accuracy, params = naive_train(toy, toy_fastest, *digits, rounds=8, seed=3, **kwargs)
    np.testing.assert_array_equal(run.rounds, rounds)
    np.testing.assert_allclose(run.accuracy, accuracy)
    np.testing.assert_allclose(run.final_params, params, rtol=1e-9, atol=1e-12)
    # ... and the weights matter: the Lazy-Metropolis run ends elsewhere.
    plain = train(toy, toy.topology, *digits, rounds=8, seed=3, **kwargs)
    assert not np.allclose(plain.final_params, run.final_params, rtol=1e-6)


def test_many_devices_sparse_mixing_with_weights_matches_the_reference(digits):
    n = 70
    social = nx.connected_watts_strogatz_graph(n, 4, 0.2, seed=1)
    net = Network(social, np.full(n, 5.0), np.full((n, n), 10.0))
    rng = np.random.default_rng(4)
    largest = max(d for _, d in social.degree)
    weights = rng.uniform(0.05, 1.0, social.number_of_edges()) / largest
    topology = Topology(social.edges, dp_devices=range(0, n, 3), weights=weights)
    run = train(net, topology, *digits, rounds=3, batch_size=8, seed=2)
    _, accuracy, params = naive_train(net, topology, *digits, rounds=3, batch_size=8, seed=2)
    np.testing.assert_allclose(run.accuracy, accuracy)
    np.testing.assert_allclose(run.final_params, params, rtol=1e-9, atol=1e-12)


def test_lazy_metropolis_equal_weights_train_exactly_as_no_weights(toy, digits):
    weighted = toy.topology.with_weights(lazy_equal_weights(toy.topology))
    kwargs = dict(rounds=6, seed=5, dp=DPConfig())
    first, second = train(toy, weighted, *digits, **kwargs), train(toy, toy.topology, *digits,
                                                                   **kwargs)
    np.testing.assert_array_equal(first.accuracy, second.accuracy)
    np.testing.assert_array_equal(first.final_params, second.final_params)


# --------------------------------------------------------------------------------------------
# Features from the weights
# --------------------------------------------------------------------------------------------


def test_features_of_weights_agree_with_plain_numpy(toy, toy_fastest):
    features = topology_features(toy, toy_fastest)
    matrix = toy_fastest.mixing_matrix(toy.nodes)
    assert features.spectral_gap == pytest.approx(1.0 - slem(matrix), abs=1e-12)
    assert features.spectral_gap == pytest.approx(naive_kernels.spectral_gap(matrix), abs=1e-12)
    assert features.hitting_time == pytest.approx(
        naive_kernels.hitting_times(matrix).max(), rel=1e-10)


def test_lazy_metropolis_equal_weights_give_the_unweighted_features(toy):
    # Two code paths (the fused kernel without weights, W's own kernels with them) agree.
    weighted = toy.topology.with_weights(lazy_equal_weights(toy.topology))
    plain, same = topology_features(toy, toy.topology), topology_features(toy, weighted)
    for name, value in plain.to_dict().items():
        assert getattr(same, name) == pytest.approx(value, rel=1e-12, abs=1e-15), name


@pytest.mark.parametrize("name", ["toy", "siot16"])
def test_fastest_mixing_weights_have_a_gap_at_least_lazy_metropolis(name):
    net = load_example(name)
    topology = net.topology if net.topology is not None else Topology(net.social.edges)
    fastest = fastest_mixing_topology(topology, net)
    plain, weighted = topology_features(net, topology), topology_features(net, fastest)
    assert weighted.spectral_gap >= plain.spectral_gap - 1e-9
    assert weighted.spectral_gap > plain.spectral_gap  # strictly faster on these graphs
    assert weighted.n_links <= plain.n_links and weighted.connected


def test_periodic_weights_never_settle_the_disagreement():
    # Two devices swapping their models (weight 1, self-weight 0): eigenvalue -1 never decays.
    net = Network(nx.path_graph(2), [1.0, 1.0], np.ones((2, 2)))
    swap = Topology([(0, 1)], dp_devices=[0, 1], weights=[1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no division by zero on the way
        features = topology_features(net, swap)
    assert features.spectral_gap == 0.0 and features.hitting_time == 1.0
    assert features.noise_disagreement == np.inf


# --------------------------------------------------------------------------------------------
# fastest_mixing_topology
# --------------------------------------------------------------------------------------------


def cycle_slem(n: int) -> float:
    """Optimal SLEM of the n-cycle (uniform weights; see tests/kernels/test_fmmc.py)."""
    c2 = np.cos(2 * np.pi / n)
    c1 = 1.0 if n % 2 == 0 else np.cos(np.pi / n)
    return (c1 + c2) / (2 + c1 - c2)


@pytest.mark.parametrize("n", [3, 5, 8])
def test_path_gets_one_half_on_every_link_and_slem_cos_pi_over_n(n):
    # Boyd, Diaconis, Sun and Xiao (2006).
    path = Topology(nx.path_graph(n).edges, dp_devices=[0])
    fastest = fastest_mixing_topology(path, range(n))
    assert fastest.edges == path.edges and fastest.dp_devices == path.dp_devices
    np.testing.assert_allclose(fastest.weights, 0.5, atol=1e-3)
    assert slem(fastest.mixing_matrix(range(n))) == pytest.approx(np.cos(np.pi / n), abs=1e-7)


@pytest.mark.parametrize("method", ["sdp", "subgradient"])
@pytest.mark.parametrize("n", [5, 8])
def test_cycle_reaches_the_closed_form_slem(method, n):
    cycle = Topology(nx.cycle_graph(n).edges)
    fastest = fastest_mixing_topology(cycle, range(n), method=method)
    assert fastest.edges == cycle.edges
    assert slem(fastest.mixing_matrix(range(n))) == pytest.approx(cycle_slem(n), abs=1e-4)


def test_links_the_optimum_leaves_unused_are_dropped():
    graph = nx.connected_watts_strogatz_graph(16, 4, 0.3, seed=0)
    topology = Topology(graph.edges)
    kept = fastest_mixing_topology(topology, range(16))
    every = fastest_mixing_topology(topology, range(16), min_weight=0.0)
    assert set(kept.edges) < set(every.edges) == set(topology.edges)  # SDP zeros are ~1e-9
    assert nx.is_connected(nx.Graph(kept.edges))
    assert slem(kept.mixing_matrix(range(16))) == pytest.approx(
        slem(every.mixing_matrix(range(16))), abs=1e-5)
    lazy = slem(topology.mixing_matrix(range(16)))
    assert slem(kept.mixing_matrix(range(16))) < lazy


def test_fastest_mixing_topology_checks_its_inputs(toy):
    bad = Topology([("A", "C")])  # not a social link, and A and C are not DP devices
    with pytest.raises(InvalidTopologyError, match="not a social link"):
        fastest_mixing_topology(bad, toy)
    with pytest.raises(NodeNotFoundError, match="device 3, which is not among"):
        fastest_mixing_topology(Topology(PATH_EDGES), [0, 1, 2])
    with pytest.raises(DisconnectedGraphError, match="connected"):
        fastest_mixing_topology(Topology([(0, 1), (2, 3)]), range(4))
    with pytest.raises(InvalidInputError, match="names a device twice"):
        fastest_mixing_topology(Topology(PATH_EDGES), [0, 1, 2, 3, 3])
    with pytest.raises(InvalidInputError, match="topology must be a topokit Topology"):
        fastest_mixing_topology(PATH_EDGES, range(4))
    with pytest.raises(InvalidInputError, match="method must be one of"):
        fastest_mixing_topology(Topology(PATH_EDGES), range(4), method="newton")
    with pytest.raises(InvalidInputError, match="min_weight"):
        fastest_mixing_topology(Topology(PATH_EDGES), range(4), min_weight=-1.0)


def test_an_uncertified_solution_warns_and_is_still_valid():
    graph = nx.connected_watts_strogatz_graph(20, 4, 0.3, seed=2)
    topology = Topology(graph.edges)
    with pytest.warns(TopokitWarning, match="not certified"):
        early = fastest_mixing_topology(topology, range(20), method="subgradient", max_iter=3)
    matrix = early.mixing_matrix(range(20))
    assert (matrix >= 0).all() and np.allclose(matrix.sum(axis=1), 1.0)
    assert slem(matrix) <= slem(topology.mixing_matrix(range(20))) + 1e-12


def test_evaluate_uses_the_weights_the_topology_carries(toy, toy_fastest):
    # evaluate's H and gap from the carried W, against the independent per-graph kernels.
    W = toy_fastest.mixing_matrix(toy.nodes)
    metrics = evaluate(toy, toy_fastest)
    assert metrics.spectral_gap == pytest.approx(naive_kernels.spectral_gap(W), rel=1e-9)
    assert metrics.hitting_time == pytest.approx(naive_kernels.hitting_times(W).max(), rel=1e-9)
    plain = evaluate(toy, toy_fastest.with_weights(None))
    assert metrics.spectral_gap >= plain.spectral_gap - 1e-12


def test_the_privacy_audit_gossips_with_the_carried_weights(toy, toy_fastest):
    # The audit and its dense twin both mix with the topology's W: the same mu, and not the
    # Lazy-Metropolis one.
    from topokit import privacy_audit
    from topokit.testing.naive_audit import naive_privacy_audit

    weighted = privacy_audit(toy, toy_fastest, rounds=8).mu
    twin = naive_privacy_audit(toy, toy_fastest, rounds=8)
    plain = privacy_audit(toy, toy_fastest.with_weights(None), rounds=8).mu
    finite = np.isfinite(weighted)
    np.testing.assert_array_equal(np.isinf(weighted), np.isinf(twin))
    np.testing.assert_allclose(weighted[finite], twin[finite], rtol=1e-9)
    assert not np.allclose(weighted[finite], plain[finite])


def test_weighting_refuses_what_it_cannot_weight():
    from topokit.design.mixing import metropolis_hastings_topology
    from topokit.errors import DisconnectedGraphError, NodeNotFoundError

    for weigh in (metropolis_hastings_topology, fastest_mixing_topology):
        with pytest.raises(InvalidInputError, match="topology must be a topokit Topology"):
            weigh("A-B", ["A", "B"])
        with pytest.raises(DisconnectedGraphError, match="not connected"):
            weigh(Topology([(0, 1), (2, 3)]), [0, 1, 2, 3])
    with pytest.raises(NodeNotFoundError, match="not among the nodes given"):
        Topology([(0, 1)]).mixing_matrix([0])
