"""The user's data and designs on the command line: ``validate --data/--label``,
``validate -t NAME=FILE``, ``topokit ceiling`` and ``probe --data/--label``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from topokit import load_example, load_network, load_topology
from topokit.cli import app
from topokit.training import load_table_data, partition_class_counts
from topokit.training.ceiling import ceiling_probe
from topokit.validation.core import validate

from cli_errors import WIDE, check_one_line

runner = CliRunner()
#: A short validation: one trial of 5 rounds, no audit.
QUICK = ("--rounds", "5", "--trials", "1", "--targets", "0.5", "--audit-rounds", "0")


def run(*args):
    return runner.invoke(app, [str(a) for a in args], env=WIDE)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """f.csv: 60 rows, 3 separable classes named as text, four features; design.json:
    topokit design's toy design."""
    folder = tmp_path_factory.mktemp("user_data")
    rng = np.random.default_rng(1)
    kind = np.array(["eel", "cat", "dog"])[np.arange(60) % 3]
    centre = {"cat": 0.0, "dog": 3.0, "eel": 6.0}
    X = rng.normal(size=(60, 4)) + np.array([centre[k] for k in kind])[:, None]
    table = pd.DataFrame(X, columns=list("abcd")).assign(label=kind)
    table.to_csv(folder / "f.csv", index=False)
    designed = run("design", "--example", "toy", "-o", folder / "design.json", "--json")
    assert designed.exit_code == 0, designed.output
    return folder


def test_validate_trains_on_the_users_table(folder):
    runs = folder / "runs.parquet"
    result = run("validate", "--example", "toy", "--data", folder / "f.csv", "--label", "label",
                 "-t", "ndlf", *QUICK, "-o", runs, "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["config"]["dataset"] == str(folder / "f.csv")
    assert record["config"]["label"] == "label"
    X, y = load_table_data(folder / "f.csv", "label")[:2]
    expected = validate(load_example("toy"), "ndlf", X=X, y=y, trials=1, rounds=5,
                        targets=[0.5], audit_rounds=0)
    pd.testing.assert_frame_equal(pd.read_parquet(runs), expected.frame)


def test_validate_table_output_names_the_data(folder):
    result = run("validate", "--example", "toy", "--data", folder / "f.csv", "--label", "label",
                 "-t", "ndlf", *QUICK)
    assert result.exit_code == 0, result.output
    assert "f.csv (label 'label'): 60 rows, 4 features, 3 classes" in " ".join(
        result.stdout.split())


def test_validate_trains_a_saved_design_by_name(folder):
    design = folder / "design.json"
    result = run("validate", "--example", "toy", "-t", f"mine={design},ndlf,{design}", *QUICK,
                 "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["config"]["topologies"] == [["mine", "custom"], ["ndlf", "ndlf"],
                                              ["design", "custom"]]
    saved = load_topology(design).to_dict()
    assert record["topologies"]["mine"] == record["topologies"]["design"] == saved
    assert [row["topology"] for row in record["summary"]] == ["mine", "ndlf", "design"]


def test_validate_help_lists_every_topology_form():
    result = runner.invoke(app, ["validate", "--help"], env=WIDE)
    text = " ".join(result.output.split())
    assert "optimize, autotag, ndlf" in text and "NAME=FILE or FILE.json" in text


def test_ceiling_measures_the_tables_ceiling(folder):
    result = run("ceiling", "--data", folder / "f.csv", "--label", "label", "--rounds", "10",
                 "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    X, y = load_table_data(folder / "f.csv", "label")[:2]
    probe = ceiling_probe(X, y, rounds=10, seed=0)
    assert 0 < record["ceiling"] <= 1 and record["ceiling"] == pytest.approx(probe.ceiling)
    assert record["probe_rounds"] == probe.probe_rounds and record["probe_rounds"] >= 0
    assert record["classes"] == ["cat", "dog", "eel"] and record["rows"] == 60
    assert record["design_options"] == (f"--model logreg --ceiling "
                                        f"{probe.ceiling:.3g} --probe-rounds {probe.probe_rounds}")
    assert record["workload"] == {"model": "logreg", "ceiling": record["ceiling"],
                                  "probe_rounds": probe.probe_rounds, "rounds": 10}


def test_ceiling_prints_the_options_to_paste(folder):
    result = run("ceiling", "--data", folder / "f.csv", "--label", "label", "--rounds", "5")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[3].startswith("topokit design NETWORK --model logreg "
                               "--ceiling ")
    assert lines[4].startswith("Workload(model='logreg', ceiling=")


def test_probe_gives_the_devices_the_tables_class_counts(folder):
    out = folder / "probes"
    result = run("probe", "--example", "toy", "-k", "2", "--data", folder / "f.csv", "--label",
                 "label", "-o", out, "--json")
    assert result.exit_code == 0, result.output
    net = load_network(out / "network.json")
    y = load_table_data(folder / "f.csv", "label").y
    expected = partition_class_counts(y, 6, None, 0, nodes=list(net.nodes))
    np.testing.assert_array_equal(net.class_counts, expected)
    assert net.class_counts.shape == (6, 3) and net.class_counts.sum() == 45  # 15 held out
    # The network now records counts: giving it --data again would replace them.
    check_one_line(["probe", str(out / "network.json"), "--data", str(folder / "f.csv"),
                    "--label", "label", "-o", str(folder / "again")],
                   "records class counts per device already")
    assert not (folder / "again").exists()


def _table(folder, name, frame):
    path = folder / name
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("frame, label, phrases", [
    (pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]}), "kind",
     ["no label column 'kind'", "'a', 'y'", "--label"]),
    (pd.DataFrame({"a": [1.0, 2.0], "colour": ["red", "blue"], "y": [0, 1]}), "y",
     ["feature column 'colour' is not numeric"]),
    (pd.DataFrame({"a": [1.0, np.nan], "y": [0, 1]}), "y", ["1 missing (NaN)", "'a'"]),
    (pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": ["x", None, "z"]}), "y", ["no label"]),
    (pd.DataFrame({"a": [1.0, 2.0], "y": ["x", "x"]}), "y", ["one class only"]),
    (pd.DataFrame({"y": [0, 1]}), "y", ["no feature columns"]),
    (pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [0, 1, 0]}), "y",
     ["3 rows, fewer than the network's 6 devices"]),
])
def test_validate_refuses_a_bad_table_in_one_line(tmp_path, frame, label, phrases):
    path = _table(tmp_path, "bad.csv", frame)
    check_one_line(["validate", "--example", "toy", "--data", str(path), "--label", label,
                    "-t", "ndlf", "-o", str(tmp_path / "runs.parquet")], "bad.csv", *phrases)
    assert not (tmp_path / "runs.parquet").exists()


def test_bad_data_options_are_one_line(folder, tmp_path):
    data = str(folder / "f.csv")
    validate_toy = ["validate", "--example", "toy", "-t", "ndlf"]
    check_one_line([*validate_toy, "--data", str(tmp_path / "no.csv"), "--label", "y"],
                   "no such file", "no.csv")
    (tmp_path / "t.xlsx").write_text("")
    check_one_line([*validate_toy, "--data", str(tmp_path / "t.xlsx"), "--label", "y"],
                   "unknown table format '.xlsx'")
    check_one_line([*validate_toy, "--data", data], "give --label COLUMN")
    check_one_line([*validate_toy, "--label", "label"], "--label names the label column")
    check_one_line([*validate_toy, "--data", data, "--label", "label", "--dataset", "digits"],
                   "not both")
    check_one_line([*validate_toy, "--data", data, "--label", "label", "-o", data],
                   "is the --data file")
    check_one_line(["ceiling", "--data", data, "--label", "label", "--model", "cnn"],
                   "--model must be one of 'logreg', 'mlp'")
    check_one_line(["ceiling", "--data", data, "--label", "label", "--rounds", "2"],
                   "at least 3 rounds", "--rounds 2")
    small = _table(tmp_path, "small.csv", pd.DataFrame({"a": [1.0, 2, 3], "y": [0, 1, 0]}))
    check_one_line(["ceiling", "--data", str(small), "--label", "y"],
                   "fewer than the ceiling probe's 8 devices")
    check_one_line(["probe", "--example", "toy", "--skewness", "0.5", "-o", str(tmp_path / "p")],
                   "--skewness partitions the labels of --data")


def test_a_design_file_of_another_network_is_refused(folder, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"edges": [["X1", "X2"]], "dp_devices": []}))
    line = check_one_line(["validate", "--example", "toy", "-t", f"theirs={other},ndlf",
                           "-o", str(tmp_path / "runs.parquet")],
                          "--topologies theirs", "other.json", "does not fit this network",
                          "'X1' is not in the network")
    assert "topokit design" in line
    assert not (tmp_path / "runs.parquet").exists()
    check_one_line(["validate", "--example", "toy", "-t", "=d.json"], "needs a name and a file")
    check_one_line(["validate", "--example", "toy", "-t", f"mine={tmp_path}"], "is a directory")
    check_one_line(["validate", "--example", "toy", "-t", f"a={other},ndlf,a={other}"],
                   "names must be unique; 'a' appears twice")
    check_one_line(["validate", "--example", "toy", "-t", str(tmp_path / "none.json")],
                   "--topologies none", "no such file")
    design = folder / "design.json"
    check_one_line(["validate", "--example", "toy", "-t", str(design), "-o", str(design)],
                   "is a design file of --topologies")


def test_ceiling_without_data_measures_the_bundled_digits(digits):
    result = run("ceiling", "--rounds", "3", "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["data"] is None and record["rows"] == 1797 and record["classes"] == list(
        range(10))
    assert record["ceiling"] == pytest.approx(ceiling_probe(*digits, rounds=3, seed=0).ceiling)


@pytest.mark.parametrize("command", ["ceiling", "validate", "probe"])
def test_help_fits_80_columns(command):
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0 and "--data" in result.output and "--label" in result.output
    assert [line for line in result.output.splitlines() if len(line) > 80] == []
