"""AutoTag's stopping bound changes the work, never the answer.

The bound (``prune``) stops a budget's trajectory once no later snapshot can beat the
budget's best so far.  These tests check the bound itself against brute force and real
hitting times, that stopped runs are prefixes of full runs with the same minimum, that
designs and candidates are bit-for-bit those of the full runs and of the straightforward
reference in ``topokit.testing.naive_autotag``, and the memory check.
"""

import itertools

import networkx as nx
import numpy as np
import pytest

from topokit import hitting_times, lazy_metropolis, load_example
from topokit.design import _autotag, autotag
from topokit.design import _autotag_kernels as kernels
from topokit.errors import InvalidInputError
from topokit.network.siot import siot
from topokit.testing.naive_autotag import naive_autotag, random_network


@pytest.fixture(autouse=True)
def compiled_kernel_only(monkeypatch):
    """These tests check the compiled kernel (against the plain reference): every network
    runs it, also those that autotag would give the plain loops (tests/design/
    test_autotag_plain.py checks those)."""
    monkeypatch.setattr(_autotag, "PLAIN_MAX_DEVICES", 0)


def _same_design(one, two):
    assert one.topology == two.topology and one.n == two.n and one.metrics == two.metrics
    assert len(one.candidates) == len(two.candidates)
    for a, b in zip(one.candidates, two.candidates, strict=True):
        assert (a.n, a.step, a.phase, a.topology, a.metrics) == \
            (b.n, b.step, b.phase, b.topology, b.metrics)


# ---------------------------------------------------------------------------------------------
# The bound
# ---------------------------------------------------------------------------------------------

def _weight_sum_brute_force(d_j, current, potential):
    """max over subsets F of the potential nodes of sum 1/(2 max(f, deg)), f = d_j + |F|."""
    best = 0.0
    for size in range(len(potential) + 1):
        for chosen in itertools.combinations(potential, size):
            f = d_j + size
            if f == 0:
                continue
            best = max(best, sum(0.5 / max(f, d) for d in list(current) + list(chosen)))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_max_weight_sum_is_the_maximum_over_every_set_of_new_neighbours(seed):
    rng = np.random.default_rng(seed)
    top = 12
    current = rng.integers(1, top, int(rng.integers(0, 5)))
    potential = rng.integers(1, top + 1, int(rng.integers(0, 7)))
    d_j = len(current)
    histograms = [np.bincount(values, minlength=top + 1).astype(np.int64)
                  for values in (current, potential)]
    got = kernels._max_weight_sum(d_j, *histograms)
    assert got == pytest.approx(_weight_sum_brute_force(d_j, current, potential), rel=1e-12)


def _bound_state(graph, linkable_pairs, V):
    adjacency = nx.to_numpy_array(graph, nodelist=range(V)) > 0
    degree = adjacency.sum(axis=1).astype(np.int64)
    linkable = np.zeros((V, V), dtype=bool)
    for a, b in linkable_pairs:
        linkable[a, b] = linkable[b, a] = True
    return np.ascontiguousarray(adjacency), degree, linkable


@pytest.mark.parametrize("seed", range(25))
def test_the_bound_is_below_the_hitting_time_of_every_graph_still_reachable(seed):
    """Random start graph, random allowed pairs (social or both ends in a DP set of the
    budget): the bound never exceeds H of the start graph grown by any allowed pairs."""
    rng = np.random.default_rng(seed)
    V = int(rng.integers(5, 11))
    start = nx.gnp_random_graph(V, rng.uniform(0.1, 0.4), seed=seed)
    missing = [(a, b) for a in range(V) for b in range(a + 1, V) if not start.has_edge(a, b)]
    linkable_pairs = [p for p in missing if rng.random() < 0.7]
    social = np.zeros((V, V), dtype=bool)
    for a, b in linkable_pairs:
        social[a, b] = social[b, a] = rng.random() < 0.4
    in_dp = rng.random(V) < 0.3
    n_max = int(in_dp.sum()) + int(rng.integers(0, 3))
    adjacency, degree, linkable = _bound_state(start, linkable_pairs, V)
    bound = kernels.hitting_time_lower_bound(adjacency, degree, linkable, social, in_dp,
                                             int(in_dp.sum()), n_max)
    allowed = [(a, b) for a, b in linkable_pairs
               if social[a, b] or in_dp.sum() + (not in_dp[a]) + (not in_dp[b]) <= n_max]
    for _ in range(30):
        graph = start.copy()
        graph.add_edges_from(p for p in allowed if rng.random() < rng.uniform(0.2, 1.0))
        if not nx.is_connected(graph):
            continue
        H = hitting_times(lazy_metropolis(nx.to_numpy_array(graph, nodelist=range(V)))).max()
        assert bound <= H * (1 + 1e-12)
    if not allowed and not nx.is_connected(start):
        assert np.isinf(bound) or bound >= 2 * (V - 1)


def test_the_bound_is_tight_on_the_complete_graph_and_infinite_for_an_unreachable_node():
    V = 9
    complete = nx.complete_graph(V)
    adjacency, degree, linkable = _bound_state(complete, [], V)
    none = np.zeros((V, V), dtype=bool)
    bound = kernels.hitting_time_lower_bound(adjacency, degree, linkable, none,
                                             np.zeros(V, dtype=bool), 0, 0)
    assert bound == pytest.approx(2 * (V - 1), rel=1e-12)  # H of the complete graph
    path = nx.path_graph(V - 1)
    path.add_node(V - 1)  # isolated, nothing it may link to
    adjacency, degree, linkable = _bound_state(path, [], V)
    assert np.isinf(kernels.hitting_time_lower_bound(adjacency, degree, linkable, none,
                                                     np.zeros(V, dtype=bool), 0, V))


# ---------------------------------------------------------------------------------------------
# Stopped runs against full runs
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("V, seed", [(9, 0), (11, 1), (12, 2), (13, 3), (14, 4)])
def test_a_stopped_run_is_a_prefix_of_the_full_run_holding_its_minimum(V, seed):
    net = random_network(V, seed, p=0.3)
    problem = _autotag._problem(net)
    coefficients = _autotag._linear_coefficients(None)
    stopped = 0
    for n in range(V + 1):
        full = _autotag._run_one(problem, n, coefficients, -1)
        short = _autotag._run_one(problem, n, coefficients, -1, 1)
        S = len(short.accepted)
        np.testing.assert_array_equal(short.accepted, full.accepted[:S])
        np.testing.assert_array_equal(short.pseudo_time, full.pseudo_time[:S])
        np.testing.assert_array_equal(short.hitting_time, full.hitting_time[:S])
        assert short.lo <= n < short.hi
        if short.pruned:
            assert np.isfinite(short.pseudo_time.min())
            if S < len(full.accepted):  # (the bound may also hold at the last snapshot)
                stopped += 1
                # No later snapshot beats the prefix: SSP's minimum and first index stand.
                assert full.pseudo_time[S:].min() >= short.pseudo_time.min()
        else:
            assert S == len(full.accepted)
    assert stopped > 0


NETWORKS = [(V, seed) for V in (5, 8, 11, 14) for seed in range(3)]


@pytest.mark.parametrize("V, seed", NETWORKS)
def test_stopping_early_gives_the_reference_design_and_candidates(V, seed):
    net = random_network(V, seed, p=0.2 + 0.1 * seed)
    pruned = autotag(net)
    full = autotag(net, prune=False)
    _same_design(pruned, full)
    reference = naive_autotag(net)
    assert (pruned.n, pruned.candidates[pruned.n].step) == reference["best"]
    for n, (low, step) in enumerate(reference["best_per_n"]):
        assert pruned.candidates[n].step == (step if step is not None
                                             else len(reference["accepted"][n]) - 1)
        if np.isfinite(low):
            assert pruned.candidates[n].metrics.pseudo_time == pytest.approx(low, rel=1e-9)
    assert full.stats["stopped_trajectories"] == 0
    assert pruned.stats["snapshots"] <= full.stats["snapshots"]


@pytest.mark.parametrize("make", [lambda: load_example("toy"), lambda: load_example("siot16"),
                                  lambda: siot(24, seed=3),
                                  lambda: siot(20, seed=1, colocation_range_m=100)],
                         ids=["toy", "siot16", "siot24", "siot20-colocation"])
def test_stopping_early_is_bit_for_bit_on_siot_networks_and_with_threads(make):
    net = make()
    full = autotag(net, prune=False)
    for options in ({}, {"n_jobs": 2}, {"nep_patience": 4}):
        _same_design(autotag(net, **options), autotag(net, prune=False, **options))
    pruned = autotag(net)
    _same_design(pruned, full)
    assert pruned.stats["stopped_trajectories"] > 0
    assert pruned.stats["snapshots"] < full.stats["snapshots"]
    # A trace records every snapshot: nothing is stopped.
    traced = autotag(net, trace=True)
    assert traced.stats == {**full.stats, "seconds": traced.stats["seconds"]}
    assert len(traced.trace) == full.stats["snapshots"]


def test_prune_must_be_a_bool():
    with pytest.raises(InvalidInputError, match="prune"):
        autotag(random_network(5, 0), prune="yes")


# ---------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------

def test_a_network_too_large_for_the_memory_is_refused_before_allocating(monkeypatch):
    net = random_network(12, 1)

    def no_allocation(*args, **kwargs):
        raise AssertionError("allocated before the memory check")

    monkeypatch.setattr(_autotag, "_available_memory", lambda: 10_000)
    monkeypatch.setattr(_autotag, "_problem", no_allocation)
    with pytest.raises(InvalidInputError, match=r"needs about .* GB .* available: use "
                                                r"topokit\.optimize\(net\)") as error:
        autotag(net)
    assert "\n" not in str(error.value)
    with pytest.raises(InvalidInputError, match="nep_patience"):
        autotag(net, nep_patience=3)


def test_the_memory_estimate_grows_with_the_run_and_a_fitting_run_passes(monkeypatch):
    needed = _autotag.autotag_memory
    assert needed(256, 32640) < 1e9 < needed(1000, 499500)  # the results dominate
    assert needed(256, 32640, trace=True) > needed(256, 32640)
    assert needed(256, 32640, workers=2) > needed(256, 32640)
    assert needed(256, 32640, exact=False) < needed(256, 32640) / 10
    net = random_network(8, 2)
    V = net.n_devices
    monkeypatch.setattr(_autotag, "_available_memory", lambda: needed(V, V * (V - 1) // 2))
    assert autotag(net).metrics.connected
