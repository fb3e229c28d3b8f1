"""The ceiling probe: exact averaging, no noise, the accuracy a model can reach."""

from __future__ import annotations

import numpy as np
import pytest

from topokit.errors import InvalidInputError
from topokit.training import load_digits, train
from topokit.training.ceiling import ceiling_probe, complete_averaging


def test_complete_averaging_mixes_to_the_exact_average():
    net, topology = complete_averaging(5)
    assert np.allclose(topology.mixing_matrix(net.nodes), np.full((5, 5), 0.2))
    assert not topology.dp_devices


@pytest.fixture(scope="module")
def probe():
    return ceiling_probe(*load_digits(), rounds=30, seed=0)


def test_the_ceiling_is_the_best_five_round_mean(probe):
    accuracy = probe.accuracy
    by_hand = max(accuracy[i:i + 5].mean() for i in range(accuracy.size - 4))
    assert probe.ceiling == pytest.approx(by_hand, abs=1e-12)
    assert probe.rounds.tolist() == list(range(0, 31))  # round 0: the initial models


def test_rounds_to_is_the_first_checkpoint_reaching_the_target(probe):
    target = float(probe.accuracy[10])
    first = probe.rounds_to(target)
    assert first is not None and probe.accuracy[first] >= target
    assert (probe.accuracy[:first] < target).all()
    assert probe.rounds_to(1.01) is None


def test_the_probe_is_the_run_of_train_it_describes(probe):
    net, topology = complete_averaging(8)
    run = train(net, topology, *load_digits(), rounds=30, dp=None, partition=None, seed=0)
    assert np.array_equal(run.mean_accuracy, probe.accuracy)


def test_the_probe_sets_dp_and_partition_itself():
    with pytest.raises(InvalidInputError, match="ceiling_probe sets dp itself"):
        ceiling_probe(*load_digits(), rounds=3, dp=True)


@pytest.mark.parametrize("rounds", [2, 0, 2.5, True])
def test_a_probe_of_fewer_than_three_rounds_is_one_line(rounds):
    with pytest.raises(InvalidInputError, match="at least 3 rounds"):
        ceiling_probe(*load_digits(), rounds=rounds)
