"""Tests of topokit.gfl.perturbations and topokit.gfl.privacy."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topokit import gfl
from topokit.errors import DisconnectedGraphError, InvalidInputError


def _random_valid_A(seed: int, P: int, weights: str = "lazy-metropolis") -> np.ndarray:
    rng = np.random.default_rng(seed)
    while True:
        graph = nx.gnp_random_graph(P, 0.4, seed=int(rng.integers(2**31)))
        if nx.is_connected(graph):
            return gfl.combination_matrix(graph, weights)


def _asymmetric_doubly_stochastic(seed: int, P: int) -> np.ndarray:
    """Convex mix of permutation matrices incl. the identity: doubly stochastic, a_mm > 0."""
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.ones(4))
    A = weights[0] * np.eye(P)
    A += weights[1] * np.roll(np.eye(P), 1, axis=1)
    for w in weights[2:]:
        A += w * np.eye(P)[rng.permutation(P)]
    return A


# --------------------------------------------------------------------------- homomorphic identity
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    P=st.integers(2, 12),
    dim=st.integers(1, 5),
    weights=st.sampled_from(["lazy-metropolis", "metropolis"]),
    sigma2=st.floats(1e-3, 100.0),
)
def test_homomorphic_identity_symmetric(seed, P, dim, weights, sigma2):
    A = _random_valid_A(seed, P, weights)
    G = gfl.homomorphic_noise(A, sigma2, dim, np.random.default_rng(seed))
    scale = np.abs(G).max()
    residual = np.abs(np.einsum("pm,mpd->md", A, G)).max()
    assert residual <= 1e-12 * max(scale, 1.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), P=st.integers(2, 9))
def test_homomorphic_identity_asymmetric_doubly_stochastic(seed, P):
    A = _asymmetric_doubly_stochastic(seed, P)
    G = gfl.homomorphic_noise(A, 1.0, 3, seed)
    assert np.abs(np.einsum("pm,mpd->md", A, G)).max() <= 1e-12 * np.abs(G).max()


def test_homomorphic_structure_and_index_convention():
    A = gfl.combination_matrix(nx.path_graph(4))  # 0-1-2-3
    G = gfl.homomorphic_noise(A, 0.5, 2, 1)
    # server 0 sends the same g_0 to its neighbour 1, nothing to 2 and 3
    assert np.all(G[0, 1] != 0)
    assert np.all(G[0, 2] == 0) and np.all(G[0, 3] == 0)
    np.testing.assert_allclose(G[0, 0], -(1 - A[0, 0]) / A[0, 0] * G[0, 1])
    np.testing.assert_array_equal(G[1, 0], G[1, 2])  # one draw per sender


def test_one_combine_step_keeps_centroid():
    A = _random_valid_A(3, 8)
    rng = np.random.default_rng(0)
    psi = rng.normal(size=(8, 3))
    noisy = gfl.combine(A, psi, gfl.homomorphic_noise(A, 10.0, 3, rng))
    clean = gfl.combine(A, psi)
    np.testing.assert_allclose(noisy.mean(axis=0), clean.mean(axis=0), atol=1e-12)
    assert np.abs(noisy - clean).max() > 0.1  # individual models are perturbed
    # random noise moves the centroid
    moved = gfl.combine(A, psi, gfl.random_noise(A, 10.0, 3, rng))
    assert np.abs(moved.mean(axis=0) - clean.mean(axis=0)).max() > 1e-3


# --------------------------------------------------------------------------- random noise
def test_random_noise_support_variance_and_self_option():
    A = gfl.combination_matrix(nx.cycle_graph(5))
    G = gfl.random_noise(A, 2.0, 20000, 0)
    sends = A.T > 0
    assert np.all(G[~sends] == 0)
    np.testing.assert_allclose(G[sends].var(axis=-1), 2.0, rtol=0.1)
    # Laplace: E|x| = b = sqrt(var / 2)
    np.testing.assert_allclose(np.abs(G[sends]).mean(axis=-1), 1.0, rtol=0.05)
    G0 = gfl.random_noise(A, 2.0, 10, 0, include_self=False)
    assert np.all(np.einsum("mmd->md", G0) == 0)


def test_laplace_noise_zero_variance_and_seed():
    assert np.all(gfl.laplace_noise(0.0, (3, 2), 1) == 0)
    np.testing.assert_array_equal(gfl.laplace_noise(1.0, (4,), 7), gfl.laplace_noise(1.0, (4,), 7))
    with pytest.raises(InvalidInputError):
        gfl.laplace_noise(-1.0, (2,), 0)


def test_server_noise_dispatch():
    A = gfl.combination_matrix(nx.cycle_graph(4))
    assert np.all(gfl.server_noise("none", A, 1.0, 2) == 0)
    with pytest.raises(InvalidInputError, match="scheme must be one of"):
        gfl.server_noise("gaussian", A, 1.0, 2)


# --------------------------------------------------------------------------- validation
def test_zero_diagonal_refused():
    A = np.array([[0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])
    with pytest.raises(InvalidInputError, match="a_mm > 0"):
        gfl.homomorphic_noise(A, 1.0, 2, 0)


def test_not_doubly_stochastic_refused():
    rows_only = np.array([[0.5, 0.5, 0.0], [0.2, 0.6, 0.2], [0.5, 0.0, 0.5]])  # rows sum to 1
    with pytest.raises(InvalidInputError, match="columns must sum to 1"):
        gfl.validate_combination_matrix(rows_only)
    with pytest.raises(InvalidInputError, match="rows must sum to 1"):
        gfl.validate_combination_matrix(np.eye(3) * 0.9)


def test_disconnected_and_bad_shapes_refused():
    block = np.kron(np.eye(2), np.full((2, 2), 0.5))
    with pytest.raises(DisconnectedGraphError, match="connected"):
        gfl.validate_combination_matrix(block)
    with pytest.raises(InvalidInputError, match="square"):
        gfl.validate_combination_matrix(np.ones((2, 3)) / 3)
    with pytest.raises(InvalidInputError, match="negative"):
        gfl.validate_combination_matrix(np.array([[1.5, -0.5], [-0.5, 1.5]]))
    with pytest.raises(InvalidInputError, match="dim"):
        gfl.homomorphic_noise(np.eye(1), 1.0, 0, 0)
    with pytest.raises(InvalidInputError, match="weights"):
        gfl.combination_matrix(nx.path_graph(3), "max-degree")


def test_combine_shape_errors():
    A = gfl.combination_matrix(nx.path_graph(3))
    with pytest.raises(InvalidInputError, match="psi"):
        gfl.combine(A, np.zeros((2, 2)))
    with pytest.raises(InvalidInputError, match="G must have shape"):
        gfl.combine(A, np.zeros((3, 2)), np.zeros((3, 3, 3)))


# --------------------------------------------------------------------------- privacy
def test_epsilon_formula_and_growth():
    assert gfl.epsilon(0, 0.7, 1.0, 1.0) == 0.0
    assert math.isclose(gfl.epsilon(3, 0.5, 2.0, 0.1), math.sqrt(2) * 0.5 * 2.0 * 12 / 0.1)
    i = np.arange(1, 50)
    eps = gfl.epsilon(i, 0.7, 1.0, 0.3)
    np.testing.assert_allclose(eps / (i * (i + 1.0)), eps[0] / 2.0)  # grows as i(i+1)
    assert math.isclose(gfl.epsilon(5, 0.1, 1.0, 1.0, dim=9), 3 * gfl.epsilon(5, 0.1, 1.0, 1.0))


@settings(max_examples=50, deadline=None)
@given(
    eps=st.floats(1e-3, 1e3),
    i=st.integers(1, 10_000),
    mu=st.floats(1e-3, 10.0),
    B=st.floats(1e-2, 1e2),
    dim=st.one_of(st.none(), st.integers(1, 100)),
)
def test_sigma_for_epsilon_inverts_epsilon(eps, i, mu, B, dim):
    sigma = gfl.sigma_for_epsilon(eps, i, mu, B, dim=dim)
    assert math.isclose(gfl.epsilon(i, mu, B, sigma, dim=dim), eps, rel_tol=1e-10)


def test_privacy_input_errors_and_high_probability_bound():
    with pytest.raises(InvalidInputError):
        gfl.epsilon(-1, 0.1, 1.0, 1.0)
    with pytest.raises(InvalidInputError):
        gfl.epsilon(2.5, 0.1, 1.0, 1.0)
    with pytest.raises(InvalidInputError):
        gfl.epsilon(2, 0.1, 1.0, 0.0)
    with pytest.raises(InvalidInputError):
        gfl.sigma_for_epsilon(0.0, 10, 0.1, 1.0)
    value = gfl.epsilon_high_probability(9, 2.0, 1.0, 1.0, 4, 0.5)
    assert math.isclose(value, math.sqrt(2) * (1 + 1 + 2 * 0.5) * 10 / 2.0)
