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
