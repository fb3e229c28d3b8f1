"""Fast solver of topokit.learn: KKT, numpy twin, recovery, parameters, validation."""


import networkx as nx
import numpy as np
import pytest

from topokit.errors import InvalidInputError
from topokit.learn import (
    ConvergenceWarning,
    learn_graph,
    learn_graph_from_distances,
    params_for_degree,
)
from topokit.learn.data import synthetic_federated
from topokit.learn.metrics import edge_scores, threshold_sensitivity
from topokit.learn.solvers import (
    _fbf_numba,
    _fbf_numpy,
    kkt_residual,
    log_degree_objective,
    pairwise_sq_distances,
    signal_difference_norms,
)

from learn_signals import smooth_signals


def test_pairwise_sq_distances_and_norms_match_brute_force():
    X = np.random.default_rng(0).normal(3.0, 1.0, (9, 5))
    i, j = np.triu_indices(5, 1)
    Zn = (X[:, i] - X[:, j]) ** 2
    np.testing.assert_allclose(pairwise_sq_distances(X), Zn.mean(axis=0))
    np.testing.assert_allclose(signal_difference_norms(X), np.linalg.norm(Zn, axis=1))
    s = np.linspace(0.2, 1.0, 9)
    np.testing.assert_allclose(pairwise_sq_distances(X, s), (s[:, None] * Zn).mean(axis=0))


def test_numba_kernel_equals_numpy_twin():
    z = pairwise_sq_distances(smooth_signals(15, 20, 1))
    a = _fbf_numba(z, 1.0, 0.2, 0.01, 1e-9, 3000)
    b = _fbf_numpy(z, 1.0, 0.2, 0.01, 1e-9, 3000)
    assert a[1] == b[1]
    np.testing.assert_allclose(a[0], b[0], atol=1e-12)


@pytest.mark.parametrize("beta", [0.05, 0.5, 5.0])
def test_kkt_residual_small_at_solution(beta):
    X = smooth_signals(20, 50, 3)
    result = learn_graph(X, 1.0, beta)
    z = pairwise_sq_distances(X)
    assert result.converged
    assert kkt_residual(result.weights, z, 1.0, beta) < 1e-5 * max(1.0, z.max())
    # a perturbed point is worse
    assert log_degree_objective(result.weights * 1.01, z, 1.0, beta) > result.objective


def test_result_unpacks_and_graph_carries_weights():
    weights, graph = learn_graph(smooth_signals(6, 30, 0), 1.0, 0.1)
    assert weights.shape == (15,)
    assert isinstance(graph, nx.Graph) and graph.number_of_nodes() == 6
    rows, cols = np.triu_indices(6, 1)
    for u, v, w in graph.edges(data="weight"):
        k = np.flatnonzero((rows == min(u, v)) & (cols == max(u, v)))[0]
        assert w == weights[k]


def test_alpha_scaling_identity():
    """w*(alpha, beta) = alpha w*(1, alpha beta) (used by params_for_degree)."""
    X = smooth_signals(10, 40, 4)
    a = learn_graph(X, 2.0, 0.1).weights
    b = learn_graph(X, 1.0, 0.2).weights
    np.testing.assert_allclose(a, 2.0 * b, atol=1e-6)


def test_planted_graph_is_recovered():
    g = synthetic_federated(2000, n_clients=1, n_nodes=20, q=1.0, seed=0)
    result = learn_graph(g.signals[0], 1.0, 0.01)
    assert edge_scores(result.weights, g.local_weights[0]).f_score >= 0.9


def test_threshold_sensitivity_reports_each_threshold():
    g = synthetic_federated(200, n_clients=1, q=1.0, seed=1)
    w = learn_graph(g.signals[0], 1.0, 0.01).weights
    table = threshold_sensitivity(w, g.local_weights[0])
    assert sorted(table) == [1e-4, 1e-3, 1e-2, 1e-1, 0.2]
    recalls = [table[t].recall for t in sorted(table)]
    assert recalls == sorted(recalls, reverse=True)


def test_params_for_degree_hits_target():
    X = smooth_signals(20, 100, 5)
    alpha, beta = params_for_degree(X, 4.0)
    result = learn_graph(X, alpha, beta)
    degree = 2 * result.graph.number_of_edges() / 20
    assert abs(degree - 4.0) <= 0.5


def test_max_iter_warns():
    with pytest.warns(ConvergenceWarning):
        result = learn_graph(smooth_signals(10, 20, 0), 1.0, 0.1, max_iter=3)
    assert not result.converged and result.n_iter == 3


@pytest.mark.parametrize(
    "X, kwargs, message",
    [
        (np.array([[1.0, np.nan, 2.0]]), {}, "NaN"),
        (np.ones((5, 1)), {}, "n_nodes >= 2"),
        (np.ones((5, 4)), {"alpha": -1.0}, "alpha must be > 0"),
        (np.ones((5, 4)), {"beta": -1.0}, "beta must be >= 0"),
        (np.ones((5, 4)), {"solver": "newton"}, "solver must be one of"),
        (np.ones(4), {}, "2-dimensional"),
    ],
)
def test_bad_input_gets_clear_error(X, kwargs, message):
    args = {"alpha": 1.0, "beta": 0.1, **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        learn_graph(X, args.pop("alpha"), args.pop("beta"), **args)


def test_learn_graph_is_learn_graph_from_distances_of_its_signals():
    X = smooth_signals(12, 40, 6)
    a = learn_graph(X, 1.0, 0.3)
    b = learn_graph_from_distances(pairwise_sq_distances(X), 1.0, 0.3)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.objective == b.objective


@pytest.mark.parametrize(
    "z, beta, message",
    [
        (np.ones(4), 0.1, "length d \\(d - 1\\) / 2"),
        (np.array([1.0, np.inf, 1.0]), 0.1, "inf"),
        (np.array([1.0, -1.0, 1.0]), 0.0, "beta > 0"),
    ],
)
def test_bad_distances_get_clear_error(z, beta, message):
    with pytest.raises(InvalidInputError, match=message):
        learn_graph_from_distances(z, 1.0, beta)
