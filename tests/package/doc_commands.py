"""The shell commands and Python blocks of a Markdown page, and running them as written.

Shared by ``test_readme_commands.py`` (README.md) and ``test_tutorial_commands.py``
(``docs/tutorial/*.md``); imported as ``doc_commands`` (pytest puts this folder on
``sys.path`` for the tests in it).

What counts as a command:

- every line of an un-languaged, ``bash``, ``console``, ``sh`` or ``shell`` fenced block
  (in a ``console`` block only the ``$ `` lines; a trailing ``\\`` continues a line;
  ``&&`` splits a line into commands; blank lines and ``#`` comments are skipped);
- every inline code span that starts with ``topokit `` and has an option (a word that
  starts with ``-``), such as ``topokit design --example toy``; it may run over two
  lines.  A span without an option, such as ``topokit design`` or ``topokit gfl run``,
  names a command in prose and is not run: :func:`prose_spans` lists them, and the tests
  check that they hold command names only (:func:`command_names`), so that a command with
  arguments but no option cannot pass for prose.

A fenced block right after ``<!-- not run: REASON -->`` (blank lines between allowed) is
neither run nor checked: the reason says why (network access, minutes of work, a copy run
elsewhere).  The Quickstart's ``pip install`` and ``python -m pytest`` (between
``<!-- quickstart:begin -->`` and ``<!-- quickstart:end -->``) are left to CI
(``.ci/run``); anywhere else such a line must be in a block marked not run.

:func:`run_steps` runs a page's commands and Python blocks in reading order in one folder
(later steps read the files earlier ones write; the Python blocks share one namespace), each
command with ``COLUMNS=80``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

COLUMNS = 80
SHELL_LANGUAGES = {"", "bash", "console", "sh", "shell"}
LEFT_TO_CI = ("pip install", "python -m pytest")  # the Quickstart's install and test suite
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    language: str
    lines: list[str]
    start: int  # offset of the opening fence
    end: int  # offset just after the closing fence
    line: int  # line number of the opening fence (1-based)
    quickstart: bool  # between the quickstart markers
    not_run: str = ""  # the reason of a <!-- not run: ... --> comment right before it


@dataclass
class Step:
    """One command or Python block of a page, in reading order."""

    kind: str  # "shell" or "python"
    code: str
    offset: int
    line: int

    @property
    def label(self) -> str:
        return self.code if self.kind == "shell" else f"python block at line {self.line}"


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def fenced_blocks(text: str, name: str = "the page") -> list[Block]:
    """The fenced blocks of ``text``, in order."""
    quickstarts = [(m.start(), m.end()) for m in re.finditer(
        r"<!-- quickstart:begin -->.*?<!-- quickstart:end -->", text, re.S)]
    blocks, current, offset, not_run = [], None, 0, None
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        fence = re.match(r"^```\s*(\S*)\s*$", line)
        if current is None and fence:
            inside = any(start <= offset < end for start, end in quickstarts)
            current = Block(fence.group(1), [], offset, -1, number, inside,
                            not_run[0] if not_run else "")
            not_run = None
        elif current is not None and line.startswith("```"):
            current.end = offset + len(line)
            blocks.append(current)
            current = None
        elif current is not None:
            current.lines.append(line.rstrip("\n"))
        else:
            comment = NOT_RUN.match(line.strip())
            assert not (not_run and line.strip() and not comment), (
                f"{name}, line {not_run[1]}: <!-- not run --> is not right before a fenced "
                "block")
            if comment:
                assert comment.group(1), f"{name}, line {number}: <!-- not run: --> gives no reason"
                not_run = (comment.group(1), number)
        offset += len(line)
    assert current is None, f"{name} has an unclosed code fence"
    assert not_run is None, f"{name}, line {not_run[1]}: <!-- not run --> before no block"
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


def _spans(text: str, blocks: list[Block]) -> list[tuple[int, str]]:
    """The inline code spans outside the fenced blocks: (offset, text on one line)."""
    prose = list(text)
    for block in blocks:
        prose[block.start:block.end] = " " * (block.end - block.start)
    return [(span.start(), " ".join(span.group(1).split()))
            for span in re.finditer(r"`([^`]+)`", "".join(prose))]


def _has_option(span: str) -> bool:
    return any(word.startswith("-") for word in span.split()[1:])


def prose_spans(text: str, name: str = "the page") -> list[str]:
    """The spans that start with ``topokit `` but have no option: command names in prose."""
    return [span for _, span in _spans(text, fenced_blocks(text, name))
            if span.startswith("topokit ") and not _has_option(span)]


def steps(text: str, name: str = "the page") -> list[Step]:
    """The page's commands (each once) and Python blocks, in reading order."""
    found = []
    blocks = fenced_blocks(text, name)
    for block in blocks:
        if block.not_run:
            continue
        if block.language == "python":
            found.append(Step("python", "\n".join(block.lines), block.start, block.line + 1))
        if block.language not in SHELL_LANGUAGES:
            continue
        for line in _block_commands(block):
            for part in (p.strip() for p in line.split("&&")):
                if part.startswith(LEFT_TO_CI):
                    assert block.quickstart, (
                        f"{name}, line {block.line}: {part!r} outside the Quickstart: mark "
                        "its block <!-- not run: ... --> or leave it to the Quickstart")
                    continue
                found.append(Step("shell", part, block.start, block.line))
    for offset, span in _spans(text, blocks):
        if span.startswith("topokit ") and _has_option(span):
            found.append(Step("shell", span, offset, _line_of(text, offset)))
    ordered, seen = [], set()
    for step in sorted(found, key=lambda step: step.offset):
        if step.kind == "shell" and step.code in seen:
            continue
        seen.add(step.code)
        ordered.append(step)
    return ordered


def shell_commands(text: str, name: str = "the page") -> list[str]:
    """The page's commands in reading order, each once, without those left to CI."""
    return [step.code for step in steps(text, name) if step.kind == "shell"]


def python_blocks(text: str, name: str = "the page") -> list[str]:
    """The code of the page's Python blocks that run, in order."""
    return [step.code for step in steps(text, name) if step.kind == "python"]


def command_names() -> set[str]:
    """The names of topokit's commands and subcommands (``design``, ``gfl``, ``run``, ...)."""
    import typer.main

    from topokit.cli import app

    names, groups = set(), [typer.main.get_command(app)]
    while groups:
        for name, command in getattr(groups.pop(), "commands", {}).items():
            names.add(name)
            groups.append(command)
    return names


# --- running them ----------------------------------------------------------------------

@dataclass
class Ran:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    skipped: str = ""


def environment() -> dict[str, str]:
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


def run_command(command: str, folder: Path, env: dict[str, str] | None = None) -> Ran:
    """Run one shell command in ``folder`` (bash, ``-euo pipefail``)."""
    env = environment() if env is None else env
    if command.startswith("topokit serve"):
        return _serve(command, folder, env)
    start = time.perf_counter()
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    return Ran(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)


@contextlib.contextmanager
def _working_directory(folder: Path):
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run_python(code: str, label: str, namespace: dict, folder: Path) -> Ran:
    """Execute a Python block in ``namespace`` with ``folder`` as the working directory."""
    start = time.perf_counter()
    try:
        with _working_directory(folder):
            exec(compile(code, label, "exec"), namespace)
    except Exception:  # reported by the test of this block
        return Ran(1, "", traceback.format_exc(), time.perf_counter() - start)
    return Ran(0, "", "", time.perf_counter() - start)


@dataclass
class PageRun:
    folder: Path
    results: dict[str, Ran] = field(default_factory=dict)  # by Step.label
    namespace: dict = field(default_factory=dict)  # of the Python blocks


def run_steps(page_steps: list[Step], folder: Path, name: str) -> PageRun:
    """Every step of a page, in reading order, in ``folder``."""
    run = PageRun(folder, namespace={"__name__": name})
    env = environment()
    for step in page_steps:
        if step.kind == "shell":
            run.results[step.label] = run_command(step.code, folder, env)
        else:
            run.results[step.label] = run_python(step.code, f"{name}, {step.label}",
                                                 run.namespace, folder)
    return run


def check_ran(label: str, result: Ran) -> None:
    """The command exited 0 and printed no line wider than ``COLUMNS``."""
    assert result.returncode == 0, f"{label}\n{result.stdout}\n{result.stderr}"
    wide = [line for line in (result.stdout + "\n" + result.stderr).splitlines()
            if len(line) > COLUMNS]
    assert not wide, f"{label}: lines wider than {COLUMNS} columns:\n" + "\n".join(wide)


def metrics_table(output: str) -> dict[str, dict[str, str]]:
    """The rows of a ``metric | framework...`` table: {metric: {framework: cell}}."""
    header, rows = None, {}
    for line in output.splitlines():
        cells = line.split()
        if cells[:1] == ["metric"]:
            header = cells[1:]
        elif header and len(cells) == len(header) + 1:
            rows[cells[0]] = dict(zip(header, cells[1:], strict=True))
    return rows
