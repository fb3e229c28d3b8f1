"""Features of a time-varying topology (topokit.design._schedule_walk): the static features'
sums with products of the rounds' mixing matrices, checked against the static closed forms,
a hand-computed schedule and an independent sum of the products."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from topokit import Network, Topology, TopologySchedule, evaluate, load_example
from topokit.design.features import topology_features
from topokit.design.mixing import fastest_mixing_topology
from topokit.design.peers import base_graph, epidemic, one_peer_exponential
from topokit.design.time_predictor import predict_topology
from topokit.errors import InvalidInputError

FIELDS = ("hitting_time", "spectral_gap", "effective_neighbours", "noise_average",
          "noise_disagreement", "noise_felt", "heterogeneity_local",
          "heterogeneity_neighbourhood", "heterogeneity_disagreement", "local_iterate", "phi")


def _agree(static, varying, rel=1e-10):
    for name in FIELDS:
        assert getattr(varying, name) == pytest.approx(getattr(static, name), rel=rel,
                                                       abs=1e-14), name
    assert (varying.n_links, varying.n_dp_devices) == (static.n_links, static.n_dp_devices)


@pytest.fixture(scope="module")
def toy():
    return load_example("toy")


@pytest.mark.parametrize("skewed", [False, True])
def test_a_schedule_of_one_topology_has_its_static_features(toy, skewed):
    net = toy.with_class_counts([[9, 1], [1, 9]] * 3) if skewed else toy
    for topology in (toy.topology, fastest_mixing_topology(toy.topology, toy, seed=0)):
        for gamma in (0.5, 0.99):
            static = topology_features(net, topology, gamma=gamma, noise_multiplier=2.0)
            varying = topology_features(net, TopologySchedule([topology]), gamma=gamma,
                                        noise_multiplier=2.0)
            _agree(static, varying)


def _complete(n):
    return Network(nx.complete_graph(n), [1.0] * n, np.ones((n, n)) - np.eye(n))


def _path_with_every_pair_usable(n):
    """Social links along a path; every pair can talk (finite delay), as strangers."""
    return Network(nx.path_graph(n), [1.0] * n, np.ones((n, n)) - np.eye(n))


def test_two_matchings_that_average_exactly_give_the_hand_computed_features():
    # Rounds average pairs {0,1},{2,3} then {0,2},{1,3}: after two rounds, from either start,
    # every device holds the exact average (the two W commute and W_1 W_0 = J).  So D_1 =
    # W_t - J, whose columns have norm^2 4 x (1/4)^2 = 1/4, and D_k = 0 from k = 2 on.
    net = _complete(4)
    first = Topology([(0, 1), (2, 3)], weights=[0.5, 0.5])
    second = Topology([(0, 2), (1, 3)], weights=[0.5, 0.5])
    gamma = 0.9
    features = topology_features(net, TopologySchedule([first, second]), gamma=gamma,
                                 noise_multiplier=1.0)
    # n_W = 1 / ((1 - g) tr C_g / n), (C_g)_ii = 1 / (n (1 - g)) + 1/4.
    assert features.effective_neighbours == pytest.approx(4 / (2 - gamma), rel=1e-12)
    assert features.spectral_gap == 1.0  # D_2 = 0: no disagreement left after the window
    assert features.noise_disagreement == 0.0  # no device adds noise: no stranger link
    # The hitting time is that of the mean matrix: each device 1/2 itself, 1/4 two others.
    assert np.isfinite(features.hitting_time)


def _summed_by_products(net, schedule, gamma, counts, rounds=400):
    """The features' sums written out: products P_k of the rounds after each start, less J."""
    n = net.n_devices
    J = np.full((n, n), 1.0 / n)
    proportions = counts / counts.sum(axis=1, keepdims=True)
    centred = proportions - proportions.mean(axis=0)
    felt, undiscounted, drift = np.zeros(n), np.zeros(n), 0.0
    for start in range(schedule.window):
        product, mixed = np.eye(n), np.zeros_like(centred)
        for k in range(1, rounds + 1):
            product = schedule.mixing_at(start + k - 1, net.nodes) @ product
            columns = np.sum((product - J) ** 2, axis=0)
            felt += gamma ** (k - 1) * columns
            undiscounted += columns
            mixed += gamma ** (k - 1) * (product - J) @ centred
        drift += np.sum(((1 - gamma) * mixed) ** 2)
    starts = schedule.window
    felt = felt / starts + 1 / (n * (1 - gamma))
    return {"effective_neighbours": 1 / ((1 - gamma) * felt.mean()),
            "disagreement_diagonal": undiscounted / starts,
            "heterogeneity_disagreement": drift / starts / n}


def test_epidemic_features_agree_with_the_sums_written_out():
    counts = [[8, 1, 1], [1, 8, 1], [1, 1, 8]] * 2 + [[3, 3, 4]]
    net = _path_with_every_pair_usable(7).with_class_counts(counts)
    schedule = epidemic(net, 1, seed=3, window=5)
    gamma = 0.8
    features = topology_features(net, schedule, gamma=gamma, noise_multiplier=1.5,
                                 batch_size=4)
    expected = _summed_by_products(net, schedule, gamma, net.class_counts)
    assert features.effective_neighbours == pytest.approx(expected["effective_neighbours"],
                                                          rel=1e-10)
    assert features.heterogeneity_disagreement == pytest.approx(
        expected["heterogeneity_disagreement"], rel=1e-10)
    # Every device may draw a stranger, so all add noise s^2 = (z 2C / B)^2 alike.
    variance = (1.5 * 2.0 / 4) ** 2
    assert features.n_dp_devices == 7
    assert features.noise_disagreement == pytest.approx(
        variance * expected["disagreement_diagonal"].mean(), rel=1e-10)
    assert features.noise_felt == pytest.approx(
        variance / features.effective_neighbours, rel=1e-10)


def test_more_peers_a_round_mix_better():
    net = _complete(12)
    neighbours = [topology_features(net, epidemic(net, s, seed=0)).effective_neighbours
                  for s in (1, 2, 4)]
    gaps = [topology_features(net, epidemic(net, s, seed=0)).spectral_gap for s in (1, 2, 4)]
    assert neighbours == sorted(neighbours) and gaps == sorted(gaps)
    assert 1.0 < neighbours[0] and neighbours[-1] < 12.0


def test_the_peers_schedules_are_predicted_and_evaluated(toy):
    net = _complete(8)
    for schedule in (one_peer_exponential(net), base_graph(net, 1), epidemic(net, 2, seed=1)):
        metrics = evaluate(net, schedule, "default")
        assert np.isfinite(metrics.predicted_global_iterate) and metrics.connected
        assert metrics.pseudo_time == pytest.approx(
            metrics.predicted_global_iterate * metrics.local_iterate)
        assert predict_topology(net, schedule) == metrics.predicted_global_iterate
        # eq. (15) reads H and phi: those of the schedule's mean matrix and union.
        assert np.isfinite(evaluate(net, schedule).predicted_global_iterate)
    # On 8 devices the one-peer exponential graph averages exactly after its 3 rounds from
    # the first, but not from every start: its gap is the slowest start's contraction.
    assert 0 < topology_features(net, one_peer_exponential(net)).spectral_gap <= 1


def test_features_refuse_what_is_not_a_topology(toy):
    with pytest.raises(InvalidInputError, match="Topology, TopologySchedule or None"):
        topology_features(toy, [(0, 1)])
