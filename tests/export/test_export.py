"""export_design: every format read back with its runtime's own reader, and bad paths refused.

decentralizepy's edge files are read with a faithful copy of its reader (below);
node-link JSON with networkx; the mixing matrix with numpy and pandas.
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import topokit
from topokit import Network, Topology, autotag, evaluate, load_example, optimize
from topokit.cli import app
from topokit.design import Design, FeatureSettings
from topokit.design.features import DEFAULT_NOISE_MULTIPLIER
from topokit.design.mixing import metropolis_hastings_topology
from topokit.errors import (
    DisconnectedGraphError,
    InvalidInputError,
    NodeNotFoundError,
    TopokitError,
)
from topokit.export import EXPORT_FORMATS, export_design
from topokit.kernels import spectral_gap

# ---------------------------------------------------------------------------------------------
# decentralizepy's reader, copied from sacs-epfl/decentralizepy,
# src/decentralizepy/graphs/Graph.py (Graph.read_graph_from_file, type="edges", commit
# a5d46be), and its Metropolis-Hastings weights from src/decentralizepy/sharing/Sharing.py
# (Sharing._averaging).  Kept line for line: the point is to read our files as it does.
# ---------------------------------------------------------------------------------------------


def decentralizepy_read_edges(file):
    """``Graph.read_graph_from_file(file, type="edges")``: (n_procs, adj_list)."""
    with open(file) as inf:
        n_procs = int(inf.readline().strip())
        adj_list = [set() for i in range(n_procs)]

        lines = inf.readlines()
        for line in lines:
            x, y = map(int, line.strip().split())
            adj_list[x].add(y)  # __insert_edge__(x, y)
            adj_list[y].add(x)
    return n_procs, adj_list


def decentralizepy_weights(adj_list):
    """The matrix ``Sharing._averaging`` mixes with: every neighbour's model at
    1 / (max(own degree, its degree) + 1), the device's own at 1 - their sum."""
    n = len(adj_list)
    W = np.zeros((n, n))
    for uid, neighbours in enumerate(adj_list):
        weight_total = 0
        for peer in neighbours:
            weight = 1 / (max(len(neighbours), len(adj_list[peer])) + 1)
            W[uid, peer] = weight
            weight_total += weight
        W[uid, uid] = 1 - weight_total
    return W


# ---------------------------------------------------------------------------------------------
# Designs
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bounded(toy):
    """optimize's design under a stranger bound: DP devices, z* per device, fastest weights."""
    return optimize(toy, max_stranger_mu=0.5, seed=0)


@pytest.fixture(scope="module")
def paper(toy):
    """AutoTag's design with eq. (15): no DP device, Lazy-Metropolis weights, no predictor."""
    return autotag(toy)


@pytest.fixture(scope="module")
def levels_differ(toy):
    """The toy's Fig. 2(b) with a different noise level on each DP device."""
    levels = {"C": 4.0, "D": 3.5, "E": 2.25}
    return Design(topology=toy.topology, metrics=evaluate(toy, toy.topology), candidates=(),
                  n=3, stats={"stranger_bound": {"noise_multiplier": 4.0,
                                                 "noise_multipliers": levels}})


@pytest.fixture(scope="module")
def int_net():
    """A network whose node ids are numpy integers, with each device's class counts."""
    social = nx.relabel_nodes(nx.cycle_graph(6), {i: np.int64(10 * i) for i in range(6)})
    counts = [[300, 100], [30, 10], [100, 100], [200, 200], [70, 10], [64, 64]]
    return Network(social, [10.0] * 6, np.full((6, 6), 2.0), class_counts=counts)


@pytest.fixture(scope="module")
def int_design(int_net):
    return optimize(int_net, max_stranger_mu=1.0, seed=0)


@pytest.fixture(scope="module")
def design_file(tmp_path_factory):
    """A design file as ``topokit design -o`` writes it, with per-device noise levels."""
    path = tmp_path_factory.mktemp("design") / "toy-design.json"
    result = CliRunner().invoke(app, ["design", "--example", "toy", "--max-stranger-mu", "0.5",
                                      "--audit-rounds", "20", "-o", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return path


def _cases(request, name: str):
    """(design, net) of a named case; a design file exports without net."""
    if name == "file":
        return request.getfixturevalue("design_file"), None
    if name == "int":
        return request.getfixturevalue("int_design"), request.getfixturevalue("int_net")
    return request.getfixturevalue(name), request.getfixturevalue("toy")


CASES = ["bounded", "paper", "levels_differ", "int", "file"]


def _topology_and_net(design, net):
    if isinstance(design, Design):
        return design.topology, net
    return topokit.load_topology(design), load_example("toy")


# ---------------------------------------------------------------------------------------------
# Each format, read back
# ---------------------------------------------------------------------------------------------

def _check_mixing(W, topology, nodes):
    assert np.array_equal(W, topology.mixing_matrix(nodes))  # exactly: no digit lost
    assert np.array_equal(W, W.T)
    assert np.allclose(W.sum(axis=0), 1.0) and np.allclose(W.sum(axis=1), 1.0)
    assert (W >= 0).all()


@pytest.mark.parametrize("case", CASES)
def test_mixing_csv_is_the_designs_matrix_under_a_header_of_node_ids(case, request, tmp_path):
    design, net = _cases(request, case)
    topology, net = _topology_and_net(design, net)
    (path,) = export_design(design, tmp_path / "W.csv", "mixing-csv", net=net)
    frame = pd.read_csv(path)
    assert list(frame.columns) == [str(node) for node in net.nodes]
    _check_mixing(frame.to_numpy(), topology, net.nodes)
    _check_mixing(np.loadtxt(path, delimiter=",", skiprows=1), topology, net.nodes)


@pytest.mark.parametrize("case", CASES)
def test_mixing_npy_is_the_designs_matrix_with_its_node_ids(case, request, tmp_path):
    design, net = _cases(request, case)
    topology, net = _topology_and_net(design, net)
    paths = export_design(design, tmp_path / "W.npy", "mixing-npy", net=net)
    assert [p.name for p in paths] == ["W.npy", "W.nodes.json"]
    W = np.load(paths[0], allow_pickle=False)
    assert W.dtype == np.float64
    _check_mixing(W, topology, net.nodes)
    assert json.loads(paths[1].read_text()) == [_plain(node) for node in net.nodes]


@pytest.mark.parametrize("case", CASES)
def test_decentralizepy_reads_the_designs_links(case, request, tmp_path):
    design, net = _cases(request, case)
    topology, net = _topology_and_net(design, net)
    paths = export_design(design, tmp_path / "graph.edges", "decentralizepy", net=net)
    assert [p.name for p in paths] == ["graph.edges", "graph.nodes.json",
                                       "graph.prediction.json"]
    n_procs, adj_list = decentralizepy_read_edges(paths[0])
    assert n_procs == net.n_devices
    adjacency = np.zeros((n_procs, n_procs))
    for uid, neighbours in enumerate(adj_list):
        adjacency[uid, list(neighbours)] = 1.0
    expected = nx.to_numpy_array(topology.graph(net.nodes), nodelist=net.nodes, weight=None)
    assert np.array_equal(adjacency, expected)
    nodes = json.loads(paths[1].read_text())
    assert nodes == [_plain(node) for node in net.nodes]  # index -> node id
    # What topokit predicts is for the weights decentralizepy mixes with.
    runtime = decentralizepy_weights(adj_list)
    weighted = metropolis_hastings_topology(topology, net)
    assert np.allclose(runtime, weighted.mixing_matrix(net.nodes), atol=1e-15)
    prediction = json.loads(paths[2].read_text())
    assert prediction["decentralizepy"]["spectral_gap"] == pytest.approx(spectral_gap(runtime))
    assert prediction["design"]["spectral_gap"] == pytest.approx(
        spectral_gap(topology.mixing_matrix(net.nodes)))


@pytest.mark.parametrize("case", ["bounded", "paper", "int"])
def test_decentralizepy_prediction_uses_the_designs_predictor_and_noise(case, request,
                                                                        tmp_path):
    design, net = _cases(request, case)
    paths = export_design(design, tmp_path / "graph.edges", "decentralizepy", net=net)
    prediction = json.loads(paths[2].read_text())
    # The design's own prediction, recomputed, is the one the design records.
    assert prediction["design"]["predicted_time"] == pytest.approx(design.metrics.pseudo_time)
    assert prediction["predictor"] == (design.predictor or {"name": "paper"})["name"]
    ratio = prediction["decentralizepy"]["predicted_time"] / prediction["design"]["predicted_time"]
    assert prediction["time_ratio"] == pytest.approx(ratio)


def test_decentralizepy_prediction_of_a_design_file_matches_its_metrics(design_file, tmp_path):
    paths = export_design(design_file, tmp_path / "graph.edges", "decentralizepy")
    recorded = json.loads(design_file.read_text())["metrics"]["pseudo_time"]
    predicted = json.loads(paths[2].read_text())["design"]["predicted_time"]
    assert predicted == pytest.approx(recorded)


@pytest.mark.parametrize("case", CASES)
def test_networkx_json_carries_weights_dp_flags_and_noise(case, request, tmp_path):
    design, net = _cases(request, case)
    topology, net = _topology_and_net(design, net)
    (path,) = export_design(design, tmp_path / "design.json", "networkx-json", net=net)
    graph = nx.node_link_graph(json.loads(path.read_text()), edges="edges")
    assert list(graph) == list(net.nodes)
    assert {frozenset(e) for e in graph.edges} == {frozenset(e) for e in topology.edges}
    W = topology.mixing_matrix(net.nodes)
    for u, v, weight in graph.edges(data="weight"):
        assert weight == W[net.index[u], net.index[v]]
    for node, data in graph.nodes(data=True):
        i = net.index[node]
        assert data["self_weight"] == W[i, i]
        assert data["self_weight"] + graph.degree(node, weight="weight") == pytest.approx(1.0)
        assert data["dp"] is (node in topology.dp_devices)
        assert (data["noise_multiplier"] is None) is (not data["dp"])


def test_networkx_json_noise_is_each_devices_own_level(levels_differ, toy, tmp_path):
    (path,) = export_design(levels_differ, tmp_path / "d.json", "networkx-json", net=toy)
    graph = nx.node_link_graph(json.loads(path.read_text()), edges="edges")
    assert dict(graph.nodes(data="noise_multiplier")) == {
        "A": None, "B": None, "C": 4.0, "D": 3.5, "E": 2.25, "F": None}


def _plan(design, net, tmp_path):
    (path,) = export_design(design, tmp_path / "plan.json", "dp-plan", net=net)
    return json.loads(path.read_text())


def test_dp_plan_gives_each_dp_device_its_recorded_level(levels_differ, toy, tmp_path):
    plan = _plan(levels_differ, toy, tmp_path)
    by_id = {device["id"]: device for device in plan["devices"]}
    assert [device["id"] for device in plan["devices"]] == toy.nodes
    assert [device["index"] for device in plan["devices"]] == list(range(6))
    assert {k: d["noise_multiplier"] for k, d in by_id.items()} == {
        "A": None, "B": None, "C": 4.0, "D": 3.5, "E": 2.25, "F": None}
    assert {k for k, d in by_id.items() if d["dp"]} == {"C", "D", "E"}
    # Non-DP devices neither clip nor add noise; every device samples batches.
    assert by_id["A"]["max_grad_norm"] is None and by_id["C"]["max_grad_norm"] == 1.0
    assert all(d["batch_size"] == 64 for d in plan["devices"])
    assert all(d["rows"] is None and d["sampling_rate"] is None for d in plan["devices"])
    assert "per-device" in plan["noise_source"]


def test_dp_plan_of_an_optimized_design_uses_its_predictors_settings(bounded, toy, tmp_path):
    plan = _plan(bounded, toy, tmp_path)
    settings = bounded.predictor["record"]["settings"]
    levels = bounded.stats["stranger_bound"]["noise_multipliers"]
    assert plan["settings"] == {"max_grad_norm": settings["max_grad_norm"],
                                "batch_size": settings["batch_size"],
                                "local_steps": settings["local_steps"],
                                "source": "the design's predictor (default)"}
    dp = {d["id"]: d["noise_multiplier"] for d in plan["devices"] if d["dp"]}
    assert dp == levels and set(dp) == set(bounded.topology.dp_devices)


def test_dp_plan_defaults_are_topokits_when_the_design_records_none(toy, tmp_path):
    design = Design(topology=toy.topology, metrics=evaluate(toy, toy.topology), candidates=(),
                    n=3)
    plan = _plan(design, toy, tmp_path)
    defaults = FeatureSettings()
    assert plan["settings"]["max_grad_norm"] == defaults.max_grad_norm
    assert plan["settings"]["batch_size"] == defaults.batch_size
    assert [d["noise_multiplier"] for d in plan["devices"] if d["dp"]] == pytest.approx(
        [DEFAULT_NOISE_MULTIPLIER] * 3)
    assert "defaults" in plan["settings"]["source"]


def test_dp_plan_sampling_rates_come_from_the_class_counts(int_design, int_net, tmp_path):
    plan = _plan(int_design, int_net, tmp_path)
    rows = int_net.class_counts.sum(axis=1)
    assert [d["rows"] for d in plan["devices"]] == rows.tolist()
    assert [d["sampling_rate"] for d in plan["devices"]] == pytest.approx(
        [min(1.0, 64 / r) for r in rows])
    assert plan["devices"][1]["sampling_rate"] == 1.0  # 40 rows < a batch of 64: all of them


# ---------------------------------------------------------------------------------------------
# Node ids in JSON
# ---------------------------------------------------------------------------------------------

def _plain(node):
    return node.item() if isinstance(node, np.generic) else node


@pytest.mark.parametrize("format", sorted(EXPORT_FORMATS))
def test_numpy_integer_node_ids_are_written_as_json_integers(format, int_design, int_net,
                                                             tmp_path):
    paths = export_design(int_design, tmp_path / "export.out", format, net=int_net)
    ids = [int(node) for node in int_net.nodes]
    for path in paths:
        if path.name.endswith(".nodes.json"):
            written = json.loads(path.read_text())
            assert written == ids and all(type(node) is int for node in written)
    if format == "networkx-json":
        graph = nx.node_link_graph(json.loads(paths[0].read_text()), edges="edges")
        assert list(graph) == ids and all(type(node) is int for node in graph)
    if format == "dp-plan":
        assert [d["id"] for d in json.loads(paths[0].read_text())["devices"]] == ids
    if format == "mixing-csv":
        assert pd.read_csv(paths[0]).columns.tolist() == [str(i) for i in ids]


# ---------------------------------------------------------------------------------------------
# Design files and networks
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("format", sorted(EXPORT_FORMATS))
def test_a_design_file_exports_as_its_design_on_the_example_it_names(format, design_file,
                                                                     toy, tmp_path):
    named = export_design(design_file, tmp_path / "named.out", format)
    given = export_design(design_file, tmp_path / "given.out", format, net=toy)
    for a, b in zip(named, given, strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_a_design_file_of_another_network_needs_that_network(int_design, int_net, tmp_path):
    path = tmp_path / "int-design.json"
    path.write_text(json.dumps({"network": "ring of six", **int_design.to_dict()}))
    with pytest.raises(InvalidInputError, match="not a bundled example; give that network"):
        export_design(path, tmp_path / "W.csv", "mixing-csv")
    (written,) = export_design(path, tmp_path / "W.csv", "mixing-csv", net=int_net)
    assert np.array_equal(np.loadtxt(written, delimiter=",", skiprows=1),
                          int_design.topology.mixing_matrix(int_net.nodes))


def test_the_wrong_network_is_refused_naming_the_file(design_file, tmp_path):
    with pytest.raises(NodeNotFoundError, match=f"{design_file.name}: invalid topology"):
        export_design(design_file, tmp_path / "W.csv", "mixing-csv",
                      net=load_example("siot16"))
    assert list(tmp_path.iterdir()) == []


def test_a_design_object_needs_its_network(bounded, tmp_path):
    with pytest.raises(InvalidInputError, match="net is required"):
        export_design(bounded, tmp_path / "W.csv", "mixing-csv")


# ---------------------------------------------------------------------------------------------
# Bad input: one line, nothing written
# ---------------------------------------------------------------------------------------------

def _one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message and message
    return message


def test_an_unknown_format_lists_the_known_ones(bounded, toy, tmp_path):
    with pytest.raises(InvalidInputError) as exc:
        export_design(bounded, tmp_path / "x", "decentralize", net=toy)
    assert all(name in _one_line(exc) for name in EXPORT_FORMATS)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_refused_not_created(bounded, toy, tmp_path):
    with pytest.raises(InvalidInputError) as exc:
        export_design(bounded, tmp_path / "nope" / "graph.edges", "decentralizepy", net=toy)
    assert "does not exist" in _one_line(exc)
    assert list(tmp_path.iterdir()) == []


def test_a_folder_given_as_the_file_is_refused(bounded, toy, tmp_path):
    with pytest.raises(InvalidInputError) as exc:
        export_design(bounded, tmp_path, "mixing-csv", net=toy)
    assert "is a directory" in _one_line(exc)


def test_a_folder_where_a_sidecar_goes_refuses_the_whole_export(bounded, toy, tmp_path):
    (tmp_path / "graph.nodes.json").mkdir()
    with pytest.raises(InvalidInputError) as exc:
        export_design(bounded, tmp_path / "graph.edges", "decentralizepy", net=toy)
    assert "graph.nodes.json is a directory" in _one_line(exc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.nodes.json"]


def test_a_file_where_a_folder_should_be_is_refused(bounded, toy, tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(InvalidInputError) as exc:
        export_design(bounded, tmp_path / "file" / "W.csv", "mixing-csv", net=toy)
    assert "is a file, not a folder" in _one_line(exc)


def test_the_design_file_itself_is_not_overwritten(design_file):
    before = design_file.read_bytes()
    with pytest.raises(InvalidInputError) as exc:
        export_design(design_file, design_file, "networkx-json")
    assert "would overwrite the design file" in _one_line(exc)
    assert design_file.read_bytes() == before


def test_a_failed_export_leaves_the_previous_files_untouched(toy, tmp_path):
    old = export_design(Design(topology=toy.topology, metrics=evaluate(toy, toy.topology),
                               candidates=(), n=3), tmp_path / "graph.edges", "decentralizepy",
                        net=toy)
    before = {path: path.read_bytes() for path in old}
    broken = Topology([("A", "B")])  # disconnected: no weights make it mix
    design = Design(topology=broken, metrics=evaluate(toy, broken), candidates=(), n=0)
    with pytest.raises(DisconnectedGraphError) as exc:
        export_design(design, tmp_path / "graph.edges", "decentralizepy", net=toy)
    _one_line(exc)
    assert {path: path.read_bytes() for path in old} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in old)


@pytest.mark.parametrize(("design", "net", "message"), [
    (42, None, "design must be a topokit Design"),
    ("missing.json", None, "no such file"),
])
def test_a_bad_design_is_one_clear_error(design, net, message, tmp_path):
    with pytest.raises(TopokitError) as exc:
        export_design(design, tmp_path / "W.csv", "mixing-csv", net=net)
    assert message in _one_line(exc)


def test_a_topology_file_without_network_asks_for_one(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"edges": [["A", "B"], ["B", "C"]], "dp_devices": []}))
    with pytest.raises(InvalidInputError) as exc:
        export_design(path, tmp_path / "W.csv", "mixing-csv")
    assert "does not name the network" in _one_line(exc)


def test_export_design_is_public_at_the_top_level():
    assert topokit.export_design is export_design
    assert topokit.design.export_design is export_design
