"""``topokit serve``'s command line: its help, its checks, and no heavy import up front."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from topokit.cli import app

runner = CliRunner()


def test_serve_help_lists_its_options():
    result = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    for option in ("--host", "--port", "--db", "--workers", "--scheduler", "--token",
                   "--max-body-mb", "--max-devices"):
        assert option in result.output
    assert [line for line in result.output.splitlines() if len(line) > 80] == []


def test_serve_refuses_bad_options_in_one_line(tmp_path):
    result = runner.invoke(app, ["serve", "--workers", "-1", "--db", str(tmp_path / "j.db")])
    assert result.exit_code == 2
    assert "--workers" in result.output
    assert not (tmp_path / "j.db").exists()


def test_importing_the_cli_imports_no_web_framework():
    code = ("import sys, topokit.cli; "
            "print(sorted(m for m in ('fastapi', 'starlette', 'uvicorn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]"
