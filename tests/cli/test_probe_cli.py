"""``topokit probe`` and ``topokit calibrate`` on a table of your own runs: probe, train the
probes with your own stack (here topokit.training.train), calibrate."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from topokit import load_example, load_network, load_topology
from topokit.cli import app
from topokit.design.time_predictor import TrainingTimePredictor
from topokit.training import train
from topokit.validation import calibrate, probe_topologies
from topokit.validation.probes import probe_index

runner = CliRunner()
TARGET, ROUNDS = 0.8, 30


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("probe") / "probes"
    result = run("probe", "--example", "toy", "-k", "5", "-o", folder, "--json")
    assert result.exit_code == 0, result.output
    return folder, json.loads(result.stdout)


@pytest.fixture(scope="module")
def own_runs(probed, digits):
    """The probes trained twice each, as a user's table beside them (runs.csv)."""
    folder, _ = probed
    index = pd.read_csv(folder / "index.csv")
    net = load_network(folder / "network.json")
    X, y = digits
    rows = []
    for probe in index.itertuples():
        topology = load_topology(folder / probe.topology)
        for seed in (0, 1):
            trained = train(net, topology, X, y, rounds=ROUNDS, seed=seed)
            rows.append({"network": probe.network, "topology": probe.topology,
                         "target": TARGET, "measured_rounds": trained.rounds_to(TARGET),
                         "horizon": trained.rounds_run})
    pd.DataFrame(rows).to_csv(folder / "runs.csv", index=False)
    return folder / "runs.csv"


def test_probe_writes_the_topologies_the_network_and_an_index(probed):
    folder, record = probed
    net = load_example("toy")
    expected = probe_topologies(net, 5, seed=0)
    assert load_network(folder / "network.json") == net
    index = pd.read_csv(folder / "index.csv")
    assert list(index["name"]) == list(expected) == [p["name"] for p in record["probes"]]
    assert list(index.columns[:6]) == ["name", "network", "topology", "n_links",
                                       "n_dp_devices", "predicted_rounds"]
    for row in index.itertuples():
        assert load_topology(folder / row.topology) == expected[row.name]
    pd.testing.assert_series_equal(index["predicted_rounds"],
                                   probe_index(net, expected)["predicted_rounds"])
    assert record["index"] == "index.csv" and record["network"] == "network.json"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["index.csv", "network.json", *(f"{name}.json" for name in expected)])


def test_probe_prints_a_table(tmp_path):
    result = run("probe", "--example", "toy", "-k", "3", "-o", tmp_path / "p")
    assert result.exit_code == 0, result.output
    for text in ("ndlf", "optimize", "predicted", "wrote 3 topologies"):
        assert text in result.stdout


def test_calibrate_refits_on_your_own_runs(own_runs, tmp_path):
    mine = tmp_path / "mine.json"
    result = run("calibrate", own_runs, "--refit", "default", "-o", mine, "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    expected = calibrate(own_runs, predictor="default")
    assert record["coefficients"] == pytest.approx(expected.coefficients)
    assert record["n_runs"] == 10 and record["n_topologies"] == 5
    assert TrainingTimePredictor.load(mine).to_dict()["model"] == \
        expected.predictor.to_dict()["model"]

    table = run("calibrate", own_runs, "--refit", "default", "--prior-strength", "10", "-o",
                tmp_path / "near.json")
    assert table.exit_code == 0, table.output
    assert "prior of strength 10" in table.stdout
    near = calibrate(own_runs, predictor="default", prior_strength=10)
    assert TrainingTimePredictor.load(tmp_path / "near.json").rounds_coef_ == \
        pytest.approx(near.predictor.rounds_coef_)


def _bad_table(folder, name: str, **changes) -> str:
    frame = pd.read_csv(folder / "runs.csv")
    for column, (row, value) in changes.items():
        frame[column] = frame[column].astype(object)
        frame.loc[row - 1, column] = value
    frame.to_csv(folder / name, index=False)
    return folder / name


@pytest.mark.parametrize(("make_args", "message"), [
    (lambda f, o: ("probe", "--example", "toy", "-k", "1", "-o", o), "k must be"),
    (lambda f, o: ("probe", "--example", "toy", "--predictor", "paper", "-o", o),
     "TrainingTimePredictor"),
    (lambda f, o: ("probe", "-k", "3", "-o", o), "either a NETWORK file or --example"),
    (lambda f, o: ("probe", "--example", "toy", "-o", f / "runs.csv"), "is a file"),
    (lambda f, o: ("calibrate", _bad_table(f, "missing.csv", topology=(3, "gone.json")),
                   "--refit", "default", "-o", o), "row 3: no such topology file 'gone.json'"),
    (lambda f, o: ("calibrate", _bad_table(f, "late.csv", measured_rounds=(2, 99)),
                   "--refit", "default", "-o", o), "row 2: measured_rounds is beyond horizon"),
    (lambda f, o: ("calibrate", f / "runs.csv", "--prior-strength", "5", "-o", o),
     "--prior-strength"),
    (lambda f, o: ("calibrate", f / "runs.csv", "--refit", "default", "--prior-strength", "-1",
                   "-o", o), "--prior-strength"),
])
def test_user_errors_exit_2_in_one_line_and_write_nothing(own_runs, tmp_path, make_args,
                                                          message):
    output = tmp_path / "out"
    result = run(*make_args(own_runs.parent, output))
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not output.exists()
