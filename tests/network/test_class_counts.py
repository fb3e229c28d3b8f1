"""Each device's class counts as an optional node attribute of a Network (issue 17, part 2).

A Network may carry ``class_counts`` (training rows per class per device, node
order): checked when built, written to and read from the network file, used by
the features and the predictor when no counts are given, and filled by
``validate`` from the partition each trial trains on.
"""

from __future__ import annotations

import json
import math

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import topokit
from topokit import evaluate, load_example, load_network, save_network
from topokit.cli import app
from topokit.design.baselines import dlfdp, ndlf
from topokit.design.features import topology_features
from topokit.design.time_predictor import load_predictor, predict_topology
from topokit.errors import InputFileError, InvalidInputError, NodeNotFoundError
from topokit.network.core import Network
from topokit.network.formats import graph_to_network, network_to_graph
from topokit.validation.core import validate

runner = CliRunner()
#: A wide terminal, so rich never wraps the one error line.
WIDE = {"COLUMNS": "400"}
N_CLASSES = 4


def skewed_counts(n: int, classes: int = N_CLASSES, major: int = 40, minor: int = 2):
    """Device i holds mostly class i mod C: a skewed (non-IID) partition."""
    counts = np.full((n, classes), minor)
    counts[np.arange(n), np.arange(n) % classes] = major
    return counts


@pytest.fixture(scope="module")
def counts(toy):
    return skewed_counts(toy.n_devices)


@pytest.fixture(scope="module")
def counted(toy, counts):
    return toy.with_class_counts(counts)


# ---------------------------------------------------------------------------------------------
# The attribute
# ---------------------------------------------------------------------------------------------


def test_counts_are_stored_read_only_in_node_order(toy, counts, counted):
    assert toy.class_counts is None and toy.n_classes is None
    np.testing.assert_array_equal(counted.class_counts, counts)
    assert counted.class_counts.dtype == np.float64 and counted.n_classes == N_CLASSES
    with pytest.raises(ValueError):
        counted.class_counts[0, 0] = 5.0
    # The caller's array is copied, not shared.
    mine = counts.astype(float)
    net = toy.with_class_counts(mine)
    mine[0, 0] = 99
    assert net.class_counts[0, 0] == counts[0, 0]


def test_a_mapping_node_to_counts_is_the_same_as_the_array(toy, counts, counted):
    # Keys in another order than the network's: rows follow the node, not the key order.
    mapping = {node: counts[toy.index[node]].tolist() for node in reversed(toy.nodes)}
    assert toy.with_class_counts(mapping) == counted
    # A DataFrame is rows (devices), not its columns.
    assert toy.with_class_counts(pd.DataFrame(counts, index=toy.nodes)) == counted


def test_constructor_keyword_and_copies(toy, counts, counted):
    built = Network(toy.social, toy.compute_time, toy.delay, topology=toy.topology,
                    name=toy.name, class_counts=counts)
    assert built == counted
    assert built != toy  # counts are part of equality
    assert counted.with_class_counts(None) == toy
    assert counted.with_class_counts(None).class_counts is None
    carried = counted.with_topology(dlfdp(toy))
    np.testing.assert_array_equal(carried.class_counts, counts)
    assert carried.topology == dlfdp(toy)
    assert counted.with_class_counts(counts + 1) != counted
    assert repr(counted) == "Network('toy', 6 devices, 7 social links, 4 classes)"
    assert repr(toy) == "Network('toy', 6 devices, 7 social links)"


def test_from_positions_takes_class_counts():
    social = nx.path_graph(3)
    net = Network.from_positions(social, [[0, 0], [50, 0], [100, 0]],
                                 class_counts=[[1, 2], [3, 0], [0, 4]])
    assert net.n_classes == 2


def _rows(n: int, change):
    rows = skewed_counts(n).tolist()
    change(rows)
    return rows


def _set(row, column, value):
    def change(rows):
        rows[row][column] = value
    return change


BAD_COUNTS = [
    pytest.param(lambda n: skewed_counts(n - 1), "one row per device", None, id="too-few-rows"),
    pytest.param(lambda n: skewed_counts(n + 1), "one row per device", None, id="too-many-rows"),
    pytest.param(lambda n: _rows(n, lambda r: r[3].pop()), "3 classes but node", 3,
                 id="ragged"),
    pytest.param(lambda n: _rows(n, _set(2, 1, -3)), ">= 0", 2, id="negative"),
    pytest.param(lambda n: _rows(n, _set(1, 0, math.nan)), "nan", 1, id="nan"),
    pytest.param(lambda n: _rows(n, _set(4, 2, math.inf)), "inf", 4, id="inf"),
    pytest.param(lambda n: _rows(n, _set(0, 0, "12")), "must be a number", 0, id="text"),
    pytest.param(lambda n: _rows(n, _set(5, 0, None)), "must be a number", 5, id="null"),
    pytest.param(lambda n: _rows(n, _set(5, 0, True)), "must be a number", 5, id="bool"),
    pytest.param(lambda n: _rows(n, _set(3, 0, 2.5)), "whole numbers", 3, id="fraction"),
    pytest.param(lambda n: _rows(n, lambda r: r.__setitem__(2, [0] * N_CLASSES)), "all zero",
                 2, id="device-without-data"),
    pytest.param(lambda n: _rows(n, lambda r: r.__setitem__(1, "many")), "must be a list", 1,
                 id="row-not-a-list"),
    pytest.param(lambda n: np.ones(n), "2-dimensional", None, id="one-dimensional"),
    pytest.param(lambda n: np.ones((n, 0)), "shape (n_devices, n_classes)", None,
                 id="no-classes"),
    pytest.param(lambda n: "12,0,3", "must be an (n_devices, n_classes) array", None,
                 id="a-string"),
]


@pytest.mark.parametrize(("make", "keyword", "row"), BAD_COUNTS)
def test_bad_counts_are_refused_in_one_line_naming_the_node(toy, make, keyword, row):
    with pytest.raises(InvalidInputError) as caught:
        toy.with_class_counts(make(toy.n_devices))
    message = str(caught.value)
    assert keyword.lower() in message.lower(), message
    assert "class_counts" in message and "\n" not in message
    if row is not None:
        assert f"node {toy.nodes[row]!r}" in message, message


def test_a_mapping_must_name_every_node_and_only_them(toy, counts):
    mapping = {node: counts[i].tolist() for i, node in enumerate(toy.nodes)}
    with pytest.raises(InvalidInputError, match="no entry for node 'C'"):
        toy.with_class_counts({k: v for k, v in mapping.items() if k != "C"})
    with pytest.raises(NodeNotFoundError, match="node 'Z'"):
        toy.with_class_counts({**mapping, "Z": [1, 1, 1, 1]})


# ---------------------------------------------------------------------------------------------
# The network file
# ---------------------------------------------------------------------------------------------


def test_file_round_trip_is_exact_and_bytes_are_stable(counted, tmp_path):
    path = save_network(counted, tmp_path / "net.json")
    loaded = load_network(path)
    assert loaded == counted
    np.testing.assert_array_equal(loaded.class_counts, counted.class_counts)
    again = save_network(loaded, tmp_path / "again.json")
    assert again.read_bytes() == path.read_bytes()
    records = {r["id"]: r for r in json.loads(path.read_text())["nodes"]}
    for i, node in enumerate(counted.nodes):
        # A per-node attribute, written as JSON integers.
        assert records[node]["class_counts"] == [int(c) for c in counted.class_counts[i]]
        assert all(type(c) is int for c in records[node]["class_counts"])


def test_graphml_round_trip_is_exact(counted, tmp_path):
    loaded = load_network(save_network(counted, tmp_path / "net.graphml"))
    # GraphML reads node ids back as they were written (strings here).
    assert loaded == counted


def test_graph_round_trip_is_exact(counted):
    graph = network_to_graph(counted)
    assert graph.nodes["A"]["class_counts"] == [int(c) for c in counted.class_counts[0]]
    assert graph_to_network(graph) == counted


def test_a_network_without_counts_writes_the_same_file_as_before(toy, tmp_path):
    path = save_network(toy, tmp_path / "toy.json")
    assert path.read_bytes() == (topokit.design.examples.data_dir() / "toy.json").read_bytes()
    assert load_network(path).class_counts is None


def _toy_data(counts=None) -> dict:
    data = json.loads((topokit.design.examples.data_dir() / "toy.json").read_text())
    if counts is not None:
        for record, row in zip(data["nodes"], counts, strict=True):
            record["class_counts"] = row
    return data


def _set_count(node: int, column: int, value):
    def mutate(data):
        data["nodes"][node]["class_counts"][column] = value
    return mutate


def _replace_row(node: int, value):
    def mutate(data):
        data["nodes"][node]["class_counts"] = value
    return mutate


def _drop_row(node: int):
    def mutate(data):
        data["nodes"][node].pop("class_counts")
    return mutate


BAD_FILES = [
    pytest.param(_drop_row(2), "node 'C' has no 'class_counts'", id="some-nodes-without"),
    pytest.param(_replace_row(3, [1, 2]), "node 'D' has 2 classes", id="ragged"),
    pytest.param(_set_count(1, 2, -1), "node 'B' has -1 in class 2", id="negative"),
    pytest.param(_set_count(4, 0, "NaN"), "node 'E'", id="nan"),
    pytest.param(_set_count(4, 0, 1e400), "node 'E'", id="overflow-inf"),
    pytest.param(_set_count(0, 1, "3"), "node 'A': class 1 must be a number", id="text"),
    pytest.param(_set_count(0, 1, None), "node 'A': class 1 must be a number", id="null"),
    pytest.param(_set_count(0, 1, 0.5), "whole numbers", id="fraction"),
    pytest.param(_replace_row(5, [0, 0, 0, 0]), "node 'F' is all zero", id="no-data"),
    pytest.param(_replace_row(5, {"a": 1}), "node 'F' must be a list", id="an-object"),
    pytest.param(_replace_row(5, 7), "node 'F' must be a list", id="a-number"),
]


def _bad_file(tmp_path, mutate) -> str:
    data = _toy_data(skewed_counts(6).tolist())
    mutate(data)
    path = tmp_path / "net.json"
    # Python's json reads the literals NaN and 1e400 (as inf): the checks must catch them.
    text = json.dumps(data)
    path.write_text(text.replace('"NaN"', "NaN").replace("Infinity", "1e400"))
    return str(path)


@pytest.mark.parametrize(("mutate", "keyword"), BAD_FILES)
def test_bad_counts_in_a_file_are_an_input_file_error(tmp_path, mutate, keyword):
    path = _bad_file(tmp_path, mutate)
    with pytest.raises(InputFileError) as caught:
        load_network(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message
    assert keyword.lower() in message.lower() and "class_counts" in message, message
    assert "\n" not in message


def test_bad_graphml_counts_are_refused(counted, tmp_path):
    path = save_network(counted, tmp_path / "net.graphml")
    path.write_text(path.read_text().replace("[40, 2, 2, 2]", "[40, 2", 1))
    with pytest.raises(InputFileError, match="'class_counts' is not JSON"):
        load_network(path)


@pytest.mark.parametrize("command", ["analyze", "design"])
@pytest.mark.parametrize(("mutate", "keyword"), BAD_FILES[:4])
def test_cli_refuses_bad_counts_in_one_line(tmp_path, monkeypatch, command, mutate, keyword):
    monkeypatch.chdir(tmp_path)
    import topokit.design._autotag as autotag_module
    import topokit.design._optimize as optimize_module

    def work(*args, **kwargs):
        raise AssertionError("the bad file was not refused before the design started")

    # Both names: optimize binds autotag when first imported, and a patch of the one module
    # alone would either miss optimize's or, imported under the patch, outlive the test.
    monkeypatch.setattr(autotag_module, "autotag", work)
    monkeypatch.setattr(optimize_module, "autotag", work)
    result = runner.invoke(app, [command, _bad_file(tmp_path, mutate)], env=WIDE)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert keyword.lower() in lines[0].lower() and "class_counts" in lines[0], lines[0]


def test_cli_analyze_predicts_with_the_files_counts(counted, tmp_path):
    # No stored topology: analyze predicts for the social graph (NDLF), a finite number.
    net = counted.with_topology(None)
    path = save_network(net, tmp_path / "net.json")
    result = runner.invoke(app, ["analyze", str(path), "--predictor", "default", "--json"],
                           env=WIDE)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)["predicted_global_iterate"]
    expected = predict_topology(net, ndlf(net), predictor="default")
    assert np.isfinite(expected) and printed == pytest.approx(expected, rel=1e-12)
    assert expected > predict_topology(net.with_class_counts(None), ndlf(net))


# ---------------------------------------------------------------------------------------------
# Features and the predictor
# ---------------------------------------------------------------------------------------------


def test_features_use_the_networks_counts(toy, counts, counted):
    for topology in (ndlf(toy), dlfdp(toy), toy.topology):
        assert topology_features(counted, topology) == topology_features(
            toy, topology, class_counts=counts)
    # Given counts win over the network's.
    other = skewed_counts(6, major=9, minor=5)
    assert topology_features(counted, ndlf(toy), class_counts=other) == topology_features(
        toy, ndlf(toy), class_counts=other)
    assert topology_features(counted, ndlf(toy)).heterogeneity_local > 0.0


def test_equal_proportions_are_iid(toy):
    # Every device holds 50 rows of the same label distribution: heterogeneity 0, and the
    # features equal those of IID data of 6 x 50 rows (the same data sizes).
    equal = toy.with_class_counts(np.tile([20, 10, 15, 5], (6, 1)))
    features = topology_features(equal, toy.topology)
    assert features.heterogeneity_local == pytest.approx(0.0, abs=1e-15)
    assert features.heterogeneity_neighbourhood == pytest.approx(0.0, abs=1e-15)
    assert features.heterogeneity_disagreement == pytest.approx(0.0, abs=1e-15)
    iid = topology_features(toy, toy.topology, n_samples=300)
    for name in ("noise_average", "noise_disagreement", "noise_felt", "effective_neighbours"):
        assert getattr(features, name) == pytest.approx(getattr(iid, name), rel=1e-12)


def test_skewed_counts_predict_more_rounds_than_iid():
    net = load_example("siot16")
    predictor = load_predictor("default")
    skewed = net.with_class_counts(skewed_counts(net.n_devices, classes=10, major=91, minor=1))
    for topology in (ndlf(net), dlfdp(net)):
        iid_rounds = predictor.predict_network(net, topology)
        skewed_rounds = predictor.predict_network(skewed, topology)
        assert np.isfinite(iid_rounds) and skewed_rounds > 1.5 * iid_rounds
        assert predict_topology(skewed, topology) == skewed_rounds
        assert predict_topology(net, topology, class_counts=skewed.class_counts) == skewed_rounds
        # evaluate goes through the predictor with the network's counts.
        assert evaluate(skewed, topology, predictor).predicted_global_iterate == skewed_rounds
        assert evaluate(net, topology, predictor).predicted_global_iterate == iid_rounds


def test_eq15_ignores_the_counts(toy, counted):
    assert evaluate(counted, toy.topology) == evaluate(toy, toy.topology)
    assert predict_topology(counted, toy.topology, predictor="paper") == predict_topology(
        toy, toy.topology, predictor="paper")


# ---------------------------------------------------------------------------------------------
# validate fills the counts from the partition
# ---------------------------------------------------------------------------------------------


def _train_partition(net, X, y, seed: int, skewness: float) -> np.ndarray:
    """Class counts of train's partition, rebuilt from the training core's planning steps."""
    from topokit._random import spawn_generators
    from topokit.training.partition import make_partitioner
    from topokit.training.plan import ROLES, partition_rows, split_data

    rng = spawn_generators(seed, ROLES)["partition"]
    data = split_data(X, y, None, net.n_devices, rng)
    parts = partition_rows(make_partitioner(skewness), data.codes_train, net.nodes, rng)
    return np.array([np.bincount(data.codes_train[p], minlength=data.n_classes) for p in parts])


# Six devices cannot each take 80 % of their rows from one class of digits' 1,347.
SKEW_WARNING = "ignore:skewness 0.8 needs more rows"


@pytest.fixture(scope="module")
def skewed_validation(toy):
    return validate(toy, "ndlf,dlfdp,random:1", trials=2, rounds=4, targets=(0.5,), seed=3,
                    partition=0.8, predictor="default")


@pytest.mark.filterwarnings(SKEW_WARNING)
def test_validate_predicts_with_each_trials_partition(toy, digits, skewed_validation):
    from topokit.training import train

    frame = skewed_validation.frame
    predictor = load_predictor("default")
    partitions = {}
    for trial, group in frame.groupby("trial"):
        seed = int(group["seed"].iloc[0])
        counts = _train_partition(toy, *digits, seed, 0.8)
        # The rebuilt partition is the run's: same device sizes as a real run.
        run = train(toy, ndlf(toy), *digits, rounds=1, partition=0.8, seed=seed)
        assert tuple(counts.sum(axis=1)) == run.partition_sizes
        partitions[trial] = counts
        for _, row in group.iterrows():
            topology = skewed_validation.topologies[row["topology"]]
            expected = predict_topology(toy, topology, class_counts=counts, predictor=predictor)
            iid = predict_topology(toy, topology, predictor=predictor)
            assert row["predicted_global_iterate"] == expected
            if np.isfinite(iid):  # a skewed partition is predicted slower than IID data
                assert row["predicted_global_iterate"] > iid
    assert not np.array_equal(partitions[0], partitions[1])  # each trial its own partition


@pytest.mark.filterwarnings(SKEW_WARNING)
def test_skewed_validation_is_deterministic(toy, skewed_validation):
    again = validate(toy, "ndlf,dlfdp,random:1", trials=2, rounds=4, targets=(0.5,), seed=3,
                     partition=0.8, predictor="default")
    assert again.frame.equals(skewed_validation.frame)


def test_validate_replaces_the_networks_own_counts(toy, counted):
    given = validate(counted, "ndlf", trials=1, rounds=2, targets=(0.5,), seed=1,
                     predictor="default")
    plain = validate(toy, "ndlf", trials=1, rounds=2, targets=(0.5,), seed=1,
                     predictor="default")
    assert given.frame.equals(plain.frame)
