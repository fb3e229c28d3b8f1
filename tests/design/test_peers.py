"""Song et al.'s U-EquiStatic (NeurIPS 2022) in topokit.design.peers: the paper's definition,
the consensus-rate bound it proves, the degree, and the construction over a network.

(The time-varying peers of the same module are tested with the schedules they return, in
tests/network/test_schedule.py, and as validate specs in tests/validation/test_peer_specs.py.)
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from topokit import Network, Topology, load_example
from topokit.design.peers import equistatic, equistatic_offsets, equistatic_weights
from topokit.errors import InvalidInputError


def complete_network(n: int) -> Network:
    """n devices on a social path, every pair usable (finite delay)."""
    return Network(nx.path_graph(n), [1.0] * n, np.ones((n, n)))


def paper_u_equistatic(n: int, offsets) -> np.ndarray:
    """The paper's definition, written out: A^(u) = I/n + (n-1)/n P^u with [P^u]_ij = 1 iff
    j = i + u (mod n), and W = 1/(2M) sum_m (A^(u_m) + A^(u_m)^T)."""
    total = np.zeros((n, n))
    for u in offsets:
        basis = np.eye(n) / n
        for i in range(n):
            basis[i, (i + u) % n] += (n - 1) / n
        total += basis + basis.T
    return total / (2 * len(offsets))


def consensus_rate(W: np.ndarray) -> float:
    """||W - J||_2, J = 11^T / n: what one round of averaging leaves of the disagreement.
    W is symmetric and circulant (tested below), so its eigenvalues are the discrete Fourier
    transform of its first row, the first (k = 0) being 1: an O(n log n) rate for large n."""
    return float(np.abs(np.fft.fft(W[0])[1:]).max())


def bound_m(n: int, epsilon: float, p: float) -> int:
    """The M above which the paper's bound gives ||W - J||_2 <= epsilon with probability at
    least 1 - p: 8 ln(2n/p) / (3 epsilon^2)."""
    return math.ceil(8 * math.log(2 * n / p) / (3 * epsilon**2))


# ---------------------------------------------------------------------------------------------
# The index-level construction
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "offsets"), [
    (2, [1]), (5, [1, 3]), (8, [4]), (8, [3, 3, 5]), (12, [1, 6, 6, 11]), (17, [2, 9, 16, 5])])
def test_the_matrix_is_the_papers_definition(n, offsets):
    # Repeated offsets add up; u = n/2 links a device to one peer; u and n - u give one link.
    assert np.allclose(equistatic_weights(n, offsets), paper_u_equistatic(n, offsets),
                       atol=1e-15)


@pytest.mark.parametrize("n", [2, 7, 16, 33])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_matrix_is_symmetric_doubly_stochastic_and_circulant(n, seed):
    W = equistatic_weights(n, equistatic_offsets(n, 5, seed=seed))
    assert np.array_equal(W, W.T)
    assert np.allclose(W.sum(axis=0), 1, atol=1e-14) and np.allclose(W.sum(axis=1), 1,
                                                                      atol=1e-14)
    assert (W >= 0).all() and np.allclose(np.diag(W), 1 / n)
    assert np.allclose(W, np.roll(np.roll(W, 1, axis=0), 1, axis=1))


@pytest.mark.parametrize(("n", "m"), [(9, 2), (16, 4), (31, 6), (64, 3)])
def test_the_spectrum_is_the_circulant_formula(n, m):
    """lambda_k = 1/n + (n-1)/(nM) sum_m cos(2 pi k u_m / n): lambda_0 = 1, and the
    consensus rate is the largest |lambda_k| over k != 0."""
    offsets = equistatic_offsets(n, m, seed=n)
    W = equistatic_weights(n, offsets)
    k = np.arange(n)[:, None]
    expected = 1 / n + (n - 1) / (n * m) * np.cos(2 * np.pi * k * offsets[None, :] / n).sum(1)
    assert np.allclose(np.sort(np.linalg.eigvalsh(W)), np.sort(expected), atol=1e-12)
    assert expected[0] == pytest.approx(1.0)
    assert consensus_rate(W) == pytest.approx(np.abs(expected[1:]).max(), abs=1e-12)
    assert consensus_rate(W) == pytest.approx(np.linalg.norm(W - 1 / n, 2), abs=1e-12)


@pytest.mark.parametrize("n", [8, 16, 50, 101, 256, 1000])
@pytest.mark.parametrize(("epsilon", "p"), [(0.5, 0.1), (0.8, 0.1)])
def test_the_consensus_rate_meets_the_papers_bound_whatever_n(n, epsilon, p):
    """The reference: with M >= 8 ln(2n/p) / (3 epsilon^2) offsets, ||W - J||_2 <= epsilon
    with probability >= 1 - p, so about ln n peers give a rate that does not grow with n.
    The seeds are fixed, and a failure among these draws would be a rare event (the bound
    is far from tight): every draw must meet it."""
    m = bound_m(n, epsilon, p)
    rates = [consensus_rate(equistatic_weights(n, equistatic_offsets(n, m, seed=seed)))
             for seed in range(20)]
    assert max(rates) <= epsilon, rates


def test_the_offsets_are_uniform_on_1_to_n_minus_1_and_reproducible():
    offsets = equistatic_offsets(5, 40_000, seed=3)
    assert set(offsets.tolist()) == {1, 2, 3, 4}
    assert np.allclose(np.bincount(offsets, minlength=5)[1:] / offsets.size, 0.25, atol=0.01)
    assert np.array_equal(equistatic_offsets(5, 7, seed=3), equistatic_offsets(5, 7, seed=3))


@pytest.mark.parametrize(("arguments", "message"), [
    ((1, 2), "n must be an integer >= 2"),
    ((4, 0), "m must be an integer >= 1"),
    ((4, 2.0), "m must be an integer >= 1"),
])
def test_the_draw_refuses_bad_sizes(arguments, message):
    with pytest.raises(InvalidInputError, match=message):
        equistatic_offsets(*arguments)


@pytest.mark.parametrize("offsets", [[], [0], [4], [1.0], [[1]]])
def test_the_matrix_refuses_offsets_outside_1_to_n_minus_1(offsets):
    with pytest.raises(InvalidInputError, match=r"integers in \[1, 3\]"):
        equistatic_weights(4, offsets)


# ---------------------------------------------------------------------------------------------
# Over a network
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "m"), [(16, 3), (16, 1), (25, 5), (40, 8)])
def test_over_a_network_it_mixes_with_the_construction_in_node_order(n, m):
    net = complete_network(n)
    seed = 0  # a draw whose offsets mix every device (the others are refused, tested below)
    offsets = equistatic_offsets(n, m, seed=seed)
    assert math.gcd(n, *offsets.tolist()) == 1
    topology = equistatic(net, m, seed=seed)
    assert isinstance(topology, Topology) and topology.weights is not None
    assert np.allclose(topology.mixing_matrix(net.nodes), equistatic_weights(n, offsets),
                       atol=1e-15)
    assert topology == equistatic(net, m, seed=seed)
    # The degree of the paper: |{+u_m, -u_m mod n}| <= 2M peers, the same for every device.
    peers = {(u % n) for u in offsets.tolist()} | {(-u) % n for u in offsets.tolist()}
    degrees = nx.Graph(list(topology.edges)).degree()
    assert {d for _, d in degrees} == {len(peers)}
    assert len(peers) <= min(2 * m, n - 1)
    # The ends of the links that are not social links are the DP devices.
    assert topology.dp_devices == {x for u, v in topology.non_social_edges(net) for x in (u, v)}
    topology.validate(net)


def test_the_default_m_is_the_exponential_graphs_out_degree():
    net = complete_network(20)  # ceil(log2 20) = 5
    assert equistatic(net, seed=4) == equistatic(net, 5, seed=4)


def test_one_device_has_no_links():
    net = Network(nx.empty_graph(1), [1.0], np.ones((1, 1)))
    assert equistatic(net, 3, seed=0).edges == ()


def test_a_link_the_network_cannot_carry_is_named():
    # The toy network has no A-E link; seed 0's offset 2 needs it (A and E are 2 apart).
    with pytest.raises(InvalidInputError, match="needs the link 'A'-'E' \\(ring offset 2\\)") \
            as caught:
        equistatic(load_example("toy"), 2, seed=0)
    assert "\n" not in str(caught.value)


def test_a_draw_that_cannot_mix_every_device_is_refused_naming_its_offsets():
    # 6 devices, seed 1 draws offset 3 twice: devices i and i + 3 pair up, three groups.
    with pytest.raises(InvalidInputError, match=r"offsets \[3\].*factor 3.*3 groups") as caught:
        equistatic(load_example("toy"), 2, seed=1)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("m", [0, -2, 1.5, True])
def test_a_bad_m_is_refused(m):
    with pytest.raises(InvalidInputError, match="m must be an integer >= 1"):
        equistatic(complete_network(8), m, seed=0)
