"""Privacy of the training core: who adds noise, how much, and the epsilon reported."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld, rdp

from topokit.errors import InvalidInputError
from topokit.kernels import lazy_metropolis
from topokit.network.core import Topology
from topokit.training import DPConfig, Model, train
from topokit.training.privacy import clip_gradients, clipped_sensitivity

DP_NODES = ("C", "D", "E")


class ConstantGradient(Model):
    """Zero initial parameters and the same gradient g0 for every example: the update is known."""

    def __init__(self, n_features, n_classes, n_params=20_000, value=0.0):
        super().__init__(n_features, n_classes)
        self._n_params = n_params
        self.value = value

    @property
    def n_params(self):
        return self._n_params

    def init(self, n_devices, rng):
        return np.zeros((n_devices, self.n_params))

    def scores(self, params, X):
        return np.zeros((params.shape[0], X.shape[-2], self.n_classes))

    def per_example_gradients(self, params, X, y):
        return np.full((params.shape[0], X.shape[1], self.n_params), self.value)


def _expected_batch(run, node, batch_size=64):
    return min(batch_size, run.partition_sizes[run.nodes.index(node)])


def test_non_dp_devices_add_no_noise_and_dp_devices_send_one_noisy_message(toy, digits):
    # Zero gradients and zero initial models: after one round X = A W, W the noise sent.
    model = ConstantGradient(64, 10, n_params=5_000)
    run = train(toy, toy.topology, *digits, model=model, rounds=1, lr=0.2, seed=11)
    A = lazy_metropolis(toy.topology.graph(toy.nodes))
    sent = np.linalg.solve(A, run.final_params)
    for i, node in enumerate(toy.nodes):
        if node in DP_NODES:
            assert np.std(sent[i]) > 1e-4
        else:
            np.testing.assert_allclose(sent[i], 0.0, atol=1e-12)
    # Every neighbour received the same noisy vector as the sender kept for itself:
    # X = A W holds with one W, so each row of X is that combination exactly.
    np.testing.assert_allclose(A @ sent, run.final_params, atol=1e-12)


def test_non_dp_devices_stay_exact_without_links(toy, digits):
    model = ConstantGradient(64, 10, n_params=1_000)
    run = train(toy, Topology([], dp_devices=DP_NODES), *digits, model=model, rounds=5, seed=0)
    for i, node in enumerate(toy.nodes):
        assert np.all(run.final_params[i] == 0.0) == (node not in DP_NODES)


@pytest.mark.parametrize("rounds", [1, 4])
@pytest.mark.parametrize("config", [DPConfig(), DPConfig(epsilon=0.5, max_grad_norm=3.0)])
def test_empirical_noise_std_matches_the_calibration(toy, digits, rounds, config):
    lr, decay = 0.3, 0.9
    model = ConstantGradient(64, 10)
    run = train(toy, Topology([], dp_devices=DP_NODES), *digits, model=model, rounds=rounds,
                lr=lr, lr_decay=decay, dp=config, seed=2024)
    # the analytic Gaussian mechanism at every epsilon (the default, also below epsilon = 1)
    z = dp_accounting.get_sigma_gaussian(config.epsilon, config.delta)
    for node in DP_NODES:
        assert run.noise_multiplier[node] == pytest.approx(z, rel=1e-12)
        batch = _expected_batch(run, node)
        per_round = [z * 2 * lr * decay**t * config.max_grad_norm / batch for t in range(rounds)]
        expected = math.sqrt(sum(s**2 for s in per_round))
        values = run.final_params[run.nodes.index(node)]
        # 20,000 draws: the sample std is within 3% with overwhelming probability.
        assert np.std(values) == pytest.approx(expected, rel=0.03)
        assert abs(values.mean()) < 4 * expected / math.sqrt(values.size)


def _dp_accounting_epsilon(z, q, steps, delta, accountant="rdp"):
    event = dp_accounting.GaussianDpEvent(z)
    if q < 1:
        event = dp_accounting.PoissonSampledDpEvent(q, event)
    relation = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    engine = (rdp.RdpAccountant(neighboring_relation=relation) if accountant == "rdp"
              else pld.PLDAccountant(neighboring_relation=relation))
    engine.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return engine.get_epsilon(delta)


def test_reported_epsilon_equals_dp_accounting(toy, digits):
    rounds = 30
    run = train(toy, toy.topology, *digits, rounds=rounds, dp=DPConfig(), seed=0)
    z = dp_accounting.get_sigma_gaussian(1.0, 1e-5)
    assert set(run.epsilon) == set(DP_NODES)
    for node in DP_NODES:
        q = 64 / run.partition_sizes[run.nodes.index(node)]
        assert run.sampling_rate[node] == pytest.approx(q)
        expected = _dp_accounting_epsilon(z, q, rounds, 1e-5)
        assert run.epsilon[node] == pytest.approx(expected, rel=1e-9)


def test_reported_epsilon_without_amplification_and_with_pld(toy, digits):
    config = DPConfig(noise_multiplier=2.0, amplification=False, accountant="pld")
    run = train(toy, toy.topology, *digits, rounds=12, dp=config, seed=0)
    for node in DP_NODES:
        assert run.sampling_rate[node] == 1.0
        assert run.epsilon[node] == pytest.approx(
            _dp_accounting_epsilon(2.0, 1.0, 12, 1e-5, "pld"), rel=1e-9
        )


def test_per_run_budget_is_spent_over_the_run(toy, digits):
    run = train(toy, toy.topology, *digits, rounds=20, dp=DPConfig(epsilon=2.0, per="run"), seed=0)
    for node in DP_NODES:
        assert run.epsilon[node] <= 2.0 + 1e-6
        assert run.epsilon[node] == pytest.approx(2.0, rel=1e-3)


def test_per_run_pld_budget_buys_less_noise_than_rdp(toy, digits):
    runs = {accountant: train(toy, toy.topology, *digits, rounds=20, seed=0,
                              dp=DPConfig(epsilon=2.0, per="run", accountant=accountant))
            for accountant in ("rdp", "pld")}
    for node in DP_NODES:
        assert runs["pld"].epsilon[node] <= 2.0 + 1e-3
        assert runs["pld"].epsilon[node] == pytest.approx(2.0, rel=1e-2)
        assert runs["pld"].noise_multiplier[node] < runs["rdp"].noise_multiplier[node]
        # the PLD-calibrated run, accounted independently with dp-accounting's PLD
        q = runs["pld"].sampling_rate[node]
        spent = _dp_accounting_epsilon(runs["pld"].noise_multiplier[node], q, 20, 1e-5, "pld")
        assert spent <= 2.0 + 1e-3


def test_epsilon_counts_only_the_rounds_run(toy, digits):
    from topokit.training import Convergence

    run = train(toy, toy.topology, *digits, rounds=200, dp=DPConfig(noise_multiplier=3.0),
                convergence=Convergence(tol=1.0), seed=0)
    assert run.stop_rule == "convergence" and run.rounds_run == 2
    q = run.sampling_rate["C"]
    assert run.epsilon["C"] == pytest.approx(_dp_accounting_epsilon(3.0, q, 2, 1e-5), rel=1e-9)


def test_paper_sensitivity_is_data_dependent_and_flagged(toy, digits):
    # Full batches (batch_size >= |D_i|): the update is exactly eta * g0, so Delta = 2 eta ||g0||.
    value, lr, n_params = 0.01, 0.5, 20_000
    model = ConstantGradient(64, 10, n_params=n_params, value=value)
    run = train(toy, Topology([], dp_devices=DP_NODES), *digits, model=model, rounds=1, lr=lr,
                batch_size=10_000, dp=DPConfig(sensitivity="paper"), seed=3)
    assert run.dp_formal is False
    z = dp_accounting.get_sigma_gaussian(1.0, 1e-5)
    expected = z * 2 * lr * value * math.sqrt(n_params)
    for node in DP_NODES:
        values = run.final_params[run.nodes.index(node)] + lr * value
        assert np.std(values) == pytest.approx(expected, rel=0.03)


def test_dp_off_adds_nothing_even_with_dp_devices(toy, digits):
    model = ConstantGradient(64, 10, n_params=100)
    run = train(toy, toy.topology, *digits, model=model, rounds=3, dp=False, seed=0)
    assert np.all(run.final_params == 0.0)
    assert run.epsilon == {} and run.dp_devices == ()


def test_clipping_and_sensitivity_helpers():
    grads = np.array([[3.0, 4.0], [0.3, 0.4]])
    np.testing.assert_allclose(clip_gradients(grads, 1.0), [[0.6, 0.8], [0.3, 0.4]])
    assert clipped_sensitivity(0.2, 1.0, 64) == pytest.approx(2 * 0.2 / 64)
    assert clipped_sensitivity(0.2, 1.0, 64, local_steps=3) == pytest.approx(2 * 0.2 * (1 / 64 + 2))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"per": "epoch"},
        {"sensitivity": "exact"},
        {"accountant": "moments"},
        {"epsilon": 0},
        {"delta": 1.0},
        {"max_grad_norm": -1},
        {"noise_multiplier": 0},
        {"method": "classic", "epsilon": 1.0},
    ],
)
def test_bad_dp_config_is_rejected(kwargs):
    with pytest.raises(InvalidInputError):
        DPConfig(**kwargs)


# --- per-device noise multipliers (issue 20, part 4: training with optimize's levels) ---------

PER_DEVICE = {"C": 2.0, "D": 5.0, "E": 3.0}


def test_each_device_adds_and_accounts_its_own_noise(toy, digits):
    # Zero gradients, no links: each DP device's parameters after one round are its noise,
    # whose std is z_i * 2 eta C / B_i; each epsilon is dp-accounting's at that device's z_i.
    lr, n_params = 0.3, 20_000
    model = ConstantGradient(64, 10, n_params=n_params)
    run = train(toy, Topology([], dp_devices=DP_NODES), *digits, model=model, rounds=1, lr=lr,
                dp=DPConfig(noise_multiplier=PER_DEVICE), seed=5)
    assert run.noise_multiplier == PER_DEVICE
    for node, z in PER_DEVICE.items():
        expected = z * 2 * lr / _expected_batch(run, node)
        assert np.std(run.final_params[run.nodes.index(node)]) == pytest.approx(expected, rel=0.03)
        q = run.sampling_rate[node]
        assert run.epsilon[node] == pytest.approx(_dp_accounting_epsilon(z, q, 1, 1e-5), rel=1e-9)


def test_per_device_epsilon_over_a_run_follows_each_z(toy, digits):
    rounds = 15
    run = train(toy, toy.topology, *digits, rounds=rounds, seed=0,
                dp=DPConfig(noise_multiplier={**PER_DEVICE, "E": 0.0}))
    for node, z in PER_DEVICE.items():
        q = run.sampling_rate[node]
        if node == "E":  # no noise: no finite guarantee
            assert run.epsilon[node] == math.inf and run.noise_multiplier[node] == 0.0
        else:
            assert run.epsilon[node] == pytest.approx(
                _dp_accounting_epsilon(z, q, rounds, 1e-5), rel=1e-9)
    assert run.epsilon["C"] > run.epsilon["D"]  # less noise, more epsilon
    assert run.to_dict()["config"]["dp"]["noise_multiplier"] == {"C": 2.0, "D": 5.0, "E": 0.0}


def test_a_common_mapping_trains_as_the_common_number(toy, digits):
    # The mapping path must not change the run: same seed, same z everywhere, same result.
    kwargs = dict(rounds=4, seed=7)
    common = train(toy, toy.topology, *digits, dp=DPConfig(noise_multiplier=3.0), **kwargs)
    mapped = train(toy, toy.topology, *digits,
                   dp=DPConfig(noise_multiplier=dict.fromkeys(DP_NODES, 3.0)), **kwargs)
    np.testing.assert_array_equal(common.final_params, mapped.final_params)
    assert common.epsilon == mapped.epsilon


@pytest.mark.parametrize("noise, message", [
    ({"C": 2.0, "D": 5.0}, "no entry for DP device 'E'"),
    ({**PER_DEVICE, "A": 1.0}, "'A', which is not a DP device of the topology"),
    ({**PER_DEVICE, "Z": 1.0}, "'Z', which is not in the network"),
])
def test_a_mapping_must_name_exactly_the_dp_devices(toy, digits, noise, message):
    with pytest.raises(InvalidInputError, match=message) as caught:
        train(toy, toy.topology, *digits, rounds=1, dp=DPConfig(noise_multiplier=noise), seed=0)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("value, message", [
    (-1.0, r"noise_multiplier\['C'\] must be >= 0"),
    (math.nan, r"noise_multiplier\['C'\] must be finite"),
    (math.inf, r"noise_multiplier\['C'\] must be finite"),
    ("3", r"noise_multiplier\['C'\] must be a real number"),
])
def test_bad_per_device_values_are_refused(value, message):
    with pytest.raises(InvalidInputError, match=message) as caught:
        DPConfig(noise_multiplier={"C": value, "D": 1.0})
    assert "\n" not in str(caught.value)


def test_per_device_config_compares_and_hashes_by_its_levels():
    one = DPConfig(noise_multiplier={"C": 2, "D": 5.0})
    two = DPConfig(noise_multiplier={"D": 5.0, "C": 2.0})
    assert one == two and hash(one) == hash(two) and one.per_device
    assert not DPConfig(noise_multiplier=2.0).per_device


def test_per_device_noise_is_frozen_with_the_config():
    import pickle

    levels = {"A": 4.0, "B": 3.0}
    config = DPConfig(noise_multiplier=levels)
    levels["A"] = 9.0  # the caller's dict is not the config's
    assert config.noise_multiplier["A"] == 4.0
    with pytest.raises(TypeError):
        config.noise_multiplier["A"] = 1.0
    same = DPConfig(noise_multiplier={"B": 3.0, "A": 4.0})
    assert config == same and hash(config) == hash(same)
    assert pickle.loads(pickle.dumps(config)) == config  # configs travel to workers
    assert config.to_dict()["noise_multiplier"] == {"A": 4.0, "B": 3.0}
