"""The weighted arms of the design benchmark (analyses/design_benchmark.py): choosing
methods, the arms' topologies and keys, the summary of what weights gain, the replayed
predictions and the keyed resume of a setting."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import analyses._common as common
import analyses.design_benchmark as bench
import topokit
from topokit.design.baselines import ndlf
from topokit.errors import InvalidInputError
from topokit.kernels import spectral_gap
from topokit.validation import compare, corpus

TOY = corpus.NetworkSpec(6, example="toy")


# --------------------------------------------------------------------------------------------
# --methods
# --------------------------------------------------------------------------------------------


def test_methods_default_to_every_method_in_table_order():
    assert bench.parse_methods(",".join(reversed(bench.ALL_METHODS))) == bench.ALL_METHODS
    assert set(bench.MIXING_METHODS) <= set(bench.ALL_METHODS)
    assert bench.parse_methods(" ndlf-fastest ,ndlf") == ("ndlf", "ndlf-fastest")


@pytest.mark.parametrize(("text", "said"), [
    ("ndlf,optimize-fast", "unknown method 'optimize-fast'"),
    ("optimize,optimize-metropolis", "must include ndlf"),
    (",", "no method given"),
])
def test_selecting_methods_validates_names_in_one_clear_line(text, said):
    with pytest.raises(InvalidInputError) as caught:
        bench.parse_methods(text)
    message = str(caught.value)
    assert said in message and "\n" not in message
    assert message.startswith("--methods")


def test_the_command_line_refuses_a_bad_method_with_exit_status_2(capsys):
    with pytest.raises(SystemExit) as caught:
        bench.parse_options(["--methods", "ndlf,nope"])
    assert caught.value.code == 2
    assert "unknown method 'nope'" in capsys.readouterr().err
    assert bench.parse_options(["--methods", "ndlf,ndlf-fastest"]).methods == (
        "ndlf", "ndlf-fastest")


# --------------------------------------------------------------------------------------------
# The arms' topologies and keys
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toy_net():
    return TOY.build()


def test_only_the_selected_methods_are_built():
    built = bench.build_designs(TOY, (0.4,), 3, ("ndlf", "ndlf-fastest", "random-best"),
                                ("logreg",))
    assert list(built) == [(0.4, "logreg")]
    assert list(built[0.4, "logreg"]["topologies"]) == [
        "ndlf", "ndlf-fastest", "random-0", "random-1", "random-2"]
    assert built[0.4, "logreg"]["optimize"] == {}


def test_ndlf_fastest_is_the_social_graph_with_fastest_mixing_weights(toy_net):
    built = corpus.named_topologies(toy_net, ("ndlf", "ndlf-fastest"), 5)
    plain, weighted = built["ndlf"], built["ndlf-fastest"]
    assert (plain.weighting, weighted.weighting) == ("lazy-metropolis", "fastest")
    assert weighted.kind == "ndlf-fastest" and weighted.topology.weights is not None
    assert set(weighted.topology.edges) <= set(ndlf(toy_net).edges)
    assert weighted.topology.dp_devices == plain.topology.dp_devices == frozenset()
    # Boyd-Diaconis-Xiao's optimum mixes at least as fast as the (feasible) lazy weights.
    gap = spectral_gap(weighted.topology.mixing_matrix(toy_net.nodes))
    assert gap > spectral_gap(plain.topology.mixing_matrix(toy_net.nodes))


def test_keys_tell_weighted_arms_apart_and_let_equal_designs_share(toy_net):
    plain = ndlf(toy_net)
    fastest = corpus.weighted_topology(plain, toy_net, "fastest", 0)
    setting = bench.Setting(TOY, 0.4, "logreg", {
        "optimize-lazy-metropolis": corpus.CorpusEntry("optimize-lazy-metropolis",
                                                       "lazy-metropolis", plain),
        # optimize (fastest-mixing weights) kept the plain design: the same runs
        "optimize": corpus.CorpusEntry("optimize", "lazy-metropolis", plain),
        "ndlf-fastest": corpus.CorpusEntry("ndlf-fastest", "fastest", fastest)})
    keys = bench.setting_keys(setting, toy_net, "data")
    assert keys["optimize-lazy-metropolis"] == keys["optimize"] != keys["ndlf-fastest"]
    other_model = bench.setting_keys(setting._replace(model="mlp"), toy_net, "data")
    assert not set(other_model.values()) & set(keys.values())


def test_each_model_s_optimize_arms_are_designed_by_its_predictor(monkeypatch):
    judged = []

    def arms(net, arms, *, class_counts, seed, predictor="default", **options):
        judged.append(predictor)
        assert arms == {"optimize": None} and options == {"ndlf_margin": 1.0}
        design = SimpleNamespace(topology=ndlf(net), stats={"predictor_used": predictor},
                                 metrics=SimpleNamespace(pseudo_time=1.0))
        return {"optimize": (corpus.CorpusEntry("optimize", "fastest", ndlf(net)), design)}

    monkeypatch.setattr(corpus, "optimize_entries", arms)
    designs = bench.build_designs(TOY, (0.0, 0.8), 0, ("optimize", "ndlf"), ("logreg", "mlp"))
    assert set(designs) == {(0.0, "logreg"), (0.0, "mlp"), (0.8, "logreg"), (0.8, "mlp")}
    assert judged == ["default", "mlp", "default", "mlp"]  # one search per predictor
    for (_, model), built in designs.items():
        stats = built["optimize"]["optimize"]
        assert stats["predictor_used"] == bench.PREDICTORS[model]
        assert stats["weights"] == "fastest" and stats["predicted_time"] == 1.0
        assert list(built["topologies"]) == ["optimize", "ndlf"]  # the arms first


# --------------------------------------------------------------------------------------------
# The summary
# --------------------------------------------------------------------------------------------

#: rounds to 88 % of trial t = BASE + t, L = 100 s for every method.
BASE = {"ndlf": 20, "ndlf-fastest": 10, "optimize-lazy-metropolis": 18, "optimize": 12}


def synthetic_runs() -> pd.DataFrame:
    rows = []
    for network in ("n1", "n2"):
        for skewness in (0.4, 0.8):
            for trial in range(3):
                for method, base in BASE.items():
                    rows.append({"network": network, "skewness": skewness, "model": "logreg",
                                 "trial": trial, "target": 0.88, "method": method,
                                 "topology": method, "weighting": "x", "n_devices": 16,
                                 common.RUN_KEY: f"key-{network}-{skewness}-{method}",
                                 "measured_rounds": float(base + trial),
                                 "local_iterate": 100.0,
                                 "predicted_time": 100.0 * (base + trial),
                                 "pseudo_time": 100.0 * (base - trial)})
    return pd.DataFrame(rows)


def at_target(runs: pd.DataFrame) -> pd.DataFrame:
    return compare.time_to_target(runs, bench.TARGET, horizon=bench.ROUNDS)


def median_ratio(top: str, bottom: str) -> float:
    """The paired median over trials, computed from BASE directly (the same in every setting)."""
    return float(np.median([(BASE[top] + t) / (BASE[bottom] + t) for t in range(3)]))


def test_mixing_gains_are_the_paired_median_ratios():
    result = bench.analyse(synthetic_runs())
    gains = result["mixing"]
    assert set(gains) == {"optimize/optimize-lazy-metropolis", "ndlf-fastest/ndlf"}  # no MH arm
    for comparison, entry in gains.items():
        top, bottom = comparison.split("/")
        assert entry["geometric_mean_ratio"] == pytest.approx(median_ratio(top, bottom),
                                                             rel=1e-12)
        assert entry["settings"] == 4 and set(entry["by_skewness"]) == {"0.4", "0.8"}
        assert entry["ci_below_1"] == 4  # every trial's ratio is below 1


def test_the_hindsight_ceiling_is_the_best_topology_s_paired_median_in_each_setting():
    runs = synthetic_runs()
    ceiling = bench.analyse(runs)["ceiling"]
    assert list(ceiling) == ["logreg"]
    best = 1 / median_ratio("ndlf-fastest", "ndlf")  # the fastest topology in every setting
    assert ceiling["logreg"] == pytest.approx({"0.4": best, "0.8": best, ">=0.4": best,
                                               "all": best}, rel=1e-12)
    # slow the best down in one setting: there the next best (optimize) sets the ceiling
    slowed = runs.assign(measured_rounds=np.where(
        (runs["network"] == "n1") & (runs["skewness"] == 0.8)
        & (runs["topology"] == "ndlf-fastest"), 100.0, runs["measured_rounds"]))
    ceiling = compare.hindsight_ceiling(at_target(slowed), "ndlf", by=bench.SETTING,
                                        group="skewness", at_least=[0.4])
    assert ceiling["0.8"] == pytest.approx(
        np.sqrt(best / median_ratio("optimize", "ndlf")), rel=1e-12)  # geometric mean of two
    assert ceiling["0.4"] == pytest.approx(best, rel=1e-12)


def test_a_design_two_arms_share_counts_once_in_the_spearman():
    runs = synthetic_runs()
    # predictions that rank the methods partly wrong, so that weights on one matter
    wrong = {"ndlf": 10, "ndlf-fastest": 20, "optimize-lazy-metropolis": 12, "optimize": 18}
    runs["predicted_time"] = runs["method"].map(wrong) * 100.0 + runs["trial"]
    base = bench.spearman_cells(at_target(runs))
    assert (base["spearman"] < 0.9).all()
    # a third arm that gave ndlf-fastest's topology: the same runs under the same key
    copy = runs[runs["method"] == "ndlf-fastest"].assign(method="optimize-fastest",
                                                           topology="optimize-fastest")
    doubled = bench.spearman_cells(at_target(pd.concat([runs, copy])))
    pd.testing.assert_series_equal(base["spearman"], doubled["spearman"])
    assert (base["runs"] == doubled["runs"]).all()


def test_every_optimize_arm_gets_its_wins_and_goals():
    result = bench.analyse(synthetic_runs())
    assert list(result["wins"]) == list(result["goals"]) == ["optimize",
                                                             "optimize-lazy-metropolis"]
    assert result["wins"]["optimize"]["optimize-lazy-metropolis"]["wins"] == 4
    assert result["wins"]["optimize-lazy-metropolis"]["ndlf-fastest"]["losses"] == 4
    speedup = result["speedups"][">=0.4"]
    assert speedup["optimize"] == pytest.approx(1 / median_ratio("optimize", "ndlf"), rel=1e-12)
    goals = {name: passed for name, passed, _ in result["goals"]["optimize"]}
    assert goals["geometric-mean speed-up over NDLF >= 1.5x at K >= 0.4"]  # 21 / 13 = 1.62
    lazy = result["goals"]["optimize-lazy-metropolis"]
    assert not {name: passed for name, passed, _ in lazy}[
        "geometric-mean speed-up over NDLF >= 1.5x at K >= 0.4"]  # 21 / 19 = 1.11


def test_the_summary_and_figure_show_the_new_arms(capsys):
    result = bench.analyse(synthetic_runs())
    info = {"n_random": 0, "methods": list(BASE), "skipped": [], "design_seconds": 0.0,
            "runs_trained": 0, "wall_clock": {}}
    bench.print_summary(result, info, 1.0)
    out = capsys.readouterr().out
    for text in ("ndlf-fastest", "optimize/optimize-lazy-metropolis", "Goals for optimize",
                 "optimize against each method"):
        assert text in out
    assert "random-best is an oracle" not in out
    figure = bench.figure(result["ratios"])
    labels = [tick.get_text() for tick in figure.axes[0].get_xticklabels()]
    assert labels == ["optimize", "optimize-lazy-metropolis", "ndlf-fastest"]


def test_random_best_is_left_out_when_no_random_topology_ran():
    times = bench.method_times(at_target(synthetic_runs()))
    assert set(times["method"]) == set(BASE)


# --------------------------------------------------------------------------------------------
# Predictions replayed, and the resume of a setting
# --------------------------------------------------------------------------------------------


@pytest.fixture
def short_training(monkeypatch):
    monkeypatch.setattr(bench, "TRAIN", {**bench.TRAIN, "rounds": 12})


def _toy_setting(net) -> bench.Setting:
    plain = ndlf(net)
    return bench.Setting(TOY, 0.4, "logreg", {
        "ndlf": corpus.CorpusEntry("ndlf", "lazy-metropolis", plain),
        "ndlf-fastest": corpus.CorpusEntry("ndlf-fastest", "fastest",
                                           corpus.weighted_topology(plain, net, "fastest", 0)),
        "dlfdp": corpus.CorpusEntry("dlfdp", "lazy-metropolis",
                                    topokit.design.baselines.dlfdp(net))})


def test_replayed_predictions_equal_validates_for_weighted_topologies(toy_net, digits):
    setting = _toy_setting(toy_net)
    X, y = digits
    frame = corpus.train_runs(toy_net, {n: e.topology for n, e in setting.topologies.items()},
                              2, bench.network_seed("toy"), setting.skewness, X=X, y=y,
                              targets=bench.TARGETS, predictor="default", rounds=3,
                              audit_rounds=0)
    replayed = corpus.trial_predictions(
        frame, toy_net, {name: entry.topology for name, entry in setting.topologies.items()},
        predictor="default", y=y, skewness=setting.skewness)
    np.testing.assert_allclose(replayed["predicted_time"], frame["pseudo_time"], rtol=1e-12)
    np.testing.assert_allclose(replayed["predicted_rounds"], frame["predicted_global_iterate"],
                               rtol=1e-12)
    by_name = replayed.groupby(frame["topology"])["predicted_time"].first()
    assert by_name["ndlf-fastest"] != by_name["ndlf"]  # the weights reach the prediction


def test_a_setting_trains_once_and_retrains_only_what_changed(toy_net, tmp_path,
                                                             short_training):
    setting = _toy_setting(toy_net)
    first, cost = bench.run_setting(setting, 2, tmp_path, "data")
    assert cost["n_runs"].tolist() == [6] and first["method"].nunique() == 3
    again, cost = bench.run_setting(setting, 2, tmp_path, "data")
    assert cost["n_runs"].tolist() == [0] and cost["wall_clock"].isna().all()
    columns = ["topology", "trial", "target", "measured_rounds", "final_accuracy",
               "predicted_time", "pseudo_time", "weighting"]
    pd.testing.assert_frame_equal(
        first[columns].sort_values(columns[:3]).reset_index(drop=True),
        again[columns].sort_values(columns[:3]).reset_index(drop=True))
    # One topology changes (its DP set): only it is trained again.
    changed = dict(setting.topologies)
    changed["ndlf"] = corpus.CorpusEntry("ndlf", "lazy-metropolis",
                                         topokit.Topology(ndlf(toy_net).edges, toy_net.nodes[:2]))
    third, cost = bench.run_setting(setting._replace(topologies=changed), 2, tmp_path, "data")
    assert cost["n_runs"].tolist() == [2]
    assert set(third.loc[third["topology"] == "ndlf", "n_dp_devices"]) == {2}
    saved = common.read_runs(tmp_path / f"{setting.stem}.runs.parquet")
    assert len(saved) == 3 * 2 * len(bench.TARGETS)  # the stale ndlf runs were replaced
    assert not list(tmp_path.glob("*.training-*"))  # validate's scratch files removed


# --------------------------------------------------------------------------------------------
# What the training code does is part of every key; old parts only while it is unchanged
# --------------------------------------------------------------------------------------------


def test_a_change_of_the_training_code_makes_every_key_new(toy_net, monkeypatch):
    setting = _toy_setting(toy_net)
    keys = bench.setting_keys(setting, toy_net, "data")
    assert common.training_digest() == common.training_digest()  # deterministic
    monkeypatch.setattr(common, "_TRAINING_DIGEST", ["another training"])
    changed = bench.setting_keys(setting, toy_net, "data")
    assert not set(changed.values()) & set(keys.values())


def _legacy_part(setting, net, parts: Path, trials: int) -> Path:
    """A part written before run keys whose runs show the topologies' seeds and metrics."""
    expected = common.legacy_metrics(net, setting.topologies,
                                     bench.network_seed(setting.spec.name), trials)
    rows = pd.concat([expected.assign(target=target, measured_rounds=9.0)
                      for target in bench.TARGETS], ignore_index=True)
    path = parts / f"{setting.stem}_0123456789abcdef.parquet"
    rows.to_parquet(path)
    return path


def _saved(setting, net, parts: Path, keys: dict[str, str]) -> pd.DataFrame:
    """The setting's saved runs as run_setting reads them (2 trials), old parts adopted."""
    legacy = partial(common.legacy_metrics, net, setting.topologies,
                     bench.network_seed(setting.spec.name), 2)
    return common.saved_setting_runs(setting, parts, keys, 2, bench.TARGETS, legacy)


def test_old_parts_are_adopted_only_by_todays_training_code(toy_net, tmp_path, monkeypatch):
    setting = _toy_setting(toy_net)
    _legacy_part(setting, toy_net, tmp_path, 2)
    keys = bench.setting_keys(setting, toy_net, "data")
    reused, missing = common.reusable_runs(_saved(setting, toy_net, tmp_path, keys), keys, 2)
    assert missing == [] and len(reused) == 3 * 2 * len(bench.TARGETS)
    monkeypatch.setattr(common, "_TRAINING_DIGEST", ["another training"])
    keys = bench.setting_keys(setting, toy_net, "data")
    saved = _saved(setting, toy_net, tmp_path, keys)
    assert common.reusable_runs(saved, keys, 2)[1] == list(setting.topologies)


def test_old_parts_of_another_design_are_not_adopted(toy_net, tmp_path):
    setting = _toy_setting(toy_net)
    _legacy_part(setting, toy_net, tmp_path, 2)
    changed = dict(setting.topologies)
    changed["ndlf"] = corpus.CorpusEntry("ndlf", "lazy-metropolis",
                                         topokit.Topology(ndlf(toy_net).edges, toy_net.nodes[:2]))
    setting = setting._replace(topologies=changed)
    keys = bench.setting_keys(setting, toy_net, "data")
    saved = _saved(setting, toy_net, tmp_path, keys)
    assert common.reusable_runs(saved, keys, 2)[1] == ["ndlf"]
