"""``topokit export``: files written for each format, readable output, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from topokit import load_example, load_topology, save_network
from topokit.cli import app
from topokit.cli.export import FORMAT_HELP
from topokit.export import EXPORT_FORMATS

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(arg) for arg in args])


@pytest.fixture(scope="module")
def design_file(tmp_path_factory):
    """A design with DP devices and per-device noise levels, as ``topokit design -o`` writes."""
    path = tmp_path_factory.mktemp("design") / "toy-design.json"
    result = run("design", "--example", "toy", "--max-stranger-mu", "0.5", "--audit-rounds",
                 "20", "-o", path, "--json")
    assert result.exit_code == 0, result.output
    return path


def _fits_80_columns(output: str) -> None:
    assert max(len(line) for line in output.splitlines()) <= 80, output


@pytest.fixture
def here(design_file, tmp_path, monkeypatch):
    """A fresh folder holding the design as d.json, made the working folder (short paths)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.json").write_bytes(design_file.read_bytes())
    return tmp_path


@pytest.mark.parametrize("format", sorted(EXPORT_FORMATS))
def test_every_format_writes_its_files_and_lists_them(format, here):
    result = run("export", "d.json", "--format", format, "-o", "out.x")
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in here.iterdir() if p.name != "d.json")
    assert written == sorted({"mixing-npy": ["out.x", "out.nodes.json"],
                              "decentralizepy": ["out.x", "out.nodes.json",
                                                 "out.prediction.json"]}.get(format, ["out.x"]))
    for name in written:
        assert name in result.output
    _fits_80_columns(result.output)


def test_decentralizepy_export_says_what_its_weights_do(here):
    result = run("export", "d.json", "-f", "decentralizepy", "-o", "g.edges")
    assert result.exit_code == 0, result.output
    assert "Metropolis-Hastings" in result.output and "predicted time" in result.output
    _fits_80_columns(result.output)


def test_json_output_names_the_files_and_the_prediction(design_file, tmp_path):
    result = run("export", design_file, "-f", "decentralizepy", "-o", tmp_path / "g.edges",
                 "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["files"] == [str(tmp_path / name)
                               for name in ("g.edges", "g.nodes.json", "g.prediction.json")]
    assert record["prediction"] == json.loads((tmp_path / "g.prediction.json").read_text())


def test_a_network_file_gives_the_node_order(design_file, tmp_path):
    net = load_example("toy")
    network = save_network(net, tmp_path / "net.json")
    result = run("export", design_file, "-f", "mixing-csv", "-o", tmp_path / "W.csv",
                 "--network", network)
    assert result.exit_code == 0, result.output
    W = np.loadtxt(tmp_path / "W.csv", delimiter=",", skiprows=1)
    assert np.array_equal(W, load_topology(design_file).mixing_matrix(net.nodes))


def test_the_help_names_every_format():
    assert all(name in FORMAT_HELP for name in EXPORT_FORMATS)
    result = run("export", "--help")
    assert result.exit_code == 0
    _fits_80_columns(result.output)


@pytest.mark.parametrize(("args", "words"), [
    (["-f", "edges", "-o", "{tmp}/x"], "--format must be one of 'mixing-csv'"),
    (["-f", "dp-plan", "-o", "{tmp}/nope/plan.json"], "does not exist"),
    (["-f", "dp-plan", "-o", "{tmp}"], "is a directory"),
    (["-f", "dp-plan", "-o", "{tmp}/p.json", "--example", "toy", "--network", "n.json"],
     "not both"),
    (["-f", "dp-plan", "-o", "{tmp}/p.json", "--example", "siot16"], "invalid topology"),
    (["-f", "dp-plan", "-o", "{tmp}/p.json", "--example", "nope"], "unknown example"),
    (["-f", "networkx-json", "-o", "{design}"], "is the DESIGN file, an input"),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(args, words, design_file,
                                                            tmp_path):
    before = design_file.read_bytes()
    args = [arg.format(tmp=tmp_path, design=design_file) for arg in args]
    result = run("export", design_file, *args)
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [] and design_file.read_bytes() == before


def test_a_missing_design_file_or_unnamed_network_exits_2(tmp_path):
    result = run("export", tmp_path / "missing.json", "-f", "mixing-csv", "-o", tmp_path / "W")
    assert result.exit_code == 2 and "no such file" in result.output
    topology = tmp_path / "t.json"
    topology.write_text(json.dumps({"edges": [["A", "B"]], "dp_devices": []}))
    result = run("export", topology, "-f", "mixing-csv", "-o", tmp_path / "W")
    assert result.exit_code == 2 and "does not name the network" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]
