"""Topology's numpy path for integer node ids stores exactly what the general path does."""

from __future__ import annotations

import numpy as np
import pytest

from topokit import Topology
from topokit.errors import InvalidTopologyError
from topokit.network.core import _integer_pairs, node_sort_key


def general(edges):
    """The links as the general path orders them: canonical pairs by node_sort_key."""
    canonical = {(u, v) if node_sort_key(u) <= node_sort_key(v) else (v, u) for u, v in edges}
    return tuple(sorted(canonical, key=lambda p: (node_sort_key(p[0]), node_sort_key(p[1]))))


@pytest.mark.parametrize("seed", range(5))
def test_integer_links_are_stored_as_the_general_path_stores_them(seed):
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**6, size=40, replace=False) - 5 * 10**5  # negative ids too
    pairs = ids[rng.integers(0, 40, size=(300, 2))]
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]  # duplicates and both orientations stay
    as_tuples = [(int(u), int(v)) for u, v in pairs]
    expected = general(as_tuples)
    assert _integer_pairs(as_tuples) is not None  # the numpy path is taken
    for edges in (as_tuples, [tuple(p) for p in pairs], pairs, pairs.astype(np.int32)):
        stored = Topology(edges).edges
        assert stored == expected
        assert all(type(node) is int for pair in stored for node in pair)
    # An iterator takes the general path, to the same links.
    assert Topology(iter(as_tuples)).edges == expected


def test_ids_beyond_a_one_dimensional_key_are_sorted_as_rows():
    edges = [(0, 2**40), (2**40, 5), (-(2**40), 0), (5, 0)]
    assert Topology(edges).edges == general(edges)


def test_a_weight_sequence_follows_the_pairs_as_given():
    edges = [(2, 0), (1, 2), (0, 1)]
    weighted = Topology(edges, weights=[0.1, 0.2, 0.3])
    by_pair = dict(zip(weighted.edges, weighted.weights, strict=True))
    assert by_pair == {(0, 2): 0.1, (1, 2): 0.2, (0, 1): 0.3}


@pytest.mark.parametrize("edges", [
    [(True, 2)],  # a bool is a node id of its own, not 1
    [(1.0, 2)],
    [("a", "b")],
    [(1, 2, 3)],
    [(1, 2), (3,)],
    [(2**70, 1)],
])
def test_other_ids_and_malformed_links_take_the_general_path(edges):
    assert _integer_pairs(edges) is None


def test_a_bool_id_is_kept_as_given():
    stored = Topology([(True, 2)]).edges
    assert stored == general([(True, 2)]) and type(stored[0][0]) is bool


def test_a_self_loop_is_refused_in_the_same_words():
    with pytest.raises(InvalidTopologyError, match=r"^self-loop on node 3: a link must join"):
        Topology([(1, 2), (3, 3)])
    with pytest.raises(InvalidTopologyError, match=r"^self-loop on node 3: a link must join"):
        Topology(np.array([[1, 2], [3, 3]]))
