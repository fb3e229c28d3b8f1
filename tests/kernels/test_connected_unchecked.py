"""connected_unchecked against networkx on graphs on both sides of its 64-node bit masks."""

import networkx as nx
import numpy as np
import pytest

from topokit.kernels.unchecked import connected_unchecked


@pytest.mark.parametrize("n", [1, 2, 16, 64, 65, 300])
@pytest.mark.parametrize("p", [0.005, 0.02, 0.1])
def test_it_agrees_with_networkx(n, p):
    for seed in range(5):
        graph = nx.gnp_random_graph(n, p, seed=seed)
        matrix = nx.to_numpy_array(graph, nodelist=range(n))
        assert connected_unchecked(matrix) == nx.is_connected(graph)


def test_a_link_given_one_way_counts_and_the_diagonal_does_not():
    matrix = np.zeros((70, 70))
    matrix[np.arange(69), np.arange(1, 70)] = 1.0  # a path, upper triangle only
    assert connected_unchecked(matrix)
    matrix[34, 35] = 0.0
    matrix[np.diag_indices(70)] = 1.0
    assert not connected_unchecked(matrix)
