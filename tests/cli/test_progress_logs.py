"""Progress in a log: with stderr a file or a pipe (a batch job, ``nohup``, CI) every long
phase writes plain lines, as a terminal draws bars (issue 41, item 3).

CliRunner's stderr is not a terminal: it is the log file here.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from typer.testing import CliRunner

from topokit.cli import _common, app
from topokit.cli import design as design_cli

runner = CliRunner()
#: Not a terminal whatever the environment running the tests forces (rich honours both).
LOG = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None, "COLUMNS": "100"}


def run(*args: str):
    result = runner.invoke(app, list(args), env=LOG)
    assert result.exit_code == 0, result.output
    return result


def lines_of(result, what: str) -> list[str]:
    """The stderr lines of one phase (its name, or its name and the part it is in)."""
    return [line for line in result.stderr.splitlines()
            if re.match(rf"{re.escape(what)}( \(.*?\))?[: ]", line)]


@pytest.fixture
def every_report(monkeypatch):
    """Every report a line, and the phases of large networks on the small examples."""
    monkeypatch.setattr(_common, "LOG_INTERVAL", 0)
    monkeypatch.setattr(design_cli, "REPORTED_FROM_DEVICES", 0)


def test_design_logs_every_phase_in_plain_lines(every_report, tmp_path):
    output = tmp_path / "design.json"
    result = run("design", "--example", "toy", "-o", str(output))
    searches = lines_of(result, "local searches")
    assert searches[0].startswith("local searches: 1/3 (33 %), elapsed ")
    assert re.fullmatch(r"local searches: 3/3 done in \d+:\d\d:\d\d", searches[-1])
    audits = lines_of(result, "stranger audits")
    # Each reference topology's audit names it; the end line names the whole phase.
    for name in ("optimize", "NDLF", "DLFDP", "ERG", "AutoTag"):
        assert any(line.startswith(f"stranger audits ({name}): ") for line in audits), name
    assert re.fullmatch(r"stranger audits: (\d+)/\1 done in \d+:\d\d:\d\d", audits[-1])
    written = lines_of(result, f"writing {output}")
    assert written[0] == f"writing {output} ..."
    assert written[-1].startswith(f"writing {output}: done in ")
    # Plain text a log keeps: no escape codes, no redrawn line.
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    assert "optimize against the baselines" in result.stdout  # the table stays on stdout
    assert "local searches" not in result.stdout


def test_json_output_stays_pure_and_stderr_quiet(every_report):
    result = run("design", "--example", "toy", "--json")
    assert json.loads(result.stdout)["method"] == "optimize"
    assert result.stderr == ""


def test_a_quick_phase_writes_its_last_line_only(monkeypatch):
    # Within the first interval no line comes before the end line: a phase that fails
    # that soon leaves the error line alone.
    monkeypatch.setattr(_common, "LOG_INTERVAL", 3600.0)
    result = run("audit", "--example", "toy", "--rounds", "3")
    observers = lines_of(result, "observers")
    assert len(observers) == 1, result.stderr
    assert re.fullmatch(r"observers: (\d+)/\1 done in 0:00:0\d", observers[0])


def test_a_phase_without_reports_is_never_silent_for_an_interval(monkeypatch, tmp_path):
    """A heartbeat line every interval while the library works without a word; start and
    end lines of a generated network and its writing."""
    from topokit.network import siot as siot_module

    monkeypatch.setattr(_common, "LOG_INTERVAL", 0.05)
    monkeypatch.setattr(design_cli, "REPORTED_FROM_DEVICES", 0)
    generate = siot_module.siot

    def slow_siot(*args, **kwargs):
        time.sleep(0.3)
        return generate(*args, **kwargs)

    monkeypatch.setattr(siot_module, "siot", slow_siot)
    output = tmp_path / "n.json"
    result = run("generate", "siot", "-n", "16", "--seed", "0", "-o", str(output))
    what = "generating a SIoT network of 16 devices"
    lines = lines_of(result, what)
    assert lines[0] == f"{what} ..."
    assert len(lines) >= 4, result.stderr  # start, heartbeats, end
    assert all(re.fullmatch(rf"{what}: elapsed 0:00:00", line) for line in lines[1:-1])
    assert lines[-1].startswith(f"{what}: done in ")
    written = lines_of(result, f"writing {output}")
    assert written[0] == f"writing {output} ..."
    assert written[-1].startswith(f"writing {output}: done in ")
    assert result.stdout.startswith(f"wrote {output}: 16 devices")


def test_a_large_network_file_is_loaded_with_a_start_and_an_end_line(monkeypatch, tmp_path):
    path = tmp_path / "net.json"
    run("generate", "siot", "-n", "16", "--seed", "0", "-o", str(path))
    monkeypatch.setattr(_common, "LOADING_REPORT_BYTES", 1)
    result = run("audit", str(path), "--rounds", "3")
    size = path.stat().st_size / 1e6
    loading = lines_of(result, f"loading {path}")
    assert loading[0] == f"loading {path} ({size:.1f} MB) ..."
    assert loading[-1].startswith(f"loading {path} ({size:.1f} MB): done in ")
    assert lines_of(runner.invoke(app, ["audit", str(path), "--rounds", "3", "--json"],
                                  env=LOG), "loading") == []


def test_a_terminal_still_gets_the_bar(monkeypatch):
    monkeypatch.setattr(_common, "LOG_INTERVAL", 0)
    result = runner.invoke(app, ["audit", "--example", "toy", "--rounds", "3"],
                           env={**LOG, "TTY_COMPATIBLE": "1"})
    assert result.exit_code == 0, result.output
    assert "━" in result.stderr and "done in" not in result.stderr


def test_metrics_without_an_audit_are_a_phase_of_each_topology(every_report):
    """Without the stranger audit's bar the metrics of a large network still say what they
    are doing (at 5,000 devices they take tens of seconds)."""
    result = run("analyze", "--example", "siot16", "--audit-rounds", "0")
    lines = lines_of(result, "metrics")
    assert lines[0] == "metrics (social graph) ..."
    assert re.fullmatch(r"metrics \(social graph\): done in \d+:\d\d:\d\d", lines[-1])
    # With the audit the bar covers the metrics too: no second phase.
    assert lines_of(run("analyze", "--example", "siot16", "--audit-rounds", "2"),
                    "metrics") == []
