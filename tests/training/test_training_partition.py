"""Partitions of the training data over devices: IID, skewness K, Dirichlet."""

from __future__ import annotations

import numpy as np
import pytest

from topokit.errors import InvalidInputError
from topokit.training import (
    DirichletPartitioner,
    IidPartitioner,
    SkewPartitioner,
    make_partitioner,
    train,
)

LABELS = np.repeat(np.arange(10), 100)  # 10 balanced classes of 100 rows


def _check_disjoint_cover(parts, n_rows):
    joined = np.concatenate(parts)
    assert len(joined) == len(np.unique(joined)) == n_rows
    assert joined.min() >= 0 and joined.max() < n_rows


def test_iid_split_is_balanced_disjoint_and_complete():
    parts = IidPartitioner().split(LABELS, 7, rng=0)
    _check_disjoint_cover(parts, 1000)
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("skewness", [0.0, 0.4, 0.8, 1.0])
def test_skewness_gives_each_device_its_share_of_its_class(skewness):
    parts = SkewPartitioner(skewness).split(LABELS, 10, rng=1)
    _check_disjoint_cover(parts, 1000)
    for i, part in enumerate(parts):
        assert len(part) == 100
        home = np.sum(LABELS[part] == i % 10)
        assert home >= round(skewness * 100)
    if skewness == 1.0:
        assert all(np.all(LABELS[p] == i) for i, p in enumerate(parts))


def test_skewness_class_is_device_index_mod_number_of_classes():
    parts = SkewPartitioner(0.5).split(LABELS, 20, rng=2)
    for i, part in enumerate(parts):
        counts = np.bincount(LABELS[part], minlength=10)
        assert counts.argmax() == i % 10
        assert counts[i % 10] >= 25


def test_skewness_rest_is_iid():
    # With K = 0.4 the non-home 60% is spread over all classes, about 6 rows of each.
    parts = SkewPartitioner(0.4).split(LABELS, 10, rng=3)
    others = np.concatenate(
        [np.bincount(LABELS[p], minlength=10)[np.arange(10) != i] for i, p in enumerate(parts)]
    )
    assert others.min() >= 1
    assert others.mean() == pytest.approx(6.0, abs=0.3)


def test_skewness_warns_when_a_class_runs_short():
    with pytest.warns(UserWarning, match="realised skewness"):
        partitioner = SkewPartitioner(0.9)
        parts = partitioner.split(LABELS, 12, rng=0)  # devices 0 and 10 want 75 rows of class 0
    _check_disjoint_cover(parts, 1000)
    assert partitioner.realised_skewness_ < 0.9
    assert np.sum(LABELS[parts[0]] == 0) >= 50 and np.sum(LABELS[parts[10]] == 0) >= 50


def test_dirichlet_partition_follows_flower_semantics():
    partitioner = DirichletPartitioner(num_partitions=8, alpha=0.5, min_partition_size=20, seed=42)
    parts = partitioner.split(LABELS)
    _check_disjoint_cover(parts, 1000)
    assert min(len(p) for p in parts) >= 20
    again = DirichletPartitioner(num_partitions=8, alpha=0.5, min_partition_size=20, seed=42)
    for a, b in zip(parts, again.split(LABELS), strict=True):
        np.testing.assert_array_equal(a, b)


def _mean_top_class_share(parts):
    return np.mean([np.bincount(LABELS[p], minlength=10).max() / len(p) for p in parts])


def test_small_alpha_is_more_skewed_than_large_alpha():
    skewed = DirichletPartitioner(10, alpha=0.1, min_partition_size=1, seed=0).split(LABELS)
    flat = DirichletPartitioner(10, alpha=100.0, min_partition_size=1, seed=0).split(LABELS)
    assert _mean_top_class_share(skewed) > 0.5 > 0.25 > _mean_top_class_share(flat)


def test_dirichlet_seed_none_uses_the_generator_given():
    partitioner = DirichletPartitioner(5, alpha=1.0, min_partition_size=5, seed=None)
    first = partitioner.split(LABELS, 5, rng=9)
    second = partitioner.split(LABELS, 5, rng=9)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


def test_dirichlet_errors():
    with pytest.raises(InvalidInputError, match="num_partitions=4"):
        DirichletPartitioner(4, alpha=1.0).split(LABELS, 5)
    with pytest.raises(InvalidInputError, match="alpha"):
        DirichletPartitioner(4, alpha=[1.0, 2.0])
    with pytest.raises(InvalidInputError, match="alpha"):
        DirichletPartitioner(4, alpha=0.0)
    with pytest.raises(InvalidInputError, match="min_partition_size"):
        DirichletPartitioner(10, alpha=0.05, min_partition_size=99, seed=0).split(LABELS)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "high"])
def test_bad_skewness_is_rejected(bad):
    with pytest.raises(InvalidInputError, match="skewness"):
        make_partitioner(bad)


def test_more_partitions_than_rows_is_rejected():
    with pytest.raises(InvalidInputError, match="at least one sample"):
        IidPartitioner().split(np.arange(3), 4)


def test_make_partitioner_dispatch():
    assert isinstance(make_partitioner(None), IidPartitioner)
    assert isinstance(make_partitioner("iid"), IidPartitioner)
    assert make_partitioner(0.4).skewness == 0.4
    dirichlet = DirichletPartitioner(6, alpha=1.0)
    assert make_partitioner(dirichlet) is dirichlet


def test_train_uses_the_partition(toy, digits):
    X, y = digits
    run = train(toy, toy.topology, X, y, rounds=2, partition=DirichletPartitioner(6, alpha=0.3),
                dp=False, seed=0)
    sizes = run.partition_sizes
    assert 1340 <= sum(sizes) <= 1350  # the 75% training share of 1,797 rows
    assert len(set(sizes)) > 1  # Dirichlet parts are unequal
    iid = train(toy, toy.topology, X, y, rounds=2, dp=False, seed=0)
    assert max(iid.partition_sizes) - min(iid.partition_sizes) <= 1
