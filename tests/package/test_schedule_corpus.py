"""The pure helpers of analyses/schedule_corpus.py on hand-made frames: the log excess of a
schedule's prediction over the design's, its correction, and the held-out check."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import analyses.schedule_corpus as corpus

BY = ["network"]


def _runs(network, rows):
    """Runs of one setting from (kind, trial, measured rounds, predicted rounds, L)."""
    frame = pd.DataFrame(rows, columns=["kind", "trial", "measured_rounds",
                                        "predicted_global_iterate", "local_iterate"])
    frame["measured_time"] = frame["measured_rounds"] * frame["local_iterate"]
    frame["pseudo_time"] = frame["predicted_global_iterate"] * frame["local_iterate"]
    return frame.assign(network=network, topology=frame["kind"], family="siot",
                        skewness=0.8, epsilon_round=4.0, target=0.85)


def test_the_correction_is_the_median_excess_of_each_kind_over_the_design():
    runs = pd.concat([
        _runs("a", [("optimize", 0, 20.0, 10.0, 1.0), ("epidemic", 0, 30.0, 60.0, 1.0),
                    ("base", 0, 40.0, 40.0, 1.0)]),
        _runs("b", [("optimize", 0, 10.0, 10.0, 1.0), ("epidemic", 0, 10.0, 40.0, 1.0),
                    ("base", 0, 10.0, 10.0, 1.0)]),
        _runs("c", [("optimize", 0, 10.0, 10.0, 1.0), ("epidemic", 0, 10.0, 20.0, 1.0),
                    ("base", 0, 5.0, 10.0, 1.0), ("ndlf", 0, 1.0, 99.0, 1.0)]),
    ], ignore_index=True)
    excess = corpus.log_excess(runs, by=BY)
    assert set(excess["kind"]) == {"epidemic", "base"}  # NDLF is static: not corrected
    correction = corpus.corrections(excess)
    # epidemic: ln(1/4), ln(1/4), ln(1/2) -> median ln(1/4); base: ln(1/2), 0, ln(1/2).
    assert correction["epidemic"] == pytest.approx(np.log(0.25))
    assert correction["base"] == pytest.approx(np.log(0.5))
    fixed = corpus.corrected(runs, correction)
    epidemic = fixed[fixed["kind"] == "epidemic"]["pseudo_time"].tolist()
    assert epidemic == pytest.approx([15.0, 10.0, 5.0])
    static = fixed[~fixed["kind"].isin(["epidemic", "base"])]
    assert static["pseudo_time"].equals(runs.loc[static.index, "pseudo_time"])


def test_the_held_out_check_says_whether_what_is_called_is_ever_slower():
    # Setting a: the schedule is over-predicted (called the design), measured 20 % faster;
    # after the 1/4 correction it is called, and it is faster: never slower either way.
    runs = _runs("a", [("optimize", t, 10.0, 10.0, 1.0) for t in (0, 1)]
                 + [("epidemic", t, 8.0, 24.0, 1.0) for t in (0, 1)])
    check = corpus.held_out_check(runs, {"epidemic": float(np.log(0.25))})
    before, after = check["as_predicted"]["summary"], check["corrected"]["summary"]
    assert before["called_a_schedule"] == 0 and before["called_vs_design_worst"] == 1.0
    assert after["called_a_schedule"] == 1 and after["called_vs_design_worst"] == 0.8
    assert before["never_more_than_2pct_slower"] and after["never_more_than_2pct_slower"]
    # A correction that calls a slower schedule fails the check.
    slower = _runs("b", [("optimize", 0, 10.0, 10.0, 1.0), ("epidemic", 0, 12.0, 24.0, 1.0)])
    failed = corpus.held_out_check(slower, {"epidemic": float(np.log(0.25))})
    assert not failed["corrected"]["summary"]["never_more_than_2pct_slower"]


def test_a_schedule_never_reached_and_predicted_never_says_nothing_of_scale():
    runs = pd.concat([
        _runs("a", [("optimize", 0, 20.0, 10.0, 1.0), ("epidemic", 0, None, np.inf, 1.0)]),
        _runs("b", [("optimize", 0, 10.0, 10.0, 1.0), ("epidemic", 0, 100.0, np.inf, 1.0)]),
    ], ignore_index=True)
    excess = corpus.log_excess(runs, by=BY)
    # a: left out; b: predicted never = 201 rounds against 100 measured.
    assert excess["network"].tolist() == ["b"]
    assert excess["log_excess"].iloc[0] == pytest.approx(np.log(100 / 201))
