"""PDHG solver of topokit.learn: cvxpy agreement, KKT, certified gap, numpy twin, warm start."""

import numpy as np
import pytest

from topokit.errors import InvalidInputError
from topokit.learn import _kernels, learn_graph
from topokit.learn.solvers import (
    _pdhg_numba,
    _pdhg_numpy,
    kkt_residual,
    log_degree_objective,
    pairwise_sq_distances,
)

from learn_signals import smooth_signals


@pytest.mark.parametrize("d, beta, zeta", [(20, 0.3, 0.0), (30, 0.05, 0.0), (40, 2.0, 0.0),
                                           (25, 0.5, 0.01)])
def test_pdhg_objective_matches_cvxpy(d, beta, zeta):
    X = smooth_signals(d, 60, d)
    fast = learn_graph(X, 1.0, beta, zeta=zeta, solver="pdhg")
    ref = learn_graph(X, 1.0, beta, zeta=zeta, solver="cvxpy", cvxpy_solver="clarabel")
    assert fast.converged and fast.solver == "pdhg"
    assert abs(fast.objective - ref.objective) <= 1e-6 * abs(ref.objective)
    # the certificate is a bound: no solver gets below objective - gap
    slack = fast.residual * abs(fast.objective) + 1e-9 * abs(ref.objective)
    assert ref.objective >= fast.objective - slack
    np.testing.assert_allclose(fast.weights, ref.weights, atol=1e-4)


@pytest.mark.parametrize("beta", [0.05, 0.5, 5.0])
def test_pdhg_kkt_residual_small(beta):
    X = smooth_signals(30, 50, 7)
    z = pairwise_sq_distances(X)
    result = learn_graph(X, 1.0, beta, solver="pdhg")
    assert result.converged
    assert kkt_residual(result.weights, z, 1.0, beta) < 1e-5 * max(1.0, z.max())


def test_pdhg_gap_certifies_objective_accuracy():
    """At tol = 1e-7 the objective is within 1e-7 (relative) of a tightly solved reference."""
    X = smooth_signals(35, 80, 2)
    z = pairwise_sq_distances(X)
    tight = learn_graph(X, 1.0, 0.2, solver="fbf", tol=1e-12, max_iter=10**6)
    loose = learn_graph(X, 1.0, 0.2, solver="pdhg", tol=1e-7)
    assert loose.residual <= 1e-7
    assert 0 <= (loose.objective - tight.objective) / abs(tight.objective) <= 1e-7 + 1e-12
    gap, obj = _kernels.duality_gap(loose.weights, z, 35, 1.0, 0.2, 0.0)
    assert gap == pytest.approx(loose.residual) and obj == pytest.approx(loose.objective)


def test_duality_gap_kernel_matches_fenchel_dual():
    """Per-edge closed form equals P(w) - D(v(w)) with D the Fenchel dual written out."""
    d, alpha, beta, zeta = 9, 1.3, 0.4, 0.05
    rng = np.random.default_rng(1)
    z = rng.random(d * (d - 1) // 2) * 3
    w = np.maximum(rng.standard_normal(z.size), 0.0) + 0.01
    i, j = np.triu_indices(d, 1)
    deg = np.bincount(i, w, d) + np.bincount(j, w, d) + zeta
    v = -alpha / deg
    primal = log_degree_objective(w, z, alpha, beta, zeta)
    f_conj = (np.maximum(-(v[i] + v[j]) - z, 0.0) ** 2).sum() / (8 * beta)
    g_conj = (-alpha - zeta * v + alpha * np.log(alpha / -v)).sum()
    gap, obj = _kernels.duality_gap(w, z, d, alpha, beta, zeta)
    assert obj == pytest.approx(primal, rel=1e-12)
    assert gap * abs(primal) == pytest.approx(primal + f_conj + g_conj, rel=1e-9)


def test_pdhg_numba_kernel_equals_numpy_twin():
    z = pairwise_sq_distances(smooth_signals(15, 20, 1))
    a = _pdhg_numba(z, 1.0, 0.2, 0.01, 0.0, 57)  # tol 0: exactly 57 iterations
    b = _pdhg_numpy(z, 1.0, 0.2, 0.01, 0.0, 57)
    assert a[1] == b[1] == 57
    np.testing.assert_allclose(a[0], b[0], atol=1e-12)
    a = _pdhg_numba(z, 1.0, 0.2, 0.01, 1e-10, 5000)
    b = _pdhg_numpy(z, 1.0, 0.2, 0.01, 1e-10, 5000)
    assert abs(a[1] - b[1]) <= 1
    np.testing.assert_allclose(a[0], b[0], atol=1e-6)


def test_pdhg_warm_start_from_solution_stops_at_once():
    X = smooth_signals(25, 40, 5)
    cold = learn_graph(X, 1.0, 0.3, solver="pdhg")
    warm = learn_graph(X, 1.0, 0.3, solver="pdhg", w0=cold.weights)
    assert warm.converged and warm.n_iter <= 2
    assert warm.objective == pytest.approx(cold.objective, rel=1e-12)


def test_auto_picks_dual_newton_for_positive_beta_and_fbf_at_zero():
    X = smooth_signals(8, 30, 0)
    assert learn_graph(X, 1.0, 0.2).solver == "dual-newton"
    with pytest.warns(Warning):  # beta = 0 may not converge quickly; only the choice matters
        assert learn_graph(X, 1.0, 0.0, max_iter=5).solver == "fbf"
    with pytest.raises(InvalidInputError, match="beta > 0"):
        learn_graph(X, 1.0, 0.0, solver="pdhg")
