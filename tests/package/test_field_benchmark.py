"""The pure helpers of the field benchmark (analyses/field_benchmark.py): times with the
never-reached runs censored, the best peer of a setting, optimize's ratios, the goals and
the Spearman table of the four predictors, on hand-made frames."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest

import analyses.field_benchmark as field
import topokit
from topokit.design.baselines import ndlf

BY = ["network"]


def _times(rows: list[tuple[str, str, int, float]]) -> pd.DataFrame:
    """A times table from (network, method, trial, censored time)."""
    return pd.DataFrame(rows, columns=["network", "method", "trial", "censored"])


def test_a_run_that_never_reaches_the_target_counts_as_horizon_plus_one_rounds():
    runs = pd.DataFrame({"topology": ["optimize", "epidemic"],
                         "measured_rounds": [4.0, np.nan], "measured_time": [9.0, np.nan],
                         "local_iterate": [2.0, 3.0]})
    table = field.times(runs, horizon=200)
    assert table["censored"].tolist() == [9.0, 201 * 3.0]  # a schedule's measured sum is kept
    assert table["time"].tolist() == [9.0, np.inf]
    assert table["never"].tolist() == [False, True]
    assert table["method"].tolist() == ["optimize", "epidemic"]


def test_the_best_peer_has_the_smallest_median_and_a_tie_goes_to_the_first_peer():
    table = _times([("a", "ndlf", 0, 5.0), ("a", "ndlf", 1, 7.0),
                    ("a", "epidemic", 0, 6.0), ("a", "epidemic", 1, 6.0),
                    ("a", "optimize", 0, 1.0), ("a", "optimize", 1, 1.0),
                    ("b", "ndlf", 0, 9.0), ("b", "ndlf", 1, 9.0),
                    ("b", "base", 0, 4.0), ("b", "base", 1, 5.0)])
    added, chosen = field.best_of(table, field.PEERS, "best-peer", BY)
    assert chosen.set_index("network")["best"].to_dict() == {"a": "ndlf", "b": "base"}
    assert chosen.set_index("network")["best_time"].to_dict() == {"a": 6.0, "b": 4.5}
    # optimize is no candidate, however fast; the copies are the winner's runs
    copies = added[added["method"] == "best-peer"].sort_values(["network", "trial"])
    assert copies["censored"].tolist() == [5.0, 7.0, 4.0, 5.0]


def test_the_setting_table_pairs_optimize_with_ndlf_the_best_peer_and_the_best_overlay():
    table = _times([("g", "optimize", t, v) for t, v in enumerate([2.0, 4.0, 3.0])]
                   + [("g", "ndlf", t, v) for t, v in enumerate([4.0, 4.0, 6.0])]
                   + [("g", "one-peer-exponential", t, v) for t, v in enumerate([3.0, 2.0, 3.0])]
                   + [("g", "ring", t, v) for t, v in enumerate([8.0, 8.0, 8.0])]
                   + [("g", "mst", t, v) for t, v in enumerate([4.0, 8.0, 6.0])]
                   + [("s", "optimize", t, v) for t, v in enumerate([1.0, 1.0, 1.0])]
                   + [("s", "ndlf", t, v) for t, v in enumerate([2.0, 2.0, 2.0])])
    rows = field.setting_table(table, by=BY).set_index("network")
    assert rows.loc["g", "best_peer"] == "one-peer-exponential"
    assert bool(rows.loc["g", "best_peer_varies"])
    # paired per trial: 2/3, 4/2, 3/3 -> median 1; to NDLF 0.5, 1, 0.5 -> 0.5
    assert rows.loc["g", "vs_best_peer"] == pytest.approx(1.0)
    assert rows.loc["g", "vs_ndlf"] == pytest.approx(0.5)
    assert rows.loc["g", "vs_best_peer_low"] <= 1.0 <= rows.loc["g", "vs_best_peer_high"]
    assert rows.loc["g", "ndlf_time"] == 4.0 and rows.loc["g", "optimize_time"] == 3.0
    assert rows.loc["g", "best_overlay"] == "mst"  # median 6 < ring's 8
    assert rows.loc["g", "vs_best_overlay"] == pytest.approx(0.5)
    # a setting without overlays has none
    assert rows.loc["s", "best_peer"] == "ndlf" and rows.loc["s", "vs_best_peer"] == 0.5
    assert pd.isna(rows.loc["s", "best_overlay"]) and pd.isna(rows.loc["s", "vs_best_overlay"])


def test_the_goals_count_slower_settings_at_K0_and_the_speed_up_at_K08():
    rows = pd.DataFrame({
        "family": ["siot", "siot", "siot", "underlay"], "network": ["a", "a", "b", "g"],
        "skewness": [0.0, 0.8, 0.8, 0.0], "epsilon_round": 0.5, "target": 0.85,
        "vs_best_peer": [1.03, 0.5, 0.8, 1.01],
        "best_peer": ["epidemic", "ndlf", "ndlf", "ndlf"],
        "best_peer_varies": [True, False, False, False],
        "vs_best_overlay": [np.nan, np.nan, np.nan, 1.1]})
    goals = field.goal_summary(rows)
    assert set(goals) == {"siot", "underlay", "all"}
    siot = goals["siot"]
    assert siot["slower_than_2pct_at_K0"] == 1 and not siot["met_never_2pct_slower_at_K0"]
    assert siot["geometric_speedup_at_K0.8"] == pytest.approx(np.sqrt(2.0 * 1.25))
    assert siot["least_speedup_at_K0.8"] == pytest.approx(1.25)
    assert siot["settings_at_least_1.3x_at_K0.8"] == 1 and siot["met_1.3x_at_K0.8"]
    assert siot["time_varying_wins"] == [{"family": "siot", "network": "a", "skewness": 0.0,
                                          "epsilon_round": 0.5, "target": 0.85,
                                          "peer": "epidemic", "optimize_slower_by": 0.03}]
    underlay = goals["underlay"]
    assert underlay["slower_than_2pct_at_K0"] == 0  # 1.01 is within the 2 %
    assert underlay["slower_than_best_overlay"] == 1 and not underlay["met_no_worse_than_overlays"]
    assert underlay["geometric_speedup_at_K0.8"] is None
    assert goals["all"]["settings"] == 4


def _cell(network: str, measured: list[float | None], **predicted) -> pd.DataFrame:
    n = len(measured)
    frame = pd.DataFrame({"family": "siot", "network": network, "skewness": 0.0,
                          "epsilon_round": 0.5, "target": 0.85, "trial": 0,
                          "kind": "custom", "topology": [f"t{i}" for i in range(n)],
                          "topology_key": [f"k{i}" for i in range(n)],
                          "measured_rounds": [np.nan if m is None else m for m in measured],
                          "measured_time": [np.nan if m is None else m for m in measured],
                          "local_iterate": 2.0})
    return frame.assign(**predicted)


def test_spearman_cells_rank_static_runs_once_with_never_reached_slowest():
    cell = _cell("a", [1.0, 2.0, 3.0, None],
                 pseudo_time=[1.0, 2.0, 3.0, 4.0], paper_time=[2.0, 1.0, 3.0, 4.0],
                 spectral_gap=[0.1, 0.2, 0.3, 0.4], effective_neighbours=[4.0, 3.0, 2.0, 1.0])
    duplicate = cell.iloc[[0]].assign(topology="optimize")  # one topology under two names
    schedule = cell.iloc[[1]].assign(topology="epidemic", kind="epidemic",
                                     topology_key="schedule:epidemic", pseudo_time=np.nan)
    runs = pd.concat([cell, duplicate, schedule], ignore_index=True)
    row = field.spearman_cells(runs).iloc[0]
    assert row["runs"] == 4 and row["never_reached"] == 1
    assert row["topokit"] == pytest.approx(1.0)
    assert row["eq15"] == pytest.approx(0.8)
    assert row["spectral_gap"] == pytest.approx(-1.0)  # L / gap: a larger gap predicts faster
    assert row["effective_neighbours"] == pytest.approx(1.0)


def test_the_spearman_summary_gives_medians_per_class_and_over_networks():
    cells = pd.DataFrame({"family": ["siot", "siot", "social", "underlay"],
                          "network": ["a", "b", "k", "g"],
                          "topokit": [0.9, 0.8, 0.6, 0.2], "eq15": [0.5, 0.5, 0.7, 0.1],
                          "spectral_gap": [0.0, 0.2, 0.1, 0.9],
                          "effective_neighbours": [0.1, 0.1, 0.1, 0.1]})
    summary = field.spearman_summary(cells)
    assert summary["median"]["siot"]["topokit"] == pytest.approx(0.85)
    assert summary["median"]["all"]["topokit"] == pytest.approx(0.7)
    assert summary["settings"] == {"siot": 2, "social": 1, "underlay": 1, "all": 4}
    assert summary["median_of_network_medians"]["eq15"] == pytest.approx(0.5)
    assert summary["topokit_beats"]["social"] == {"eq15": False, "spectral_gap": True,
                                                  "effective_neighbours": True}
    assert summary["topokit_beats"]["underlay"]["spectral_gap"] is False


def test_the_matched_degree_is_the_designs_mean_degree_within_what_peers_can_take():
    net = topokit.load_example("toy")
    social = ndlf(net)
    expected = round(2 * social.n_links / net.n_devices)
    assert field.matched_degree(net, social) == min(max(1, expected), net.n_devices - 1)
    sparse = topokit.Topology([social.edges[0]], [])
    assert field.matched_degree(net, sparse) == 1


def test_the_command_line_sizes_are_options_and_quick_is_small(capsys):
    quick = field.parse_args(["--quick"])
    assert quick.counts == {"siot": 1, "social": 0, "underlay": 1}
    assert quick.trials == 2 and quick.peers == ("ndlf", "epidemic")
    full = field.parse_args(["--siot", "2", "--social", "1", "--underlays", "0",
                             "--targets", "0.9", "--peers", "epidemic,ndlf"])
    assert full.counts == {"siot": 2, "social": 1, "underlay": 0}
    assert full.targets == (0.9,) and full.epsilons == field.EPSILONS
    assert full.peers == ("ndlf", "epidemic")
    with pytest.raises(SystemExit) as caught:
        field.parse_args(["--underlays", "9"])
    assert caught.value.code == 2
    assert "--underlays must be 0 to 5" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        field.parse_args(["--peers", "epidemic"])
    assert "must include ndlf" in capsys.readouterr().err


def test_equistatic_is_a_static_peer_at_matched_degree_with_half_as_many_offsets():
    assert "equistatic" in field.PEERS and "equistatic" in field.MATCHED
    assert "equistatic" not in field.TIME_VARYING
    assert [field.matched_spec("equistatic", k) for k in (1, 2, 3, 4, 6)] == [
        "equistatic:1", "equistatic:1", "equistatic:2", "equistatic:2", "equistatic:3"]
    assert field.matched_spec("base", 3) == "base:3"
    assert field.matched_spec("epidemic", 2) == "epidemic:2"


def test_a_refused_equistatic_is_recorded_and_the_other_peers_still_run(monkeypatch):
    """validate refuses a draw whose offsets share a factor with n: the setting keeps its
    other runs and records why, in one column the summary reads back."""
    calls = []

    class Result(NamedTuple):
        frame: pd.DataFrame
        timings: pd.DataFrame
        topologies: dict

    def fake_validate(net, specs, setting, options, seed):
        calls.append(dict(specs))
        if "equistatic" in specs:
            raise topokit.errors.InvalidInputError(
                f"topology 'equistatic': {specs['equistatic']} drew the ring offsets [14], "
                "which all share the factor 2 with the 24 devices; use another seed")
        frame = pd.DataFrame({"topology": list(specs), "kind": list(specs), "trial": 0})
        return Result(frame, frame[["topology"]].assign(wall_clock=0.0),
                      {name: ndlf(net) for name in specs})

    monkeypatch.setattr(field, "_validate", fake_validate)
    monkeypatch.setattr(field, "_with_eq15", lambda net, result: result.frame)
    spec = field.SIOT[0]
    setting = field.Setting(field.FieldNetwork("siot", spec.name, spec), 0.0, 0.5, 0.85)
    options = field.Options(1, 0, field.PEERS, 0)
    net = setting.network.build()
    runs, _ = field.train_setting(setting, options, net)
    degree = int(runs["matched_degree"].iloc[0])
    assert calls[-1] == {"equistatic": field.matched_spec("equistatic", degree)}
    assert {"base", "epidemic", "optimize"} <= set(runs["topology"])
    assert "equistatic" not in set(runs["topology"])
    (refusal,) = field.refusals(runs)
    assert refusal["peer"] == "equistatic" and refusal["network"] == spec.name
    assert refusal["reason"].startswith(field.matched_spec("equistatic", degree) + " drew")


def test_the_setting_table_compares_optimize_with_equistatic_where_it_was_built():
    table = _times([("a", "optimize", t, v) for t, v in enumerate([2.0, 2.0])]
                   + [("a", "ndlf", t, v) for t, v in enumerate([4.0, 4.0])]
                   + [("a", "equistatic", t, v) for t, v in enumerate([1.0, 1.0])]
                   + [("b", "optimize", t, v) for t, v in enumerate([1.0, 1.0])]
                   + [("b", "ndlf", t, v) for t, v in enumerate([2.0, 2.0])])
    rows = field.setting_table(table, by=BY).set_index("network")
    assert rows.loc["a", "best_peer"] == "equistatic" and not rows.loc["a", "best_peer_varies"]
    assert rows.loc["a", "vs_equistatic"] == pytest.approx(2.0)
    assert rows.loc["a", "equistatic_time"] == 1.0
    assert pd.isna(rows.loc["b", "vs_equistatic"])  # refused there: no ratio, no error


def test_the_goals_name_static_peer_wins_and_count_the_best_peers():
    rows = pd.DataFrame({
        "family": "siot", "network": ["a", "a", "b", "b"], "skewness": [0.0, 0.8, 0.0, 0.8],
        "epsilon_round": 0.5, "target": 0.85, "vs_best_peer": [1.1, 0.5, 0.9, 0.8],
        "best_peer": ["equistatic", "ndlf", "epidemic", "ndlf"],
        "best_peer_varies": [False, False, True, False],
        "vs_equistatic": [1.1, 0.25, np.nan, 0.5]})
    goals = field.goal_summary(rows)["all"]
    assert goals["best_peer_counts"] == {"equistatic": 1, "ndlf": 2, "epidemic": 1}
    assert goals["time_varying_wins"] == []
    assert [(w["network"], w["peer"]) for w in goals["static_peer_wins"]] == [
        ("a", "equistatic")]
    against = goals["optimize_vs_equistatic"]
    assert against["settings"] == 3 and against["optimize_slower_in"] == 1
    assert against["best_peer_in"] == 1
    assert against["geometric_ratio_at_K0"] == pytest.approx(1.1)
    assert against["geometric_ratio_at_K0.8"] == pytest.approx(np.sqrt(0.25 * 0.5))


def test_spearman_cells_rank_the_schedules_too_when_asked():
    cell = _cell("a", [1.0, 2.0, 3.0, None],
                 pseudo_time=[1.0, 2.0, 3.0, 4.0], paper_time=[2.0, 1.0, 3.0, 4.0],
                 spectral_gap=[0.1, 0.2, 0.3, 0.4], effective_neighbours=[4.0, 3.0, 2.0, 1.0])
    schedule = cell.iloc[[2]].assign(topology="epidemic", kind="epidemic",
                                     topology_key="schedule:epidemic", measured_time=2.5,
                                     measured_rounds=1.25, pseudo_time=0.5)
    runs = pd.concat([cell, schedule], ignore_index=True)
    assert field.spearman_cells(runs).iloc[0]["runs"] == 4
    row = field.spearman_cells(runs, schedules=True).iloc[0]
    # The schedule is predicted fastest and measured third of five: rho = 0.7.
    assert row["runs"] == 5 and row["topokit"] == pytest.approx(0.7)


def test_schedule_calls_say_what_the_predictions_pick_and_what_it_costs():
    rows = []
    for network, (design, base, epidemic) in {"a": ((5.0, 10.0), (6.0, 20.0), (4.0, 8.0)),
                                              "b": ((5.0, 10.0), (9.0, 30.0), (4.0, 15.0)),
                                              "c": ((5.0, 10.0), (6.0, 5.0), (7.0, 12.0))
                                              }.items():
        for method, (predicted, measured) in (("optimize", design), ("base", base),
                                              ("epidemic", epidemic), ("ndlf", (1.0, 1.0))):
            rows += [{"network": network, "method": method, "trial": trial,
                      "pseudo_time": predicted, "censored": measured} for trial in (0, 1)]
    calls = field.schedule_calls(pd.DataFrame(rows), by=BY).set_index("network")
    # NDLF is not a candidate: the design against the schedules only.
    assert calls["called"].tolist() == ["epidemic", "epidemic", "optimize"]
    assert calls["fastest"].tolist() == ["epidemic", "optimize", "base"]
    assert calls["called_vs_design"].tolist() == [0.8, 1.5, 1.0]
    summary = field.schedule_call_summary(calls.reset_index())
    assert summary["called_a_schedule"] == 2 and summary["called_the_fastest"] == 1
    assert summary["measured_a_schedule_fastest"] == 2
    assert summary["called_vs_design_worst"] == 1.5
    assert summary["called_vs_design_geometric"] == pytest.approx((0.8 * 1.5) ** (1 / 3))
    assert summary["fastest_vs_design_geometric"] == pytest.approx((0.8 * 0.5) ** (1 / 3))
