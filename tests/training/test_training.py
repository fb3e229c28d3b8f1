"""Tests of topokit.training: the D-PSGD core, models, run results, data loaders."""

from __future__ import annotations

import gzip
import json
import pickle

import numpy as np
import pytest

from topokit._random import spawn_generators
from topokit.errors import InvalidInputError, InvalidTopologyError, NetworkFileError
from topokit.kernels import lazy_metropolis
from topokit.network.core import Topology
from topokit.testing.naive_training import naive_train
from topokit.training import (
    MLP,
    Convergence,
    DPConfig,
    LogisticRegression,
    Model,
    TrainingRun,
    load_cifar10,
    load_digits,
    load_fashion_mnist,
    read_idx,
    train,
)
from topokit.training.core import ROLES

# --------------------------------------------------------------------------------------------
# Learning and reproducibility
# --------------------------------------------------------------------------------------------


def test_logreg_learns_digits_over_the_toy_topology(toy, digits):
    run = train(toy, toy.topology, *digits, rounds=150, dp=False, seed=0)
    assert isinstance(run, TrainingRun)
    assert run.final_accuracy >= 0.92
    assert run.accuracy[0].mean() < 0.3  # the initial models guess
    assert run.rounds_to(0.9) is not None


def test_logreg_learns_with_dp_devices(toy, digits):
    run = train(toy, toy.topology, *digits, rounds=150, dp=DPConfig(), seed=0)
    assert set(run.epsilon) == {"C", "D", "E"}
    assert run.final_accuracy >= 0.88


def test_mlp_learns_digits(toy, digits):
    run = train(toy, toy.topology, *digits, model="mlp", rounds=100, dp=False, seed=0)
    assert run.final_accuracy >= 0.9


def test_same_seed_same_numbers(toy, digits):
    kwargs = dict(rounds=15, partition=0.4, seed=7)
    first = train(toy, toy.topology, *digits, **kwargs)
    second = train(toy, toy.topology, *digits, **kwargs)
    np.testing.assert_array_equal(first.accuracy, second.accuracy)
    np.testing.assert_array_equal(first.final_params, second.final_params)
    assert first.epsilon == second.epsilon
    other = train(toy, toy.topology, *digits, **{**kwargs, "seed": 8})
    assert not np.array_equal(first.final_params, other.final_params)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"model": "mlp", "local_steps": 2, "batch_size": 32},
        {"dp": DPConfig(sensitivity="paper")},
        {"dp": DPConfig(max_grad_norm=0.5, per="run"), "partition": 0.5, "checkpoint_every": 3},
        {"dp": False, "lr_decay": 0.9},
    ],
)
def test_vectorised_core_matches_per_device_reference(toy, digits, kwargs):
    run = train(toy, toy.topology, *digits, rounds=8, seed=3, **kwargs)
    rounds, accuracy, params = naive_train(toy, toy.topology, *digits, rounds=8, seed=3, **kwargs)
    np.testing.assert_array_equal(run.rounds, rounds)
    np.testing.assert_allclose(run.accuracy, accuracy)
    np.testing.assert_allclose(run.final_params, params, rtol=1e-9, atol=1e-12)


def test_lr_zero_every_device_converges_to_the_initial_average(toy, digits):
    model = LogisticRegression(64, 10, init_scale=1.0)
    run = train(toy, toy.topology, *digits, model=model, lr=0.0, rounds=300, seed=5)
    initial = model.init(toy.n_devices, spawn_generators(5, ROLES)["init"])
    average = initial.mean(axis=0)
    np.testing.assert_allclose(run.final_params.mean(axis=0), average, atol=1e-12)
    np.testing.assert_allclose(run.final_params, np.tile(average, (toy.n_devices, 1)), atol=1e-9)
    assert not np.allclose(initial, average)


# --------------------------------------------------------------------------------------------
# TrainingRun
# --------------------------------------------------------------------------------------------


def test_threshold_never_reached_is_reported_as_none(toy, digits):
    run = train(toy, toy.topology, *digits, rounds=3, dp=False, seed=0)
    assert run.rounds_to(1.0) is None
    assert run.time_to(1.0) is None


def test_time_is_rounds_times_local_iterate(toy, digits):
    run = train(toy, toy.topology, *digits, rounds=40, dp=False, seed=0)
    assert run.local_iterate == 52.0
    rounds = run.rounds_to(0.8)
    assert rounds is not None
    assert run.time_to(0.8) == rounds * 52.0
    assert run.mean_accuracy[list(run.rounds).index(rounds)] >= 0.8
    assert np.all(run.mean_accuracy[run.rounds < rounds] < 0.8)


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.5, 90, "0.9", None, True])
def test_accuracy_threshold_outside_unit_interval_is_rejected(toy, digits, bad):
    run = train(toy, toy.topology, *digits, rounds=2, dp=False, seed=0)
    with pytest.raises(InvalidInputError, match=r"\(0, 1\]"):
        run.rounds_to(bad)
    with pytest.raises(InvalidInputError):
        run.time_to(bad)


def test_convergence_target_outside_unit_interval_is_rejected():
    with pytest.raises(InvalidInputError, match=r"\(0, 1\]"):
        Convergence(target_accuracy=1.2)
    with pytest.raises(InvalidInputError):
        Convergence(patience=0)


def test_checkpoints_frame_and_dict(toy, digits):
    calls = []
    run = train(
        toy, toy.topology, *digits, rounds=10, checkpoint_every=3, seed=1,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert run.rounds.tolist() == [0, 3, 6, 9, 10]
    assert calls == [(k, 10) for k in range(1, 11)]
    frame = run.to_frame()
    assert len(frame) == 5
    head = ["round", "time", "mean_accuracy", "min_accuracy", "max_accuracy"]
    assert list(frame.columns[:5]) == head
    assert "accuracy[A]" in frame.columns
    np.testing.assert_allclose(frame["time"], run.rounds * run.local_iterate)
    data = json.loads(json.dumps(run.to_dict()))
    assert data["stop_rule"] == "rounds" and data["rounds_run"] == 10
    assert set(data["epsilon"]) == {"C", "D", "E"}
    assert data["config"]["seed"] == 1


def test_convergence_rules_stop_the_run_and_say_which(toy, digits):
    X, y = digits
    small_test = (X[:30], y[:30])
    run = train(toy, toy.topology, X[30:], y[30:], rounds=200, test=small_test, dp=False,
                convergence="paper", seed=0)
    assert run.stop_rule == "convergence"
    assert run.rounds_run < 200
    assert abs(run.mean_accuracy[-1] - run.mean_accuracy[-2]) <= 1e-5
    patient = train(toy, toy.topology, X[30:], y[30:], rounds=200, test=small_test, dp=False,
                    convergence=Convergence(patience=5), seed=0)
    assert patient.rounds_run > run.rounds_run
    target = train(toy, toy.topology, *digits, rounds=200, dp=False,
                   convergence=Convergence(tol=0.0, target_accuracy=0.85), seed=0)
    assert target.stop_rule == "target_accuracy"
    assert target.final_accuracy >= 0.85 and target.rounds_run == target.rounds_to(0.85)
    full = train(toy, toy.topology, *digits, rounds=5, dp=False, seed=0)
    assert full.stop_rule == "rounds" and full.rounds_run == 5


def test_custom_model_plugs_in(toy, digits):
    class Centroid(Model):
        """Scores = -distance to one learnable prototype per class."""

        @property
        def n_params(self):
            return self.n_features * self.n_classes

        def init(self, n_devices, rng):
            return np.zeros((n_devices, self.n_params))

        def scores(self, params, X):
            protos = params.reshape(params.shape[0], self.n_classes, self.n_features)
            return -((X[..., :, None, :] - protos[:, None]) ** 2).sum(-1)

        def per_example_gradients(self, params, X, y):
            protos = params.reshape(params.shape[0], self.n_classes, self.n_features)
            grads = np.zeros((*X.shape[:2], self.n_classes, self.n_features))
            picked = np.take_along_axis(protos[:, None], y[..., None, None], axis=2)[:, :, 0]
            np.put_along_axis(grads, y[..., None, None], (picked - X)[:, :, None], axis=2)
            return grads.reshape(*X.shape[:2], -1)

    run = train(toy, toy.topology, *digits, model=Centroid(64, 10), rounds=60, lr=0.5, seed=0)
    assert run.final_accuracy > 0.8


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


def test_non_social_link_between_non_dp_devices_is_rejected(toy, digits):
    bad = Topology([("A", "B"), ("C", "E")], dp_devices=["C"])
    with pytest.raises(InvalidTopologyError, match="not a DP device"):
        train(toy, bad, *digits, rounds=1)
    with pytest.raises(InvalidTopologyError, match="infinite delay"):
        train(toy, Topology([("A", "E")], dp_devices=["A", "E"]), *digits, rounds=1)


def test_labels_that_do_not_match_the_data_are_rejected(toy, digits):
    X, y = digits
    with pytest.raises(InvalidInputError, match="do not match"):
        train(toy, toy.topology, X, y[:-1], rounds=1)
    with pytest.raises(InvalidInputError, match="do not match"):
        train(toy, toy.topology, X, y, rounds=1, test=(X[:10], y[:9]))


def test_more_devices_than_samples_is_rejected(toy, digits):
    X, y = digits
    with pytest.raises(InvalidInputError, match="more devices than training samples"):
        train(toy, toy.topology, X[:5], y[:5], rounds=1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rounds": 0},
        {"lr": -0.1},
        {"local_steps": 1.5},
        {"batch_size": 0},
        {"model": "cnn"},
        {"partition": 1.5},
        {"test": 1.0},
        {"dp": "yes"},
        {"convergence": "soon"},
    ],
)
def test_out_of_range_settings_are_rejected(toy, digits, kwargs):
    with pytest.raises(InvalidInputError):
        train(toy, toy.topology, *digits, **kwargs)


def test_nan_features_are_rejected(toy, digits):
    X, y = digits
    X = X.copy()
    X[0, 0] = np.nan
    with pytest.raises(InvalidInputError, match="NaN"):
        train(toy, toy.topology, X, y, rounds=1)


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [LogisticRegression(5, 3, init_scale=0.5), MLP(5, 3, hidden=4)])
def test_per_example_gradients_match_finite_differences(model):
    rng = np.random.default_rng(0)
    params = model.init(2, rng) + 0.1 * rng.standard_normal((2, model.n_params))
    X = rng.standard_normal((2, 3, 5))
    y = rng.integers(0, 3, (2, 3))
    grads = model.per_example_gradients(params, X, y)
    step = 1e-6
    for b in range(3):
        numeric = np.zeros_like(params)
        for k in range(model.n_params):
            bump = np.zeros_like(params)
            bump[:, k] = step
            numeric[:, k] = (
                model.loss(params + bump, X[:, b : b + 1], y[:, b : b + 1])
                - model.loss(params - bump, X[:, b : b + 1], y[:, b : b + 1])
            ) / (2 * step)
        np.testing.assert_allclose(grads[:, b], numeric, atol=1e-6)


def _gradient_problem(model, seed):
    """3 devices x 7 examples x 6 features, sample weights and per-device clip bounds."""
    rng = np.random.default_rng(seed)
    params = model.init(3, rng)
    X = 3 * rng.standard_normal((3, 7, 6))
    y = rng.integers(0, 4, (3, 7))
    weight = rng.random((3, 7))
    return params, X, y, weight, np.array([0.3, np.inf, 2.0])


@pytest.mark.parametrize("model", [LogisticRegression(6, 4, init_scale=1.0), MLP(6, 4, hidden=5)])
def test_ghost_clipping_equals_explicit_clipping(model):
    params, X, y, weight, bounds = _gradient_problem(model, seed=1)
    for bound in (None, 0.5, bounds):
        fast = model.gradient(params, X, y, weight, bound)
        explicit = Model.gradient(model, params, X, y, weight, bound)
        np.testing.assert_allclose(fast, explicit, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------------------------
# Data loaders
# --------------------------------------------------------------------------------------------


def test_digits_are_standardised():
    X, y = load_digits()
    assert X.shape == (1797, 64) and y.shape == (1797,)
    assert abs(X.mean()) < 1e-12
    raw, _ = load_digits(standardized=False)
    assert raw.max() == 16


def _idx_bytes(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def test_fashion_mnist_loader_reads_idx_files(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (4, 28, 28)).astype(np.uint8)
    labels = np.array([3, 1, 4, 1], dtype=np.uint8)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(_idx_bytes(images))
    with gzip.open(tmp_path / "train-labels-idx1-ubyte.gz", "wb") as handle:
        handle.write(_idx_bytes(labels))
    X, y = load_fashion_mnist(tmp_path)
    assert X.shape == (4, 784)
    np.testing.assert_allclose(X, images.reshape(4, -1) / 255.0)
    np.testing.assert_array_equal(y, labels)
    np.testing.assert_array_equal(read_idx(tmp_path / "train-images-idx3-ubyte"), images)


def test_idx_reader_rejects_bad_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(NetworkFileError, match="magic"):
        read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(_idx_bytes(np.zeros((2, 3)))[:-1])
    with pytest.raises(NetworkFileError, match="bytes"):
        read_idx(tmp_path / "short")
    with pytest.raises(FileNotFoundError):
        load_fashion_mnist(tmp_path / "missing")


def test_cifar10_loader_reads_pickle_batches(tmp_path):
    rng = np.random.default_rng(0)
    batches = []
    for name in ("data_batch_1", "data_batch_2", "test_batch"):
        data = rng.integers(0, 256, (3, 3072)).astype(np.uint8)
        labels = rng.integers(0, 10, 3).tolist()
        with open(tmp_path / name, "wb") as handle:
            pickle.dump({b"batch_label": b"x", b"data": data, b"labels": labels}, handle)
        batches.append((data, labels))
    X, y = load_cifar10(tmp_path)
    assert X.shape == (6, 3072)
    np.testing.assert_allclose(X[:3], batches[0][0] / 255.0)
    assert y.tolist() == batches[0][1] + batches[1][1]
    X_test, y_test = load_cifar10(tmp_path, kind="test")
    assert X_test.shape == (3, 3072) and y_test.tolist() == batches[2][1]


def test_cifar10_loader_refuses_arbitrary_pickles(tmp_path):
    import collections

    with open(tmp_path / "test_batch", "wb") as handle:
        pickle.dump(collections.OrderedDict(data=1), handle)
    with pytest.raises(NetworkFileError, match="refusing"):
        load_cifar10(tmp_path, kind="test")


def test_lazy_metropolis_weights_are_used(toy):
    # The averaging matrix of the run is the topology's Lazy-Metropolis matrix in node order.
    weights = lazy_metropolis(toy.topology.graph(toy.nodes))
    np.testing.assert_allclose(weights.sum(axis=0), 1.0)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)


def test_reached_reports_nan_for_thresholds_never_reached(toy, digits):
    run = train(toy, toy.topology, *digits, rounds=20, dp=False, seed=0)
    frame = run.reached([0.5, 1.0])
    assert frame.loc[0, "rounds"] == run.rounds_to(0.5)
    assert frame.loc[0, "time"] == run.time_to(0.5)
    assert np.isnan(frame.loc[1, "rounds"]) and np.isnan(frame.loc[1, "time"])
    with pytest.raises(InvalidInputError):
        run.reached([0.5, 2.0])


def test_many_devices_sparse_mixing_matches_the_reference(digits):
    import networkx as nx

    from topokit.network.core import Network

    n = 70
    social = nx.connected_watts_strogatz_graph(n, 4, 0.2, seed=1)
    net = Network(social, np.full(n, 5.0), np.full((n, n), 10.0))
    topology = Topology(social.edges, dp_devices=range(0, n, 3))
    run = train(net, topology, *digits, rounds=3, batch_size=8, seed=2)
    _, accuracy, params = naive_train(net, topology, *digits, rounds=3, batch_size=8, seed=2)
    np.testing.assert_allclose(run.accuracy, accuracy)
    np.testing.assert_allclose(run.final_params, params, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------------------------
# Kernels of the fast paths
# --------------------------------------------------------------------------------------------


def _certified_cases(model, rng):
    n, p = 6, model.n_params
    yield "random", 0.3 * rng.standard_normal((n, p))
    yield "tiny", 1e-9 * rng.standard_normal((n, p))
    yield "large", 1e3 * rng.standard_normal((n, p))
    yield "zero (every class tied)", np.zeros((n, p))
    tied = rng.standard_normal((n, model.n_features + 1, model.n_classes))
    tied[:, :, 3] = tied[:, :, 1]  # two identical classes: exact ties wherever they lead
    yield "tied classes", tied.reshape(n, p)
    subnormal = rng.standard_normal((n, p))
    subnormal[::2] *= 1e-42  # below float32's normal range
    yield "subnormal", subnormal


def test_certified_float32_accuracy_equals_float64_labels(digits):
    X, y = digits
    X_test, y_test = X[:300], y[:300]
    model = LogisticRegression(64, 10)
    evaluate = model.evaluator(X_test, y_test)
    rng = np.random.default_rng(4)
    for case, params in _certified_cases(model, rng):
        plain = Model.accuracy(model, params, X_test, y_test)  # scores().argmax(), float64
        np.testing.assert_array_equal(evaluate(params), plain, err_msg=case)
        np.testing.assert_array_equal(model.accuracy(params, X_test, y_test), plain, err_msg=case)
        labels = model.scores(params, X_test).argmax(axis=-1)
        np.testing.assert_array_equal(model.predict(params, X_test), labels, err_msg=case)


def test_certified_accuracy_sends_nan_and_huge_weights_to_float64(digits):
    X, y = digits
    model = LogisticRegression(64, 10)
    params = np.random.default_rng(5).standard_normal((4, model.n_params))
    params[1, 7] = np.nan
    params[2] *= 1e34  # float32 would overflow
    params[3, -1] = np.inf
    evaluate = model.evaluator(X[:200], y[:200])
    np.testing.assert_array_equal(evaluate(params), model.accuracy(params, X[:200], y[:200]))


def test_fused_logreg_gradient_with_precomputed_norms_and_buffer():
    model = LogisticRegression(6, 4, init_scale=1.0)
    params, X, y, weight, bounds = _gradient_problem(model, seed=2)
    out = np.empty_like(params)
    fast = model.gradient(params, X, y, weight, bounds,
                          row_sq_norms=np.einsum("nbf,nbf->nb", X, X), out=out)
    assert fast is out
    explicit = Model.gradient(model, params, X, y, weight, bounds)
    np.testing.assert_allclose(fast, explicit, rtol=1e-12, atol=1e-14)


def test_evenly_spaced_dp_rows_index_a_view():
    from topokit.training._loop import _as_slice

    assert _as_slice(np.array([0, 4, 8])) == slice(0, 9, 4)
    assert _as_slice(np.array([5])) == slice(5, 6)
    rows = np.array([0, 1, 5])
    assert _as_slice(rows) is rows
    data = np.arange(20.0)
    for rows in ([0, 4, 8], [3], [1, 2, 7], [2, 5, 8, 11]):
        rows = np.array(rows)
        np.testing.assert_array_equal(data[_as_slice(rows)], data[rows])


def test_all_finite_kernel_matches_numpy():
    from topokit.training._kernels import all_finite

    values = np.random.default_rng(0).standard_normal((4, 9))
    assert all_finite(values)
    for bad in (np.nan, np.inf, -np.inf):
        spoiled = values.copy()
        spoiled[2, 5] = bad
        assert not all_finite(spoiled)
    assert all_finite(np.full((2, 3), 1e308))


def test_non_finite_parameters_stop_the_run_as_diverged(toy, digits):
    model = LogisticRegression(64, 10, init_scale=1e308)  # some initial weights overflow
    with np.errstate(all="ignore"):
        run = train(toy, toy.topology, *digits, model=model, rounds=50, dp=False, seed=0)
    assert run.stop_rule == "diverged"
    assert run.rounds_run < 50 and not np.isfinite(run.final_params).all()
    assert run.accuracy.shape == (len(run.rounds), toy.n_devices)


def test_rows_not_drawn_do_not_poison_the_gradient(toy, digits):
    # Regression: the fused path computes every row of a device and weights the rows not
    # drawn by 0; with huge (finite) parameters their logits overflow, and 0 * NaN must not
    # reach the gradient (the per-device reference never computes those rows).
    kwargs = dict(lr=1e307, lr_decay=1.0, rounds=3, dp=False, seed=0)
    with np.errstate(all="ignore"):
        run = train(toy, toy.topology, *digits, **kwargs)
        _, accuracy, params = naive_train(toy, toy.topology, *digits, **kwargs)
    assert run.stop_rule == "rounds" and np.isfinite(run.final_params).all()
    np.testing.assert_array_equal(run.accuracy, accuracy)
    np.testing.assert_allclose(run.final_params, params, rtol=1e-9)


def test_csr_mixing_kernel_is_scipys_product():
    from scipy.sparse import random as sparse_random

    from topokit.training._kernels import csr_mix

    rng = np.random.default_rng(3)
    matrix = sparse_random(20, 20, density=0.2, format="csr", random_state=4)
    matrix.sort_indices()
    values = rng.standard_normal((20, 13))
    out = np.full((20, 13), np.nan)
    csr_mix(matrix.indptr.astype(np.int64), matrix.indices.astype(np.int64), matrix.data,
            values, out)
    np.testing.assert_allclose(out, matrix @ values, rtol=1e-15, atol=1e-15)
