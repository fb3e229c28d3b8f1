"""Every command and Python block of README.md runs as written and prints what the text says.

The shell commands are the lines of README.md's un-languaged, ``bash`` and ``console``
fenced blocks and its inline code spans that start with ``topokit `` (a span may run over
two lines).  The Quickstart's ``pip install`` and ``python -m pytest`` are left to CI
(``.ci/run`` runs them); its ``topokit design --example toy`` runs here.  The commands run
in README order in one fresh folder (later ones read the files earlier ones write), at
``COLUMNS=80``: each must exit 0 and print no line wider than 80 columns.  The numbers the
text states are checked explicitly below, on the commands and expressions they annotate.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
TEXT = README.read_text(encoding="utf-8")
COLUMNS = 80
SHELL_LANGUAGES = {"", "bash", "console", "sh", "shell"}
LEFT_TO_CI = ("pip install", "python -m pytest")  # the Quickstart's install and test suite

@dataclass
class Block:
    language: str
    lines: list[str]
    start: int  # offset of the opening fence in README.md
    quickstart: bool


def fenced_blocks(text: str) -> list[Block]:
    """The fenced blocks of ``text``, in order."""
    quick = re.search(r"<!-- quickstart:begin -->(.*?)<!-- quickstart:end -->", text, re.S)
    blocks, current, offset = [], None, 0
    for line in text.splitlines(keepends=True):
        fence = re.match(r"^```\s*(\S*)\s*$", line)
        if current is None and fence:
            inside = quick is not None and quick.start() <= offset < quick.end()
            current = Block(fence.group(1), [], offset, inside)
        elif current is not None and line.startswith("```"):
            blocks.append(current)
            current = None
        elif current is not None:
            current.lines.append(line.rstrip("\n"))
        offset += len(line)
    assert current is None, "README.md has an unclosed code fence"
    return blocks


def _block_commands(block: Block) -> list[str]:
    commands, pending = [], ""
    for line in block.lines:
        line = line.strip()
        if block.language == "console":
            if not line.startswith("$ ") and not pending:
                continue  # output shown after a prompt
            line = line.removeprefix("$ ")
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        commands.append(" ".join((pending + line).split()))
        pending = ""
    return commands


def shell_commands(text: str = TEXT) -> list[str]:
    """README.md's shell commands in README order, each once, without those left to CI."""
    found = []  # (offset, command)
    prose = list(text)
    for block in fenced_blocks(text):
        end = text.index("```", text.index("\n", block.start) + 1) + 3
        prose[block.start:end] = " " * (end - block.start)  # no inline spans in blocks
        if block.language not in SHELL_LANGUAGES:
            continue
        for line in _block_commands(block):
            for part in (p.strip() for p in line.split("&&")):
                if part.startswith(LEFT_TO_CI):
                    assert block.quickstart, (
                        f"{part!r} outside the Quickstart: this test does not run it")
                    continue
                found.append((block.start, part))
    for span in re.finditer(r"`([^`]+)`", "".join(prose)):
        command = " ".join(span.group(1).split())
        if command.startswith("topokit "):
            found.append((span.start(), command))
    commands = []
    for _, command in sorted(found, key=lambda item: item[0]):
        if command not in commands:
            commands.append(command)
    return commands


def python_blocks(text: str = TEXT) -> list[str]:
    return ["\n".join(block.lines) for block in fenced_blocks(text) if block.language == "python"]


COMMANDS = shell_commands()


def test_the_readme_commands_are_found():
    quickstart = [block for block in fenced_blocks(TEXT) if block.quickstart]
    assert len(quickstart) == 1 and len(quickstart[0].lines) == 2, (
        "the Quickstart must hold exactly two commands (.ci/run)")
    assert COMMANDS[0] == "topokit design --example toy"
    assert "topokit calibrate runs.parquet --refit default --prior-strength 10 -o mine.json" \
        in COMMANDS
    assert COMMANDS.index("topokit validate --example siot16 -o runs.parquet") \
        < COMMANDS.index("topokit calibrate runs.parquet --refit default --prior-strength 10 "
                         "-o mine.json")
    assert len(python_blocks()) == 2


# --- running them ----------------------------------------------------------------------

@dataclass
class Ran:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    skipped: str = ""


def _environment() -> dict[str, str]:
    env = dict(os.environ, COLUMNS=str(COLUMNS))
    env.pop("LINES", None)
    # The topokit command of the Python running the tests comes first on PATH.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _port_in_use(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _serve(command: str, folder: Path, env: dict[str, str]) -> Ran:
    """A server command: it must answer /v1/health, then stop on Ctrl+C (SIGINT)."""
    given = re.search(r"--port[\s=]+(\d+)", command)
    port = int(given.group(1)) if given else 8000  # serve's default
    if _port_in_use(port):
        return Ran(None, "", "", 0.0, skipped=f"port {port} is in use on this machine")
    start = time.perf_counter()
    out, err = folder / "serve.stdout", folder / "serve.stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        server = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=folder, env=env,
                                  stdout=stdout, stderr=stderr)
        healthy = False
        try:
            while time.perf_counter() - start < 120 and server.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health",
                                                timeout=2) as response:
                        healthy = response.status == 200
                        break
                except OSError:
                    time.sleep(0.25)
        finally:
            if server.poll() is None:
                server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    stderr = err.read_text()
    if not healthy:
        stderr += f"\nno answer from /v1/health (exit code {server.returncode})"
    return Ran(server.returncode if healthy else -1, out.read_text(), stderr,
               time.perf_counter() - start)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("readme")


@pytest.fixture(scope="module")
def ran(folder) -> dict[str, Ran]:
    """Every shell command of README.md, run in order in one fresh folder."""
    env = _environment()
    results = {}
    for command in COMMANDS:
        if command.startswith("topokit serve"):
            results[command] = _serve(command, folder, env)
            continue
        start = time.perf_counter()
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=600)
        results[command] = Ran(done.returncode, done.stdout, done.stderr,
                               time.perf_counter() - start)
    return results


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs_and_fits_80_columns(command, ran):
    result = ran[command]
    if result.skipped:
        pytest.skip(result.skipped)
    print(f"{result.seconds:.1f} s: {command}")  # shown with -rP
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    wide = [line for line in (result.stdout + "\n" + result.stderr).splitlines()
            if len(line) > COLUMNS]
    assert not wide, f"{command}: lines wider than {COLUMNS} columns:\n" + "\n".join(wide)


def _metrics_table(output: str) -> dict[str, dict[str, str]]:
    """The rows of a ``metric | framework...`` table: {metric: {framework: cell}}."""
    header, rows = None, {}
    for line in output.splitlines():
        cells = line.split()
        if cells[:1] == ["metric"]:
            header = cells[1:]
        elif header and len(cells) == len(header) + 1:
            rows[cells[0]] = dict(zip(header, cells[1:], strict=True))
    return rows


def test_design_toy_prints_what_the_quickstart_says(ran):
    # "`optimize`'s design keeps the seven social links and no DP device, with
    # fastest-mixing weights, predicted time 331.3 s; DLFDP and ERG are predicted never to
    # reach the target."
    assert "predicted time 331.3 s" in " ".join(TEXT.split())
    result = ran["topokit design --example toy"]
    assert result.returncode == 0, result.stderr
    links = re.search(r"^links \(\* non-social\): (.*)$", result.stdout, re.M).group(1)
    assert len(links.split(", ")) == 7 and "*" not in links
    assert re.search(r"^DP devices: none$", result.stdout, re.M)
    assert re.search(r"^mixing weights: fastest", result.stdout, re.M)
    table = _metrics_table(result.stdout)
    assert round(float(table["pseudo_time"]["optimize"]), 1) == 331.3
    assert table["pseudo_time"]["DLFDP"] == "inf" and table["pseudo_time"]["ERG"] == "inf"


def test_the_commands_write_what_the_text_says(ran, folder):
    validate = ran["topokit validate --example siot16 -o runs.parquet"]
    assert "predicted against measured" in validate.stdout  # "prints predicted against..."
    assert (folder / "runs.parquet").is_file()  # "... and keeps the runs"
    assert (folder / "design.json").is_file() and (folder / "graph.edges").is_file()
    # "eight topologies worth training"
    assert len(list((folder / "probes").glob("*.json"))) == 8 + 1  # and network.json
    assert len((folder / "probes" / "index.csv").read_text().splitlines()) == 1 + 8
    assert (folder / "mine.json").is_file()


# --- the Python blocks ------------------------------------------------------------------

# The values the tour's comments state, on the expressions they annotate.
TOUR_VALUES = [
    ("design.metrics.pseudo_time", "# predicted training time: 331.3 s", 331.3),
    ("topokit.autotag(net).metrics.pseudo_time", "# the paper's AutoTag: 1128.3 s", 1128.3),
]


def test_python_blocks_run_and_print_the_stated_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tour, workload = python_blocks()
    namespace: dict = {"__name__": "readme"}
    exec(compile(tour, "README.md (a short tour)", "exec"), namespace)
    for expression, comment, value in TOUR_VALUES:
        assert re.search(rf"^{re.escape(expression)}\s+{re.escape(comment)}$", tour, re.M), (
            f"the tour no longer annotates {expression} with {comment!r}")
        assert round(eval(expression, namespace), 1) == value, expression
    design = namespace["design"]  # "keeps the seven social links and no DP device"
    assert len(design.topology.edges) == 7 and not design.topology.dp_devices

    exec(compile(workload, "README.md (your workload)", "exec"), namespace)
    assert (tmp_path / "graph.edges").is_file() and (tmp_path / "plan.json").is_file()
