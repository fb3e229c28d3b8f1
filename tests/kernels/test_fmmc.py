"""Fastest-mixing weights against closed forms, the SDP, the heuristics and their invariants."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from topokit.errors import DisconnectedGraphError, InvalidInputError
from topokit.kernels import (
    FastestMixing,
    _fmmc,
    fastest_mixing_weights,
    lazy_metropolis,
    metropolis,
)

METHODS = ("sdp", "subgradient")


def independent_slem(weights: np.ndarray) -> float:
    """max(|lambda_2|, |lambda_n|) from numpy's eigenvalues (lambda_1 = 1 is the largest)."""
    values = np.linalg.eigvalsh(weights)
    return float(max(abs(values[0]), abs(values[-2])))


def random_graphs() -> list[nx.Graph]:
    """Seeded connected graphs of 8-24 nodes: Erdos-Renyi, small-world, geometric, trees."""
    graphs = []
    for seed in range(3):
        graphs.append(nx.connected_watts_strogatz_graph(12 + 4 * seed, 4, 0.3, seed=seed))
        er = nx.gnp_random_graph(14 + 3 * seed, 0.25, seed=seed)
        graphs.append(er.subgraph(max(nx.connected_components(er), key=len)).copy())
        graphs.append(nx.random_labeled_tree(10 + seed, seed=seed))
    geometric = nx.random_geometric_graph(20, 0.35, seed=4)
    graphs.append(geometric.subgraph(max(nx.connected_components(geometric), key=len)).copy())
    return [nx.convert_node_labels_to_integers(g) for g in graphs]


RANDOM_GRAPHS = random_graphs()


@pytest.fixture(scope="module")
def solved() -> dict:
    """Both methods on every random graph with their default tolerances, solved once."""
    return {
        index: {
            "sdp": fastest_mixing_weights(graph, method="sdp"),
            "subgradient": fastest_mixing_weights(graph, method="subgradient"),
        }
        for index, graph in enumerate(RANDOM_GRAPHS)
    }


# ---------------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5, 8, 12])
def test_path_has_weight_one_half_on_every_link_and_slem_cos_pi_over_n(n):
    # Boyd, Diaconis, Sun and Xiao, "Fastest mixing Markov chain on a path" (2006): the optimum
    # puts 1/2 on every link (so 1/2 on the end nodes' self-loops) and mu* = cos(pi / n).
    graph = nx.path_graph(n)
    sdp = fastest_mixing_weights(graph, method="sdp")
    assert sdp.slem == pytest.approx(np.cos(np.pi / n), abs=1e-7)
    # The optimum is unique but flat: a 1e-8 slack in the SLEM allows ~1e-4 in the weights.
    np.testing.assert_allclose(np.diagonal(sdp.weights, 1), 0.5, atol=1e-3)
    first_order = fastest_mixing_weights(graph, method="subgradient", tol=1e-5)
    assert first_order.converged
    assert first_order.slem == pytest.approx(np.cos(np.pi / n), abs=1e-5)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [3, 6, 9])
def test_complete_graph_mixes_in_one_step(method, n):
    # W = J = 11^T / n is feasible on K_n and has SLEM 0, the least possible; it is the only
    # doubly stochastic W with SLEM 0.
    result = fastest_mixing_weights(nx.complete_graph(n), method=method)
    assert result.slem == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(result.weights, np.full((n, n), 1.0 / n), atol=1e-6)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [4, 7, 11])
def test_star_slem(method, n):
    # A star of n nodes is symmetric under permuting its leaves, and the problem is convex, so
    # some optimum gives every leaf link the same weight p <= 1 / (n - 1) (the centre's row);
    # its eigenvalues are 1, 1 - p (n - 2 times) and 1 - n p, so mu* = 1 - 1/(n - 1).
    result = fastest_mixing_weights(nx.star_graph(n - 1), method=method, tol=1e-6)
    assert result.slem == pytest.approx((n - 2) / (n - 1), abs=1e-6)


def cycle_slem(n: int) -> float:
    """The optimum on a cycle: uniform weight p (the cycle is edge-transitive; Boyd, Diaconis,
    Parrilo and Xiao 2009), eigenvalues 1 - 2p(1 - cos(2 pi k / n)); lambda_2 = -lambda_n at the
    optimal p gives mu* = (c1 + c2) / (2 + c1 - c2) with c2 = cos(2 pi / n) and c1 = cos(pi / n)
    for odd n, c1 = 1 for even n (lambda_n = 1 - 4p)."""
    c2 = np.cos(2 * np.pi / n)
    c1 = 1.0 if n % 2 == 0 else np.cos(np.pi / n)
    return (c1 + c2) / (2 + c1 - c2)


@pytest.mark.parametrize("n", [4, 5, 8, 9, 16])
def test_cycle_slem(n):
    sdp = fastest_mixing_weights(nx.cycle_graph(n), method="sdp")
    assert sdp.slem == pytest.approx(cycle_slem(n), abs=1e-7)
    first_order = fastest_mixing_weights(nx.cycle_graph(n), method="subgradient")
    assert first_order.converged
    assert 0.0 <= first_order.slem - cycle_slem(n) <= _fmmc.DEFAULT_TOL["subgradient"]


def test_single_node_is_its_own_average():
    graph = nx.Graph()
    graph.add_node("only")
    result = fastest_mixing_weights(graph)
    assert result.weights.tolist() == [[1.0]]
    assert (result.slem, result.converged) == (0.0, True)


# ---------------------------------------------------------------------------------------------
# Invariants and agreement on random graphs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(RANDOM_GRAPHS)))
@pytest.mark.parametrize("method", METHODS)
def test_weights_are_symmetric_doubly_stochastic_nonnegative_and_on_links(solved, index, method):
    weights = solved[index][method].weights
    graph = RANDOM_GRAPHS[index]
    n = graph.number_of_nodes()
    assert weights.shape == (n, n)
    assert np.array_equal(weights, weights.T)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-12)
    assert (weights >= 0).all()
    off_graph = (nx.to_numpy_array(graph, nodelist=range(n)) == 0) & ~np.eye(n, dtype=bool)
    assert (weights[off_graph] == 0).all()


@pytest.mark.parametrize("index", range(len(RANDOM_GRAPHS)))
@pytest.mark.parametrize("method", METHODS)
def test_reported_slem_is_that_of_the_weights(solved, index, method):
    result = solved[index][method]
    assert result.slem == pytest.approx(independent_slem(result.weights), abs=1e-12)
    assert result.method == method


@pytest.mark.parametrize("index", range(len(RANDOM_GRAPHS)))
@pytest.mark.parametrize("method", METHODS)
def test_never_slower_than_metropolis_or_lazy_metropolis(solved, index, method):
    graph = RANDOM_GRAPHS[index]
    slem = solved[index][method].slem
    assert slem <= independent_slem(metropolis(graph)) + 1e-9
    assert slem <= independent_slem(lazy_metropolis(graph)) + 1e-9


@pytest.mark.parametrize("index", range(len(RANDOM_GRAPHS)))
def test_first_order_reaches_the_sdp_optimum(solved, index):
    sdp, first_order = solved[index]["sdp"], solved[index]["subgradient"]
    assert sdp.converged and first_order.converged
    # The default tol = 1e-4 certifies slem - optimum <= 1e-4; the SDP is exact to ~1e-8.
    assert -1e-7 <= first_order.slem - sdp.slem <= 1e-4


@pytest.mark.parametrize("index", range(len(RANDOM_GRAPHS)))
def test_lower_bounds_are_below_the_other_solvers_optimum(solved, index):
    # Weak duality, checked across solvers: each certificate bounds the other's SLEM.
    sdp, first_order = solved[index]["sdp"], solved[index]["subgradient"]
    assert first_order.lower_bound <= sdp.slem + 1e-7
    assert sdp.lower_bound <= first_order.slem + 1e-9
    assert sdp.gap <= 1e-6
    assert first_order.gap == pytest.approx(first_order.slem - first_order.lower_bound)


def test_a_tighter_tolerance_is_certified_too():
    graph = nx.connected_watts_strogatz_graph(24, 4, 0.4, seed=11)
    sdp = fastest_mixing_weights(graph, method="sdp")
    first_order = fastest_mixing_weights(graph, method="subgradient", tol=1e-5)
    assert first_order.converged and first_order.gap <= 1e-5
    assert -1e-7 <= first_order.slem - sdp.slem <= 1e-5


def test_large_graph_path_tracks_the_extreme_eigenpairs(monkeypatch):
    # The block-Krylov tracking that serves graphs beyond DENSE_EIGEN_MAX nodes, on a graph
    # small enough for the SDP: it must certify the same optimum, and a seed fixes its result.
    monkeypatch.setattr(_fmmc, "DENSE_EIGEN_MAX", 20)
    graph = nx.connected_watts_strogatz_graph(40, 4, 0.3, seed=2)
    sdp = fastest_mixing_weights(graph, method="sdp")
    tracked = fastest_mixing_weights(graph, method="subgradient", seed=5)
    assert tracked.converged
    assert tracked.lower_bound <= sdp.slem + 1e-7
    assert sdp.slem - 1e-8 <= tracked.slem <= sdp.slem + _fmmc.DEFAULT_TOL["subgradient"]
    first, again = (fastest_mixing_weights(graph, method="subgradient", seed=5, max_iter=30)
                    for _ in range(2))
    assert np.array_equal(first.weights, again.weights)


def test_stopping_early_still_returns_valid_weights_no_worse_than_metropolis():
    graph = nx.connected_watts_strogatz_graph(30, 4, 0.3, seed=3)
    result = fastest_mixing_weights(graph, method="subgradient", max_iter=5)
    assert result.n_iter == 5 and not result.converged
    assert result.slem <= independent_slem(metropolis(graph)) + 1e-12
    np.testing.assert_allclose(result.weights.sum(axis=0), 1.0, atol=1e-12)
    assert result.lower_bound <= result.slem


def test_auto_takes_the_sdp_on_small_graphs_and_the_first_order_method_beyond(monkeypatch):
    graph = nx.cycle_graph(10)
    assert fastest_mixing_weights(graph).method == "sdp"
    monkeypatch.setattr(_fmmc, "SDP_MAX_NODES", 8)
    result = fastest_mixing_weights(graph)
    assert result.method == "subgradient" and result.converged
    assert isinstance(result, FastestMixing)


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------


def test_projection_is_the_euclidean_projection_onto_the_feasible_weights():
    cp = pytest.importorskip("cvxpy")
    graph = nx.connected_watts_strogatz_graph(15, 4, 0.3, seed=8)
    links = _fmmc._links_of(graph)
    project = _fmmc._Projector(links)
    incidence = abs(_fmmc._incidence(links))
    rng = np.random.default_rng(0)
    for scale in (0.1, 0.5, 1.5):
        y = rng.normal(scale, scale, links.m)
        w = cp.Variable(links.m)
        cp.Problem(cp.Minimize(cp.sum_squares(w - y)),
                   [w >= 0, incidence @ w <= 1]).solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(project(y), w.value, atol=1e-6)


def test_dual_bound_of_any_feasible_dual_matrix_is_below_the_optimum():
    graph = nx.connected_watts_strogatz_graph(16, 4, 0.3, seed=9)
    links = _fmmc._links_of(graph)
    optimum = fastest_mixing_weights(graph, method="sdp").slem
    rng = np.random.default_rng(1)
    for _ in range(5):
        dual = rng.standard_normal((16, 16))
        assert _fmmc._bound_from_matrix(links, dual + dual.T) <= optimum + 1e-9


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------


def test_graph_dense_and_sparse_inputs_agree_and_self_loops_are_ignored():
    graph = nx.connected_watts_strogatz_graph(10, 4, 0.3, seed=1)
    adjacency = nx.to_numpy_array(graph)
    from_graph = fastest_mixing_weights(graph, method="sdp").weights
    with_loops = adjacency + 3.0 * np.eye(10)
    for form in (adjacency, sp.csr_array(adjacency), with_loops, 0.5 * adjacency):
        np.testing.assert_allclose(fastest_mixing_weights(form, method="sdp").weights,
                                   from_graph, atol=1e-7)


def test_disconnected_graph_is_refused():
    graph = nx.disjoint_union(nx.path_graph(3), nx.cycle_graph(4))
    with pytest.raises(DisconnectedGraphError, match="must be connected; it has 2 components"):
        fastest_mixing_weights(graph)
    with pytest.raises(DisconnectedGraphError):
        fastest_mixing_weights(np.zeros((3, 3)))


@pytest.mark.parametrize("adjacency, message", [
    (np.ones((3, 4)), "square"),
    (np.array([[0, 1.0], [0, 0]]), "symmetric"),
    (np.array([[0, -1.0], [-1.0, 0]]), "negative"),
    (np.array([[0, np.nan], [np.nan, 0]]), "NaN"),
    (np.ones((2, 3, 3)), "one matrix"),
    (nx.DiGraph([(0, 1), (1, 0)]), "undirected"),
])
def test_bad_adjacency_is_one_clear_error(adjacency, message):
    with pytest.raises(InvalidInputError, match=message) as error:
        fastest_mixing_weights(adjacency)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("options, message", [
    ({"method": "newton"}, "method must be one of 'auto', 'sdp', 'subgradient'"),
    ({"tol": 0.0}, "tol must be > 0"),
    ({"max_iter": 0}, "max_iter must be an integer >= 1"),
    ({"seed": -1}, "seed must be an integer >= 0"),
])
def test_bad_options_are_one_clear_error(options, message):
    with pytest.raises(InvalidInputError, match=message):
        fastest_mixing_weights(nx.path_graph(4), **options)


# ---------------------------------------------------------------------------------------------
# Warm start (initial_weights)
# ---------------------------------------------------------------------------------------------


def without_some_links(graph: nx.Graph, seed: int) -> nx.Graph:
    """``graph`` less a few links that are on cycles (it stays connected)."""
    rng = np.random.default_rng(seed)
    fewer = graph.copy()
    for u, v in rng.permutation(list(graph.edges()))[:3]:
        fewer.remove_edge(u, v)
        if not nx.is_connected(fewer):
            fewer.add_edge(u, v)
    return fewer


def warm_and_cold(graph: nx.Graph, **options) -> tuple:
    """Cold on ``graph``, and warm from the cold optimum of ``graph`` less a few links."""
    n = graph.number_of_nodes()
    start = fastest_mixing_weights(nx.to_numpy_array(without_some_links(graph, n), range(n)),
                                   method="subgradient", **options)
    cold = fastest_mixing_weights(graph, method="subgradient", **options)
    warm = fastest_mixing_weights(graph, method="subgradient", initial_weights=start.weights,
                                  **options)
    return warm, cold


@pytest.mark.parametrize("index", [0, 1, 3, 6, 9])
def test_warm_start_certifies_the_same_slem(index):
    # From the optimum on a subset of the links (the second weighting of a design): both
    # runs are certified within tol of the one optimum.
    graph = RANDOM_GRAPHS[index]
    warm, cold = warm_and_cold(graph)
    tol = _fmmc.DEFAULT_TOL["subgradient"]
    assert warm.converged and cold.converged and warm.gap <= tol
    assert abs(warm.slem - cold.slem) <= tol
    assert warm.lower_bound <= cold.slem + 1e-12 and cold.lower_bound <= warm.slem + 1e-12
    assert warm.slem == pytest.approx(independent_slem(warm.weights), abs=1e-12)


@pytest.mark.parametrize("index", [0, 6, 7])
def test_a_near_optimal_warm_start_is_certified_in_fewer_steps(index):
    # Started from a certified optimum only the certificate remains to be found: the
    # steps a cold run spends reaching the optimum are saved (at 1,000 devices, 95 of 417).
    # Not a guarantee: where the certificate, not the optimum, takes the steps (RANDOM_GRAPHS[3]:
    # 3,423 warm, 2,269 cold) the stage ends can fall later.
    graph = RANDOM_GRAPHS[index]
    cold = fastest_mixing_weights(graph, method="subgradient")
    warm = fastest_mixing_weights(graph, method="subgradient", initial_weights=cold.weights)
    assert warm.converged and warm.slem <= cold.slem + 1e-12
    assert warm.n_iter < cold.n_iter


def test_warm_start_on_the_tracked_spectrum(monkeypatch):
    monkeypatch.setattr(_fmmc, "DENSE_EIGEN_MAX", 20)
    graph = nx.connected_watts_strogatz_graph(40, 4, 0.3, seed=2)
    warm, cold = warm_and_cold(graph, seed=5)
    assert warm.converged and cold.converged
    assert abs(warm.slem - cold.slem) <= _fmmc.DEFAULT_TOL["subgradient"]


def test_a_warm_start_slower_than_metropolis_is_not_taken():
    # The identity (no weight on any link) has SLEM 1: the run starts from Metropolis-Hastings
    # as a cold one does, and on the dense spectrum it is the cold run exactly.
    graph = RANDOM_GRAPHS[2]
    n = graph.number_of_nodes()
    cold = fastest_mixing_weights(graph, method="subgradient")
    warm = fastest_mixing_weights(graph, method="subgradient", initial_weights=np.eye(n))
    assert np.array_equal(warm.weights, cold.weights) and warm.n_iter == cold.n_iter


def test_warm_start_is_symmetrised_made_feasible_and_may_be_sparse():
    graph = nx.cycle_graph(60)
    start = sp.csr_array(3.0 * nx.to_numpy_array(graph))  # node sums 6: scaled down to 1
    result = fastest_mixing_weights(graph, method="subgradient", initial_weights=start)
    assert result.converged
    assert 0.0 <= result.slem - cycle_slem(60) <= _fmmc.DEFAULT_TOL["subgradient"]
    links = _fmmc._links_of(graph)
    np.testing.assert_allclose(_fmmc._edge_weights_of(links, start), 0.5)
    lopsided = np.triu(nx.to_numpy_array(graph)) * 0.4  # only (i, j), i < j: halved
    np.testing.assert_allclose(_fmmc._edge_weights_of(links, lopsided)[:-1], 0.2)


def test_warm_start_is_ignored_by_the_sdp():
    graph = nx.cycle_graph(8)
    plain = fastest_mixing_weights(graph, method="sdp")
    warm = fastest_mixing_weights(graph, method="sdp", initial_weights=np.eye(8))
    assert np.array_equal(plain.weights, warm.weights)


@pytest.mark.parametrize("initial, message", [
    (np.eye(3), r"shape \(5, 5\), one row per node of the graph; got shape \(3, 3\)"),
    (np.full((5, 5), np.nan), "NaN"),
    (np.ones(5), "2-dimensional"),
])
def test_bad_warm_start_is_one_clear_error(initial, message):
    with pytest.raises(InvalidInputError, match=message):
        fastest_mixing_weights(nx.path_graph(5), method="subgradient", initial_weights=initial)


def test_fastest_mixing_topology_warm_starts_from_a_topology():
    from topokit.design.mixing import fastest_mixing_topology
    from topokit.network.core import Topology

    graph = RANDOM_GRAPHS[3]
    nodes = list(range(graph.number_of_nodes()))
    fewer = Topology(list(without_some_links(graph, 0).edges()))
    all_links = Topology(list(graph.edges()))
    start = fastest_mixing_topology(fewer, nodes, method="subgradient")
    cold = fastest_mixing_topology(all_links, nodes, method="subgradient")
    warm = fastest_mixing_topology(all_links, nodes, method="subgradient", warm_start=start)
    slems = [independent_slem(t.mixing_matrix(nodes)) for t in (cold, warm)]
    assert abs(slems[0] - slems[1]) <= _fmmc.DEFAULT_TOL["subgradient"] + 1e-6  # min_weight
    with pytest.raises(InvalidInputError, match="warm_start must be a topokit Topology"):
        fastest_mixing_topology(all_links, nodes, warm_start=np.eye(len(nodes)))


# ---------------------------------------------------------------------------------------------
# The projection's per-node threshold
# ---------------------------------------------------------------------------------------------


def sorted_threshold(excess: np.ndarray) -> float:
    """The t with sum max(excess - t, 0) = 1, by sorting (the simplex projection's rule)."""
    ordered = np.sort(excess[excess > 0])[::-1]
    running = np.cumsum(ordered)
    candidates = (running - 1.0) / np.arange(1, ordered.size + 1)
    return float(candidates[np.flatnonzero(ordered > candidates)[-1]])


@pytest.mark.parametrize("excess_over_one", [1e-15, 1e-9, 1e-3, 0.5, 5.0])
def test_node_threshold_matches_the_sorted_rule_from_any_previous_threshold(excess_over_one):
    # Regression: from sums just above 1 (thresholds ~1e-14) round-off made the passes
    # cycle forever; they must stop, at the threshold the sort gives.
    rng = np.random.default_rng(7)
    for _ in range(50):
        excess = rng.normal(0.2, 0.3, rng.integers(2, 40))
        positive = excess[excess > 0]
        if positive.size == 0:
            continue
        excess *= (1.0 + excess_over_one) / positive.sum()
        total = float(excess[excess > 0].sum())
        if total <= 1.0:
            continue
        expected = sorted_threshold(excess)
        for previous in (0.0, expected / 2, expected, 2 * expected + 0.1, 10.0):
            found = _fmmc._node_threshold(excess, 0, excess.size, total, previous)
            assert found == pytest.approx(expected, abs=1e-12)
