"""cvxpy formulations of topokit.learn: structure, DPP re-solves, agreement with the fast path."""

import numpy as np
import pytest

from topokit.errors import InvalidInputError
from topokit.learn import federated_problem, learn_graph, log_degree_problem, solve_problem
from topokit.learn.data import synthetic_federated
from topokit.learn.federated import client_means, learn_federated
from topokit.learn.problems import edge_degree_operator
from topokit.learn.solvers import pairwise_sq_distances

from learn_signals import smooth_signals


def test_edge_degree_operator_matches_adjacency_row_sums():
    d = 6
    rng = np.random.default_rng(0)
    w = rng.random(d * (d - 1) // 2)
    W = np.zeros((d, d))
    i, j = np.triu_indices(d, 1)
    W[i, j] = w
    W[j, i] = w
    np.testing.assert_allclose(edge_degree_operator(d) @ w, W.sum(axis=1))


def test_problem_is_dpp_and_resolves_with_new_parameters():
    d = 7
    problem, params = log_degree_problem(d)
    assert problem.is_dcp() and problem.is_dpp()
    values = []
    for beta in (0.1, 1.0):
        X = smooth_signals(d, 40, 1)
        params["z"].value = pairwise_sq_distances(X)
        params["alpha"].value = 1.0
        params["beta"].value = beta
        values.append(solve_problem(problem, solver="clarabel"))
        fast = learn_graph(X, 1.0, beta)
        assert abs(fast.objective - values[-1]) <= 1e-6 * abs(values[-1])
    assert values[0] != values[1]


@pytest.mark.parametrize("d", [2, 5, 12])
def test_cvxpy_solver_of_learn_graph_agrees_with_fbf(d):
    X = smooth_signals(d, 30, d)
    fast = learn_graph(X, 1.0, 0.3)
    ref = learn_graph(X, 1.0, 0.3, solver="cvxpy")
    assert fast.converged
    assert abs(fast.objective - ref.objective) <= 1e-6 * abs(ref.objective)
    np.testing.assert_allclose(fast.weights, ref.weights, atol=1e-4)


def test_zeta_enters_the_problem():
    d = 6
    X = smooth_signals(d, 30, 2)
    a = learn_graph(X, 1.0, 0.2, zeta=0.5, solver="cvxpy")
    b = learn_graph(X, 1.0, 0.2, zeta=0.5)
    assert abs(a.objective - b.objective) <= 1e-6 * abs(a.objective)


def test_bad_node_count_is_rejected():
    with pytest.raises(InvalidInputError, match=">= 2"):
        log_degree_problem(1)
    with pytest.raises(InvalidInputError):
        solve_problem(log_degree_problem(3)[0], solver="mosek")


def test_federated_fixed_point_agrees_with_cvxpy():
    """Algorithm 1 run to its fixed point solves the non-squared problem (module notes)."""
    g = synthetic_federated(60, n_nodes=8, n_clients=3, q=0.5, seed=3)
    a, b, rho, lam = 1.0, 0.5, 0.5, 0.05
    res = learn_federated(g.signals, a, b, rho, lam, rounds=20_000, tol=1e-9)
    assert res.converged
    problem, params = federated_problem(8, 3, zeta=1e-3)
    for k in range(3):
        params["z"][k].value = client_means(g.signals[k], None)
    params["alpha"].value, params["beta"].value = a, b
    params["rho"].value, params["lam"].value = rho, lam
    value = solve_problem(problem, solver="clarabel")
    assert abs(res.objective - value) <= 1e-6 * abs(value)
    np.testing.assert_allclose(res.consensus.weights, problem.var_dict["w_con"].value, atol=1e-4)
    for k in range(3):
        np.testing.assert_allclose(res.local[k].weights, problem.var_dict[f"w_{k}"].value,
                                   atol=1e-4)


def test_fixed_build_equals_dpp_build():
    from topokit.learn.problems import log_degree_problem_fixed

    d = 6
    z = pairwise_sq_distances(smooth_signals(d, 20, 9))
    problem, params = log_degree_problem(d)
    params["z"].value, params["alpha"].value, params["beta"].value = z, 1.0, 0.3
    fixed, _ = log_degree_problem_fixed(z, 1.0, 0.3)
    assert solve_problem(problem) == pytest.approx(solve_problem(fixed), rel=1e-7)


def test_distances_with_negative_entries_solve_as_clarabel_does():
    """Noisy distances (a DP release) may be negative; with beta > 0 the problem stays bounded."""
    from topokit.learn import learn_graph_from_distances

    d = 9
    z = pairwise_sq_distances(smooth_signals(d, 30, 2))
    z = z + np.random.default_rng(3).normal(0.0, z.std(), z.size)
    assert np.any(z < 0)
    problem, params = log_degree_problem(d)
    params["z"].value, params["alpha"].value, params["beta"].value = z, 1.0, 0.2
    reference = solve_problem(problem, solver="clarabel")
    fast = learn_graph_from_distances(z, 1.0, 0.2)
    assert fast.converged
    assert abs(fast.objective - reference) <= 1e-6 * abs(reference)
