"""Compressed network files on the command line: ``generate -o x.json.gz`` writes one,
every command reads it as it reads the uncompressed file, a damaged one exits 2 in one
line; every command that loads a network file reports a large one's loading (not with
--json)."""

from __future__ import annotations

import importlib
import json

import pytest
from typer.testing import CliRunner

from topokit.cli import _common, app
from topokit.errors import InvalidInputError

from cli_errors import check_one_line

runner = CliRunner()
#: stderr not a terminal (a log): phases write plain lines.
LOG = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None, "COLUMNS": "200"}


def run(*args) -> object:
    result = runner.invoke(app, [str(arg) for arg in args], env=LOG)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The same generated network as .json, .json.gz and .graphml.gz."""
    folder = tmp_path_factory.mktemp("generated")
    paths = {suffix: folder / f"n{suffix}" for suffix in (".json", ".json.gz", ".graphml.gz")}
    for path in paths.values():
        run("generate", "siot", "-n", "20", "--seed", "4", "-o", path)
    return paths


@pytest.mark.parametrize("suffix", [".json.gz", ".graphml.gz"])
def test_a_generated_compressed_file_is_analysed_as_the_uncompressed_one(generated, suffix):
    assert generated[suffix].read_bytes()[:2] == b"\x1f\x8b"
    analysed = [json.loads(run("analyze", generated[name], "--audit-rounds", "0",
                               "--json").stdout) for name in (".json", suffix)]
    assert analysed[0] == analysed[1]


def test_generate_names_the_compressed_suffixes_when_refusing_one(tmp_path):
    check_one_line(["generate", "siot", "-n", "20", "-o", str(tmp_path / "n.txt.gz")],
                   "--output must end in .json, .graphml, .json.gz or .graphml.gz")


@pytest.mark.parametrize("command", [["analyze"], ["audit", "--rounds", "3"]])
def test_a_damaged_compressed_file_exits_2_in_one_line(generated, tmp_path, command):
    bad = tmp_path / "bad.json.gz"
    data = generated[".json.gz"].read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    check_one_line([command[0], str(bad), *command[1:]], str(bad),
                   "not a readable gzip file", "ended before the end-of-stream marker")


def test_a_large_compressed_file_is_loaded_with_its_size_compressed(generated, monkeypatch):
    path = generated[".json.gz"]
    monkeypatch.setattr(_common, "LOADING_REPORT_BYTES", path.stat().st_size * 2)
    result = run("audit", path, "--rounds", "3")  # twice its size: large for a .gz
    shown = f"loading {path} ({path.stat().st_size / 1e6:.1f} MB compressed)"
    lines = [line for line in result.stderr.splitlines() if line.startswith("loading")]
    assert lines[0] == f"{shown} ..." and lines[-1].startswith(f"{shown}: done in ")


class Loaded(Exception):
    """What the spy in place of resolve_network stops a command with."""


#: Each command that loads a NETWORK file (or --network), its module and its arguments.
LOADERS = {
    "analyze": ("design", ["analyze", "{net}"]),
    "design": ("design", ["design", "{net}"]),
    "audit": ("audit", ["audit", "{net}", "--rounds", "3"]),
    "validate": ("validate", ["validate", "{net}"]),
    "probe": ("probe", ["probe", "{net}", "-o", "{tmp}/probes"]),
    "export": ("export", ["export", "{tmp}/d.json", "-f", "mixing-csv", "-o", "{tmp}/w.csv",
                          "--network", "{net}"]),
}


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("name", sorted(LOADERS))
def test_every_command_that_loads_a_network_reports_it_unless_printing_json(
        name, as_json, generated, tmp_path, monkeypatch):
    module, args = LOADERS[name]
    seen = {}

    def spy(network, example, *, show_loading=False):
        seen["show_loading"] = show_loading
        raise InvalidInputError("stopped after loading")

    monkeypatch.setattr(importlib.import_module(f"topokit.cli.{module}"), "resolve_network",
                        spy)
    filled = [arg.format(net=generated[".json.gz"], tmp=tmp_path) for arg in args]
    check_one_line(filled + (["--json"] if as_json else []), "stopped after loading")
    assert seen == {"show_loading": not as_json}


def test_a_large_plain_file_is_written_with_the_compressed_suffix_to_ask_for(tmp_path,
                                                                            monkeypatch):
    from topokit.cli import design

    outputs = {suffix: tmp_path / f"n{suffix}" for suffix in (".json", ".json.gz")}
    monkeypatch.setattr(design, "COMPRESSION_HINT_BYTES", 1_000)
    said = {suffix: run("generate", "siot", "-n", "20", "--seed", "4", "-o", path).stdout
            for suffix, path in outputs.items()}
    size = outputs[".json"].stat().st_size / 1e6
    assert f"({size:.1f} MB; as n.json.gz it would be about a tenth of that" in said[".json"]
    assert "a tenth" not in said[".json.gz"]
    monkeypatch.setattr(design, "COMPRESSION_HINT_BYTES", 10**12)
    assert "a tenth" not in run("generate", "siot", "-n", "20", "-o", outputs[".json"]).stdout
