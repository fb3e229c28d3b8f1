"""Issue #31: refitting a predictor on a runs table with no usable feature values.

``calibrate(runs, predictor="default")`` (``topokit calibrate --refit
default``) on a table whose feature columns were all NaN, all inf or text
ended in scikit-learn's ``ValueError: Found array with 0 sample(s)`` or
``could not convert string to float``.  Now the column is named and the fix
said, in one line (the command line: status 2, no traceback).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from topokit.cli import app
from topokit.design.time_predictor import DEFAULT_FEATURES
from topokit.errors import InvalidInputError
from topokit.validation.calibration import calibrate

from cli_errors import WIDE, runner


def runs_frame(rows: int = 12) -> pd.DataFrame:
    """A runs table shaped like ``topokit validate -o``'s, with the default predictor's
    feature columns."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "topology": [f"t{k % 6}" for k in range(rows)],
        "target": 0.9,
        "hitting_time": rng.uniform(10, 50, rows),
        "phi": rng.uniform(0, 1, rows),
        "local_iterate": rng.uniform(10, 60, rows),
        "measured_rounds": rng.uniform(20, 90, rows),
        "measured_time": rng.uniform(100, 900, rows),
        "rounds_run": 100.0,
    })
    for name in DEFAULT_FEATURES:
        frame[name] = rng.uniform(0.1, 1.0, rows)
    return frame


def runs_file(tmp: Path, change: Callable[[pd.DataFrame], pd.DataFrame]) -> Path:
    path = tmp / "runs.parquet"
    change(runs_frame()).to_parquet(path, index=False)
    return path


def nan_in_turn(frame: pd.DataFrame) -> pd.DataFrame:
    """Every run has one NaN feature, never the same column for all."""
    frame = frame.copy()
    for row in range(len(frame)):
        frame.loc[row, DEFAULT_FEATURES[row % len(DEFAULT_FEATURES)]] = np.nan
    return frame


CASES = [
    pytest.param(lambda f: f.assign(noise_felt=np.nan),
                 ("'noise_felt' is NaN or inf in every row", "no run of target 0.9",
                  "topokit validate -o"), id="all-nan"),
    pytest.param(lambda f: f.assign(effective_neighbours=np.inf),
                 ("'effective_neighbours' is NaN or inf in every row",), id="all-inf"),
    pytest.param(nan_in_turn, ("every run has NaN or inf in one of the columns",),
                 id="nan-in-every-run"),
    pytest.param(lambda f: f.assign(noise_average="high"),
                 ("column 'noise_average'", "must be numeric", "'high'"), id="text"),
    pytest.param(lambda f: f.assign(heterogeneity_local=True),
                 ("column 'heterogeneity_local'", "must be numeric"), id="booleans"),
]


@pytest.mark.parametrize(("change", "keywords"), CASES)
def test_a_refit_on_unusable_feature_columns_is_refused(change, keywords, tmp_path):
    path = runs_file(tmp_path, change)
    with pytest.raises(InvalidInputError) as caught:
        calibrate(path, predictor="default")
    message = str(caught.value)
    assert "\n" not in message
    for keyword in keywords:
        assert keyword.lower() in message.lower(), message
    result = runner.invoke(app, ["calibrate", str(path), "--refit", "default",
                                 "-o", str(tmp_path / "p.json")], env=WIDE)
    output = result.output
    assert result.exit_code == 2, f"exit {result.exit_code}: {output}\n{result.exception!r}"
    assert "Traceback" not in output, output
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    for keyword in keywords:
        assert keyword.lower() in lines[0].lower(), lines[0]
    assert not (tmp_path / "p.json").exists()


def test_regression_31_all_nan_features_reached_scikit_learn(tmp_path):
    """It ended in ``ValueError: Found array with 0 sample(s)``."""
    frame = runs_frame().assign(noise_felt=np.nan)
    with pytest.raises(InvalidInputError, match="noise_felt"):
        calibrate(frame, predictor="default")


def test_runs_with_some_finite_features_are_still_refitted():
    """Runs with a NaN feature are left out as before; the others are fitted on."""
    frame = runs_frame()
    frame.loc[:5, "noise_felt"] = np.nan
    result = calibrate(frame, predictor="default")
    assert result.n_runs == 6
