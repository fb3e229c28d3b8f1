"""Per-device noise levels: the predictor's features and the bound's bisection (issue 20, part 4).

The features must count each DP device's own z, and predictor files written
before per-device levels existed must load and predict exactly as before.
:class:`~topokit.design._stranger_bound.DeviceNoise` must return levels that an
independent ``privacy_audit`` confirms, and that are the least to within its
tolerance (a level that much lower breaks the bound).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from topokit import Topology, evaluate, load_example, privacy_audit
from topokit.audit.stranger_bound import NOISE_RTOL, DeviceNoise, StrangerBound, required_noise
from topokit.design.baselines import dlfdp, ndlf
from topokit.design.features import FeatureSettings, topology_features
from topokit.design.time_predictor import load_predictor
from topokit.errors import InvalidInputError
from topokit.network.quantities import adjacency_matrix
from topokit.network.siot import siot

# Predictions of the default predictor shipped before per-device noise existed (commit
# 4b31466, kept as tests/data/predictor_session6.json), by topokit at that commit, on
# (network, topology) pairs: the file must still give exactly these.
BEFORE_FILE = Path(__file__).parents[1] / "data" / "predictor_session6.json"
BEFORE = {("toy", "given"): 66.42746382818463, ("toy", "dlfdp"): float("inf"),
          ("siot10", "dlfdp"): 91.33127829840352}


@pytest.fixture(scope="module")
def toy():
    return load_example("toy")


def _case(name, topology):
    net = load_example("toy") if name == "toy" else siot(10, seed=1)
    return net, net.topology if topology == "given" else dlfdp(net)


@pytest.mark.parametrize("key", sorted(BEFORE))
def test_a_predictor_file_written_before_predicts_as_before(key):
    settings = json.loads(BEFORE_FILE.read_text())["settings"]
    assert "device_noise_multipliers" not in settings  # the file predates the setting
    predictor = load_predictor(BEFORE_FILE)
    assert predictor.feature_settings.device_noise_multipliers is None
    assert predictor.feature_settings.to_dict() == settings  # and is written back unchanged
    net, topology = _case(*key)
    assert predictor.predict_network(net, topology) == pytest.approx(BEFORE[key], rel=1e-12)


def test_equal_levels_give_the_common_noise_features_bit_for_bit(toy):
    common = topology_features(toy, toy.topology, noise_multiplier=4.0)
    levels = topology_features(toy, toy.topology, noise_multiplier=1.0,
                               device_noise_multipliers=[4.0] * toy.n_devices)
    assert common == levels


def test_noise_features_count_each_device_level(toy):
    # U_avg = sum_i s_i^2 / n^2 with s_i = z_i 2 C / B_i (B_i = 64: every toy device has
    # the default rows); only the DP devices C, D, E add noise, whatever the others' entries.
    z = [9.0, 9.0, 2.0, 3.0, 5.0, 9.0]
    features = topology_features(toy, toy.topology, device_noise_multipliers=z)
    expected = sum((zi * 2.0 / 64) ** 2 for zi in (2.0, 3.0, 5.0)) / toy.n_devices**2
    assert features.noise_average == pytest.approx(expected, rel=1e-12)
    lower = topology_features(toy, toy.topology, device_noise_multipliers=[9, 9, 1, 3, 5, 9])
    assert lower.noise_felt < features.noise_felt
    assert lower.noise_disagreement < features.noise_disagreement


def test_predictions_follow_the_device_levels(toy):
    predictor = load_predictor("default")
    settings = predictor.feature_settings
    uniform = FeatureSettings(**{**settings.to_dict(), "device_noise_multipliers": [5.0] * 6})
    lowered = FeatureSettings(**{**settings.to_dict(),
                                 "device_noise_multipliers": [5.0, 5.0, 3.8, 5.0, 5.0, 5.0]})
    times = [evaluate(toy, toy.topology, predictor.set_params(settings=s)).pseudo_time
             for s in (uniform, lowered)]
    assert times[1] < times[0]


def test_settings_with_levels_round_trip():
    settings = FeatureSettings(noise_multiplier=4.0, device_noise_multipliers=(4.0, 3.5, 0.0))
    data = json.loads(json.dumps(settings.to_dict()))
    assert FeatureSettings.from_dict(data) == settings


@pytest.mark.parametrize("levels, message", [
    ([1.0, 2.0], "device_noise_multipliers has 2 entries for 6 devices"),
    ([1.0, -2.0, 1, 1, 1, 1], r"device_noise_multipliers\[1\] must be >= 0"),
    ([1.0, float("nan"), 1, 1, 1, 1], r"device_noise_multipliers\[1\] must be finite"),
    (3.0, "must be a sequence of numbers"),
])
def test_bad_levels_are_refused(toy, levels, message):
    with pytest.raises(InvalidInputError, match=message):
        topology_features(toy, toy.topology, device_noise_multipliers=levels)


# ---------------------------------------------------------------------------------------------
# The bisection of one device's level under a stranger bound
# ---------------------------------------------------------------------------------------------

ROUNDS = 3  # short gossip: some devices' noise does not reach the worst pairs' views


@pytest.fixture(scope="module")
def everyone_dp(toy):
    """The toy network's social links, every device DP, and a bound that needs z* = 6."""
    topology = Topology(ndlf(toy).edges, toy.nodes)
    unit = required_noise(toy, topology, StrangerBound(1.0, ROUNDS, 0.0)).unit_mu_max
    bound = StrangerBound(unit / 6.0, ROUNDS, 3.0)
    need = required_noise(toy, topology, bound)
    return topology, bound, need.noise_multiplier


def _audit(net, topology, noise):
    return privacy_audit(net, topology, rounds=ROUNDS,
                         noise_multiplier=dict(zip(net.nodes, noise, strict=True))).summary()


def test_each_least_level_meets_the_bound_and_is_least_within_tolerance(toy, everyone_dp):
    topology, bound, z_star = everyone_dp
    search = DeviceNoise(adjacency_matrix(toy, topology), toy.social_adjacency > 0, bound)
    uniform = np.full(toy.n_devices, z_star)
    levels = [search.least_noise(uniform, j) for j in range(toy.n_devices)]
    assert all(bound.base_noise <= level <= z_star for level in levels)
    assert any(level < z_star for level in levels)  # this case leaves room on some devices
    for j, level in enumerate(levels):
        noise = uniform.copy()
        noise[j] = level
        summary = _audit(toy, topology, noise)
        assert summary["exposed_stranger_pairs"] == 0
        assert summary["stranger_mu_max"] <= bound.max_mu * (1 + 1e-12)
        if level > bound.base_noise:  # the bisection stopped within NOISE_RTOL of the least
            noise[j] = level * (1 - NOISE_RTOL) * (1 - 1e-9)
            assert _audit(toy, topology, noise)["stranger_mu_max"] > bound.max_mu / (1 + 1e-9)


def test_a_device_the_worst_pair_needs_costs_one_audit(toy, everyone_dp):
    topology, bound, z_star = everyone_dp
    search = DeviceNoise(adjacency_matrix(toy, topology), toy.social_adjacency > 0, bound)
    uniform = np.full(toy.n_devices, z_star)
    for j in range(toy.n_devices):
        before = search.audits
        if search.least_noise(uniform, j) == z_star:
            assert search.audits - before == 1
    assert search.least_noise(np.full(toy.n_devices, bound.base_noise), 0) == bound.base_noise


# ---------------------------------------------------------------------------------------------
# topokit design --max-stranger-mu: the levels in the report, --uniform-noise
# ---------------------------------------------------------------------------------------------

def _design(*args):
    from typer.testing import CliRunner

    from topokit.cli import app

    return CliRunner().invoke(app, ["design", *map(str, args)])


@pytest.fixture(scope="module")
def siot_file(tmp_path_factory):
    from topokit.network.formats import save_network

    net = siot(10, seed=1)
    return net, save_network(net, tmp_path_factory.mktemp("net") / "siot10.json")


@pytest.mark.parametrize("uniform", [False, True])
def test_design_reports_and_audits_the_levels_it_chose(siot_file, uniform):
    net, path = siot_file
    flags = ("--uniform-noise",) if uniform else ()
    result = _design(path, "--max-stranger-mu", 0.25, "--audit-rounds", ROUNDS, "--json", *flags)
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    bound = record["stats"]["stranger_bound"]
    levels = {node: bound["noise_multipliers"][str(node)] for node in
              record["topology"]["dp_devices"]}
    assert (bound["devices_lowered"] == 0) == uniform
    if uniform:
        assert set(levels.values()) == {bound["noise_multiplier"]}
    chosen = Topology(record["topology"]["edges"], record["topology"]["dp_devices"])
    summary = privacy_audit(net, chosen, rounds=ROUNDS, noise_multiplier=levels).summary()
    column = record["baselines"]["optimize"]
    assert column["exposed_stranger_pairs"] == summary["exposed_stranger_pairs"] == 0
    assert column["stranger_mu_max"] == pytest.approx(summary["stranger_mu_max"], rel=1e-12)
    assert summary["stranger_mu_max"] <= 0.25 * (1 + 1e-9)


def test_uniform_noise_needs_a_bound():
    result = _design("-e", "toy", "--uniform-noise")
    assert result.exit_code == 2
    assert "--uniform-noise applies with --max-stranger-mu only" in result.output


def test_mappings_are_refused_as_level_sequences(toy):
    levels = {node: 4.0 for node in toy.nodes}
    with pytest.raises(InvalidInputError, match="not a dict") as caught:
        topology_features(toy, dlfdp(toy), noise_multiplier=4, device_noise_multipliers=levels)
    assert "\n" not in str(caught.value)


def test_validate_records_the_features_of_each_runs_own_levels(toy):
    from sklearn.datasets import load_digits

    from topokit import validate
    from topokit.training import DPConfig

    topology = dlfdp(toy)
    levels = {node: 2.0 + i for i, node in enumerate(sorted(topology.dp_devices, key=str))}
    top = max(levels.values())
    X, y = load_digits(return_X_y=True)

    def recorded(noise):
        result = validate(toy, {"t": topology}, X=X[:300], y=y[:300], trials=1, rounds=2,
                          batch_size=8,
                          dp=DPConfig(noise_multiplier=noise))
        return result.frame["noise_average"].iloc[0]

    # Every device holds more rows than a batch of 8: the same sensitivity everywhere, so
    # the ratio of the recorded features is the ratio of the levels' features.
    per_device = topology_features(toy, topology, noise_multiplier=top, device_noise_multipliers=[
        levels.get(node, 0.0) for node in toy.nodes]).noise_average
    common = topology_features(toy, topology, noise_multiplier=top).noise_average
    assert recorded(levels) / recorded(top) == pytest.approx(per_device / common, rel=1e-9)
    assert per_device < 0.9 * common
