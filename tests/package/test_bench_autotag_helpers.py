"""The scale part of analyses/bench_autotag.py (issue 19, part 2): its pure helpers, one
(size, seed) row against independent evaluations, and the same-seed-same-bytes rule of
its results file.  Timings are never asserted."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from topokit import evaluate, load_predictor
from topokit.design.baselines import dlfdp, ndlf

SCRIPT = Path(__file__).resolve().parents[2] / "analyses" / "bench_autotag.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("bench_autotag", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load_script()


# --- pure helpers -----------------------------------------------------------------------------

def test_relative_gap_is_the_fraction_above_exact():
    assert bench.relative_gap(102.0, 100.0) == pytest.approx(0.02, abs=1e-15)
    assert bench.relative_gap(90.0, 100.0) == pytest.approx(-0.1, abs=1e-15)
    assert bench.relative_gap(math.inf, 100.0) == math.inf


@pytest.mark.parametrize("exact", [0.0, -1.0, math.inf, math.nan])
def test_relative_gap_refuses_an_exact_time_that_is_not_finite_and_positive(exact):
    with pytest.raises(ValueError, match="finite and > 0"):
        bench.relative_gap(1.0, exact)


def test_never_worse_allows_float_noise_and_nothing_more():
    refs = [10.0, 12.0, math.inf]
    assert bench.never_worse(10.0, refs)
    assert bench.never_worse(10.0 * (1 + 1e-12), refs)  # within RTOL = 1e-9
    assert not bench.never_worse(10.0 * (1 + 1e-6), refs)
    assert not bench.never_worse(math.inf, refs)  # never reaching the target is worse
    assert bench.never_worse(math.inf, [math.inf, math.inf])  # as slow as every reference
    assert bench.never_worse(5.0, [])


def _merge(kept, timings):
    if not isinstance(kept, dict):
        return kept
    merged = {key: _merge(value, timings.get(key, {})) for key, value in kept.items()}
    merged.update({key: value for key, value in timings.items() if key not in kept})
    return merged


def test_split_timings_removes_every_wall_clock_key_and_loses_nothing():
    value = {"n": 3, "seconds": 1.5, "stats": {"snapshots": 7, "seconds": 0.2,
                                                "deep": {"fast_seconds": 2.0, "x": [1, 2]}},
             "predicted": {"ndlf": {"paper": 1.0}}}
    kept, timings = bench.split_timings(value)
    assert "seconds" not in json.dumps(kept)
    assert _merge(kept, timings) == value
    assert timings == {"seconds": 1.5, "stats": {"seconds": 0.2, "deep": {"fast_seconds": 2.0}}}


def test_plan_runs_every_seed_up_to_256_devices_and_the_first_ones_beyond():
    pairs = bench.plan([64, 256, 512, 1000], [1, 2, 3], 2)
    assert pairs == [(64, 1), (64, 2), (64, 3), (256, 1), (256, 2), (256, 3),
                     (512, 1), (512, 2), (1000, 1), (1000, 2)]
    assert bench.plan([1000], [1, 2], 0) == []


def test_best_reference_ratio():
    predicted = {"optimize_default": {"default": 8.0}, "ndlf": {"default": 10.0},
                 "dlfdp": {"default": math.inf}}  # no ERG: it is left out, not an error
    assert bench.best_reference_ratio(predicted, "optimize_default", "default") == 0.8
    never = {"optimize_default": {"default": math.inf}, "ndlf": {"default": math.inf}}
    assert bench.best_reference_ratio(never, "optimize_default", "default") == 1.0


def _row(n, seed, gap, never=True, ratio=1.0):
    return {"n_devices": n, "seed": seed, "gap_eq15": gap,
            "never_worse": {"paper": True, "default": never},
            "ratio_to_best_reference": {"paper": ratio, "default": ratio}}


def test_summarise_reports_the_worst_seed_of_each_size():
    rows = [_row(64, 1, -0.01), _row(64, 2, 0.03, ratio=0.9), _row(64, 3, 0.0),
            _row(512, 1, None, never=False, ratio=1.5)]
    small, large = bench.summarise(rows)
    assert small["seeds"] == [1, 2, 3] and small["exact_runs"] == 3
    assert small["gap_eq15_max"] == 0.03 and small["gap_eq15_median"] == 0.0
    assert small["gap_within_goal"] is False and small["never_worse"] is True
    assert small["worst_ratio_to_best_reference"] == {"paper": 1.0, "default": 1.0}
    assert large["gap_within_goal"] is None and large["gap_eq15_max"] is None
    assert large["never_worse"] is False


# --- one row of the scale part ------------------------------------------------------------------

@pytest.fixture(scope="module")
def row_and_timing():
    return bench.scale_row(12, 5, jobs=1)


def test_scale_row_never_worse_than_the_references_under_the_minimised_predictor(
        row_and_timing):
    row, _ = row_and_timing
    assert row["references"] == ["ndlf", "dlfdp", "erg"]
    for key in ("paper", "default"):
        design = row["predicted"][f"optimize_{key}"][key]
        assert all(design <= row["predicted"][name][key] * (1 + 1e-9) for name in row["references"])
        assert row["never_worse"][key] is True
        assert row["ratio_to_best_reference"][key] <= 1.0 + 1e-9


def test_scale_row_predictions_agree_with_independent_evaluations(row_and_timing):
    row, _ = row_and_timing
    net = bench.siot_like(12, 5 + 12)
    for name, topology in (("ndlf", ndlf(net)), ("dlfdp", dlfdp(net))):
        assert row["predicted"][name]["paper"] == evaluate(net, topology).pseudo_time
        assert row["predicted"][name]["default"] == pytest.approx(
            evaluate(net, topology, load_predictor("default")).pseudo_time, rel=1e-12)


def test_optimize_paper_is_no_worse_than_exact_autotag_where_autotag_is_a_start(row_and_timing):
    # Up to optimize's MAX_AUTOTAG_DEVICES (128) exact AutoTag's design is one of its starts,
    # and a move is taken only if it lowers eq. (15): the gap cannot be positive.
    row, _ = row_and_timing
    assert row["gap_eq15"] <= 1e-9
    expected = row["predicted"]["optimize_paper"]["paper"] / \
        row["predicted"]["autotag_exact"]["paper"] - 1
    assert row["gap_eq15"] == expected


def test_scale_row_keeps_wall_times_apart(row_and_timing):
    row, timing = row_and_timing
    assert "seconds" not in json.dumps(row)
    assert all(timing[key] > 0 for key in ("optimize_default_seconds", "optimize_paper_seconds",
                                           "autotag_exact_seconds"))


def test_skipping_exact_autotag_leaves_no_gap():
    row, timing = bench.scale_row(8, 1, jobs=1, exact=False)
    assert row["gap_eq15"] is None and row["gap_eq15_default_design"] is None
    assert "autotag_exact" not in row["predicted"]
    assert row["exact"].startswith("skipped") and timing["autotag_exact_seconds"] is None


def test_the_results_file_has_the_same_bytes_for_the_same_seeds(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "OUT", tmp_path)
    argv = ["--parts", "scale", "--quick", "--sizes", "8", "--seeds", "3", "--jobs", "1"]
    bench.main(argv)
    first = (tmp_path / "bench_autotag_scale_quick.json").read_bytes()
    bench.main(argv[:-1] + ["2"])  # two threads: the results must not change
    assert (tmp_path / "bench_autotag_scale_quick.json").read_bytes() == first
    results = json.loads(first)  # strict JSON: no Infinity or NaN
    assert results["summary"][0]["never_worse"] is True
    timings = json.loads((tmp_path / "bench_autotag_scale_quick.timings.json").read_text())
    assert timings["rows"][0]["optimize_default_seconds"] > 0
    assert (tmp_path / "bench_autotag_scale_quick.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == [  # no temporary files left
        "bench_autotag_scale_quick.json", "bench_autotag_scale_quick.png",
        "bench_autotag_scale_quick.timings.json"]


def test_the_plot_draws_sizes_where_exact_autotag_never_ran(tmp_path):
    # Beyond --skip-exact-above there is no gap to plot: the gap panel must not ask for a log
    # axis of no points (it raised ValueError at 512 and 1,000 devices).
    rows = [{"n_devices": n, "gap_eq15": None,
             "ratio_to_best_reference": {"default": 1.0, "paper": 1.0}} for n in (512, 1000)]
    timings = [{"n_devices": n, "optimize_default_seconds": s, "optimize_paper_seconds": s,
                "autotag_exact_seconds": None} for n, s in ((512, 11.0), (1000, 44.0))]
    path = tmp_path / "scale.png"
    bench.plot_scale(rows, timings, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
