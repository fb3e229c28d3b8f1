"""optimize(max_stranger_mu=...): designs under a bound on what strangers learn (issue 20, part 4).

Every claim is checked with an independent ``privacy_audit`` of the returned
design at the noise it says it needs (each DP device's own level).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from topokit import evaluate, load_example, optimize, privacy_audit
from topokit.audit.stranger_bound import StrangerBound, required_noise
from topokit.design.baselines import dlfdp, random_topology
from topokit.design.time_predictor import load_predictor
from topokit.errors import InvalidInputError
from topokit.network.siot import siot

ROUNDS = 30


@pytest.fixture(scope="module")
def net():
    return siot(10, seed=1)


@pytest.fixture(scope="module", params=[0.3, 0.05])
def bounded(request, net):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design = optimize(net, seed=0, max_stranger_mu=request.param, audit_rounds=ROUNDS)
    return request.param, design


def _stranger_summary(net, topology, z):
    return privacy_audit(net, topology, rounds=ROUNDS, noise_multiplier=z).summary()


def test_every_stranger_pair_is_within_the_bound(net, bounded):
    bound, design = bounded
    info = design.stats["stranger_bound"]
    assert set(info["noise_multipliers"]) == set(design.topology.dp_devices)
    summary = _stranger_summary(net, design.topology, info["noise_multipliers"])
    assert summary["exposed_stranger_pairs"] == 0
    assert summary["stranger_mu_max"] <= bound * (1 + 1e-9)
    assert summary["stranger_mu_max"] == pytest.approx(info["stranger_mu_max"], rel=1e-9)
    assert info["max_stranger_mu"] == bound and info["audit_rounds"] == ROUNDS


def test_noise_is_the_least_the_bound_needs(net, bounded):
    # z* is the base noise when that suffices, else exactly what brings the worst stranger
    # pair to the bound (mu scales as 1 / z): a slightly smaller z breaks the bound.
    bound, design = bounded
    info = design.stats["stranger_bound"]
    base = load_predictor("default").feature_settings.noise_multiplier
    assert info["base_noise_multiplier"] == pytest.approx(base)
    z = info["noise_multiplier"]
    assert z >= base
    if z > base * (1 + 1e-12):
        less = _stranger_summary(net, design.topology, z * (1 - 1e-6))
        assert less["stranger_mu_max"] > bound


def test_a_bound_the_base_noise_cannot_meet_raises_the_noise(net):
    # On this network no topology keeps every stranger within 0.05 at the base noise
    # (z_0 = 3.73), so every DP device must add more, and the predicted time counts it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design = optimize(net, seed=0, max_stranger_mu=0.05, audit_rounds=ROUNDS)
    info = design.stats["stranger_bound"]
    assert info["noise_multiplier"] > info["base_noise_multiplier"]
    assert info["stranger_mu_max"] == pytest.approx(0.05, rel=1e-8)
    assert info["stranger_mu_max"] < 0.05  # strictly within, not up to rounding
    # A device lowered below z* shields no worst pair: at the chosen levels a fresh audit
    # still finds every stranger within the bound, strictly.
    levels = info["noise_multipliers"]
    assert sum(z < info["noise_multiplier"] for z in levels.values()) == info["devices_lowered"]
    fresh = privacy_audit(net, design.topology, rounds=ROUNDS, noise_multiplier=levels).summary()
    assert fresh["exposed_stranger_pairs"] == 0 and fresh["stranger_mu_max"] < 0.05
    at_base = evaluate(net, design.topology, load_predictor("default"))
    assert design.metrics.pseudo_time >= at_base.pseudo_time * (1 - 1e-12)


def test_never_predicted_slower_than_an_admissible_reference(bounded):
    _, design = bounded
    info = design.stats["stranger_bound"]
    times = design.stats["start_times"]
    assert "ndlf" in info["inadmissible_references"]  # NDLF sends everything in the clear
    assert "dlfdp" in times
    for name, time in times.items():
        assert design.metrics.pseudo_time <= time * (1 + 1e-9), name


def test_the_design_keeps_the_deepprivacy_rules(net, bounded):
    _, design = bounded
    design.topology.validate(net)
    social = {frozenset(edge) for edge in net.social.edges}
    for u, v in design.topology.edges:
        if frozenset((u, v)) not in social:
            assert u in design.topology.dp_devices and v in design.topology.dp_devices


def test_same_seed_same_design(net):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = optimize(net, seed=4, max_stranger_mu=0.3, audit_rounds=ROUNDS)
        two = optimize(net, seed=4, max_stranger_mu=0.3, audit_rounds=ROUNDS, n_jobs=2)
    assert one.topology == two.topology
    assert one.stats["stranger_bound"] == {**two.stats["stranger_bound"]}


def test_required_noise_matches_audits_at_that_noise():
    toy = load_example("toy")
    for seed in (11, 12, 13):
        topology = random_topology(toy, seed=seed)
        for bound in (0.05, 1.0):
            need = required_noise(toy, topology, StrangerBound(bound, ROUNDS, 2.0))
            summary = _stranger_summary(toy, topology, 1.0)
            assert need.exposed_stranger_pairs == summary["exposed_stranger_pairs"]
            if need.feasible and summary["stranger_mu_max"] is not None:
                at = _stranger_summary(toy, topology, need.noise_multiplier)
                assert at["stranger_mu_max"] == pytest.approx(need.stranger_mu_max, rel=1e-9)
                assert at["stranger_mu_max"] <= bound * (1 + 1e-9)
    need = required_noise(toy, dlfdp(toy), StrangerBound(0.1, ROUNDS, 2.0))
    assert need.noise_multiplier == pytest.approx(10.0)  # complete graph: mu = 1 / z


@pytest.mark.parametrize("options, match", [
    ({"max_stranger_mu": 0.0}, "max_stranger_mu"),
    ({"max_stranger_mu": float("nan")}, "max_stranger_mu"),
    ({"max_stranger_mu": -1.0}, "max_stranger_mu"),
    ({"max_stranger_mu": 0.5, "audit_rounds": 0}, "audit_rounds"),
    ({"max_stranger_mu": 0.5, "predictor": "paper"}, "counts DP noise"),
])
def test_bad_bounds_are_refused_before_any_work(options, match):
    with pytest.raises(InvalidInputError, match=match):
        optimize(load_example("toy"), **options)


@pytest.mark.parametrize("mixing", ["fastest", "metropolis"])
def test_weights_are_audited_as_the_design_gossips(mixing):
    # Other mixing weights change what strangers see: the reported z* must be the weighted
    # design's own, and an independent audit at it must meet the bound.
    toy = load_example("toy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design = optimize(toy, seed=0, max_stranger_mu=0.1, audit_rounds=ROUNDS, mixing=mixing)
    info = design.stats["stranger_bound"]
    need = required_noise(toy, design.topology, StrangerBound(0.1, ROUNDS,
                                                              info["base_noise_multiplier"]))
    assert info["noise_multiplier"] == pytest.approx(need.noise_multiplier, rel=1e-12)
    summary = _stranger_summary(toy, design.topology, info["noise_multiplier"])
    assert summary["exposed_stranger_pairs"] == 0
    assert summary["stranger_mu_max"] < 0.1


def test_the_dsgd_model_bounds_every_round_of_contributions():
    # Under D-SGD a device's data enters every round; the reported z* meets the D-SGD
    # audit (an independent privacy_audit in that model).
    toy = load_example("toy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dsgd = optimize(toy, seed=0, max_stranger_mu=0.5, audit_rounds=10, audit_model="dsgd")
    info = dsgd.stats["stranger_bound"]
    assert info["audit_model"] == "dsgd"
    audit = privacy_audit(toy, dsgd.topology, rounds=10, noise_multiplier=info["noise_multiplier"],
                          model="dsgd").summary()
    assert audit["exposed_stranger_pairs"] == 0 and audit["stranger_mu_max"] < 0.5


# ---------------------------------------------------------------------------------------------
# Per-device noise levels (module notes of optimize, step 5)
# ---------------------------------------------------------------------------------------------

SHORT = 3  # a short gossip leaves some DP devices' noise out of the worst pair's view


@pytest.fixture(scope="module")
def per_device(net):
    """The same search with per-device levels and with the common z* (a case where they pay)."""
    options = dict(seed=0, max_stranger_mu=0.25, audit_rounds=SHORT, max_evaluations=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (optimize(net, **options),
                optimize(net, per_device_noise=False, **options))


def test_device_levels_meet_the_bound_by_an_independent_audit(net, per_device):
    design, _ = per_device
    info = design.stats["stranger_bound"]
    assert info["per_device_noise"] is True and info["devices_lowered"] > 0
    summary = privacy_audit(net, design.topology, rounds=SHORT,
                            noise_multiplier=info["noise_multipliers"]).summary()
    assert summary["exposed_stranger_pairs"] == 0
    assert summary["stranger_mu_max"] <= 0.25 * (1 + 1e-9)
    assert summary["stranger_mu_max"] == pytest.approx(info["stranger_mu_max"], rel=1e-9)


def test_device_levels_stay_between_the_base_noise_and_z_star(per_device):
    design, uniform = per_device
    info = design.stats["stranger_bound"]
    assert design.topology == uniform.topology  # step 5 changes the noise, not the design
    assert info["noise_multiplier"] == uniform.stats["stranger_bound"]["noise_multiplier"]
    levels = np.array(list(info["noise_multipliers"].values()))
    assert np.all(levels <= info["noise_multiplier"])
    assert np.all(levels >= info["base_noise_multiplier"])
    assert info["devices_lowered"] == np.count_nonzero(levels < info["noise_multiplier"])


def test_device_levels_are_predicted_faster_and_predicted_as_reported(net, per_device):
    design, uniform = per_device
    assert design.metrics.pseudo_time < uniform.metrics.pseudo_time
    info = design.stats["stranger_bound"]
    default = load_predictor("default")
    levels = [info["noise_multipliers"].get(node, 0.0) for node in net.nodes]
    settings = replace(default.feature_settings, noise_multiplier=info["noise_multiplier"],
                       device_noise_multipliers=levels)
    again = evaluate(net, design.topology, default.set_params(settings=settings))
    assert again.pseudo_time == pytest.approx(design.metrics.pseudo_time, rel=1e-12)


def test_uniform_noise_is_kept_when_asked(per_device):
    _, uniform = per_device
    info = uniform.stats["stranger_bound"]
    assert info["per_device_noise"] is False and info["noise_audits"] == 0
    assert set(info["noise_multipliers"].values()) == {info["noise_multiplier"]}


def test_device_level_audits_are_counted(per_device):
    design, uniform = per_device
    info, plain = design.stats["stranger_bound"], uniform.stats["stranger_bound"]
    assert info["noise_audits"] >= info["devices_lowered"] + 1  # each lowering, the final check
    assert info["audits"] == plain["audits"] + info["noise_audits"]


def test_device_levels_are_deterministic(net):
    options = dict(seed=0, max_stranger_mu=0.25, audit_rounds=SHORT, max_evaluations=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one, two = optimize(net, **options), optimize(net, n_jobs=2, **options)
    assert one.stats["stranger_bound"] == two.stats["stranger_bound"]
    assert one.metrics == two.metrics


def test_a_design_trains_with_its_device_levels(net, per_device):
    from topokit.training import DPConfig, load_digits, train

    design, _ = per_device
    levels = design.stats["stranger_bound"]["noise_multipliers"]
    run = train(net, design.topology, *load_digits(), rounds=2, seed=0,
                dp=DPConfig(noise_multiplier=levels))
    assert run.noise_multiplier == levels


def test_per_device_noise_must_be_a_bool():
    with pytest.raises(InvalidInputError, match="per_device_noise must be True or False"):
        optimize(load_example("toy"), max_stranger_mu=0.5, per_device_noise="yes")
