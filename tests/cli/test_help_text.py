"""What the command line says of itself: its version, and help that keeps every word."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import topokit
from topokit.cli import app

runner = CliRunner()


def test_version_prints_the_package_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"topokit {topokit.__version__}"


@pytest.mark.parametrize("command, text", [
    (["audit"], "[default: each DP device's own level"),
    (["design"], "[default: fastest;"),
])
def test_help_keeps_bracketed_text(command, text):
    # Rich markup would read "[default: ...]" as a tag and drop it.
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    assert text in " ".join(result.output.split())


@pytest.mark.parametrize("command", [[], ["design"], ["audit"], ["export"], ["probe"],
                                     ["validate"], ["calibrate"], ["gfl", "run"]])
def test_help_fits_80_columns(command):
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    too_wide = [line for line in result.output.splitlines() if len(line) > 80]
    assert too_wide == []
    assert not re.search(r"\w…", result.output)  # no option name or word cut short
