"""Issue #31: a predictor file that would predict nonsense, or is of a later format, is refused.

A predictor file with a NaN intercept, a spread (``rounds_sigma``) <= 0 or a
horizon of 0 was read without a word, and so was one of a future format
version (``version: 99``) as if it were current.  Now
:meth:`TrainingTimePredictor.from_dict` checks every fitted value, both
predictor kinds refuse versions newer than this topokit knows, and the
command line says so in one line (status 2, no traceback).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from topokit.design.predictor import GlobalIteratePredictor
from topokit.design.time_predictor import TrainingTimePredictor, _shipped_path, load_predictor
from topokit.errors import InputFileError

from cli_errors import check_one_line


def shipped() -> dict:
    """The default predictor's file, as data to break."""
    return json.loads(_shipped_path("default").read_text())


def write(tmp: Path, data: dict) -> Path:
    path = tmp / "predictor.json"
    # allow_nan: a NaN is what the broken file holds (Python's json writes it as NaN).
    path.write_text(json.dumps(data, allow_nan=True))
    return path


def setter(*keys_and_value) -> Callable[[dict], None]:
    """Set ``data[k1][k2]... = value``."""
    *keys, value = keys_and_value

    def change(data: dict) -> None:
        for key in keys[:-1]:
            data = data[key]
        data[keys[-1]] = value

    return change




FITTED_CASES = [
    pytest.param(setter("model", "rounds_intercept", math.nan),
                 ("model.rounds_intercept", "finite number", "nan"), id="nan-rounds-intercept"),
    pytest.param(setter("model", "reach_intercept", math.inf),
                 ("model.reach_intercept", "finite number", "inf"), id="inf-reach-intercept"),
    pytest.param(setter("model", "rounds_intercept", "3.2"),
                 ("model.rounds_intercept", "finite number", "'3.2'"), id="text-intercept"),
    pytest.param(setter("model", "rounds_sigma", -0.5),
                 ("model.rounds_sigma", "> 0", "-0.5"), id="negative-sigma"),
    pytest.param(setter("model", "rounds_sigma", 0),
                 ("model.rounds_sigma", "> 0", "got 0"), id="zero-sigma"),
    pytest.param(setter("params", "horizon", 0),
                 ("params.horizon", "> 0", "got 0"), id="zero-horizon"),
    pytest.param(setter("params", "horizon", -200.0),
                 ("params.horizon", "> 0", "-200"), id="negative-horizon"),
    pytest.param(setter("params", "C", math.nan), ("params.C", "> 0"), id="nan-C"),
    pytest.param(lambda d: d["model"]["scale"].__setitem__(0, 0.0),
                 ("model.scale", "> 0"), id="zero-scale"),
    pytest.param(lambda d: d["model"]["mean"].__setitem__(2, math.nan),
                 ("model.mean", "finite numbers"), id="nan-mean"),
    pytest.param(lambda d: d["model"]["rounds_coef"].__setitem__(1, -1.0),
                 ("model.rounds_coef", ">= 0"), id="negative-coef"),
    pytest.param(setter("model", "n_samples_fit", 12.5),
                 ("model.n_samples_fit", "whole number"), id="fractional-count"),
]


@pytest.mark.parametrize(("change", "keywords"), FITTED_CASES)
def test_a_predictor_file_with_broken_fitted_values_is_refused(change, keywords, tmp_path):
    data = shipped()
    change(data)
    path = write(tmp_path, data)
    with pytest.raises(InputFileError) as caught:
        TrainingTimePredictor.from_dict(json.loads(path.read_text()))
    message = str(caught.value)
    assert "\n" not in message
    for keyword in keywords:
        assert keyword.lower() in message.lower(), message
    assert "refit" in message, message  # how to fix it
    with pytest.raises(InputFileError, match="predictor.json"):
        load_predictor(path)
    check_one_line(["analyze", "-e", "toy", "--predictor", str(path)], "predictor.json",
                   *keywords)


def test_regression_31_a_nan_intercept_predicted_nan_rounds(tmp_path):
    """The file loaded and every prediction was NaN."""
    data = shipped()
    data["model"]["rounds_intercept"] = math.nan
    with pytest.raises(InputFileError, match="rounds_intercept"):
        load_predictor(write(tmp_path, data))


@pytest.mark.parametrize("kind", ["training-time", "global-iterate"])
@pytest.mark.parametrize(("version", "keywords"), [
    (99, ("format version 99", "reads versions up to 1", "upgrade topokit")),
    (2, ("format version 2", "upgrade topokit")),
    (0, ("'version' must be a whole number >= 1", "got 0")),
    ("1", ("'version' must be a whole number >= 1", "'1'")),
])
def test_a_predictor_file_of_another_format_version_is_refused(kind, version, keywords,
                                                               tmp_path):
    data = shipped() if kind == "training-time" else GlobalIteratePredictor().to_dict()
    data["version"] = version
    path = write(tmp_path, data)
    with pytest.raises(InputFileError) as caught:
        load_predictor(path)
    message = str(caught.value)
    assert "predictor.json" in message and "\n" not in message
    for keyword in keywords:
        assert keyword.lower() in message.lower(), message
    check_one_line(["analyze", "-e", "toy", "--predictor", str(path)], "predictor.json",
                   *keywords)


def test_the_shipped_and_saved_predictors_still_load(tmp_path):
    for name in ("default", "mlp"):
        assert isinstance(load_predictor(name), TrainingTimePredictor)
    path = write(tmp_path, shipped())
    restored = load_predictor(path)
    assert restored.to_dict()["model"] == shipped()["model"]
    paper = tmp_path / "paper.json"
    GlobalIteratePredictor().save(paper)
    assert isinstance(load_predictor(paper), GlobalIteratePredictor)


def test_a_predictor_file_without_a_version_is_read_as_version_1(tmp_path):
    data = shipped()
    del data["version"]
    assert isinstance(load_predictor(write(tmp_path, data)), TrainingTimePredictor)
