"""Tests of the ``topokit gfl`` sub-app (typer.testing.CliRunner on topokit.gfl.cli.app)."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from topokit.cli.gfl import app
from topokit.errors import InvalidInputError, NetworkFileError, TopokitError

runner = CliRunner()


@pytest.fixture()
def small_toml(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(
        'preset = "regression"\n'
        "[gfl]\niterations = 30\nn_servers = 4\nclients_per_server = 10\nclients_per_round = 3\n"
    )
    return path


def test_run_writes_parquet_and_plot(small_toml, tmp_path):
    out, fig = tmp_path / "res.parquet", tmp_path / "msd.png"
    result = runner.invoke(app, ["run", str(small_toml), "-o", str(out), "--plot", str(fig),
                                 "--seed", "3"])
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(out)
    assert set(frame["label"]) == {"none", "random", "homomorphic"}
    assert len(frame) == 3 * 31
    assert frame.groupby("label")["iteration"].max().eq(30).all()
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "homomorphic" in result.output and "centroid" in result.output
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporary files


def test_seed_option_changes_and_fixes_results(small_toml, tmp_path):
    paths = [tmp_path / f"r{i}.csv" for i in range(3)]
    for path, seed in zip(paths, ("1", "1", "2"), strict=True):
        assert runner.invoke(app, ["run", str(small_toml), "--no-compare", "--seed", seed,
                                   "-o", str(path)]).exit_code == 0
    a, b, c = (pd.read_csv(p) for p in paths)
    pd.testing.assert_frame_equal(a, b)
    assert not a["msd_centroid_db"].equals(c["msd_centroid_db"])
    assert len(a) == 31 and set(a["label"]) == {"homomorphic"}


def test_models_vs_updates_preset_through_toml(tmp_path):
    path = tmp_path / "mvu.toml"
    path.write_text('preset = "models-vs-updates"\niterations = 20\nclients_per_server = 50\n'
                    "repetitions = 2\n")
    out = tmp_path / "mvu.parquet"
    result = runner.invoke(app, ["run", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert set(pd.read_parquet(out)["label"]) == {"no noise", "share models", "share updates"}


@pytest.mark.parametrize(
    "args,error,match",
    [
        (["run", "--preset", "bogus"], InvalidInputError, "preset must be one of"),
        (["run", "--preset", "regression", "-o", "out.xlsx"], InvalidInputError, "--output"),
        (["run", "--preset", "regression", "--plot", "msd.gif"], InvalidInputError, "--plot"),
        (["run", "missing.toml"], TopokitError, "does not exist"),
    ],
)
def test_user_errors_raise_topokit_errors(args, error, match):
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    assert isinstance(result.exception, error)
    assert match in str(result.exception)


def test_bad_toml_key_is_a_file_error(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("sigma = 0.1\n")
    result = runner.invoke(app, ["run", str(path)])
    assert isinstance(result.exception, NetworkFileError)
    assert "unknown GFL configuration keys" in str(result.exception)
