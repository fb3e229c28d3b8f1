"""analyses/schedule_predictor.py re-predicts the field benchmark's runs from their recorded
features: checked against what ``topokit.validate`` itself predicted for the same runs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import analyses.schedule_predictor as analysis
from topokit import Workload, load_example, load_predictor, validate

EPSILON, TARGET = 2.0, 0.85


@pytest.fixture(scope="module")
def field_like_runs():
    """A validate run of a static topology and a schedule at a workload, labelled as the
    field benchmark labels its runs."""
    net = load_example("toy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = validate(net, {"ndlf": "ndlf", "epidemic": "epidemic:2"},
                          workload=Workload(epsilon=EPSILON, target=TARGET),
                          trials=1, seed=0)
    frame = result.frame
    return frame.assign(family="siot", network="toy", skewness=0.0, epsilon_round=EPSILON,
                        kind=frame["topology"], topology_key=frame["topology"],
                        paper_time=frame["pseudo_time"])


def test_the_workload_features_give_back_validates_own_predictions(field_like_runs):
    ceiling, probe_rounds = analysis.shipped_workload()
    runs = analysis.with_workload(field_like_runs, ceiling, probe_rounds)
    assert runs["target_closeness"].tolist() == pytest.approx([TARGET / ceiling] * len(runs))
    predicted = analysis.predicted_times(runs, load_predictor("workload"))
    recorded = runs["pseudo_time"].astype(float)
    assert np.isinf(recorded).tolist() == np.isinf(predicted).tolist()
    finite = np.isfinite(recorded)
    assert finite.any()
    assert predicted[finite].tolist() == pytest.approx(recorded[finite].tolist(), rel=1e-9)


def test_a_refit_equal_to_the_shipped_predictor_judges_as_the_recorded_times(field_like_runs):
    runs = analysis.with_workload(field_like_runs, *analysis.shipped_workload())
    runs = runs.assign(kind=runs["topology"].map({"ndlf": "ndlf", "epidemic": "epidemic"}),
                       topology=runs["topology"].map({"ndlf": "optimize",
                                                      "epidemic": "epidemic"}))
    results = analysis.check(runs, {"same": load_predictor("workload")})
    assert results["same"]["calls"] == results["shipped"]["calls"]
    assert results["same"]["calls"]["settings"] == 1
