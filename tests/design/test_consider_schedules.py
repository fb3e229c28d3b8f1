"""consider_schedules: the field's time-varying topologies judged beside a design by the
design's own predictor, one number per schedule as evaluate gives it, chosen only past the
margin."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from topokit import evaluate, optimize
from topokit.design.peers import base_graph, epidemic, one_peer_exponential
from topokit.design.schedules import (
    EXTRAPOLATION_NOTE,
    consider_schedules,
    field_schedules,
    matched_degree,
)
from topokit.errors import InvalidInputError
from topokit.network.siot import siot


@pytest.fixture(scope="module")
def net():
    return siot(16, seed=3)


@pytest.fixture(scope="module")
def design(net):
    return optimize(net, seed=0)


@pytest.fixture(scope="module")
def comparison(net, design):
    return consider_schedules(net, design, seed=4)


def test_the_schedules_are_the_peers_at_the_designs_degree(net, design, comparison):
    k = matched_degree(net, design.topology)
    assert set(comparison.schedules) == {"one-peer-exponential", f"base:{k}", f"epidemic:{k}"}
    assert comparison.schedules[f"base:{k}"] == base_graph(net, k)
    assert comparison.schedules["one-peer-exponential"] == one_peer_exponential(net)
    assert comparison.schedules[f"epidemic:{k}"] == epidemic(net, k, seed=4)
    assert not comparison.refused and comparison.note == EXTRAPOLATION_NOTE


def test_each_time_is_evaluates_under_the_designs_own_predictor(net, design, comparison):
    judge = design.judge()
    for name, schedule in comparison.schedules.items():
        metrics = evaluate(net, schedule, judge)
        assert comparison.times[name] == metrics.pseudo_time
        assert comparison.rounds[name] == metrics.predicted_global_iterate
    assert comparison.design_time == design.metrics.pseudo_time
    assert comparison.best == min(comparison.times, key=comparison.times.get)


def test_no_schedule_is_chosen_without_a_margin(net, design, comparison):
    assert comparison.margin is None and comparison.chosen is None
    assert comparison.schedule is None and "the design stays" in comparison.why
    # Even a design predicted far slower than every schedule stays.
    slow = replace(design, metrics=replace(design.metrics, pseudo_time=1e12))
    kept = consider_schedules(net, slow, seed=4)
    assert kept.chosen is None and "no margin was given" in kept.why


def test_with_a_margin_a_schedule_is_chosen_only_past_it(net, design):
    slow = replace(design, metrics=replace(design.metrics, pseudo_time=1e12))
    chosen = consider_schedules(net, slow, seed=4, margin=1.0)
    assert chosen.chosen == chosen.best and chosen.schedule is chosen.schedules[chosen.best]
    assert "the schedule is chosen" in chosen.why
    fastest = chosen.times[chosen.best]
    kept = consider_schedules(net, slow, seed=4, margin=1e12 / fastest * 1.01)
    assert kept.chosen is None and kept.best == chosen.best and "margin" in kept.why


def test_the_comparison_writes_as_json(comparison):
    import json

    data = json.loads(json.dumps(comparison.to_dict()))
    assert set(data["times"]) == set(comparison.times) and data["note"] == EXTRAPOLATION_NOTE


def test_a_network_that_cannot_carry_a_peer_says_why(net):
    from topokit import load_example

    toy = load_example("toy")
    built, refused = field_schedules(toy, 2, seed=0)
    assert set(built) == {"epidemic:2"}
    assert set(refused) == {"one-peer-exponential", "base:2"}
    assert all("cannot carry" in reason for reason in refused.values())


@pytest.mark.parametrize("bad, match", [
    (dict(margin=0.5), "margin"),
    (dict(design="design.json"), "must be a topokit Design"),
    (dict(net="net"), "must be a topokit Network"),
])
def test_bad_input_is_one_line(net, design, bad, match):
    arguments = {"net": net, "design": design, **bad}
    with pytest.raises(InvalidInputError, match=match) as caught:
        consider_schedules(**arguments)
    assert "\n" not in str(caught.value)


def test_a_design_under_a_stranger_bound_is_refused(net, design):
    bounded = replace(design, stats={**design.stats, "stranger_bound": {"mu": 0.5}})
    with pytest.raises(InvalidInputError, match="stranger bound"):
        consider_schedules(net, bounded)


def test_matched_degree_is_clipped_to_what_every_device_can_reach(net, design):
    degree = matched_degree(net, design.topology)
    usable = np.isfinite(net.delay).sum(axis=1) - 1
    assert 1 <= degree <= usable.min()
    assert degree == min(max(1, round(2 * design.topology.n_links / net.n_devices)),
                         usable.min())


def test_the_schedules_devices_add_the_common_noise_not_the_designs_own_levels(net, design):
    # A design judged with per-device levels (as under a stranger bound) names its own DP
    # devices only; a schedule's DP devices are others, so it is judged at the common z.
    judge = design.judge()
    levels = tuple(0.5 if i % 2 else 0.0 for i in range(net.n_devices))
    leveled = replace(design, predictor={**design.predictor, "settings": {
        **judge.feature_settings.to_dict(), "device_noise_multipliers": list(levels)}})
    assert leveled.judge().feature_settings.device_noise_multipliers == levels
    assert consider_schedules(net, leveled, seed=4).times == consider_schedules(
        net, design, seed=4).times
