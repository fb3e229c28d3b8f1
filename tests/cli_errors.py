"""What the tests hold every user mistake on the command line to: exit status 2 and one
``error:`` line, no traceback."""

from __future__ import annotations

from typer.testing import CliRunner

from topokit.cli import app

runner = CliRunner()
#: A wide terminal, so rich never wraps the one error line.
WIDE = {"COLUMNS": "400"}


def check_one_line(args: list[str], *keywords: str) -> str:
    """Run the CLI; it must exit 2 with one ``error:`` line holding every keyword."""
    result = runner.invoke(app, args, env=WIDE)
    output = result.output
    assert result.exit_code == 2, f"exit {result.exit_code}: {output}\n{result.exception!r}"
    assert "Traceback" not in output, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{output}"
    assert lines[0].startswith("error: "), output
    for keyword in keywords:
        assert keyword.lower() in lines[0].lower(), f"{keyword!r} not in {lines[0]!r}"
    return lines[0]
