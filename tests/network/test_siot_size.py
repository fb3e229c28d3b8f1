"""Issue #31: the SIoT generator's cost, and its refusals.

Growing the connected set drew each device with a pass over every row of the
synthetic city (``np.flatnonzero(frontier & ~inside)``): n passes over a city of
about 7.5 n rows, quadratic, 1.3 s of ``siot(20000)``.  The frontier is now
counted per block of rows; the draws, and so the networks, are the ones the
pass gave: these tests hold the new sampler to the old one, draw by draw.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy import sparse

from topokit.errors import InvalidInputError
from topokit.network import siot as siot_module
from topokit.network.siot import NO_COMPONENT_FIX, _grow_connected, load_siot_devices, siot


def _grown_by_passes(adjacency: sparse.csr_matrix, n: int,
                     rng: np.random.Generator) -> np.ndarray:
    """The sampler as it was: a pass over every row for every draw."""
    labels, sizes = siot_module._component_sizes(adjacency)
    eligible = np.flatnonzero(sizes[labels] >= n)
    chosen = [int(eligible[rng.integers(len(eligible))])]
    inside = np.zeros(adjacency.shape[0], dtype=bool)
    frontier = np.zeros(adjacency.shape[0], dtype=bool)
    inside[chosen[0]] = True
    indptr, indices = adjacency.indptr, adjacency.indices
    frontier[indices[indptr[chosen[0]]:indptr[chosen[0] + 1]]] = True
    while len(chosen) < n:
        candidates = np.flatnonzero(frontier & ~inside)
        node = int(candidates[rng.integers(len(candidates))])
        chosen.append(node)
        inside[node] = True
        frontier[indices[indptr[node]:indptr[node + 1]]] = True
    return np.sort(np.array(chosen, dtype=np.int64))


def _adjacency(graph: nx.Graph) -> sparse.csr_matrix:
    pairs = np.array(graph.edges, dtype=np.int64).reshape(-1, 2)
    return siot_module._adjacency(graph.number_of_nodes(), np.sort(pairs, axis=1))


GRAPHS = {
    "geometric": nx.random_geometric_graph(3000, 0.03, seed=1),
    "sparse-random": nx.gnm_random_graph(5000, 9000, seed=2),
    "path": nx.path_graph(700),
    "star": nx.star_graph(400),
    "disconnected": nx.disjoint_union(nx.cycle_graph(50), nx.complete_graph(30)),
}


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_blocked_frontier_draws_what_the_passes_drew(name, seed):
    graph = GRAPHS[name]
    adjacency = _adjacency(graph)
    sizes = np.bincount(siot_module._component_sizes(adjacency)[0])
    for n in sorted({1, 2, 25, int(sizes.max()) // 2, int(sizes.max())}):
        expected = _grown_by_passes(adjacency, n, np.random.default_rng(seed))
        got = _grow_connected(adjacency, n, np.random.default_rng(seed))
        np.testing.assert_array_equal(got, expected, err_msg=f"{name}, n={n}")


def test_the_generator_uses_the_blocked_frontier_in_the_synthetic_city():
    """The city of siot(1500) (scale 1.5, about 11,000 devices), grown both ways."""
    rngs = siot_module.spawn_generators(3, ["city", "network"])
    city = siot_module.siot_synthetic_devices(1.5, seed=rngs["city"])
    devices = siot_module._check_devices(city, "devices")
    oor, _ = siot_module._oor_pairs(devices, siot_module.DEFAULT_METRES_PER_UNIT,
                                    siot_module.DEFAULT_PUBLIC_RANGE_M, None)
    adjacency = siot_module._adjacency(len(devices), oor)
    for n in (16, 400, 1500):
        np.testing.assert_array_equal(
            _grow_connected(adjacency, n, np.random.default_rng(n)),
            _grown_by_passes(adjacency, n, np.random.default_rng(n)))


def test_a_network_keeps_its_devices_links_and_their_order():
    """The social graph is built from the chosen rows' links, in the links' order."""
    net = siot(300, seed=5)
    assert nx.is_connected(net.social)
    assert all(type(node) is int for node in net.social)  # JSON-ready ids, not numpy ints
    assert list(net.social) == sorted(net.social)
    edges = list(net.social.edges)
    assert all(type(u) is int and type(v) is int for u, v in edges)
    again = siot(300, seed=5)
    assert list(again.social.edges) == edges
    np.testing.assert_array_equal(again.delay, net.delay)


def test_a_scale_that_overflows_distances_is_refused_naming_it():
    with pytest.raises(InvalidInputError, match=r"metres_per_unit=1e\+300 .* use at most"):
        siot(16, seed=0, metres_per_unit=1e300)
    with pytest.raises(InvalidInputError, match="metres_per_unit"):
        siot_module.siot_oor_graph(load_siot_devices(), metres_per_unit=1e200)


def test_no_large_enough_component_says_how_to_get_one():
    with pytest.raises(InvalidInputError) as caught:
        siot(16, seed=0, metres_per_unit=1e6)
    assert str(caught.value).endswith(NO_COMPONENT_FIX)
    assert "no connected component holds 16 devices" in str(caught.value)
