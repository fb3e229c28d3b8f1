"""``topokit validate`` and ``topokit calibrate``: the CLI agrees with the Python API."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from topokit import evaluate, load_example
from topokit.cli import app
from topokit.design.predictor import GlobalIteratePredictor
from topokit.validation.core import calibrate, validate

runner = CliRunner()

ARGS = ("--example", "toy", "-t", "autotag,ndlf,dlfdp", "--trials", "2", "--rounds", "30",
        "--targets", "0.7,0.999")


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("validate")
    result = run("validate", *ARGS, "-o", folder / "runs.parquet", "--plot",
                 folder / "validation.png", "--json")
    assert result.exit_code == 0, result.output
    return folder, json.loads(result.stdout)


def test_validate_json_and_parquet_match_the_api(validated):
    folder, record = validated
    frame = pd.read_parquet(folder / "runs.parquet")
    assert len(frame) == record["n_runs"] == 3 * 2 * 2
    expected = validate(load_example("toy"), ("autotag", "ndlf", "dlfdp"), trials=2, rounds=30,
                        targets=(0.7, 0.999), seed=0)
    pd.testing.assert_frame_equal(frame, expected.frame)
    correlations = {row["target"]: row for row in record["correlations"]}
    assert correlations[0.7]["n"] == 6
    assert correlations[0.7]["spearman_time"] == pytest.approx(
        expected.correlations().iloc[0]["spearman_time"])
    assert correlations[0.999]["spearman_time"] is None  # never reached: null in strict JSON
    assert (folder / "validation.png").read_bytes()[:4] == b"\x89PNG"
    assert not (folder / "runs.parquet.parts").exists()


def test_validate_table_output(tmp_path):
    result = run("validate", "--example", "toy", "-t", "ndlf,dlfdp", "--trials", "1",
                 "--rounds", "20", "--targets", "0.8", "-o", tmp_path / "runs.parquet")
    assert result.exit_code == 0, result.output
    for text in ("ndlf", "dlfdp", "Spearman", "G@a", "wrote 2 rows"):
        assert text in result.stdout


def test_calibrate_then_analyze_with_the_predictor(validated, tmp_path):
    folder, _ = validated
    predictor_path = tmp_path / "predictor.json"
    result = run("calibrate", folder / "runs.parquet", "-o", predictor_path, "--target", "0.7",
                 "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    expected = calibrate(folder / "runs.parquet", target=0.7)
    assert record["coefficients"] == pytest.approx(expected.coefficients)
    assert record["n_runs"] == 6 and record["spearman_paper"] is not None
    predictor = GlobalIteratePredictor.load(predictor_path)
    assert predictor.is_fitted

    analyzed = run("analyze", "--example", "toy", "--predictor", predictor_path, "--json")
    assert analyzed.exit_code == 0, analyzed.output
    metrics = evaluate(load_example("toy"), load_example("toy").topology, predictor)
    assert json.loads(analyzed.stdout)["predicted_global_iterate"] == pytest.approx(
        metrics.predicted_global_iterate)
    coefficients = np.array(record["predictor"]["coef"])
    assert metrics.predicted_global_iterate == pytest.approx(
        coefficients @ [metrics.hitting_time, metrics.phi] + record["predictor"]["intercept"])

    table = run("calibrate", folder / "runs.parquet", "-o", tmp_path / "p2.json",
                "--target", "0.7")
    assert table.exit_code == 0, table.output
    assert "Spearman" in table.stdout and "eq. (15)" in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("calibrate", "missing.parquet", "-o", "p.json"), "no such runs file"),
        (("validate", "--example", "toy", "--targets", "1.5", "-o", "r.parquet"), "(0, 1]"),
        (("validate", "--example", "toy", "--targets", "high", "-o", "r.parquet"),
         "cannot read target"),
        (("validate", "--example", "toy", "-t", "autotag,best", "-o", "r.parquet"),
         "unknown topology spec"),
        (("validate", "--example", "toy", "-t", "random:0", "-o", "r.parquet"),
         "positive integer"),
        (("validate", "--example", "toy", "--trials", "0", "-o", "r.parquet"), "trials"),
        (("validate", "-o", "r.parquet"), "either a NETWORK file or --example"),
        (("validate", "--example", "toy", "--dataset", "imagenet", "-o", "r.parquet"),
         "unknown dataset"),
    ],
)
def test_user_errors_exit_2_without_traceback(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "r.parquet").exists()


def test_calibrate_bad_tables_exit_2(tmp_path):
    (tmp_path / "bad.parquet").write_text("not a parquet file")
    pd.DataFrame({"topology": ["a"], "target": [0.9]}).to_parquet(tmp_path / "thin.parquet")
    for name, message in (("bad.parquet", "not a Parquet runs table"),
                          ("thin.parquet", "lacks column")):
        result = run("calibrate", tmp_path / name, "-o", tmp_path / "p.json")
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "p.json").exists()


def test_validate_tables_read_at_80_columns():
    # Every table line within 80 columns and no number or name cut short with an ellipsis.
    result = runner.invoke(app, ["validate", "--example", "toy", "-t", "ndlf,dlfdp,erg",
                                 "--trials", "1", "--rounds", "20", "--targets", "0.6,0.7,0.8"],
                           env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert "…" not in result.stdout
    assert sum(line.lstrip().startswith("dlfdp") for line in lines) == 1 + 3  # one per target
