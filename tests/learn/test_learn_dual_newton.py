"""The default graph-learning solver (dual Newton) against independent computations.

An independent plain FBF (Kalofolias 2016, Alg. 1, with a dense edge-to-degree
matrix, written here and sharing no code with topokit) must reach the same
objective of eq. (7) to 1e-8 (relative) as ``learn_graph``'s default on small
random instances; the dual Newton certificate must equal the Fenchel gap written
out; the Numba kernels must equal their numpy twins.  (Speed is measured in
``analyses/bench_graph_learning.py``, not here.)
"""

import math

import numpy as np
import pytest

from topokit.errors import InvalidInputError
from topokit.learn import ConvergenceWarning, _kernels, learn_graph, learn_graph_from_distances
from topokit.learn._dual_newton import dual_point
from topokit.learn.solvers import _newton_numba, _newton_numpy, pairwise_sq_distances

from learn_signals import smooth_signals

OBJ_RTOL = 1e-8


def dense_operator(d: int) -> np.ndarray:
    """S of shape (d, p): column k has ones at the two ends of the k-th pair (i < j, row-major)."""
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
    S = np.zeros((d, len(pairs)))
    for k, (i, j) in enumerate(pairs):
        S[i, k] = S[j, k] = 1.0
    return S


def objective(w, z, S, alpha, beta, zeta):
    """Eq. (7) (with the zeta of eq. (8)), written out."""
    return float(z @ w - alpha * np.sum(np.log(S @ w + zeta)) + 2 * beta * w @ w)


def plain_fbf(z, S, alpha, beta, zeta, tol=1e-12, max_iter=400_000):
    """Kalofolias' FBF with a dense S; stops when the relative iterate changes are < tol."""
    d, p = S.shape
    step = 0.9 / (4 * beta + np.linalg.norm(S, 2))
    w, v = np.zeros(p), np.zeros(d)
    for _ in range(max_iter):
        Y = w - step * (4 * beta * w + S.T @ v)
        y = v + step * (S @ w)
        P = np.maximum(Y - step * z, 0.0)
        yz = y + step * zeta  # prox of the conjugate of -alpha log(u + zeta)
        p_bar = 0.5 * (yz - np.sqrt(yz * yz + 4 * alpha * step))
        Q = P - step * (4 * beta * P + S.T @ p_bar)
        q = p_bar + step * (S @ P)
        w, v = w - Y + Q, v - y + q
        if (np.linalg.norm(Q - Y) < tol * np.linalg.norm(w)
                and np.linalg.norm(q - y) < tol * np.linalg.norm(v)):
            return np.maximum(w, 0.0)
    raise AssertionError("the reference FBF did not converge")


def instance(seed: int):
    """Small random problems: smooth signals, plain random distances, some negative entries."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(4, 16))
    kind = seed % 3
    if kind == 0:
        z = pairwise_sq_distances(smooth_signals(d, 40, seed))
    elif kind == 1:
        z = rng.exponential(size=d * (d - 1) // 2)
    else:  # noisy (DP) distances may be negative; beta > 0 keeps the problem bounded
        z = rng.standard_normal(d * (d - 1) // 2) + 1.0
    alpha = float(10 ** rng.uniform(-1, 1))
    beta = float(10 ** rng.uniform(-1.5, 1))
    zeta = float(rng.choice([0.0, 0.01, 0.5]))
    return d, z, alpha, beta, zeta


@pytest.mark.parametrize("seed", range(12))
def test_default_solver_reaches_the_plain_fbf_objective(seed):
    d, z, alpha, beta, zeta = instance(seed)
    S = dense_operator(d)
    learned = learn_graph_from_distances(z, alpha, beta, zeta=zeta)
    assert learned.solver == "dual-newton" and learned.converged
    reference = objective(plain_fbf(z, S, alpha, beta, zeta), z, S, alpha, beta, zeta)
    ours = objective(learned.weights, z, S, alpha, beta, zeta)
    assert abs(ours - reference) <= OBJ_RTOL * abs(reference)
    # the certificate bounds the distance to the optimum: nothing is below ours - gap
    assert reference >= ours - learned.residual * abs(ours) - 1e-12 * abs(reference)
    # and the check is sharp enough to catch a wrong answer: 1e-3 off is far outside it
    off = objective(learned.weights * 1.001, z, S, alpha, beta, zeta)
    assert abs(off - reference) > OBJ_RTOL * abs(reference)


def test_learned_graph_from_signals_matches_the_plain_fbf():
    X = smooth_signals(12, 60, 4)
    z = pairwise_sq_distances(X)
    S = dense_operator(12)
    learned = learn_graph(X, 1.0, 0.3)
    reference = plain_fbf(z, S, 1.0, 0.3, 0.0)
    f_ref = objective(reference, z, S, 1.0, 0.3, 0.0)
    assert abs(learned.objective - f_ref) <= OBJ_RTOL * abs(f_ref)
    # strong convexity (modulus 4 beta): the weights are within sqrt(gap / (2 beta))
    np.testing.assert_allclose(learned.weights, reference, atol=1e-6)


def test_dual_certificate_is_the_fenchel_gap_written_out():
    """At any v < 0: residual * |P(w(v))| = P(w(v)) - D(v), D the Fenchel dual in full."""
    d, alpha, beta, zeta = 7, 1.7, 0.3, 0.05
    rng = np.random.default_rng(2)
    z = rng.random(d * (d - 1) // 2) * 2
    v = -rng.uniform(0.5, 3.0, d)
    i, j = np.triu_indices(d, 1)
    w = np.maximum(-(v[i] + v[j]) - z, 0.0) / (4 * beta)
    S = dense_operator(d)
    primal = objective(w, z, S, alpha, beta, zeta)
    f_conj = np.sum(np.maximum(-(v[i] + v[j]) - z, 0.0) ** 2) / (8 * beta)
    g_conj = np.sum(-alpha - zeta * v + alpha * np.log(alpha / -v))
    dual = -f_conj - g_conj
    constant = d * alpha * (1 - math.log(alpha))  # D = climbed value + constant
    point = dual_point(v, z, d, alpha, beta, zeta)  # the numpy twin
    assert point.gap * abs(primal) == pytest.approx(primal - dual, rel=1e-9)
    assert point.value + constant == pytest.approx(dual, rel=1e-12)
    deg = np.empty(d)  # the Numba kernels
    lin, quad, _ = _kernels.dual_evaluate(v, z, d, beta, zeta, deg)
    value, gap, _ = _kernels.dual_summary(v, deg, lin, quad, alpha, beta, zeta)
    assert gap * abs(primal) == pytest.approx(primal - dual, rel=1e-9)
    assert value + constant == pytest.approx(dual, rel=1e-12)


@pytest.mark.parametrize("beta, zeta", [(0.2, 0.01), (0.02, 0.0), (3.0, 0.5)])
def test_newton_numba_kernels_equal_numpy_twins(beta, zeta):
    z = pairwise_sq_distances(smooth_signals(15, 20, 1))
    for max_iter in (2, 1000):  # after exactly two steps, and at convergence
        a = _newton_numba(z, 1.0, beta, zeta, 1e-16, max_iter)
        b = _newton_numpy(z, 1.0, beta, zeta, 1e-16, max_iter)
        assert a[1] == b[1]
        np.testing.assert_allclose(a[0], b[0], rtol=1e-10, atol=1e-13)


def test_auto_picks_dual_newton_and_needs_positive_beta():
    X = smooth_signals(8, 30, 0)
    assert learn_graph(X, 1.0, 0.2).solver == "dual-newton"
    with pytest.raises(InvalidInputError, match="beta > 0"):
        learn_graph(X, 1.0, 0.0, solver="dual-newton")


def test_warm_start_from_the_solution_stops_at_once():
    X = smooth_signals(25, 40, 5)
    cold = learn_graph(X, 1.0, 0.3)
    warm = learn_graph(X, 1.0, 0.3, w0=cold.weights)
    assert warm.converged and warm.n_iter <= 1
    assert warm.objective == pytest.approx(cold.objective, rel=1e-12)


def test_a_step_budget_too_small_warns_and_is_reported():
    with pytest.warns(ConvergenceWarning, match="DUAL-NEWTON"):
        result = learn_graph(smooth_signals(20, 30, 1), 1.0, 0.1, max_iter=1)
    assert not result.converged and result.n_iter == 1 and result.residual > 1e-16
