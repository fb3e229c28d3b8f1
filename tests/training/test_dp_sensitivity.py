"""The sensitivity a DP device's noise is calibrated for holds for the code as written.

Regression for issue 18 ("Local steps K > 1 with DP"): the bound 2 eta C (1/B + K - 1)
assumed every later local step moves by at most eta C, but the clipped sum was divided
by the expected batch size B, so a batch of more than B rows moved further and
replacing one row moved a DP device's message beyond the bound.  Here two datasets
that differ in one row go through one real round of :func:`topokit.training.train`
with the same seed (hence the same Poisson draws and the same noise, which cancels),
and the messages are compared with the bound computed from its formula.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from topokit.errors import NotAFormalGuaranteeWarning
from topokit.network.core import Network, Topology
from topokit.testing.naive_training import naive_train
from topokit.training import DPConfig, Model, train
from topokit.training._sampling import PoissonSampler

LR, CLIP = 0.1, 1.0
#: Tiny noise: the same seed draws the same noise on both datasets, and this keeps the
#: rounding of message - message' far below the margins tested.
TINY_NOISE = DPConfig(noise_multiplier=1e-9, max_grad_norm=CLIP)


def bound(batch: float, local_steps: int, lr: float = LR) -> float:
    """2 eta C (1/B + K - 1), written from the issue, not imported."""
    return 2 * lr * CLIP * (1 / batch + local_steps - 1)


@pytest.fixture(scope="module")
def one_device():
    """One DP device and nothing else: its message is the run's final parameters."""
    return Network(nx.empty_graph(1), [1.0], [[0.0]]), Topology([], dp_devices=[0])


class PushAway(Model):
    """loss_r(x) = -G |x_0 - c_r| with c_r = X[r, 0]: non-smooth, and its gradient pushes x_0
    away from c_r (every example's gradient is clipped to C since G > C).

    From x = 0, the rows with c_r = 0 contribute nothing to the first step (sign 0); a row
    with c = -1 or c = +1 sends x_0 to +eta C / B or -eta C / B.  From then on every drawn row
    pushes the two runs further apart by its whole clipped gradient: the worst case of the
    bound, where a later step moves by its full length on each side.
    """

    def __init__(self, n_features: int, n_classes: int, strength: float = 10.0):
        super().__init__(n_features, n_classes)
        self.strength = strength

    @property
    def n_params(self) -> int:
        return 2

    def init(self, n_devices, rng):
        return np.zeros((n_devices, self.n_params))

    def scores(self, params, X):
        return np.zeros((params.shape[0], X.shape[-2], self.n_classes))

    def per_example_gradients(self, params, X, y):
        grads = np.zeros((params.shape[0], X.shape[1], self.n_params))
        grads[..., 0] = -self.strength * np.sign(params[:, None, 0] - X[..., 0])
        return grads


@pytest.fixture
def batch_sizes(monkeypatch):
    """Record the size of every device's Poisson batch drawn by ``PoissonSampler.sample``."""
    drawn: list[np.ndarray] = []
    original = PoissonSampler.sample

    def spy(self, *args, **kwargs):
        batch = original(self, *args, **kwargs)
        drawn.append((batch.weight > 0).sum(axis=1))
        return batch

    monkeypatch.setattr(PoissonSampler, "sample", spy)
    return drawn


def _message_distance(net, topology, X, X_other, y, *, seed, **kwargs) -> float:
    test = (np.zeros((4, X.shape[1])), y[:4])
    runs = [train(net, topology, data, y, rounds=1, lr=LR, dp=TINY_NOISE, test=test, seed=seed,
                  **kwargs) for data in (X, X_other)]
    return float(np.linalg.norm(runs[0].final_params - runs[1].final_params))


@pytest.mark.parametrize("local_steps", [1, 2, 3])
def test_replacing_one_row_moves_the_message_at_most_the_sensitivity(
    one_device, batch_sizes, local_steps
):
    # 40 rows, B = 20 (q = 1/2): about half of the batches hold more than B rows.
    n, batch = 40, 20
    X = np.zeros((n, 1))
    X[0, 0] = -1.0
    X_other = X.copy()
    X_other[0, 0] = 1.0  # row 0 replaced
    y = np.arange(n) % 2
    ratios = []
    for seed in range(12):
        distance = _message_distance(*one_device, X, X_other, y, seed=seed,
                                     model=PushAway(1, 2), local_steps=local_steps,
                                     batch_size=batch)
        ratios.append(distance / bound(batch, local_steps))
    # the draws did hold batches larger than B after the first step
    later = [int(c[0]) for j, c in enumerate(batch_sizes) if j % local_steps]
    assert local_steps == 1 or max(later) > batch
    # The old divisor B reached 1.24 x the bound here (K = 2); the capped steps reach the
    # bound itself (the worst case) and never pass it.
    assert max(ratios) <= 1 + 1e-9
    assert max(ratios) >= 1 - 1e-9


@pytest.mark.parametrize("local_steps", [1, 2, 3])
def test_the_relu_mlp_on_digits_stays_within_the_sensitivity(
    one_device, digits, batch_sizes, local_steps
):
    X, y = digits
    X, y = X[:60], y[:60]
    batch = 20
    # a large step and a row replaced by a far-away one: the trajectories part
    worst = 0.0
    for seed in range(4):
        other = X.copy()
        other[seed] = -5.0 * X[seed + 10]
        runs = [train(*one_device, data, y, model="mlp", rounds=1, lr=5.0, dp=TINY_NOISE,
                      local_steps=local_steps, batch_size=batch, test=(X[:10], y[:10]),
                      seed=seed) for data in (X, other)]
        distance = np.linalg.norm(runs[0].final_params - runs[1].final_params)
        assert runs[0].sensitivity[0] == pytest.approx(bound(batch, local_steps, lr=1.0))
        worst = max(worst, distance / (5.0 * runs[0].sensitivity[0]))
    assert local_steps == 1 or max(int(c[0]) for c in batch_sizes) > batch
    assert 0 < worst <= 1 + 1e-9


def test_later_steps_of_dp_devices_divide_by_the_batch_size_when_it_exceeds_b(one_device):
    # Every row pushes with its whole clipped gradient once x_0 != 0, so each later step moves
    # x_0 by eta C |b| / max(B, |b|): exactly eta C whenever |b| >= B, never more.
    n, batch = 40, 20
    X = np.zeros((n, 1))
    X[0, 0] = -1.0
    y = np.arange(n) % 2
    for seed in range(6):
        one = train(*one_device, X, y, model=PushAway(1, 2), rounds=1, lr=LR, dp=TINY_NOISE,
                    local_steps=1, batch_size=batch, test=(X[:4], y[:4]), seed=seed)
        more = train(*one_device, X, y, model=PushAway(1, 2), rounds=1, lr=LR, dp=TINY_NOISE,
                     local_steps=4, batch_size=batch, test=(X[:4], y[:4]), seed=seed)
        moved = abs(more.final_params[0, 0]) - abs(one.final_params[0, 0])
        if abs(one.final_params[0, 0]) > 1e-6:  # row 0 drawn first: x_0 left 0
            assert 0 < moved <= 3 * LR * CLIP + 1e-6


@pytest.mark.parametrize("model", ["logreg", "mlp"])
def test_capped_steps_match_the_per_device_reference(toy, digits, model):
    # batch 64 of about 225 rows per device: many later batches exceed B on the DP devices
    kwargs = dict(model=model, rounds=3, local_steps=3, batch_size=64, seed=4)
    run = train(toy, toy.topology, *digits, **kwargs)
    _, accuracy, params = naive_train(toy, toy.topology, *digits, **kwargs)
    np.testing.assert_allclose(run.accuracy, accuracy)
    np.testing.assert_allclose(run.final_params, params, rtol=1e-9, atol=1e-12)


def test_non_dp_devices_are_not_capped(toy, digits):
    # Non-DP devices keep the unbiased divisor B.  No links, so no noise reaches them: with DP
    # on or off they take the same steps (the draws come from the same stream either way),
    # while the DP devices clip and cap.
    kwargs = dict(rounds=2, local_steps=2, batch_size=64, seed=1)
    isolated = Topology([], dp_devices=toy.topology.dp_devices)
    plain = train(toy, isolated, *digits, dp=False, **kwargs)
    private = train(toy, isolated, *digits, dp=TINY_NOISE, **kwargs)
    for i, node in enumerate(toy.nodes):
        same = np.array_equal(plain.final_params[i], private.final_params[i])
        assert same == (node not in toy.topology.dp_devices)


# --------------------------------------------------------------------------------------------
# TrainingRun.sensitivity, dp_formal and the warning
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("local_steps", [1, 3])
def test_run_reports_the_sensitivity_of_every_device(toy, digits, local_steps):
    run = train(toy, toy.topology, *digits, rounds=1, local_steps=local_steps,
                dp=DPConfig(max_grad_norm=0.7), seed=0)
    assert run.sensitivity.shape == (toy.n_devices,)
    for i, node in enumerate(toy.nodes):
        if node in toy.topology.dp_devices:
            batch = min(64, run.partition_sizes[i])
            expected = 2 * 0.7 * (1 / batch + local_steps - 1)
            assert run.sensitivity[i] == pytest.approx(expected, rel=1e-12)
        else:
            assert run.sensitivity[i] == 0.0
    assert run.dp_formal is True
    assert run.to_dict()["sensitivity"] == pytest.approx(run.sensitivity.tolist())


def test_noise_std_is_the_multiplier_times_the_reported_sensitivity(toy, digits):
    # Zero gradients: after one round, a DP device isolated from the others holds its noise.
    class Zero(Model):
        n_params = 20_000

        def init(self, n_devices, rng):
            return np.zeros((n_devices, self.n_params))

        def scores(self, params, X):
            return np.zeros((params.shape[0], X.shape[-2], self.n_classes))

        def per_example_gradients(self, params, X, y):
            return np.zeros((params.shape[0], X.shape[1], self.n_params))

    lr = 0.3
    run = train(toy, Topology([], dp_devices=toy.topology.dp_devices), *digits,
                model=Zero(64, 10), rounds=1, lr=lr, local_steps=2, seed=5)
    for i, node in enumerate(toy.nodes):
        if node in toy.topology.dp_devices:
            expected = run.noise_multiplier[node] * lr * run.sensitivity[i]
            assert np.std(run.final_params[i]) == pytest.approx(expected, rel=0.03)


def test_no_dp_reports_zero_sensitivity(toy, digits):
    run = train(toy, toy.topology, *digits, rounds=1, dp=False, seed=0)
    np.testing.assert_array_equal(run.sensitivity, np.zeros(toy.n_devices))
    assert run.dp_formal is True


def test_paper_sensitivity_is_nan_flagged_and_warned_once(toy, digits):
    with pytest.warns(NotAFormalGuaranteeWarning, match="not a formal") as caught:
        run = train(toy, toy.topology, *digits, rounds=3, dp=DPConfig(sensitivity="paper"),
                    seed=0)
    assert len([w for w in caught if w.category is NotAFormalGuaranteeWarning]) == 1
    assert run.dp_formal is False
    dp_rows = [i for i, node in enumerate(toy.nodes) if node in toy.topology.dp_devices]
    assert all(math.isnan(run.sensitivity[i]) for i in dp_rows)
    assert all(run.sensitivity[i] == 0.0 for i in range(toy.n_devices) if i not in dp_rows)
    exported = run.to_dict()
    assert exported["dp_formal"] is False
    assert [exported["sensitivity"][i] for i in dp_rows] == [None] * len(dp_rows)


def test_formal_runs_do_not_warn(toy, digits, recwarn):
    train(toy, toy.topology, *digits, rounds=1, seed=0)
    train(toy, toy.topology, *digits, rounds=1, dp=False, seed=0)
    # paper sensitivity without DP devices: nobody adds noise, nothing is claimed
    train(toy, Topology([]), *digits, rounds=1, dp=DPConfig(sensitivity="paper"), seed=0)
    assert not [w for w in recwarn if issubclass(w.category, NotAFormalGuaranteeWarning)]


def test_validate_marks_nominal_epsilon_runs_and_warns():
    import warnings as _warnings

    from topokit import load_example
    from topokit.errors import NotAFormalGuaranteeWarning
    from topokit.training import DPConfig
    from topokit.validation.core import noise_variance, validate

    net = load_example("toy")
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        paper = validate(net, "dlfdp", trials=1, rounds=3, targets=(0.3,),
                         dp=DPConfig(epsilon=1.0, sensitivity="paper"))
    assert not paper.frame["dp_formal"].any()
    assert np.isnan(paper.frame["noise_variance"]).all()
    assert any(issubclass(w.category, NotAFormalGuaranteeWarning) for w in caught)
    clipped = validate(net, "dlfdp,ndlf", trials=1, rounds=3, targets=(0.3,),
                       dp=DPConfig(epsilon=1.0))
    assert clipped.frame["dp_formal"].all()
    # U from the run's recorded sensitivity equals the closed form 2C(1/B_i + K - 1).
    from topokit.design.baselines import dlfdp
    from topokit.training import load_digits, train

    X, y = load_digits()
    run = train(net, dlfdp(net), X, y, rounds=3, dp=DPConfig(epsilon=1.0), seed=0)
    sizes = np.array(run.partition_sizes, dtype=float)
    unit = 2 * 1.0 * (1 / np.minimum(64, sizes) + 0)
    z = np.array([run.noise_multiplier[node] for node in run.nodes])
    steps = 0.2 * 0.99 ** np.arange(3)
    assert noise_variance(run) == pytest.approx(np.sum((z * unit) ** 2) * np.sum(steps**2))
