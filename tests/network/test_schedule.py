"""Time-varying topologies: TopologySchedule, and the peers of the field built as schedules
(one-peer exponential, Base-(k+1), epidemic) checked against their authors' constructions."""

from __future__ import annotations

import math
import pickle

import networkx as nx
import numpy as np
import pytest

import topokit
from topokit import Network, Topology, TopologySchedule
from topokit.design.peers import (
    base_graph,
    base_graph_weights,
    epidemic,
    one_peer_exponential,
    one_peer_exponential_weights,
)
from topokit.errors import InvalidInputError, InvalidTopologyError, NodeNotFoundError
from topokit.network.quantities import local_iterate
from topokit.network.schedule import DEFAULT_WINDOW
from topokit.training import train


def path_network(n: int, delay: float = 1.0) -> Network:
    """n devices on a social path, every pair with the same finite delay."""
    return Network(nx.path_graph(n), [1.0] * n, np.full((n, n), delay))


def matching(*pairs) -> Topology:
    return Topology(pairs, weights=[0.5] * len(pairs))


def period_product(matrices) -> np.ndarray:
    """W_{m-1} ... W_1 W_0: what one period does to the devices' values."""
    product = np.eye(matrices[0].shape[0])
    for matrix in matrices:
        product = matrix @ product
    return product


# ---------------------------------------------------------------------------------------------
# The class
# ---------------------------------------------------------------------------------------------


def test_exported_from_the_network_package_and_the_top_level():
    assert topokit.TopologySchedule is TopologySchedule is topokit.network.TopologySchedule


def test_a_cyclic_schedule_repeats_its_topologies_with_their_weights():
    first, second = matching((0, 1), (2, 3)), matching((0, 2), (1, 3))
    schedule = TopologySchedule([first, second], name="hypercube")
    assert schedule.period == schedule.window == 2 and not schedule.is_generated
    assert [schedule.topology_at(t) for t in range(5)] == [first, second] * 2 + [first]
    nodes = range(4)
    assert np.array_equal(schedule.mixing_at(3, nodes), second.mixing_matrix(nodes))
    assert schedule.union().edges == ((0, 1), (0, 2), (1, 3), (2, 3))
    assert schedule.union().weights is None
    assert "hypercube" in repr(schedule) and "period 2" in repr(schedule)


def test_a_generated_schedule_is_reproducible_whatever_rounds_are_asked_in_whatever_order():
    def two_random_links(t, rng):
        u, v, w = (int(x) for x in rng.choice(6, size=3, replace=False))
        return Topology([(u, v), (v, w)])

    one = TopologySchedule(two_random_links, seed=11, window=50)
    other = TopologySchedule(two_random_links, seed=11, window=50)
    forward = [one.topology_at(t) for t in range(60)]
    backward = [other.topology_at(t) for t in reversed(range(60))][::-1]
    assert forward == backward
    assert one == other and hash(one) == hash(other)
    third = TopologySchedule(two_random_links, seed=12, window=50)
    assert [third.topology_at(t) for t in range(60)] != forward
    assert one.period is None and one.is_generated and one.seed == 11


def test_no_seed_draws_one_and_keeps_it():
    def star(t, rng):
        return Topology([(0, int(rng.integers(1, 4)))] + [(0, k) for k in range(1, 4)])

    schedule = TopologySchedule(star)
    assert isinstance(schedule.seed, int)
    assert [schedule.topology_at(t) for t in range(5)] == [schedule.topology_at(t)
                                                           for t in range(5)]
    assert schedule.window == DEFAULT_WINDOW


def test_the_dp_devices_are_one_set_for_every_round():
    # Device 2 adds noise in round 0 only by its topology; the schedule makes it a DP device
    # in every round (the safe reading: a device that ever talks to a stranger protects
    # every message).
    schedule = TopologySchedule([Topology([(0, 1), (1, 2)], dp_devices=[2]),
                                 Topology([(0, 2)], dp_devices=[0])], dp_devices=[3])
    assert schedule.dp_devices == {0, 2, 3}
    assert all(schedule.topology_at(t).dp_devices == {0, 2, 3} for t in range(4))


def test_the_deepprivacy_rule_is_checked_in_every_round_and_names_the_round():
    net = path_network(4)  # social links 0-1, 1-2, 2-3
    fine = TopologySchedule([Topology([(0, 1), (1, 2)]), Topology([(2, 3), (0, 2)],
                                                                  dp_devices=[0, 2])])
    assert fine.validate(net) is fine
    # Round 1 links the strangers 0 and 3, neither a DP device in any round.
    broken = TopologySchedule([Topology([(0, 1), (1, 2), (2, 3)]), Topology([(0, 3)])])
    with pytest.raises(InvalidTopologyError, match=r"round 1: link 0-3 is not a social link"):
        broken.validate(net)
    assert broken.violations(net)[0].startswith("round 1:")
    with pytest.raises(NodeNotFoundError, match="round 0"):
        TopologySchedule([Topology([(0, 9)])]).validate(net)


def test_a_link_with_infinite_delay_is_refused_in_the_round_that_uses_it():
    net = path_network(3)
    delay = net.delay.copy()
    delay[1, 2] = delay[2, 1] = np.inf
    with pytest.warns(topokit.errors.UnusableSocialLinksWarning):
        cut = Network(net.social, net.compute_time, delay)
    schedule = TopologySchedule([Topology([(0, 1)]), Topology([(1, 2)])])
    with pytest.raises(InvalidTopologyError, match="round 1: link 1-2 has infinite delay"):
        schedule.validate(cut)


def test_a_disconnected_union_is_refused_in_one_line():
    with pytest.raises(InvalidTopologyError, match="disconnected") as caught:
        TopologySchedule([Topology([(0, 1)]), Topology([(2, 3)])])
    assert isinstance(caught.value, InvalidInputError) and "\n" not in str(caught.value)
    assert "rounds 0-1" in str(caught.value)
    # A device of the network that no round links: only the network knows it is there.
    schedule = TopologySchedule([Topology([(0, 1)]), Topology([(1, 2)])])
    with pytest.raises(InvalidTopologyError, match="disconnected"):
        schedule.validate(path_network(4))


@pytest.mark.parametrize(("arguments", "message"), [
    (([],), "at least one topology"),
    (([Topology([(0, 1)]), "0-1"],), r"topologies\[1\] must be a topokit Topology"),
    ((Topology([(0, 1)]),), "list of Topology objects"),
    (([Topology([(0, 1)])], {"seed": 3}), "seed is for a generated schedule"),
    (([Topology([(0, 1)])], {"window": 3}), "window is for a generated schedule"),
    ((lambda t, rng: Topology([(0, 1)]), {"window": 0}), "window must be an integer >= 1"),
    ((lambda t, rng: "0-1",), "returned a str for round 0"),
    ((lambda t, rng: Topology([(0, 1)]), {"seed": -1}), "seed"),
    (([Topology([(0, 1)])], {"name": 3}), "name must be a string"),
])
def test_bad_input_is_refused_in_one_line(arguments, message):
    args, kwargs = (arguments[0],), (arguments[1] if len(arguments) > 1 else {})
    with pytest.raises(InvalidInputError, match=message) as caught:
        TopologySchedule(*args, **kwargs)
    assert "\n" not in str(caught.value)


def test_a_generated_round_after_the_window_may_not_add_dp_devices():
    def late_stranger(t, rng):
        return Topology([(0, 1), (1, 2)], dp_devices=[2] if t >= 3 else [])

    schedule = TopologySchedule(late_stranger, seed=0, window=2)
    with pytest.raises(InvalidTopologyError, match="dp_devices="):
        schedule.topology_at(3)
    given = TopologySchedule(late_stranger, seed=0, window=2, dp_devices=[2])
    assert given.topology_at(3).dp_devices == {2}


def test_round_times_are_each_rounds_local_iterate_and_add_up():
    delay = np.array([[0, 2, 9], [2, 0, 4], [9, 4, 0]], dtype=float)
    net = Network(nx.path_graph(3), [1.0, 1.0, 1.0], delay)
    first, second = Topology([(0, 1)]), Topology([(1, 2)])
    schedule = TopologySchedule([first, second])
    times = schedule.round_times(net, 5)
    assert times.tolist() == [local_iterate(net, first), local_iterate(net, second)] * 2 + [3.0]
    assert schedule.physical_time(net, 5) == pytest.approx(3 + 5 + 3 + 5 + 3)


def test_to_dict_and_pickling_keep_the_schedule():
    schedule = base_graph(path_network(6), 2)
    data = schedule.to_dict()
    assert data["name"] == "base:2" and len(data["topologies"]) == schedule.period
    assert pickle.loads(pickle.dumps(schedule)) == schedule
    drawn = epidemic(path_network(5), 2, seed=4)
    assert drawn.to_dict()["generator"] == "epidemic(s=2)" and drawn.to_dict()["seed"] == 4
    assert pickle.loads(pickle.dumps(drawn)).topology_at(7) == drawn.topology_at(7)


# ---------------------------------------------------------------------------------------------
# Training over a schedule
# ---------------------------------------------------------------------------------------------


def test_a_schedule_of_one_topology_trains_exactly_as_the_topology(digits):
    net = topokit.load_example("toy")
    static = train(net, net.topology, *digits, rounds=12, seed=3)
    scheduled = train(net, TopologySchedule([net.topology]), *digits, rounds=12, seed=3)
    assert np.array_equal(static.accuracy, scheduled.accuracy)
    assert np.array_equal(static.final_params, scheduled.final_params)
    assert static.epsilon == scheduled.epsilon and static.dp_devices == scheduled.dp_devices
    assert static.round_times is None
    assert scheduled.round_times.tolist() == [static.local_iterate] * 12
    assert scheduled.local_iterate == static.local_iterate
    assert "round_times" not in static.to_dict() and len(scheduled.to_dict()["round_times"]) == 12


def test_training_mixes_with_each_rounds_matrix_and_sums_the_round_times(digits):
    net = path_network(8)
    schedule = one_peer_exponential(net)
    run = train(net, schedule, *digits, rounds=7, seed=0, dp=False)
    times = schedule.round_times(net, 7)
    assert run.round_times.tolist() == times.tolist()
    assert run.elapsed(7) == pytest.approx(times.sum())
    assert run.to_frame()["time"].tolist() == pytest.approx(np.cumsum([0, *times]).tolist())
    # With every parameter vector started equal and no gradient (lr 0), each round is a pure
    # average: after one period (3 rounds on 8 devices) every device holds the exact mean.
    flat = train(net, schedule, *digits, rounds=3, seed=0, dp=False, lr=0.0)
    assert np.allclose(flat.final_params, flat.final_params.mean(axis=0))


def test_the_dp_devices_of_a_schedule_add_noise_in_training(digits):
    net = path_network(4)  # 0-1-2-3 on a path: 0-3 is a stranger link
    schedule = TopologySchedule([Topology([(0, 1), (1, 2), (2, 3)]),
                                 Topology([(0, 3)], dp_devices=[0, 3])])
    run = train(net, schedule, *digits, rounds=4, seed=0)
    assert set(run.dp_devices) == {0, 3} and set(run.epsilon) == {0, 3}


def test_train_refuses_a_schedule_that_breaks_a_rule(digits):
    net = path_network(4)
    broken = TopologySchedule([Topology([(0, 1), (1, 2), (2, 3)]), Topology([(0, 3)])])
    with pytest.raises(InvalidTopologyError, match="round 1"):
        train(net, broken, *digits, rounds=2)


# ---------------------------------------------------------------------------------------------
# The peers, against their authors' constructions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4, 8, 16, 32])
def test_one_peer_exponential_reaches_the_exact_average_after_log2_n_rounds(n):
    """Ying et al. (NeurIPS 2021): for n = 2^tau, any tau consecutive rounds of the one-peer
    exponential graph multiply to J/n exactly (in floating point too: halves of sums of
    powers of two)."""
    matrices = one_peer_exponential_weights(n)
    tau = int(math.log2(n))
    assert len(matrices) == tau
    for start in range(tau):
        product = period_product([matrices[(start + k) % tau] for k in range(tau)])
        assert np.array_equal(product, np.full((n, n), 1.0 / n))


@pytest.mark.parametrize("n", [3, 5, 6, 7, 12, 25, 100])
def test_one_peer_exponential_pairs_devices_2_to_the_k_apart(n):
    matrices = one_peer_exponential_weights(n)
    assert len(matrices) == math.ceil(math.log2(n))  # the authors': int(log2(n - 1)) + 1
    union = nx.Graph()
    for k, matrix in enumerate(matrices):
        assert np.allclose(matrix, matrix.T) and np.allclose(matrix.sum(axis=1), 1.0)
        rows, cols = np.nonzero(np.triu(matrix, 1))
        assert np.bincount(np.r_[rows, cols], minlength=n).max() <= 1  # one peer at most
        assert all((j - i) % n in (2**k, n - 2**k) for i, j in zip(rows, cols, strict=True))
        union.add_edges_from(zip(rows.tolist(), cols.tolist(), strict=True))
    assert nx.is_connected(union)


#: Rounds of one period of BaseGraph(n, k) in the authors' code
#: (github.com/yukiTakezawa/BaseGraph, base_graph.py), by (k, n).
AUTHORS_PERIODS = {(1, 5): 5, (1, 6): 4, (1, 7): 5, (1, 12): 5, (1, 25): 9,
                   (2, 5): 3, (2, 6): 2, (2, 7): 4, (2, 12): 3, (2, 25): 6,
                   (3, 5): 3, (3, 6): 2, (3, 7): 3, (3, 12): 2, (3, 25): 5}


@pytest.mark.parametrize(("k", "n"), sorted(AUTHORS_PERIODS))
def test_base_graph_reaches_the_exact_average_after_its_period(k, n):
    """Takezawa et al. (NeurIPS 2023): one period of the Base-(k+1) graph multiplies to J/n,
    every device with at most k peers a round, in at most 2 log_{k+1}(n) + 2 rounds (the
    authors' own test), and with the authors' number of rounds."""
    matrices = base_graph_weights(n, k)
    assert len(matrices) == AUTHORS_PERIODS[(k, n)]
    assert len(matrices) <= 2 * math.log(n, k + 1) + 2
    assert np.abs(period_product(matrices) - 1.0 / n).max() < 1e-12
    for matrix in matrices:
        assert np.allclose(matrix, matrix.T) and np.allclose(matrix.sum(axis=1), 1.0)
        assert (matrix >= 0).all()
        assert ((matrix > 0).sum(axis=1) - 1).max() <= k


@pytest.mark.parametrize("n", range(1, 40))
def test_base_graph_is_exact_for_every_small_n(n):
    for k in (1, 2, 3, 4):
        assert np.abs(period_product(base_graph_weights(n, k)) - 1.0 / n).max() < 1e-12


@pytest.mark.parametrize(("k", "n"), [(1, 6), (2, 7), (3, 12)])
def test_base_graph_over_a_network_mixes_with_the_authors_matrices(k, n):
    # The topologies' weights give back the construction's matrices (self-weights 1 - sum),
    # so the schedule trains with exactly what was proved.
    net = path_network(n)
    schedule = base_graph(net, k)
    matrices = [schedule.mixing_at(t, net.nodes) for t in range(schedule.period)]
    for mine, theirs in zip(matrices, base_graph_weights(n, k), strict=True):
        assert np.allclose(mine, theirs, atol=1e-15)
    assert np.abs(period_product(matrices) - 1.0 / n).max() < 1e-12
    schedule.validate(net)
    # The links off the social path join DP devices (every round, the same set).
    strangers = {x for t in range(schedule.period)
                 for u, v in schedule.topology_at(t).non_social_edges(net) for x in (u, v)}
    assert schedule.dp_devices == strangers


def test_the_peers_use_the_ring_order_of_the_exponential_graph():
    net = Network(nx.path_graph(["a", "c", "b", "d"]), [1.0] * 4, np.ones((4, 4)))
    schedule = one_peer_exponential(net)  # positions 0..3 are a, c, b, d (net.nodes)
    assert schedule.topology_at(0).edges == (("a", "c"), ("b", "d"))  # positions 0-1, 2-3
    assert schedule.topology_at(1).edges == (("a", "b"), ("c", "d"))  # positions 0-2, 1-3
    shuffled = one_peer_exponential(net, seed=5)
    assert shuffled != schedule and shuffled == one_peer_exponential(net, seed=5)


def test_a_peer_that_needs_a_missing_link_names_it():
    net = topokit.load_example("toy")  # A-E cannot connect
    with pytest.raises(InvalidInputError, match=r"needs the link 'A'-'E' \(round 2\)") as caught:
        one_peer_exponential(net)
    assert "choose a network where those devices can connect" in str(caught.value)


def test_base_graph_refuses_a_degree_the_network_cannot_give():
    net = path_network(5)
    with pytest.raises(InvalidInputError, match="max_degree must be an integer >= 1"):
        base_graph(net, 0)
    with pytest.raises(InvalidInputError, match="at most 4 peers"):
        base_graph(net, 5)


def test_epidemic_sends_to_s_usable_peers_each_round_reproducibly():
    net = topokit.load_example("siot16")
    schedule = epidemic(net, 3, seed=2)
    assert schedule.is_generated and schedule.name == "epidemic:3"
    for t in range(10):
        topology = schedule.topology_at(t)
        degree = topology.graph(net.nodes).degree()
        assert min(d for _, d in degree) >= 3  # each sent to 3, and may have received more
        matrix = topology.mixing_matrix(net.nodes)
        assert np.allclose(matrix, matrix.T) and np.allclose(matrix.sum(axis=1), 1.0)
    assert schedule.topology_at(9) == epidemic(net, 3, seed=2).topology_at(9)
    assert schedule.topology_at(9) != epidemic(net, 3, seed=3).topology_at(9)
    schedule.validate(net, n_rounds=80)
    usable = [(u, v) for u, v in nx.complete_graph(net.nodes).edges
              if np.isfinite(net.delay[net.index[u], net.index[v]])
              and not net.social.has_edge(u, v)]
    assert schedule.dp_devices == {x for pair in usable for x in pair}


def test_epidemic_refuses_more_peers_than_a_device_can_reach():
    with pytest.raises(InvalidInputError, match=r"can reach only 4 \(finite delay\); use s <= 4"):
        epidemic(path_network(5), 5)
    with pytest.raises(InvalidInputError, match="s must be an integer >= 1"):
        epidemic(path_network(5), 0)
