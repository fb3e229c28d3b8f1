"""The features' functions of W by eigenpairs and by Cholesky factors agree (to rounding)."""

import networkx as nx
import numpy as np
import pytest

from topokit import lazy_metropolis
from topokit.design import _spectral, features
from topokit.design._spectral import EigenFunctions, FactoredFunctions, spectral_functions
from topokit.design.features import FeatureSettings, features_of_arrays
from topokit.kernels import fastest_mixing_weights
from topokit.network import Network


def _adjacency(n: int, seed: int) -> np.ndarray:
    graph = nx.connected_watts_strogatz_graph(n, 4, 0.3, seed=seed)
    return nx.to_numpy_array(graph, nodelist=range(n))


def _weights(kind: str, n: int, seed: int) -> np.ndarray:
    adjacency = _adjacency(n, seed)
    if kind == "lazy":
        return lazy_metropolis(adjacency)
    return fastest_mixing_weights(adjacency).weights  # eigenvalues of both signs


@pytest.mark.parametrize("kind", ["lazy", "fastest"])
@pytest.mark.parametrize("gamma", [0.0, 0.3, 0.5, 0.99, 1 - 1e-12, float(np.nextafter(1.0, 0.0))])
def test_both_ways_give_the_same_functions(kind, gamma):
    rng = np.random.default_rng(7)
    weights = _weights(kind, 40, seed=3)
    eigen = EigenFunctions(weights, gamma)
    factored = FactoredFunctions(weights, gamma, connected=True)
    assert eigen.connected
    rows = rng.random(40) < 0.3
    np.testing.assert_allclose(factored.felt_diagonal(rows)[rows], eigen.felt_diagonal(rows)[rows],
                               rtol=1e-10)
    assert not factored.felt_diagonal(rows)[~rows].any()
    assert factored.felt_mean() == pytest.approx(eigen.felt_mean(), rel=1e-10)
    np.testing.assert_allclose(factored.disagreement_diagonal(rows)[rows],
                               eigen.disagreement_diagonal(rows)[rows], rtol=1e-9, atol=1e-14)
    assert not factored.disagreement_diagonal(rows)[~rows].any()
    proportions = rng.dirichlet(np.full(5, 0.3), size=40)
    centred = proportions - proportions.mean(axis=0)
    assert factored.drift_norm2(centred) == pytest.approx(eigen.drift_norm2(centred), rel=1e-10)


def test_the_felt_diagonal_is_the_independent_series():
    # C_g = sum_t g^t W^(t+2), summed directly: an independent check of both ways.
    weights, gamma = _weights("lazy", 30, seed=5), 0.6
    series, power = np.zeros((30, 30)), weights @ weights
    for _ in range(400):
        series += power
        power = gamma * power @ (weights @ weights)
    for functions in (EigenFunctions(weights, gamma),
                      FactoredFunctions(weights, gamma, connected=True)):
        every = np.ones(30, dtype=bool)
        np.testing.assert_allclose(functions.felt_diagonal(every), np.diag(series), rtol=1e-9)
        assert functions.felt_mean() == pytest.approx(np.trace(series) / 30, rel=1e-9)


def test_the_choice_follows_the_size_and_a_failed_factor_falls_back(monkeypatch):
    weights = _weights("lazy", 40, seed=1)
    assert isinstance(spectral_functions(weights, 0.99, gap=0.1), EigenFunctions)
    monkeypatch.setattr(_spectral, "FACTORED_MIN_DEVICES", 40)
    assert isinstance(spectral_functions(weights, 0.99, gap=0.1), FactoredFunctions)
    # 3I is no mixing matrix: I - sqrt(g) (3I - J) is not positive definite.
    assert isinstance(spectral_functions(3.0 * np.eye(40), 0.99, gap=0.1), EigenFunctions)


def test_a_failed_disagreement_factor_takes_the_eigenpairs_or_inf(monkeypatch):
    rows = np.arange(40) % 3 == 0
    connected = _weights("lazy", 40, seed=1)
    split = np.zeros((40, 40))
    split[:20, :20], split[20:, 20:] = _adjacency(20, 2), _adjacency(20, 4)
    disconnected = lazy_metropolis(split)
    factored = {name: FactoredFunctions(w, 0.99, connected=True)
                for name, w in (("connected", connected), ("disconnected", disconnected))}

    def fails(matrix):
        raise np.linalg.LinAlgError("not positive definite")

    monkeypatch.setattr(_spectral, "_cholesky", fails)
    np.testing.assert_array_equal(factored["connected"].disagreement_diagonal(rows),
                                  EigenFunctions(connected, 0.99).disagreement_diagonal(rows))
    np.testing.assert_array_equal(factored["disconnected"].disagreement_diagonal(rows),
                                  np.where(rows, np.inf, 0.0))


def test_a_disconnected_w_is_not_connected_either_way(monkeypatch):
    adjacency = np.zeros((40, 40))
    adjacency[:20, :20] = _adjacency(20, 2)
    adjacency[20:, 20:] = _adjacency(20, 4)
    weights = lazy_metropolis(adjacency)
    monkeypatch.setattr(_spectral, "FACTORED_MIN_DEVICES", 40)
    assert not EigenFunctions(weights, 0.99).connected
    assert not spectral_functions(weights, 0.99, gap=0.0).connected


@pytest.mark.parametrize("weighted", [False, True])
def test_features_of_a_topology_agree_both_ways(monkeypatch, weighted):
    n = 60
    rng = np.random.default_rng(11)
    adjacency = _adjacency(n, seed=9)
    net = Network(nx.from_numpy_array(adjacency), compute_time=1.0,
                  delay=np.ones((n, n)) - np.eye(n), name="ws60")
    counts = rng.integers(1, 30, size=(n, 4)).astype(float)
    dp_mask = rng.random(n) < 0.25
    settings = FeatureSettings(noise_multiplier=2.0)
    weights = fastest_mixing_weights(adjacency).weights if weighted else None

    def computed():
        features._walks.clear()
        return features_of_arrays(net, adjacency, dp_mask, counts, settings, weights=weights)

    eigen = computed()
    monkeypatch.setattr(_spectral, "FACTORED_MIN_DEVICES", n)
    factored = computed()
    for name, value in eigen.to_dict().items():
        assert factored.to_dict()[name] == pytest.approx(value, rel=1e-9, abs=1e-15), name
    assert eigen.noise_disagreement > 0 and eigen.heterogeneity_disagreement > 0
