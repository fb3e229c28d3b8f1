"""partition_class_counts, the class counts of train's partition, in public."""

import warnings

import numpy as np
import pytest

import topokit
from topokit._random import spawn_generators
from topokit.design.features import check_class_counts
from topokit.errors import InvalidInputError
from topokit.training import (
    DPConfig,
    SkewPartitioner,
    partition_class_counts,
    train,
)
from topokit.training.partition import make_partitioner
from topokit.training.plan import ROLES, check_schedule, plan_training
from topokit.validation.core import _partition_counts


@pytest.fixture(scope="module")
def labels(digits):
    return digits[1]


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return function(*args, **kwargs)


def _trained_counts(net, X, y, partition, seed, test=None):
    """The class counts of the partition train's own plan draws (its first steps, replayed)."""
    schedule = check_schedule(rounds=1, lr=0.2, lr_decay=0.99, local_steps=1, batch_size=64,
                              checkpoint_every=1)
    plan = plan_training(net, net.topology, X, y, model="logreg", test=test, schedule=schedule,
                         dp_config=None, partitioner=make_partitioner(partition),
                         convergence=None, rng=spawn_generators(seed, ROLES)["partition"])
    codes, sampler = plan.data.codes_train, plan.sampler
    return np.array([np.bincount(codes[members[valid]], minlength=plan.data.n_classes)
                     for members, valid in zip(sampler.members, sampler.valid, strict=True)])


def test_exported():
    assert "partition_class_counts" in topokit.training.__all__


@pytest.mark.parametrize("skewness", [None, "iid", 0.0, 0.5, 0.9, SkewPartitioner(0.3)])
@pytest.mark.parametrize("seed", [0, 7])
def test_equals_validates_counts(toy, labels, skewness, seed):
    ours = _quiet(partition_class_counts, labels, toy.n_devices, skewness, seed, nodes=toy.nodes)
    np.testing.assert_array_equal(ours, _partition_counts(toy, labels, seed, partition=skewness))
    assert ours.dtype == np.int64 and ours.shape == (toy.n_devices, 10)


@pytest.mark.parametrize("skewness", [None, 0.5])
def test_equals_the_partition_train_trains_on(toy, digits, skewness):
    X, y = digits
    counts = _quiet(partition_class_counts, y, toy.n_devices, skewness, 3)
    np.testing.assert_array_equal(counts, _quiet(_trained_counts, toy, X, y, skewness, 3))
    run = _quiet(train, toy, toy.topology, X, y, rounds=1, partition=skewness, seed=3,
                 dp=DPConfig(noise_multiplier=1.0))
    assert tuple(counts.sum(axis=1)) == run.partition_sizes


def test_held_out_data_is_read_for_its_classes(toy, digits):
    X, y = digits
    train_rows, test_rows = np.arange(0, 1500), np.arange(1500, len(y))
    held_out = (X[test_rows], y[test_rows])
    counts = partition_class_counts(y[train_rows], toy.n_devices, 0.0, 1, test=held_out)
    np.testing.assert_array_equal(
        counts, _quiet(_trained_counts, toy, X[train_rows], y[train_rows], 0.0, 1, held_out))
    only_labels = partition_class_counts(y[train_rows], toy.n_devices, 0.0, 1,
                                         test=(None, y[test_rows]))
    np.testing.assert_array_equal(only_labels, counts)


def test_counts_sum_to_the_training_rows(toy, labels):
    pair = partition_class_counts(labels, toy.n_devices, seed=0, test=(None, labels[:5]))
    assert pair.sum() == len(labels)
    held_out = sum(round(0.25 * n) for n in np.bincount(labels))
    assert partition_class_counts(labels, toy.n_devices, seed=0).sum() == len(labels) - held_out
    np.testing.assert_array_equal(
        partition_class_counts(labels, toy.n_devices, seed=0).sum(axis=0),
        np.bincount(labels) - [round(0.25 * n) for n in np.bincount(labels)])


def _worst_total_variation(counts):
    """The largest total-variation distance of a device's class mix from the whole data's."""
    shares = counts / counts.sum(axis=1, keepdims=True)
    overall = counts.sum(axis=0) / counts.sum()
    return float(np.abs(shares - overall).sum(axis=1).max() / 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_skewness_zero_is_near_iid(labels, seed):
    iid = _worst_total_variation(partition_class_counts(labels, 6, 0.0, seed))
    skewed = _worst_total_variation(partition_class_counts(labels, 6, 0.5, seed))
    assert iid < 0.15 < 0.4 < skewed


def test_skewness_one_gives_each_device_its_class():
    labels = np.repeat([0, 1, 2], 40)
    np.testing.assert_array_equal(partition_class_counts(labels, 3, 1.0, 0), 30 * np.eye(3))


def test_reproducible_by_seed(labels):
    first = partition_class_counts(labels, 6, 0.5, 11)
    np.testing.assert_array_equal(first, partition_class_counts(labels, 6, 0.5, 11))
    np.testing.assert_array_equal(
        partition_class_counts(labels, 6, 0.5, np.random.default_rng(4)),
        partition_class_counts(labels, 6, 0.5, np.random.default_rng(4)))
    assert not np.array_equal(first, partition_class_counts(labels, 6, 0.5, 12))


def test_optimize_takes_the_counts(toy, labels):
    counts = partition_class_counts(labels, toy.n_devices, 0.5, 0, nodes=toy.nodes)
    np.testing.assert_array_equal(check_class_counts(counts, toy.n_devices), counts)
    assert toy.with_class_counts(counts).n_classes == 10
    design = topokit.optimize(toy, class_counts=counts, seed=0, n_starts=1)
    assert design.topology.violations(toy) == []


def test_too_much_skewness_warns(labels):
    with pytest.warns(UserWarning, match="realised skewness"):
        partition_class_counts(labels, 32, 0.8, 0)


class _Lopsided:
    """A partitioner that gives every row to the first device."""

    def split(self, y, n_partitions, rng=None):
        return [np.arange(len(y))] + [np.array([], dtype=np.int64)] * (n_partitions - 1)


@pytest.mark.parametrize("kwargs, message", [
    ({"n_devices": 0}, "n_devices must be an integer >= 1; got 0"),
    ({"n_devices": -2}, "n_devices must be an integer >= 1"),
    ({"n_devices": 2.0}, "n_devices must be an integer >= 1; got 2.0"),
    ({"n_devices": True}, "n_devices must be an integer >= 1; got True"),
    ({"n_devices": 5000}, "more devices than training samples"),
    ({"skewness": -0.1}, r"skewness must lie in \[0, 1\]; got -0.1"),
    ({"skewness": 1.5}, r"skewness must lie in \[0, 1\]; got 1.5"),
    ({"skewness": float("nan")}, "skewness must be finite"),
    ({"skewness": "high"}, "skewness must be a real number; got 'high'"),
    ({"y": []}, "y is empty"),
    ({"y": np.zeros((4, 2))}, r"y must be a 1-dimensional array of labels; got shape \(4, 2\)"),
    ({"nodes": ["A", "B"]}, "nodes must name each of the 6 devices once"),
    ({"test": 1.5}, r"test \(the held-out fraction\) must lie in \(0, 1\)"),
    ({"skewness": _Lopsided(), "nodes": list("ABCDEF")},
     "device 'B' got no training data from the partition"),
])
def test_bad_inputs_raise_one_line(labels, kwargs, message):
    arguments = {"y": labels, "n_devices": 6, "skewness": 0.5, "seed": 0, **kwargs}
    y, n_devices = arguments.pop("y"), arguments.pop("n_devices")
    with pytest.raises(InvalidInputError, match=message) as caught:
        partition_class_counts(y, n_devices, **arguments)
    assert "\n" not in str(caught.value)
