"""Graph kernels against the paper's Table II and against plain-numpy twins."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import naive
from topokit import hitting_times, lazy_metropolis, max_hitting_time, metropolis, spectral_gap
from topokit.errors import InvalidInputError

# DeepPrivacy Table II: rows are the start, columns the target (A..F), one decimal.
TABLE_II = np.array(
    [
        [0, 15, 16.5, 10.5, 25.3, 15.9],
        [11.3, 0, 11.3, 13.5, 23.6, 23.6],
        [16.5, 15, 0, 10.5, 15.9, 25.3],
        [13, 19.7, 13, 0, 18.8, 18.8],
        [18.4, 20.5, 9, 9.5, 0, 26],
        [9, 20.5, 18.4, 9.5, 26, 0],
    ]
)
FIG_2B = [("A", "B"), ("B", "C"), ("C", "D"), ("C", "E"), ("D", "E"), ("D", "A"), ("D", "F"), ("A", "F")]


def fig_2b() -> nx.Graph:
    graph = nx.Graph()
    graph.add_nodes_from("ABCDEF")
    graph.add_edges_from(FIG_2B)
    return graph


def test_table_ii_hitting_times():
    times = hitting_times(lazy_metropolis(fig_2b()))
    np.testing.assert_allclose(times, TABLE_II, atol=0.05)


def test_toy_hitting_time_and_gap():
    transition = lazy_metropolis(fig_2b())
    assert max_hitting_time(transition) == pytest.approx(1584 / 61, rel=1e-12)
    assert round(max_hitting_time(transition)) == 26
    assert spectral_gap(transition) == pytest.approx(0.18866, abs=1e-5)


def test_example_2_transition_entries():
    # m_CA = 1 + 1/6 m_BA + 13/24 m_CA + 1/8 m_DA + 1/6 m_EA in the paper's Example 2.
    transition = lazy_metropolis(fig_2b())
    assert transition[2, 1] == pytest.approx(1 / 6)
    assert transition[2, 2] == pytest.approx(13 / 24)
    assert transition[2, 3] == pytest.approx(1 / 8)
    assert transition[1, 1] == pytest.approx(2 / 3)


@st.composite
def connected_graphs(draw, max_nodes=12):
    n = draw(st.integers(2, max_nodes))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    tree = nx.random_labeled_tree(n, seed=seed) if n > 2 else nx.path_graph(n)
    extra = draw(st.integers(0, n))
    graph = nx.Graph(tree)
    for _ in range(extra):
        u, v = rng.choice(n, size=2, replace=False)
        graph.add_edge(int(u), int(v))
    return graph


@settings(max_examples=60, deadline=None)
@given(connected_graphs())
def test_weights_doubly_stochastic_and_symmetric(graph):
    weights = lazy_metropolis(graph)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(weights, weights.T, atol=0)
    assert (np.diag(weights) >= 0.5 - 1e-12).all()
    np.testing.assert_allclose(weights, naive.lazy_metropolis(nx.to_numpy_array(graph)), atol=1e-14)


@settings(max_examples=60, deadline=None)
@given(connected_graphs())
def test_hitting_times_agree_with_direct_solve(graph):
    transition = lazy_metropolis(graph)
    np.testing.assert_allclose(
        hitting_times(transition), naive.hitting_times(transition), rtol=1e-8, atol=1e-8
    )


@settings(max_examples=60, deadline=None)
@given(connected_graphs())
def test_gap_in_unit_interval_and_matches_eigvals(graph):
    transition = lazy_metropolis(graph)
    gap = spectral_gap(transition)
    assert 0 < gap <= 1
    assert gap == pytest.approx(naive.spectral_gap(transition), abs=1e-9)


def test_metropolis_weights():
    # Path 0-1-2 has degrees 1, 2, 1: a_01 = a_12 = 1 / (1 + 2).
    weights = metropolis(nx.path_graph(3))
    third = 1 / 3
    np.testing.assert_allclose(
        weights, [[2 * third, third, 0], [third, third, third], [0, third, 2 * third]]
    )


def test_stack_matches_single():
    rng = np.random.default_rng(0)
    graphs = [nx.gnm_random_graph(10, 20, seed=int(s)) for s in rng.integers(0, 10**6, 30)]
    adjacency = np.stack([nx.to_numpy_array(g) for g in graphs])
    stack = lazy_metropolis(adjacency)
    largest = max_hitting_time(stack)
    gaps = spectral_gap(stack)
    assert largest.shape == gaps.shape == (30,)
    for k, graph in enumerate(graphs):
        single = lazy_metropolis(graph)
        np.testing.assert_allclose(stack[k], single)
        assert largest[k] == pytest.approx(max_hitting_time(single)) or not np.isfinite(largest[k])
        assert gaps[k] == pytest.approx(spectral_gap(single), abs=1e-12)


def test_disconnected_graph_gives_inf_and_zero_gap():
    graph = nx.Graph([(0, 1), (2, 3)])
    transition = lazy_metropolis(graph)
    times = hitting_times(transition)
    assert np.isinf(times[0, 2]) and np.isinf(times[3, 1])
    assert times[0, 1] == pytest.approx(naive.hitting_times(transition[:2, :2])[0, 1])
    assert max_hitting_time(transition) == np.inf
    assert spectral_gap(transition) == 0.0


def test_isolated_node_is_disconnected():
    graph = nx.path_graph(3)
    graph.add_node(3)
    assert max_hitting_time(lazy_metropolis(graph)) == np.inf


def test_single_node():
    assert hitting_times(np.ones((1, 1))).tolist() == [[0.0]]
    assert spectral_gap(np.ones((1, 1))) == 1.0


def test_non_symmetric_irreducible_chain():
    # A directed 3-cycle with laziness: hitting times of a non-reversible chain.
    transition = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    np.testing.assert_allclose(hitting_times(transition), naive.hitting_times(transition))
    nonuniform = np.array([[0.2, 0.8, 0.0], [0.3, 0.3, 0.4], [0.0, 0.9, 0.1]])
    np.testing.assert_allclose(hitting_times(nonuniform), naive.hitting_times(nonuniform))


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (np.ones((2, 3)) / 3, "square"),
        (np.array([[0.5, np.nan], [0.5, 0.5]]), "NaN"),
        (np.array([[1.5, -0.5], [0.5, 0.5]]), "negative"),
        (np.array([[0.5, 0.4], [0.5, 0.5]]), "row-stochastic"),
        (np.zeros((0, 0)), "at least one node"),
    ],
)
def test_bad_transition_matrices(matrix, message):
    with pytest.raises(InvalidInputError, match=message):
        hitting_times(matrix)


def test_spectral_gap_needs_symmetry():
    transition = np.array([[0.2, 0.8, 0.0], [0.3, 0.3, 0.4], [0.0, 0.9, 0.1]])
    with pytest.raises(ValueError, match="symmetric"):
        spectral_gap(transition)


def test_transient_states_refused():
    transition = np.array([[0.5, 0.5], [0.0, 1.0]])
    with pytest.raises(ValueError, match="transient"):
        hitting_times(transition)


def test_lazy_metropolis_rejects_asymmetric_adjacency():
    with pytest.raises(ValueError, match="symmetric"):
        lazy_metropolis(np.array([[0, 1], [0, 0]]))


def test_graph_passed_to_hitting_times_is_explained():
    with pytest.raises(ValueError, match="lazy_metropolis"):
        hitting_times(nx.path_graph(3))


def test_large_single_matrix_path_matches_reference():
    # From 128 nodes on a single matrix goes to LAPACK; it must agree with the definition.
    graph = nx.connected_watts_strogatz_graph(140, 4, 0.3, seed=3)
    transition = lazy_metropolis(graph)
    np.testing.assert_allclose(hitting_times(transition), naive.hitting_times(transition), rtol=1e-8)
    assert spectral_gap(transition) == pytest.approx(naive.spectral_gap(transition), abs=1e-10)
    disconnected = nx.disjoint_union(graph, nx.path_graph(3))
    assert max_hitting_time(lazy_metropolis(disconnected)) == np.inf
    assert spectral_gap(lazy_metropolis(disconnected)) == 0.0
