"""topokit validate --workload, and validate without an output file."""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

from topokit import Workload
from topokit.cli import app

runner = CliRunner()
SMALL = ["--example", "toy", "--topologies", "ndlf,dlfdp", "--trials", "1", "--audit-rounds",
         "0"]


def test_validate_trains_with_the_workload(tmp_path):
    path = tmp_path / "workload.json"
    Workload(target=0.5, rounds=6).save(path)
    output = tmp_path / "runs.parquet"
    result = runner.invoke(app, ["validate", *SMALL, "--workload", str(path), "-o", str(output)])
    assert result.exit_code == 0, result.output
    runs = pd.read_parquet(output)
    assert set(runs["target"]) == {0.5}
    assert runs["rounds_run"].max() <= 6


def test_validate_runs_without_an_output_file():
    result = runner.invoke(app, ["validate", *SMALL, "--rounds", "4", "--targets", "0.5"])
    assert result.exit_code == 0, result.output
    assert "wrote" not in result.output


def test_a_workload_and_a_disagreeing_option_is_one_line(tmp_path):
    path = tmp_path / "workload.json"
    Workload(target=0.5, rounds=6).save(path)
    result = runner.invoke(app, ["validate", *SMALL, "--workload", str(path), "--rounds", "9"])
    assert result.exit_code == 2
    assert "--rounds come from --workload" in result.output
    assert "Traceback" not in result.output
