"""analyses/ndlf_margin.py: the margin's simulation of optimize on saved benchmark runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import analyses.ndlf_margin as analysis


def _times() -> pd.DataFrame:
    """Two settings x two trials: optimize's arms and the NDLF arms with their weights."""
    rows = []
    for network, base in (("a", 100.0), ("b", 200.0)):
        for trial in range(2):
            for method, factor in (("optimize-lazy-metropolis", 1.1), ("ndlf", 1.0),
                                   ("optimize-metropolis", 0.8), ("ndlf-metropolis", 0.9),
                                   ("optimize", 0.7), ("ndlf-fastest", 0.75)):
                time = base * factor + trial
                rows.append({"network": network, "skewness": 0.0, "model": "logreg",
                             "trial": trial, "method": method, "time": time, "censored": time})
    return pd.DataFrame(rows)


def _decision(gain, kept=False):
    return {"margin": 1.0, "kept_ndlf": kept, "predicted_gain": gain, "ndlf_weights": "x"}


def test_a_null_predicted_time_in_the_benchmark_json_is_never():
    # strict JSON writes an infinite predicted time (a start that never reaches) as null
    entry = {"network": "a", "skewness": 0.0, "model": "logreg", "method": "optimize",
             "start_times": {"ndlf": 110.0, "erg": None}, "predicted_time": 100.0,
             "ndlf_margin": _decision(1.1)}
    gains = analysis.predicted_gains({"optimize": [entry]})
    assert gains["gain"].tolist() == [pytest.approx(1.1)]
    entry["start_times"]["erg"] = 105.0  # now a start predicted faster than NDLF
    assert analysis.predicted_gains({"optimize": [entry]})["gain"].tolist() == [np.inf]


def test_gain_counts_only_when_ndlf_is_no_slower_than_every_reference():
    starts = {"ndlf": 110.0, "autotag": 120.0}
    assert analysis._gain(starts, 100.0, _decision(1.1)) == pytest.approx(1.1)
    # NDLF with weights, predicted 115: slower than no reference, so it could be kept
    assert analysis._gain({"ndlf": 130.0, "autotag": 120.0}, 100.0,
                          _decision(1.15)) == pytest.approx(1.15)
    assert analysis._gain({"ndlf": 130.0, "autotag": 109.0}, 100.0, _decision(1.1)) == np.inf
    # kept already (gain < 1 at margin 1.0): the predicted time is NDLF's own
    assert analysis._gain(starts, 100.0, _decision(0.9, kept=True)) == pytest.approx(0.9)
    assert analysis._gain(starts, 100.0, _decision(None)) == np.inf  # NDLF no start


def test_gains_are_read_for_the_arm_judged():
    entry = {"network": "a", "skewness": 0.0, "model": "mlp", "start_times": {"ndlf": 105.0},
             "predicted_time": 100.0}
    benchmark = {"models": ["logreg", "mlp"], "optimize": [
        {**entry, "method": "optimize-lazy-metropolis", "ndlf_margin": _decision(1.05)},
        {**entry, "method": "optimize", "predicted_time": 50.0, "ndlf_margin": _decision(2.0)}]}
    gains = analysis.predicted_gains(benchmark)
    assert gains["gain"].tolist() == [pytest.approx(2.0)]
    assert gains["model"].tolist() == ["mlp"]  # each model's design is its predictor's
    assert analysis.predicted_gains(benchmark, "optimize-lazy-metropolis")["gain"].tolist() == [
        pytest.approx(1.05)]


def test_a_design_of_a_benchmark_before_per_model_designs_serves_every_model():
    entry = {"network": "a", "skewness": 0.0, "start_times": {"ndlf": 105.0},
             "predicted_time": 50.0, "method": "optimize", "ndlf_margin": _decision(2.0)}
    gains = analysis.predicted_gains({"models": ["logreg", "mlp"], "optimize": [entry]})
    assert gains["model"].tolist() == ["logreg", "mlp"]
    assert gains["gain"].tolist() == [pytest.approx(2.0)] * 2


@pytest.mark.parametrize(("arm", "fallback"), [("optimize", "ndlf-fastest"),
                                               ("optimize-lazy-metropolis", "ndlf"),
                                               ("optimize-metropolis", "ndlf-metropolis")])
def test_where_the_gain_is_below_the_margin_the_arm_gets_its_ndlf_arm_s_runs(arm, fallback):
    times = _times()
    gains = pd.DataFrame({"network": ["a", "b"], "skewness": [0.0, 0.0],
                          "model": ["logreg", "logreg"], "gain": [1.05, 1.2]})
    out = analysis.with_margin(times, gains, 1.1, arm)
    assert set(out["method"]) == {"optimize", "ndlf"}
    mine = out[out["method"] == "optimize"].set_index(["network", "trial"])["time"]
    source = times.set_index(["method", "network", "trial"])["time"]
    for trial in range(2):
        assert mine[("a", trial)] == source[(fallback, "a", trial)]  # kept NDLF
        assert mine[("b", trial)] == source[(arm, "b", trial)]       # clearly faster: kept
    untouched = analysis.with_margin(times, gains, 0.0, arm)
    assert (untouched[untouched["method"] == "optimize"]["time"].to_numpy()
            == times[times["method"] == arm]["time"].to_numpy()).all()


def test_the_margin_chosen_has_the_fewest_slower_settings_then_the_smallest():
    table = pd.DataFrame({"margin": [1.0, 1.05, 1.1], "slower": [3, 1, 1]})
    assert analysis.choose_margin(table) == 1.05


def test_the_fallback_is_the_ndlf_arm_of_the_weights_optimize_gave_ndlf():
    """With the MLP's predictor the default arm keeps the paper's weights: where the margin
    keeps NDLF, the result is plain NDLF, not NDLF with fastest-mixing weights."""
    entry = {"network": "a", "skewness": 0.0, "model": "logreg", "method": "optimize",
             "start_times": {"ndlf": 105.0}, "predicted_time": 100.0}
    benchmark = {"models": ["logreg"], "optimize": [
        {**entry, "ndlf_margin": {**_decision(1.05), "ndlf_weights": "lazy-metropolis"}},
        {**entry, "network": "b", "ndlf_margin": {**_decision(1.05), "ndlf_weights": "fastest"}}]}
    gains = analysis.predicted_gains(benchmark)
    assert gains["fallback"].tolist() == ["ndlf", "ndlf-fastest"]
    times = _times()
    out = analysis.with_margin(times, gains, 1.1)
    mine = out[out["method"] == "optimize"].set_index(["network", "trial"])["time"]
    source = times.set_index(["method", "network", "trial"])["time"]
    for trial in range(2):
        assert mine[("a", trial)] == source[("ndlf", "a", trial)]
        assert mine[("b", trial)] == source[("ndlf-fastest", "b", trial)]
