"""The topokit command line: output and exit status on good and bad input."""

import json

import pytest
from typer.testing import CliRunner

from topokit import load_example, save_network
from topokit.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_analyze_example_json_matches_example_3():
    result = run("analyze", "--example", "toy", "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["local_iterate"] == 52.0 and record["phi"] == 0.5
    assert record["pseudo_time"] == pytest.approx(4559, abs=1)


def test_analyze_table_lists_metrics():
    result = run("analyze", "--example", "toy")
    assert result.exit_code == 0
    for key in ("hitting_time", "spectral_gap", "phi", "local_iterate", "pseudo_time"):
        assert key in result.output


def test_analyze_file_with_topology(tmp_path):
    net = load_example("toy")
    path = save_network(net.with_topology(None), tmp_path / "net.json")
    topology = tmp_path / "t.json"
    topology.write_text(json.dumps({"edges": [["A", "B"], ["B", "C"]], "dp_devices": []}))
    record = json.loads(run("analyze", str(path), "--topology", str(topology), "--json").output)
    assert record["hitting_time"] is None  # disconnected: H = inf -> null in strict JSON
    assert record["connected"] is False
    social = json.loads(run("analyze", str(path), "--json").output)
    assert social["topology"] == "social graph" and social["phi"] == 0.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("analyze", "missing.json"), "no such file"),
        (("analyze",), "either a NETWORK file or --example"),
        (("analyze", "--example", "nope"), "unknown example"),
    ],
)
def test_user_errors_exit_2_without_traceback(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_malformed_json_and_invalid_topology(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": [')
    result = run("analyze", str(bad))
    assert result.exit_code == 2 and "malformed JSON" in result.output
    topology = tmp_path / "t.json"
    topology.write_text(json.dumps({"edges": [["C", "E"]], "dp_devices": ["C"]}))
    result = run("analyze", "--example", "toy", "--topology", str(topology))
    assert result.exit_code == 2 and "not a DP device" in result.output
    topology.write_text(json.dumps({"edges": [["A", "Q"]]}))
    result = run("analyze", "--example", "toy", "--topology", str(topology))
    assert result.exit_code == 2 and "'Q' is not in the network" in result.output


def test_batch_random_and_bad_spec(tmp_path):
    out = tmp_path / "r.parquet"
    result = run("batch", "--random", "n=8,m=10,count=40,seed=3", "-o", str(out),
                 "--chunk-size", "15")
    assert result.exit_code == 0, result.output
    import pandas as pd

    assert len(pd.read_parquet(out)) == 40
    result = run("batch", "--random", "n=8,m=3,count=4", "-o", str(out))
    assert result.exit_code == 2 and "between 7 and 28" in result.output
    result = run("batch", "--random", "n=8;m=3", "-o", str(out))
    assert result.exit_code == 2 and "cannot read" in result.output


def test_examples_command_lists_toy():
    result = run("examples")
    assert result.exit_code == 0 and "toy" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("gfl", "run", "bad.toml"), "not valid TOML"),
        (("learn", "missing.npy", "--degree", "3"), "does not exist"),
        (("learn-federated", "missing.npy"), "does not exist"),
    ],
)
def test_mounted_subcommands_exit_2_on_user_errors(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.toml").write_text("x = [\n")
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
