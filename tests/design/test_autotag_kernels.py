"""The incremental fundamental-matrix kernels against fresh inverses."""

import networkx as nx
import numpy as np
import pytest

from topokit import hitting_times, lazy_metropolis
from topokit.kernels import _incremental as inc


def _state(graph):
    n = graph.number_of_nodes()
    adjacency = nx.to_numpy_array(graph, nodelist=range(n)) > 0
    degree = adjacency.sum(axis=1).astype(np.int64)
    weights = lazy_metropolis(adjacency.astype(float))
    np.fill_diagonal(weights, 0.0)
    return np.ascontiguousarray(adjacency), degree, np.ascontiguousarray(weights)


def _scratch(n):
    return (np.empty(2 * n + 1, dtype=np.int64), np.empty(2 * n + 1, dtype=np.int64),
            np.empty(2 * n + 1))


def test_fresh_fundamental_gives_the_kernels_hitting_times():
    graph = nx.connected_watts_strogatz_graph(12, 4, 0.4, seed=3)
    adjacency, _, weights = _state(graph)
    Z = inc.fresh_fundamental(weights)
    n = 12
    A = lazy_metropolis(adjacency.astype(float))
    np.testing.assert_allclose(Z, np.linalg.inv(np.eye(n) - A + 1.0 / n), atol=1e-12)
    M = np.empty((n, n))
    H = inc._hitting_matrix(Z, M)
    np.testing.assert_allclose(M, hitting_times(A), rtol=1e-10, atol=1e-9)
    assert H == pytest.approx(hitting_times(A).max(), rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_weight_changes_are_exactly_the_lazy_metropolis_differences(seed):
    rng = np.random.default_rng(seed)
    graph = nx.gnp_random_graph(10, 0.35, seed=seed)
    adjacency, degree, weights = _state(graph)
    missing = [(i, j) for i in range(10) for j in range(i + 1, 10) if not adjacency[i, j]]
    i, j = missing[rng.integers(len(missing))]
    a, b, d = _scratch(10)
    r = inc.link_weight_changes(adjacency, degree, weights, i, j, a, b, d)
    before = weights.copy()
    inc.apply_link(adjacency, degree, weights, i, j)
    graph.add_edge(i, j)
    expected = _state(graph)[2]
    np.testing.assert_array_equal(weights, expected)
    delta = np.zeros((10, 10))
    for e in range(r):
        delta[a[e], b[e]] += d[e]
        delta[b[e], a[e]] += d[e]
    np.testing.assert_allclose(delta, expected - before, atol=1e-15)
    assert (a[0], b[0]) == (i, j)  # the new link first


@pytest.mark.parametrize("seed", range(5))
def test_woodbury_updates_track_a_fresh_inverse(seed):
    """40 successive link additions without refresh: Z stays within 1e-9 of the fresh inverse."""
    rng = np.random.default_rng(seed)
    n = 16
    graph = nx.random_labeled_tree(n, seed=seed) if hasattr(nx, "random_labeled_tree") \
        else nx.random_tree(n, seed=seed)
    adjacency, degree, weights = _state(graph)
    Z = inc.fresh_fundamental(weights)
    a, b, d = _scratch(n)
    for _ in range(40):
        missing = np.argwhere(np.triu(~adjacency, 1))
        i, j = missing[rng.integers(len(missing))]
        r = inc.add_link_fundamental(Z, adjacency, degree, weights, int(i), int(j), 2 * n + 1,
                                     a, b, d)
        assert r >= 1
        np.testing.assert_allclose(Z, inc.fresh_fundamental(weights), atol=1e-9)


def test_rank_limit_leaves_z_stale_and_reports_it():
    # On a cycle, the chord 0-4 changes the new link and the four links at its ends.
    graph = nx.cycle_graph(8)
    adjacency, degree, weights = _state(graph)
    Z = inc.fresh_fundamental(weights)
    before = Z.copy()
    a, b, d = _scratch(8)
    assert inc.link_weight_changes(adjacency, degree, weights, 0, 4, a, b, d) == 5
    r = inc.add_link_fundamental(Z, adjacency, degree, weights, 0, 4, 4, a, b, d)
    assert r == -1
    np.testing.assert_array_equal(Z, before)
    assert adjacency[0, 4] and degree[0] == 3


def test_add_link_step_keeps_hitting_times_fresh_through_refreshes_and_rank_limits():
    """The kernel step 'add a link + Woodbury update': M is the hitting-time matrix of the
    graph after every link, whether Z came from Woodbury or from a fresh inverse."""
    n = 10
    rng = np.random.default_rng(5)
    tree = nx.random_labeled_tree(n, seed=5) if hasattr(nx, "random_labeled_tree") \
        else nx.random_tree(n, seed=5)
    edges = [tuple(e) for e in rng.permutation(np.array(list(tree.edges)))]
    extra = [(i, j) for i in range(n) for j in range(i + 1, n) if not tree.has_edge(i, j)]
    edges += [extra[x] for x in rng.choice(len(extra), 15, replace=False)]
    graph = inc._new_graph(n, 1)
    fund = inc._new_fundamental(n)
    # refresh_every=3 and rank_limit=4 force both kinds of fresh inverse along the way.
    rules = inc._Rules(n_budget=0, patience=-1, rank_limit=4, refresh_every=3,
                       coef_h=1.0, coef_phi=0.0, intercept=0.0)
    for count, (i, j) in enumerate(edges, start=1):
        H = inc._add_link(graph, fund, rules, int(i), int(j))
        if count < n - 1:  # a forest until the last tree link
            assert H == np.inf and not fund.state[inc._M_VALID]
            continue
        expected = hitting_times(lazy_metropolis(graph.adjacency.astype(float)))
        np.testing.assert_allclose(fund.M, expected, rtol=1e-9, atol=1e-9)
        assert H == pytest.approx(expected.max(), rel=1e-9)
    assert graph.sizes[inc._N_COMPONENTS] == 1
    n_fresh, n_woodbury = fund.state[inc._N_FRESH], fund.state[inc._N_WOODBURY]
    assert n_fresh >= 2 and n_woodbury >= 1
    assert n_fresh + n_woodbury == len(edges) - (n - 1) + 1  # one Z per connected snapshot


@pytest.mark.parametrize("seed", range(3))
def test_run_budget_names_its_results_and_its_interval_repeats_it(seed):
    from topokit.design import _autotag
    from topokit.testing.naive_autotag import random_network

    net = random_network(9, seed)
    problem = _autotag._problem(net)
    coefficients = _autotag._linear_coefficients(None)
    V = net.n_devices
    for n in range(V + 1):
        run = _autotag._run_one(problem, n, coefficients, -1)
        assert isinstance(run, inc.BudgetRun)
        assert run.lo <= n < run.hi
        sizes = {len(run.accepted), len(run.phase), len(run.hitting_time), len(run.phi),
                 len(run.local_iterate), len(run.pseudo_time)}
        assert len(sizes) == 1
        assert np.all(np.diff(run.phase) >= 0)  # CGP, then LCP, then NEP
        finite = np.isfinite(run.hitting_time)
        c = coefficients
        np.testing.assert_array_equal(
            run.pseudo_time[finite],
            (c.coef_h * run.hitting_time[finite] + c.coef_phi * run.phi[finite] + c.intercept)
            * run.local_iterate[finite])
        for other in range(max(run.lo, 0), min(run.hi, V + 1)):
            copy = _autotag._run_one(problem, other, coefficients, -1)
            np.testing.assert_array_equal(copy.accepted, run.accepted)
            np.testing.assert_array_equal(copy.pseudo_time, run.pseudo_time)
