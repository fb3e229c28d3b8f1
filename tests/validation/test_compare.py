"""topokit.validation.compare: the comparison statistics of the design benchmark, checked
against plain loops over a synthetic runs table (paired trials, runs that never reach the
target, random topologies, two models)."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest

from topokit._random import keyed_seed
from topokit.errors import InvalidInputError
from topokit.validation import compare

SETTING = ["network", "skewness", "model"]
METHODS = ("ndlf", "optimize", "autotag", "erg")
HORIZON = 40
SEED = 20211


def synthetic_runs(seed: int = 3) -> pd.DataFrame:
    """Runs of validate's shape: 3 networks x 2 skewness x 2 models x 4 trials x (4 methods
    + 3 random topologies) x 2 targets; some runs never reach the higher target."""
    rng = np.random.default_rng(seed)
    rows = []
    for network in ("n1", "n2", "n3"):
        for skewness in (0.0, 0.8):
            for model in ("logreg", "mlp"):
                speed = {m: rng.uniform(0.6, 1.6) for m in METHODS}
                speed.update({f"random-{k}": rng.uniform(0.5, 2.0) for k in range(3)})
                if (network, skewness) == ("n3", 0.8):
                    speed["erg"] = 2.5  # never reaches 88 % in most trials
                for trial in range(4):
                    for topology, factor in speed.items():
                        rounds = 25 * factor * rng.uniform(0.8, 1.3)
                        for target, scale in ((0.85, 0.8), (0.88, 1.0)):
                            reached = rounds * scale
                            rows.append({
                                "network": network, "skewness": skewness, "model": model,
                                "trial": trial, "topology": topology, "target": target,
                                "method": topology.split("-")[0],
                                "measured_rounds": np.ceil(reached) if reached <= HORIZON
                                else np.nan,
                                "local_iterate": 10.0 + (hash(topology) % 7)})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return compare.time_to_target(synthetic_runs(), 0.88, horizon=HORIZON)


@pytest.fixture(scope="module")
def times(rows) -> pd.DataFrame:
    """One row per (setting, trial, method): the random topologies left out."""
    return rows[rows["method"] != "random"][[*SETTING, "trial", "method", "time", "censored"]]


# --------------------------------------------------------------------------------------------
# Plain references: loops over settings and trials
# --------------------------------------------------------------------------------------------


def _settings(frame: pd.DataFrame):
    """(key, {method: array over trials}) per setting, trials in order."""
    for key, group in frame.groupby(SETTING, sort=False):
        by_method = {m: g.sort_values("trial") for m, g in group.groupby("method")}
        yield key, by_method


def plain_interval(values: np.ndarray, rng: np.random.Generator, n: int = 2000):
    medians = []
    draws = rng.integers(0, values.size, size=(n, values.size))
    for row in draws:
        medians.append(np.median(values[row]))
    return np.quantile(medians, 0.025), np.quantile(medians, 0.975)


def test_time_to_target_censors_at_the_horizon_plus_one():
    runs = synthetic_runs()
    rows = compare.time_to_target(runs, 0.88, horizon=HORIZON)
    expected = runs[runs["target"] == 0.88]
    assert len(rows) == len(expected)
    for got, (_, want) in zip(rows.itertuples(), expected.iterrows(), strict=True):
        rounds = want["measured_rounds"]
        if np.isnan(rounds):
            assert got.time == np.inf
            assert got.censored == (HORIZON + 1) * want["local_iterate"]
        else:
            assert got.time == got.censored == rounds * want["local_iterate"]
    assert np.isinf(rows["time"]).any()  # the table has runs that never reached it


def test_ratios_to_the_reference_are_paired_medians_with_a_per_setting_stream(times):
    table = compare.ratios_to_reference(times, "ndlf", by=SETTING, seed=SEED)
    assert len(table) == 12 * len(METHODS)
    indexed = table.set_index([*SETTING, "method"])
    for key, by_method in _settings(times):
        rng = np.random.default_rng(keyed_seed(SEED, zlib.crc32(repr(key).encode())))
        reference = by_method["ndlf"]["censored"].to_numpy()
        for method in sorted(by_method):  # the methods in column order share the stream
            mine = by_method[method]
            ratio = mine["censored"].to_numpy() / reference
            low, high = plain_interval(ratio, rng)
            row = indexed.loc[(*key, method)]
            assert row["ratio"] == np.median(ratio)
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-14)
            assert row["median_time"] == np.median(mine["censored"])
            assert row["never_trials"] == np.isinf(mine["time"]).sum()
            assert row["trials"] == len(ratio)
    assert indexed["never_trials"].sum() > 0


def test_paired_ratios_have_one_stream_per_setting_and_label(times):
    pairs = [("optimize", "ndlf"), ("autotag", "erg")]
    table = compare.paired_ratios(times, pairs, by=SETTING, seed=SEED,
                                  stream=lambda top, bottom: bottom)
    assert list(table.columns) == [*SETTING, "top", "bottom", "ratio", "ci_low", "ci_high",
                                   "trials"]
    indexed = table.set_index([*SETTING, "top", "bottom"])
    for key, by_method in _settings(times):
        for top, bottom in pairs:
            ratio = (by_method[top]["censored"].to_numpy()
                     / by_method[bottom]["censored"].to_numpy())
            label = repr((key, bottom)).encode()
            rng = np.random.default_rng(keyed_seed(SEED, zlib.crc32(label)))
            row = indexed.loc[(*key, top, bottom)]
            assert row["ratio"] == np.median(ratio)
            assert (row["ci_low"], row["ci_high"]) == pytest.approx(plain_interval(ratio, rng),
                                                                    rel=1e-14)


def test_the_default_stream_label_is_top_over_bottom(times):
    pairs, few = [("optimize", "ndlf")], {"n_resamples": 7, "confidence": 0.5}
    default = compare.paired_ratios(times, pairs, by=SETTING, seed=1, **few)
    named = compare.paired_ratios(times, pairs, by=SETTING, seed=1, **few,
                                  stream=lambda top, bottom: f"{top}/{bottom}")
    other = compare.paired_ratios(times, pairs, by=SETTING, seed=2, **few)
    pd.testing.assert_frame_equal(default, named)
    assert not np.allclose(default["ci_low"], other["ci_low"])
    pd.testing.assert_series_equal(default["ratio"], other["ratio"])


def test_the_interval_takes_a_seed_or_a_generator_and_any_confidence():
    values = np.array([0.8, 0.9, 1.3, 1.0, 0.7])
    assert compare.bootstrap_median_interval(values, seed=5) == \
        compare.bootstrap_median_interval(values, seed=np.random.default_rng(5))
    expected = plain_interval(values, np.random.default_rng(5))
    assert compare.bootstrap_median_interval(values, seed=5) == pytest.approx(expected,
                                                                              rel=1e-15)
    rng = np.random.default_rng(9)
    draws = rng.integers(0, values.size, size=(500, values.size))
    medians = np.median(values[draws], axis=1)
    assert compare.bootstrap_median_interval(values, n_resamples=500, confidence=0.5,
                                             seed=9) == pytest.approx(
        tuple(np.quantile(medians, [0.25, 0.75])), rel=1e-15)


def test_win_rates_count_settings_on_the_paired_median(times):
    result = compare.win_rates(times, "optimize", by=SETTING)
    assert set(result) == {"ndlf", "autotag", "erg"}
    for other, counts in result.items():
        medians, trials_won, trials = [], 0, 0
        for _, by_method in _settings(times):
            ratio = (by_method["optimize"]["censored"].to_numpy()
                     / by_method[other]["censored"].to_numpy())
            medians.append(np.median(ratio))
            trials_won += int((ratio < 1).sum())
            trials += ratio.size
        medians = np.array(medians)
        assert counts == {"settings": 12, "wins": int((medians < 1).sum()),
                          "ties": int((medians == 1).sum()),
                          "losses": int((medians > 1).sum()),
                          "win_rate": pytest.approx((medians < 1).mean(), rel=1e-15),
                          "trial_win_rate": pytest.approx(trials_won / trials, rel=1e-15)}


def _geometric_speedup(ratios: list[float]) -> float:
    return float(np.exp(-np.mean(np.log(ratios))))


def test_geometric_speedups_by_skewness_and_threshold(times):
    ratios = compare.ratios_to_reference(times, "ndlf", by=SETTING, seed=SEED)
    speedups = compare.geometric_speedups(ratios, by="skewness", at_least=[0.4])
    assert list(speedups) == ["0", "0.8", ">=0.4", "all"]
    for method in METHODS:
        for label, keep in (("0", [0.0]), ("0.8", [0.8]), (">=0.4", [0.8]),
                            ("all", [0.0, 0.8])):
            mine = ratios[(ratios["method"] == method) & ratios["skewness"].isin(keep)]
            assert speedups[label][method] == pytest.approx(
                _geometric_speedup(mine["ratio"].tolist()), rel=1e-14)
    assert speedups["all"]["ndlf"] == 1.0
    assert list(compare.geometric_speedups(ratios)) == ["all"]


def test_the_hindsight_ceiling_is_the_best_topology_in_each_setting(rows):
    ceiling = compare.hindsight_ceiling(rows, "ndlf", by=SETTING, group="skewness",
                                        at_least=[0.4])
    best = {}
    for key, group in rows.groupby(SETTING):
        reference = group[group["topology"] == "ndlf"].sort_values("trial")["censored"]
        medians = [np.median(part.sort_values("trial")["censored"].to_numpy()
                             / reference.to_numpy())
                   for _, part in group.groupby("topology")]
        best[key] = min(medians)
    for label, keep in (("0", [0.0]), ("0.8", [0.8]), (">=0.4", [0.8]), ("all", [0.0, 0.8])):
        chosen = [ratio for key, ratio in best.items() if key[1] in keep]
        assert ceiling[label] == pytest.approx(_geometric_speedup(chosen), rel=1e-14)
    # random topologies count: the ceiling is at least every method's own speed-up
    ratios = compare.ratios_to_reference(rows[rows["method"] != "random"], "ndlf", by=SETTING)
    assert ceiling["all"] >= max(compare.geometric_speedups(ratios)["all"].values())


def test_never_reached_counts_settings_by_majority_and_runs(times):
    result = compare.never_reached(times, by=SETTING)
    for method in METHODS:
        never_trials = [np.isinf(by_method[method]["time"]).sum()
                        for _, by_method in _settings(times)]
        mine = times[times["method"] == method]
        assert result[method] == {
            "settings_never": sum(2 * n > 4 for n in never_trials),
            "settings_any_never": sum(n > 0 for n in never_trials), "settings": 12,
            "runs_never": int(np.isinf(mine["time"]).sum()), "runs": len(mine)}
    assert sum(r["runs_never"] for r in result.values()) > 0


def test_ratio_summary_is_the_geometric_mean_and_the_intervals_off_one():
    ratios = pd.DataFrame({"ratio": [0.5, 2.0, 0.8], "ci_low": [0.4, 1.2, 0.7],
                           "ci_high": [0.6, 3.0, 1.1]})
    assert compare.ratio_summary(ratios) == {
        "geometric_mean_ratio": pytest.approx(0.8 ** (1 / 3), rel=1e-15), "settings": 3,
        "ci_below_1": 1, "ci_above_1": 1}


def test_best_per_trial_is_the_fastest_random_topology_of_each_trial(rows):
    columns = [*SETTING, "trial", "method", "time", "censored"]
    best = compare.best_per_trial(rows[columns], "random", by=SETTING)
    others = rows.loc[rows["method"] != "random", columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(best.iloc[:len(others)], others)
    chosen = best.iloc[len(others):].set_index([*SETTING, "trial"])
    assert set(chosen["method"]) == {"random-best"}
    for key, trial_rows in rows[rows["method"] == "random"].groupby([*SETTING, "trial"]):
        assert chosen.loc[key, "censored"] == trial_rows["censored"].min()
    assert len(chosen) == 12 * 4
    renamed = compare.best_per_trial(rows[columns], "random", by=SETTING, name="oracle")
    assert set(renamed["method"]) == {*METHODS, "oracle"}


def test_best_per_trial_without_candidates_leaves_the_table(times):
    pd.testing.assert_frame_equal(compare.best_per_trial(times, "random", by=SETTING),
                                  times.reset_index(drop=True))


def test_ratio_summaries_summarise_each_pair_overall_and_by_group(times):
    pairs = [("optimize", "ndlf"), ("autotag", "erg")]
    ratios = compare.paired_ratios(times, pairs, by=SETTING, seed=SEED)
    summaries = compare.ratio_summaries(ratios, group="skewness")
    assert list(summaries) == ["optimize/ndlf", "autotag/erg"]
    for top, bottom in pairs:
        mine = ratios[(ratios["top"] == top) & (ratios["bottom"] == bottom)]
        entry = summaries[f"{top}/{bottom}"]
        assert entry == {**compare.ratio_summary(mine), "by_skewness": {
            "0": compare.ratio_summary(mine[mine["skewness"] == 0.0]),
            "0.8": compare.ratio_summary(mine[mine["skewness"] == 0.8])}}
    assert "by_skewness" not in compare.ratio_summaries(ratios)["autotag/erg"]
    by_model = compare.ratio_summaries(ratios, group="model")["optimize/ndlf"]["by_model"]
    assert list(by_model) == ["logreg", "mlp"]


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def test_a_missing_column_or_method_is_named(times):
    with pytest.raises(InvalidInputError, match="lacks column.*'trial'"):
        compare.ratios_to_reference(times.drop(columns="trial"), "ndlf", by=SETTING)
    with pytest.raises(InvalidInputError, match="no run of method.*'nope'"):
        compare.paired_ratios(times, [("optimize", "nope")], by=SETTING)
    with pytest.raises(InvalidInputError, match="no run of method.*'nope'"):
        compare.win_rates(times, "nope", by=SETTING)
    with pytest.raises(InvalidInputError, match="at least one"):
        compare.paired_ratios(times, [], by=SETTING)
    with pytest.raises(InvalidInputError, match="lacks column.*'censored'"):
        compare.best_per_trial(times.drop(columns="censored"), "random", by=SETTING)
    with pytest.raises(InvalidInputError, match="lacks column.*'bound'"):
        compare.ratio_summaries(compare.paired_ratios(times, [("erg", "ndlf")], by=SETTING),
                                group="bound")


def test_bad_bootstrap_settings_are_refused():
    with pytest.raises(InvalidInputError, match="n_resamples"):
        compare.bootstrap_median_interval([1.0, 2.0], n_resamples=0)
    with pytest.raises(InvalidInputError, match="confidence"):
        compare.bootstrap_median_interval([1.0, 2.0], confidence=1.0)
    with pytest.raises(InvalidInputError, match="at least one value"):
        compare.bootstrap_median_interval([])
    with pytest.raises(InvalidInputError, match="needs by"):
        compare.geometric_speedups(pd.DataFrame({"method": ["a"], "ratio": [1.0]}),
                                   at_least=[0.4])


def test_time_to_target_takes_a_schedules_measured_time():
    """A time-varying topology's rounds each take their own time: its time to the target is
    the measured sum, not rounds x the mean L; censoring past T stays (T + 1) x L."""
    import pandas as pd

    from topokit.validation.compare import time_to_target

    runs = pd.DataFrame({"target": [0.9] * 4, "measured_rounds": [3, 3, None, 150],
                         "local_iterate": [2.0, 2.0, 2.0, 2.0],
                         "measured_time": [6.0, 7.5, None, 300.0]})
    got = time_to_target(runs, 0.9, horizon=100)
    assert got["time"].tolist() == [6.0, 7.5, float("inf"), 300.0]
    assert got["censored"].tolist() == [6.0, 7.5, 202.0, 202.0]
