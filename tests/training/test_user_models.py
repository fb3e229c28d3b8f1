"""The models of analyses/user_models.py, written against topokit's public Model and trainer
interfaces: exact per-example gradients, exact clipping, shapes, and a short DP run."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import topokit
from analyses.user_models import DeepMLP, feature_trainer
from topokit.training import DPConfig, Model, load_digits, train

DEPTHS = [(128,), (64, 32)]


def _params(model: DeepMLP, n_devices: int, rng: np.random.Generator) -> np.ndarray:
    """Glorot weights and small random biases (so that the bias gradients are not trivial)."""
    return model.init(n_devices, rng) + 0.05 * rng.standard_normal((n_devices, model.n_params))


@pytest.mark.parametrize("hidden", DEPTHS)
def test_per_example_gradients_are_central_differences_of_the_per_example_loss(hidden):
    rng = np.random.default_rng(0)
    model = DeepMLP(64, 10, hidden=hidden)
    n, batch = 2, 3
    params = _params(model, n, rng)
    X, y = rng.standard_normal((n, batch, 64)), rng.integers(0, 10, (n, batch))
    grads = model.per_example_gradients(params, X, y)
    # Parameters of every layer's weights and biases (the bias of layer l follows its weights).
    bounds = [0] + [end for _, _, end in model._slices]
    picks = np.concatenate([rng.integers(lo, hi, 6) for lo, hi in zip(bounds[:-1], bounds[1:],
                                                                     strict=True)]
                           + [np.arange(bounds[-1] - 10, bounds[-1])])  # the last bias
    step = 1e-6
    for device in range(n):
        for b in range(batch):
            def loss(p, device=device, b=b):
                return float(model.loss(p[None], X[device, b][None, None],
                                        y[device, b][None, None])[0])
            for k in picks:
                up, down = params[device].copy(), params[device].copy()
                up[k] += step
                down[k] -= step
                numeric = (loss(up) - loss(down)) / (2 * step)
                assert grads[device, b, k] == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("hidden", DEPTHS)
def test_shapes_for_stacked_devices_and_a_shared_batch(hidden):
    rng = np.random.default_rng(1)
    model = DeepMLP(64, 10, hidden=hidden)
    sizes = (64, *hidden, 10)
    assert model.n_params == sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:], strict=True))
    params = model.init(4, rng)
    assert params.shape == (4, model.n_params)
    w0, b0, b1 = model._slices[0]
    limit = np.sqrt(6.0 / (64 + hidden[0]))
    assert np.abs(params[:, w0:b0]).max() <= limit and not params[:, b0:b1].any()
    X = rng.standard_normal((5, 64))
    y = rng.integers(0, 10, 5)
    stacked = np.broadcast_to(X, (4, 5, 64))
    assert model.scores(params, X).shape == (4, 5, 10)
    assert np.allclose(model.scores(params, X), model.scores(params, stacked))
    grads = model.per_example_gradients(params, X, y)
    assert grads.shape == (4, 5, model.n_params)
    assert np.allclose(grads, model.per_example_gradients(params, stacked,
                                                          np.broadcast_to(y, (4, 5))))
    assert model.accuracy(params, X, y).shape == (4,)


@pytest.mark.parametrize("hidden", DEPTHS)
@pytest.mark.parametrize("bound", [None, 0.5, "per device"])
def test_the_ghost_norm_gradient_is_the_base_class_clipped_sum(hidden, bound):
    """DeepMLP.gradient clips as Model.gradient does from the per-example gradients (the DP
    sensitivity bound rests on it)."""
    rng = np.random.default_rng(2)
    model = DeepMLP(64, 10, hidden=hidden)
    params = _params(model, 3, rng)
    X, y = 3 * rng.standard_normal((3, 7, 64)), rng.integers(0, 10, (3, 7))
    weight = rng.random((3, 7)) * (rng.random((3, 7)) < 0.7)
    if bound == "per device":
        bound = np.array([0.5, np.inf, 2.0])
    ghost = model.gradient(params, X, y, weight, bound)
    reference = Model.gradient(model, params, X, y, weight, bound)
    assert np.allclose(ghost, reference, rtol=1e-10, atol=1e-13)
    if bound is not None:  # the bound binds somewhere: the test compares clipped sums
        unclipped = Model.gradient(model, params, X, y, weight, None)
        assert not np.allclose(reference, unclipped)


def test_a_short_dp_run_on_the_toy_network_learns_above_chance():
    net = topokit.load_example("toy")  # its topology has three DP devices
    X, y = load_digits()
    run = train(net, net.topology, X, y, model=DeepMLP(64, 10, hidden=(32, 16)),
                dp=DPConfig(epsilon=4.0), rounds=40, lr=0.2, seed=0)
    assert run.dp_devices and run.dp_formal
    assert run.final_accuracy > 0.3  # chance: 0.1


def test_the_feature_trainer_returns_an_accuracy_per_round_and_pickles():
    net = topokit.load_example("toy")
    X, y = load_digits()
    trainer = feature_trainer(X, y, partition=0.5)
    trainer = pickle.loads(pickle.dumps(trainer))
    accuracies = trainer(net, net.topology, rounds=5, seed=0, dp=DPConfig(epsilon=1.0))
    assert len(accuracies) == 5 and all(0.0 <= a <= 1.0 for a in accuracies)
    plain = topokit.Topology(list(net.social.edges))  # the social graph, no DP device
    assert len(trainer(net, plain, rounds=3, seed=0, dp=None)) == 3  # no DP device: no noise
