"""analyses/ndlf_margin.py: the margin's simulation of optimize on saved benchmark runs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analyses"))

import ndlf_margin as analysis  # noqa: E402


def _times() -> pd.DataFrame:
    """Two settings x two trials: optimize, NDLF, and their Metropolis-Hastings twins."""
    rows = []
    for network, base in (("a", 100.0), ("b", 200.0)):
        for trial in range(2):
            for method, factor in (("optimize", 1.1), ("ndlf", 1.0),
                                   ("optimize-metropolis", 0.8), ("ndlf-metropolis", 0.9)):
                time = base * factor + trial
                rows.append({"network": network, "skewness": 0.0, "model": "logreg",
                             "trial": trial, "method": method, "time": time, "censored": time})
    return pd.DataFrame(rows)


def test_gain_counts_only_when_ndlf_is_the_fastest_reference():
    assert analysis._gain({"ndlf": 110.0, "autotag": 120.0}, 100.0) == pytest.approx(1.1)
    assert analysis._gain({"ndlf": 110.0, "autotag": 109.0}, 100.0) == np.inf


def test_benchmark_entries_of_other_arms_are_ignored():
    entry = {"network": "a", "skewness": 0.0, "start_times": {"ndlf": 105.0},
             "predicted_time": 100.0}
    gains = analysis.predicted_gains({"optimize": [
        {**entry, "method": "optimize"}, {**entry, "method": "optimize-fastest",
                                          "predicted_time": 50.0}]})
    assert gains["gain"].tolist() == [pytest.approx(1.05)]


@pytest.mark.parametrize(("arm", "fallback"), [("optimize", "ndlf"),
                                               ("optimize-metropolis", "ndlf-metropolis")])
def test_where_the_gain_is_below_the_margin_the_arm_gets_its_ndlf_arm_s_runs(arm, fallback):
    times = _times()
    gains = pd.DataFrame({"network": ["a", "b"], "skewness": [0.0, 0.0], "gain": [1.05, 1.2]})
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
