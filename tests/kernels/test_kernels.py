"""Graph kernels against the paper's Table II and against plain-numpy twins."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from topokit import (
    hitting_times,
    kernels,
    lazy_metropolis,
    max_hitting_time,
    metropolis,
    spectral_gap,
)
from topokit.errors import InvalidInputError
from topokit.kernels import hitting_time_and_gap
from topokit.testing import naive_kernels as naive

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
FIG_2B = [("A", "B"), ("B", "C"), ("C", "D"), ("C", "E"),
          ("D", "E"), ("D", "A"), ("D", "F"), ("A", "F")]


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
    np.testing.assert_allclose(hitting_times(transition), naive.hitting_times(transition),
                               rtol=1e-8)
    assert spectral_gap(transition) == pytest.approx(naive.spectral_gap(transition), abs=1e-10)
    disconnected = nx.disjoint_union(graph, nx.path_graph(3))
    assert max_hitting_time(lazy_metropolis(disconnected)) == np.inf
    assert spectral_gap(lazy_metropolis(disconnected)) == 0.0


# --- the fused kernel: hitting_time_and_gap ---------------------------------------------------


def unfused(graph):
    transition = lazy_metropolis(graph)
    return max_hitting_time(transition), spectral_gap(transition)


def test_fused_toy_hitting_time_and_gap():
    hitting, gap = hitting_time_and_gap(fig_2b())
    assert isinstance(hitting, float) and isinstance(gap, float)
    assert hitting == pytest.approx(1584 / 61, rel=1e-12)
    assert gap == pytest.approx(spectral_gap(lazy_metropolis(fig_2b())), abs=1e-14)


@settings(max_examples=60, deadline=None)
@given(connected_graphs(max_nodes=20))
def test_fused_agrees_with_unfused_and_naive(graph):
    hitting, gap = hitting_time_and_gap(graph)
    hitting_unfused, gap_unfused = unfused(graph)
    assert hitting == pytest.approx(hitting_unfused, rel=1e-12)
    assert gap == pytest.approx(gap_unfused, rel=1e-12, abs=1e-14)
    hitting_naive, gap_naive = naive.reference_metrics(graph)
    assert hitting == pytest.approx(hitting_naive, rel=1e-9)
    assert gap == pytest.approx(gap_naive, rel=1e-9)
    assert 0 < gap <= 1


@settings(max_examples=30, deadline=None)
@given(st.lists(connected_graphs(max_nodes=9), min_size=1, max_size=6), st.integers(1, 9))
def test_fused_stack_agrees_with_single_and_unfused(graphs, n):
    # Pad every graph to n nodes (isolated nodes: those members are disconnected).
    size = max(n, *(g.number_of_nodes() for g in graphs))
    adjacency = np.zeros((len(graphs), size, size))
    for k, graph in enumerate(graphs):
        m = graph.number_of_nodes()
        adjacency[k, :m, :m] = nx.to_numpy_array(graph, nodelist=range(m))
    hitting, gap = hitting_time_and_gap(adjacency)
    assert hitting.shape == gap.shape == (len(graphs),)
    transitions = lazy_metropolis(adjacency)
    np.testing.assert_allclose(hitting, max_hitting_time(transitions), rtol=1e-12)
    np.testing.assert_allclose(gap, spectral_gap(transitions), rtol=1e-12, atol=1e-14)
    for k in range(len(graphs)):
        assert (hitting[k], gap[k]) == hitting_time_and_gap(adjacency[k])


STRUCTURED = {
    "complete": nx.complete_graph,
    "cycle": nx.cycle_graph,
    "path": nx.path_graph,
    "star": lambda n: nx.star_graph(n - 1),
    "wheel": nx.wheel_graph,
    "barbell": lambda n: nx.barbell_graph(max(2, n // 3), max(0, n - 2 * max(2, n // 3))),
    "ladder": lambda n: nx.ladder_graph(n // 2),
}


@pytest.mark.parametrize("n", [2, 3, 4, 16, 47, 48, 49, 64, 65, 100])
@pytest.mark.parametrize("kind", sorted(STRUCTURED))
def test_fused_structured_graphs(kind, n):
    # Repeated eigenvalues and exact ties in the Sturm counts; 64/65 cross the bit-mask limit.
    graph = nx.convert_node_labels_to_integers(STRUCTURED[kind](n))
    hitting, gap = hitting_time_and_gap(graph)
    hitting_unfused, gap_unfused = unfused(graph)
    assert hitting == pytest.approx(hitting_unfused, rel=1e-10)
    assert gap == pytest.approx(gap_unfused, rel=1e-10, abs=1e-14)
    eigenvalues = np.linalg.eigvalsh(lazy_metropolis(graph))
    assert gap == pytest.approx(1 - eigenvalues[-2], rel=1e-9, abs=1e-14)


@pytest.mark.parametrize("n", [4, 40, 70])
def test_fused_disconnected_gives_inf_and_zero_gap(n):
    graph = nx.disjoint_union(nx.path_graph(n // 2), nx.cycle_graph(n - n // 2))
    assert hitting_time_and_gap(graph) == (np.inf, 0.0)
    isolated = nx.path_graph(n)
    isolated.add_node(n)
    assert hitting_time_and_gap(isolated) == (np.inf, 0.0)
    pair = np.stack([nx.to_numpy_array(graph), nx.to_numpy_array(nx.path_graph(n))])
    hitting, gap = hitting_time_and_gap(pair)
    assert hitting[0] == np.inf and gap[0] == 0.0 and np.isfinite(hitting[1]) and gap[1] > 0


def test_fused_small_cases():
    assert hitting_time_and_gap(np.zeros((1, 1))) == (0.0, 1.0)
    assert hitting_time_and_gap(np.zeros((2, 2))) == (np.inf, 0.0)
    assert hitting_time_and_gap(nx.path_graph(2)) == (2.0, 1.0)


def test_fused_reads_any_nonzero_off_diagonal_entry_as_a_link():
    adjacency = nx.to_numpy_array(fig_2b())
    weighted = adjacency * np.arange(1, 37).reshape(6, 6)
    weighted = np.maximum(weighted, weighted.T)
    np.fill_diagonal(weighted, 3.0)
    assert hitting_time_and_gap(weighted) == hitting_time_and_gap(adjacency)
    assert hitting_time_and_gap(adjacency.astype(int).tolist()) == hitting_time_and_gap(adjacency)


def test_fused_large_single_matrix_uses_lapack_and_agrees():
    graph = nx.connected_watts_strogatz_graph(kernels.FUSED_SINGLE_MAX + 20, 4, 0.3, seed=5)
    hitting, gap = hitting_time_and_gap(graph)
    hitting_unfused, gap_unfused = unfused(graph)
    assert hitting == pytest.approx(hitting_unfused, rel=1e-10)
    assert gap == pytest.approx(gap_unfused, rel=1e-10)
    # The same graph in a stack runs the fused kernel at this size too.
    stacked_hitting, stacked_gap = hitting_time_and_gap(nx.to_numpy_array(graph)[None])
    assert stacked_hitting[0] == pytest.approx(hitting, rel=1e-9)
    assert stacked_gap[0] == pytest.approx(gap, rel=1e-9)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (np.ones((2, 3)), "square"),
        (np.array([[0, np.nan], [np.nan, 0]]), "NaN"),
        (np.array([[0, -1.0], [-1.0, 0]]), "negative"),
        (np.array([[0, 1.0], [0, 0]]), "symmetric"),
        (np.zeros((0, 0)), "at least one node"),
    ],
)
def test_fused_bad_adjacency(matrix, message):
    with pytest.raises(InvalidInputError, match=message):
        hitting_time_and_gap(matrix)


def test_single_matrices_stay_off_the_thread_pool(monkeypatch):
    """Regression: one matrix went through the prange kernels, whose spinning threads then
    slowed the next LAPACK call about tenfold (3.9 ms instead of 0.4 ms at n = 128)."""
    from topokit.kernels import _fused, _gap, _hitting, _validation, _weights

    def refuse(*args):
        raise AssertionError("a parallel kernel was called for a single matrix")

    monkeypatch.setattr(_weights, "metropolis_family_stack", refuse)
    for name in ("hitting_times_stack", "max_hitting_time_stack"):
        monkeypatch.setattr(_hitting, name, refuse)
    monkeypatch.setattr(_gap, "spectral_gap_stack", refuse)
    monkeypatch.setattr(_fused, "hitting_time_and_gap_stack", refuse)
    monkeypatch.setattr(_validation, "scan_parallel", refuse)
    for graph in (fig_2b(), nx.connected_watts_strogatz_graph(140, 4, 0.3, seed=1)):
        transition = lazy_metropolis(graph)
        metropolis(graph)
        hitting_times(transition)
        max_hitting_time(transition)
        spectral_gap(transition)
        hitting_time_and_gap(graph)
    disconnected = lazy_metropolis(nx.disjoint_union(nx.path_graph(140), nx.path_graph(3)))
    assert max_hitting_time(disconnected) == np.inf


# --- the unfused kernels on stacks: agree with per-graph twins and with batched numpy --------


def padded_stack(graphs, size):
    adjacency = np.zeros((len(graphs), size, size))
    for k, graph in enumerate(graphs):
        m = graph.number_of_nodes()
        adjacency[k, :m, :m] = nx.to_numpy_array(graph, nodelist=range(m))
    return adjacency


@settings(max_examples=25, deadline=None)
@given(st.lists(connected_graphs(max_nodes=12), min_size=2, max_size=8), st.integers(2, 12))
def test_stack_kernels_agree_with_per_graph_twins(graphs, n):
    size = max(n, *(g.number_of_nodes() for g in graphs))
    transitions = lazy_metropolis(padded_stack(graphs, size))
    largest, gaps, times = max_hitting_time(transitions), spectral_gap(transitions), \
        hitting_times(transitions)
    for k, graph in enumerate(graphs):
        if graph.number_of_nodes() < size:  # padded with isolated nodes: disconnected
            assert largest[k] == np.inf and gaps[k] == 0.0
            continue
        expected = naive.hitting_times(transitions[k])
        np.testing.assert_allclose(times[k], expected, rtol=1e-9, atol=1e-9)
        assert largest[k] == pytest.approx(expected.max(), rel=1e-10)
        assert gaps[k] == pytest.approx(naive.spectral_gap(transitions[k]), abs=1e-10)


@pytest.mark.parametrize("n", [2, 16, 33, 64, 65, 100])
def test_stack_kernels_agree_with_batched_numpy(n):
    rng = np.random.default_rng(n)
    graphs = [nx.connected_watts_strogatz_graph(n, min(4, n - 1), 0.3, seed=int(s))
              if n > 4 else nx.path_graph(n) for s in rng.integers(0, 10**6, 12)]
    adjacency = padded_stack(graphs, n)
    transitions = lazy_metropolis(adjacency)
    np.testing.assert_array_equal(transitions, naive.batched_lazy_metropolis(adjacency)
                                  * (1 - np.eye(n)) + transitions * np.eye(n))
    np.testing.assert_allclose(np.diagonal(transitions, axis1=1, axis2=2),
                               np.diagonal(naive.batched_lazy_metropolis(adjacency), axis1=1,
                                           axis2=2), rtol=0, atol=1e-15)
    np.testing.assert_allclose(max_hitting_time(transitions),
                               naive.batched_max_hitting_time(transitions), rtol=1e-10)
    np.testing.assert_allclose(spectral_gap(transitions), naive.batched_spectral_gap(transitions),
                               rtol=1e-9, atol=1e-13)
    fused_h, fused_gap = hitting_time_and_gap(adjacency)
    np.testing.assert_allclose(fused_h, max_hitting_time(transitions), rtol=1e-11)
    np.testing.assert_allclose(fused_gap, spectral_gap(transitions), rtol=1e-12, atol=1e-15)


def test_weights_are_bit_identical_for_graphs_stacks_and_nonzero_weights():
    graphs = [nx.gnm_random_graph(14, 30, seed=s) for s in range(10)]
    adjacency = padded_stack(graphs, 14)
    weighted = adjacency * np.arange(1, 14 * 14 + 1).reshape(14, 14)
    weighted = np.maximum(weighted, np.swapaxes(weighted, 1, 2)) + 5 * np.eye(14)
    for function in (lazy_metropolis, metropolis):
        stack = function(adjacency)
        np.testing.assert_array_equal(function(weighted), stack)
        for k, graph in enumerate(graphs):
            np.testing.assert_array_equal(function(graph), stack[k])
            np.testing.assert_array_equal(function(adjacency[k]), stack[k])


def test_non_lazy_and_general_matrices_in_a_stack():
    # Metropolis weights can have negative eigenvalues (|lambda_n| may set the gap); a
    # non-symmetric chain takes the general kernel; both next to lazy matrices in one stack.
    rng = np.random.default_rng(5)
    graphs = [nx.connected_watts_strogatz_graph(12, 4, 0.5, seed=int(s))
              for s in rng.integers(0, 10**6, 6)] + [nx.complete_bipartite_graph(6, 6)]
    adjacency = padded_stack(graphs, 12)
    plain = metropolis(adjacency)
    np.testing.assert_allclose(spectral_gap(plain), naive.batched_spectral_gap(plain),
                               rtol=1e-9, atol=1e-13)
    assert spectral_gap(plain)[-1] == pytest.approx(naive.spectral_gap(plain[-1]), abs=1e-12)
    directed = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    pair = np.stack([directed, lazy_metropolis(nx.path_graph(3))])
    times = hitting_times(pair)
    np.testing.assert_allclose(times[0], naive.hitting_times(directed), rtol=1e-12)
    np.testing.assert_allclose(max_hitting_time(pair), [t.max() for t in times], rtol=1e-12)


def test_nearly_doubly_stochastic_symmetric_matrix_uses_its_stationary_law():
    # Symmetric, rows summing to 1 within the validation tolerance (1e-8) but not within
    # 1e-12: not the doubly stochastic fast path.
    transition = lazy_metropolis(nx.cycle_graph(5))
    transition[0, 0] -= 5e-10
    expected = naive.hitting_times(transition / transition.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(hitting_times(transition), expected, rtol=1e-7)
    assert max_hitting_time(np.stack([transition, transition]))[0] == pytest.approx(
        hitting_times(transition).max(), rel=1e-12)


@pytest.mark.parametrize("kind", sorted(STRUCTURED))
def test_unfused_gap_matches_fused_gap_on_repeated_eigenvalues(kind):
    # Structured graphs have multiple and dyadic eigenvalues: the multisection must still
    # land on lambda_2 (Newton is used only once lambda_2 is isolated).
    for n in (5, 16, 40, 70):
        graph = nx.convert_node_labels_to_integers(STRUCTURED[kind](n))
        transition = lazy_metropolis(graph)
        expected = naive.spectral_gap(transition)
        assert spectral_gap(transition) == pytest.approx(expected, rel=1e-9, abs=1e-13)
        assert spectral_gap(transition[None])[0] == pytest.approx(hitting_time_and_gap(graph)[1],
                                                                  rel=1e-12, abs=1e-15)


# --- validation: one compiled scan, the canonical messages ---------------------------------


@pytest.mark.parametrize(
    ("entry", "message"),
    [(np.nan, "NaN"), (np.inf, "infinite"), (-0.25, "negative")],
)
def test_bad_entries_in_a_stack_are_named(entry, message):
    stack = lazy_metropolis(np.stack([nx.to_numpy_array(nx.cycle_graph(6))] * 3))
    stack[2, 1, 1] = entry
    for function in (hitting_times, max_hitting_time, spectral_gap):
        with pytest.raises(InvalidInputError, match=message):
            function(stack)
    adjacency = np.stack([nx.to_numpy_array(nx.cycle_graph(6))] * 3)
    adjacency[1, 0, 3] = adjacency[1, 3, 0] = entry
    with pytest.raises(InvalidInputError, match=message):
        lazy_metropolis(adjacency)


def test_tolerances_of_the_fast_checks_are_the_canonical_ones():
    transition = lazy_metropolis(nx.cycle_graph(6))
    slightly = transition.copy()
    slightly[0, 1] += 1e-11  # asymmetric within 1e-10, rows within 1e-8: accepted
    slightly[0, 0] -= 1e-11
    assert spectral_gap(slightly) == pytest.approx(spectral_gap(transition), abs=1e-9)
    skewed = transition.copy()
    skewed[0, 1] += 1e-6
    skewed[0, 0] -= 1e-6
    with pytest.raises(InvalidInputError, match="symmetric"):
        spectral_gap(np.stack([transition, skewed]))
    loose = transition.copy()
    loose[2, 2] += 1e-7
    with pytest.raises(InvalidInputError, match="row-stochastic"):
        max_hitting_time(np.stack([transition, loose]))
    # Lists, integer arrays and non-contiguous views take the canonical path, same answers.
    assert spectral_gap(transition.tolist()) == spectral_gap(transition)
    view = np.asfortranarray(np.stack([transition, transition]))
    expected = max_hitting_time(transition[None])[[0, 0]]
    np.testing.assert_array_equal(max_hitting_time(view), expected)
    adjacency = nx.to_numpy_array(nx.cycle_graph(6)).astype(int)
    np.testing.assert_array_equal(lazy_metropolis(adjacency), transition)


# --- one large matrix: Cholesky and Lanczos in LAPACK ---------------------------------------


@pytest.mark.parametrize("n", [130, 300, 420])
def test_single_large_matrix_paths_agree_with_numpy(n):
    graph = nx.connected_watts_strogatz_graph(n, 4, 0.3, seed=n)
    transition = lazy_metropolis(graph)
    expected_h = naive.batched_max_hitting_time(transition[None])[0]
    expected_gap = naive.batched_spectral_gap(transition[None])[0]
    assert max_hitting_time(transition) == pytest.approx(expected_h, rel=1e-10)
    assert spectral_gap(transition) == pytest.approx(expected_gap, rel=1e-10)
    hitting, gap = hitting_time_and_gap(graph)
    assert hitting == pytest.approx(expected_h, rel=1e-10)
    assert gap == pytest.approx(expected_gap, rel=1e-10)
    full = hitting_times(transition)
    assert full.max() == pytest.approx(expected_h, rel=1e-10)
    np.testing.assert_allclose(full[:, :5], naive.hitting_times(transition)[:, :5], rtol=1e-9)


def test_single_large_non_lazy_matrix_falls_back_to_eigvalsh():
    # Metropolis weights of K_{200,200}: (I + A) / 201 has lambda_2 = 1/201 and
    # lambda_n = -199/201, which sets the gap, 2/201; the Lanczos route (smallest
    # eigenvalue of I - A + J/n) would give 1 - lambda_2 = 200/201.
    bipartite = metropolis(nx.complete_bipartite_graph(200, 200))
    assert spectral_gap(bipartite) == pytest.approx(2 / 201, rel=1e-10)
    assert spectral_gap(bipartite) == pytest.approx(naive.batched_spectral_gap(bipartite[None])[0],
                                                    rel=1e-10)
    assert max_hitting_time(bipartite) == pytest.approx(
        naive.batched_max_hitting_time(bipartite[None])[0], rel=1e-9)


def test_dense_adjacency_of_a_graph_too_large_for_memory_is_refused(monkeypatch):
    from topokit.kernels import _validation

    monkeypatch.setattr(_validation, "available_memory", lambda: 1e6)
    with pytest.raises(InvalidInputError, match="1,000 x 1,000.*sparse_spectral_gap"):
        hitting_time_and_gap(nx.path_graph(1000))
    with pytest.raises(InvalidInputError, match="hitting_time_bounds"):
        lazy_metropolis(nx.path_graph(1000))


# --- large sparse graphs: Lanczos gap and hitting-time bounds --------------------------------

SPARSE_GRAPHS = {
    "preferential attachment": lambda: nx.barabasi_albert_graph(300, 3, seed=1),
    "powerlaw cluster": lambda: nx.powerlaw_cluster_graph(250, 2, 0.3, seed=2),
    "small world": lambda: nx.connected_watts_strogatz_graph(200, 6, 0.1, seed=3),
    "communities": lambda: nx.connected_caveman_graph(8, 12),
    "tree": lambda: nx.random_labeled_tree(150, seed=4),
    "path": lambda: nx.path_graph(120),
    "grid": lambda: nx.convert_node_labels_to_integers(nx.grid_2d_graph(12, 12)),
    "star": lambda: nx.star_graph(60),
    "complete": lambda: nx.complete_graph(30),
    "karate": nx.karate_club_graph,
}


@pytest.mark.parametrize("kind", sorted(SPARSE_GRAPHS))
def test_sparse_gap_equals_dense_eigvalsh(kind):
    graph = SPARSE_GRAPHS[kind]()
    transition = lazy_metropolis(graph)
    expected = 1.0 - np.linalg.eigvalsh(transition)[-2]
    gap = kernels.sparse_spectral_gap(graph)
    assert gap == pytest.approx(expected, rel=1e-8, abs=1e-12)
    adjacency = nx.to_numpy_array(graph)
    assert kernels.sparse_spectral_gap(adjacency) == pytest.approx(gap, rel=1e-10)
    assert kernels.sparse_spectral_gap(sp.csr_array(adjacency)) == pytest.approx(gap, rel=1e-10)


@pytest.mark.parametrize("kind", sorted(SPARSE_GRAPHS))
def test_hitting_time_bounds_hold_and_are_tight_where_documented(kind):
    graph = SPARSE_GRAPHS[kind]()
    n = graph.number_of_nodes()
    exact = max_hitting_time(lazy_metropolis(graph))
    bounds = kernels.hitting_time_bounds(graph, method="bound")
    assert not bounds.exact
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.factor <= 2 * (n - 1)  # the documented worst case
    if kind in ("preferential attachment", "tree", "path", "star"):
        assert bounds.factor <= 2.05  # about 2 (documented)
    if kind != "grid":
        assert bounds.lower >= 0.99 * exact  # the targets' solves find H on these graphs
    computed = kernels.hitting_time_bounds(graph, method="exact")
    assert computed.exact and computed.lower == computed.upper
    assert computed.lower == pytest.approx(exact, rel=1e-12)
    assert kernels.hitting_time_bounds(graph) == computed  # auto: exact at this size


def test_target_solve_lower_bound_is_certified_even_when_inaccurate():
    from topokit.kernels._sparse import (
        hitting_times_to,
        lazy_metropolis_sparse,
        sparse_adjacency,
    )

    graph = nx.barabasi_albert_graph(200, 2, seed=7)
    walk = lazy_metropolis_sparse(sparse_adjacency(graph))
    times = hitting_times(lazy_metropolis(graph))
    for target in (0, 17, 199):
        for iterations in (1, 3, 10, 10_000):
            solved = hitting_times_to(walk.laplacian(), target, rtol=1e-14, max_iter=iterations)
            assert solved.lower <= times[:, target].max()
        assert solved.lower == pytest.approx(times[:, target].max(), rel=1e-9)
        np.testing.assert_allclose(solved.times, times[:, target], rtol=1e-8)


def test_sparse_walk_weights_are_those_of_lazy_metropolis():
    from topokit.kernels._sparse import lazy_metropolis_sparse, sparse_adjacency

    graph = nx.powerlaw_cluster_graph(80, 3, 0.4, seed=1)
    graph.add_edge(5, 5)  # a self-loop is not a link
    walk = lazy_metropolis_sparse(sparse_adjacency(graph))
    dense = lazy_metropolis(graph)
    off_diagonal = walk.weights.toarray()
    np.testing.assert_array_equal(off_diagonal, dense * (1 - np.eye(80)))
    np.testing.assert_array_equal(1.0 - walk.row_sums, np.diag(dense))
    resistances = naive.effective_resistances(dense)
    commute = hitting_times(dense) + hitting_times(dense).T
    np.testing.assert_allclose(commute, 80 * resistances, rtol=1e-8, atol=1e-8)
    assert max_hitting_time(dense) >= naive.kemeny_constant(dense)


def test_sparse_functions_on_disconnected_and_tiny_graphs():
    disconnected = nx.disjoint_union(nx.barabasi_albert_graph(50, 2, seed=1), nx.path_graph(4))
    assert kernels.sparse_spectral_gap(disconnected) == 0.0
    for method in ("auto", "exact", "bound"):
        bounds = kernels.hitting_time_bounds(disconnected, method=method)
        assert bounds == (np.inf, np.inf, True)
    isolated = nx.path_graph(5)
    isolated.add_node(5)
    assert kernels.sparse_spectral_gap(isolated) == 0.0
    one = nx.Graph()
    one.add_node("a")
    assert kernels.sparse_spectral_gap(one) == 1.0
    assert kernels.hitting_time_bounds(one) == (0.0, 0.0, True)
    pair = nx.path_graph(2)
    assert kernels.sparse_spectral_gap(pair) == pytest.approx(1.0)
    assert kernels.hitting_time_bounds(pair).lower == pytest.approx(2.0)
    assert kernels.hitting_time_bounds(pair, method="bound").lower <= 2.0 <= \
        kernels.hitting_time_bounds(pair, method="bound").upper


def test_exact_hitting_time_of_a_graph_too_large_is_refused_before_allocating(monkeypatch):
    graph = nx.path_graph(2000)
    with pytest.raises(InvalidInputError, match=r"2,000-node graph.*0\.0298 GiB.*method='bound'"):
        kernels.hitting_time_bounds(graph, method="exact", max_memory=1e6)
    auto = kernels.hitting_time_bounds(graph, max_memory=1e6)  # auto falls back to bounds
    assert not auto.exact and auto.lower <= auto.upper
    from topokit.kernels import _large

    def no_dense(*args, **kwargs):
        raise AssertionError("the dense matrix was allocated")

    monkeypatch.setattr(_large, "_exact_hitting_time", no_dense)
    monkeypatch.setattr(_large, "available_memory", lambda: 1e6)
    with pytest.raises(InvalidInputError, match="more than the"):
        kernels.hitting_time_bounds(graph, method="exact")


@pytest.mark.parametrize(
    ("graph", "message"),
    [
        (nx.DiGraph([(0, 1)]), "undirected"),
        (nx.Graph(), "at least one node"),
        (np.ones((2, 3)), "square"),
        (np.array([[0, 1.0], [0, 0]]), "symmetric"),
        (np.zeros((2, 2, 2)), "one matrix"),
        (sp.csr_array(np.array([[0, np.nan], [np.nan, 0]])), "NaN"),
        (sp.csr_array(np.array([[0, -1.0], [-1.0, 0]])), "negative"),
        (sp.csr_array(np.array([[0, np.inf], [np.inf, 0]])), "infinite"),
        (sp.csr_array(np.array([[0, 1.0], [0, 0]])), "symmetric"),
        (sp.csr_array((0, 0)), "at least one node"),
        (sp.csr_array(np.ones((2, 3))), "square"),
    ],
)
def test_sparse_bad_inputs(graph, message):
    with pytest.raises(InvalidInputError, match=message):
        kernels.sparse_spectral_gap(graph)
    with pytest.raises(InvalidInputError, match=message):
        kernels.hitting_time_bounds(graph)


def test_hitting_time_bounds_bad_options():
    with pytest.raises(InvalidInputError, match="method"):
        kernels.hitting_time_bounds(nx.path_graph(3), method="dense")
    with pytest.raises(InvalidInputError, match="n_targets"):
        kernels.hitting_time_bounds(nx.path_graph(3), n_targets=0)


# --- the router and the entry points that trust their input ----------------------------------


def test_router_classifies_once_into_a_route():
    from topokit.kernels._router import DENSE_THRESHOLD, Route, route

    ring = lazy_metropolis(nx.cycle_graph(5))
    assert route(ring) == Route(5, True, True, True, False, False)
    apart = lazy_metropolis(nx.disjoint_union(nx.path_graph(DENSE_THRESHOLD), nx.path_graph(2)))
    assert route(apart) == Route(DENSE_THRESHOLD + 2, True, False, False, True, True)
    one_way = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    assert route(one_way)[1:4] == (False, True, True)
    transient = np.array([[0.5, 0.5], [0.0, 1.0]])
    assert route(transient)[1:4] == (False, True, False)


@pytest.mark.parametrize("graph", [nx.cycle_graph(6), nx.karate_club_graph(),
                                   nx.connected_watts_strogatz_graph(140, 4, 0.3, seed=1),
                                   nx.disjoint_union(nx.path_graph(5), nx.path_graph(3))])
def test_unchecked_entry_points_give_the_public_numbers(graph):
    from topokit.kernels import unchecked

    adjacency = nx.to_numpy_array(graph)
    weights = lazy_metropolis(adjacency)
    assert unchecked.hitting_time_and_gap_unchecked(adjacency) == hitting_time_and_gap(adjacency)
    assert unchecked.walk_summary_unchecked(weights) == (max_hitting_time(weights),
                                                          spectral_gap(weights))
    np.testing.assert_array_equal(unchecked.hitting_times_unchecked(weights),
                                  hitting_times(weights))
    compiled = np.empty_like(adjacency)
    unchecked.lazy_metropolis_one(adjacency, compiled)
    np.testing.assert_array_equal(compiled, weights)
