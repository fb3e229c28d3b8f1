"""The privacy audit of a time-varying topology (a TopologySchedule).

Checked against the static audit (a schedule of one topology has its view) and
against a dense computation written here: the gossip (or D-SGD) recursion run
on coefficient matrices, every message a linear function of the private values
and of the noise draws, and mu from the pseudo-inverse of the covariance.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from topokit import Topology
from topokit.audit import _kernels as kernels
from topokit.audit import _schedule as schedule_kernels
from topokit.audit.core import _problem, device_noise, privacy_audit, stranger_summary
from topokit.design.baselines import random_topology
from topokit.errors import InvalidInputError, InvalidTopologyError
from topokit.network import Network, TopologySchedule
from topokit.network.siot import siot

from audit_cases import assert_same_mu

#: Agreement asked of the audit of a schedule of one topology with the static audit.
SAME_RTOL = 1e-12
#: Agreement asked against the dense computation below (it squares the condition number of
#: the view by forming the covariance, so it is the less accurate of the two).
DENSE_RTOL = 1e-7


# ---------------------------------------------------------------------------------------------
# The dense computation: the recursion on coefficients
# ---------------------------------------------------------------------------------------------

def _heard(net, topology, k):
    """Indices of the devices k hears in a round of ``topology``: its neighbours there."""
    return sorted({net.index[v] for u, v in topology.edges if net.index[u] == k}
                  | {net.index[u] for u, v in topology.edges if net.index[v] == k})


def _view(net, schedule, rounds, z, k, model):
    """k's view as coefficients: (A, B) with view = A (values) + B (noise draws).

    Values: s (n columns) in gossip, u^0 ... u^{T-1} (T n, round-major) in D-SGD.
    Noise draws: eta^0 ... eta^{T-1} (T n, round-major).
    """
    n = net.n_devices
    values = n if model == "gossip" else rounds * n
    state = np.zeros((n, values + rounds * n))
    if model == "gossip":
        state[:, :n] = np.eye(n)                      # x^0 = s
    rows = []
    for t in range(rounds):
        topology = schedule.topology_at(t)
        messages = state.copy()                       # m^t = x^t (+ u^t) + Z eta^t
        messages[:, values + t * n:values + (t + 1) * n] += np.diag(z)
        if model == "dsgd":
            messages[:, t * n:(t + 1) * n] += np.eye(n)
        rows += [messages[j] for j in _heard(net, topology, k)]
        state = topology.mixing_matrix(net.nodes) @ messages   # x^{t+1} = W_t m^t
    view = np.array(rows).reshape(-1, values + rounds * n)
    return view[:, :values], view[:, values:]


def dense_audit(net, schedule, rounds, noise, *, model="gossip", knows_own_noise=True):
    """(mu, mu_lower) of every pair, from the pseudo-inverse of each observer's covariance."""
    n = net.n_devices
    mu, lower = np.full((n, n), np.nan), np.full((n, n), np.nan)
    for k in range(n):
        z = noise.copy()
        if knows_own_noise:
            z[k] = 0.0
        shifts, mixing = _view(net, schedule, rounds, z, k, model)
        covariance = mixing @ mixing.T
        values, vectors = np.linalg.eigh(covariance)
        keep = values > 1e-11 * max(values.max(initial=0.0), 1e-300)
        basis, inverse = vectors[:, keep], vectors[:, keep] / values[keep]
        for i in range(n):
            if i == k:
                continue
            columns = shifts[:, [i]] if model == "gossip" else shifts[:, i::n]
            off = np.linalg.norm(columns - basis @ (basis.T @ columns), axis=0)
            if (off > 1e-6 * np.linalg.norm(columns, axis=0)).any():
                mu[i, k] = lower[i, k] = np.inf
                continue
            gram = (inverse.T @ columns).T @ (basis.T @ columns)   # A_i^T C^+ A_i
            if model == "gossip":
                mu[i, k] = lower[i, k] = np.sqrt(gram[0, 0])
            else:
                cap = np.inf if z[i] == 0 else rounds / z[i] ** 2
                mu[i, k] = np.sqrt(min(np.abs(gram).sum(), cap))
                lower[i, k] = np.sqrt(max(gram.sum(), 0.0))
    return mu, lower


def assert_close(got, expected, rtol):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=rtol, atol=1e-10)


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------

def _network(seed):
    rng = np.random.default_rng(seed)
    return siot(int(rng.integers(6, 9)), seed=seed, colocation_range_m=100.0)


def _two_rounds(seed, n_dp):
    """A small network and a 2-round cycle of two different random topologies."""
    net = _network(seed)
    first = random_topology(net, seed=seed, n_dp=n_dp)
    second = random_topology(net, seed=seed + 1000, n_dp=n_dp)
    assert first != second
    return net, TopologySchedule([first, second])


# ---------------------------------------------------------------------------------------------
# A schedule of one topology is that topology's audit
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model", ["gossip", "dsgd"])
@pytest.mark.parametrize("n_dp", [0, 3])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_cycle_of_one_topology_is_the_static_audit(seed, n_dp, model):
    net = _network(seed)
    topology = random_topology(net, seed=seed, n_dp=n_dp)
    static = privacy_audit(net, topology, rounds=5, model=model)
    for cycle in ([topology], [topology, topology]):
        audit = privacy_audit(net, TopologySchedule(cycle), rounds=5, model=model)
        assert_close(audit.mu, static.mu, SAME_RTOL)
        if model == "dsgd":
            assert_close(audit.mu_lower, static.mu_lower, SAME_RTOL)
        assert isinstance(audit.topology, TopologySchedule)


@pytest.mark.parametrize("model", ["gossip", "dsgd"])
@pytest.mark.parametrize("knows", [True, False])
@pytest.mark.parametrize("seed", [3, 4, 5])
def test_time_varying_kernels_on_one_topology_agree_with_the_static_kernels(seed, knows, model):
    # The time-varying kernels, given the same W every round (privacy_audit would route
    # such a schedule to the static kernels), compute the static audit.
    net = _network(seed)
    topology = random_topology(net, seed=seed, n_dp=int(seed % 3) + 2)
    rounds = 6
    static = _problem(net, topology, device_noise(net, topology, 1.5), rounds, knows, model)
    varying = schedule_kernels.ScheduleProblem(
        (static.weights,) * rounds, (static.neighbours,) * rounds, static.variance, rounds,
        knows, model)
    for k in range(net.n_devices):
        expected = kernels.observer_bounds(static, k)
        got = schedule_kernels.observer_bounds(varying, k)
        for g, e in zip(got, expected, strict=True):
            assert_same_mu(g[:, None], e[:, None])


# ---------------------------------------------------------------------------------------------
# Two topologies in turn: the dense computation
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model", ["gossip", "dsgd"])
@pytest.mark.parametrize("knows", [True, False])
@pytest.mark.parametrize("seed, n_dp, rounds", [(11, 0, 3), (12, 3, 4), (13, 4, 5), (14, 8, 4)])
def test_two_topologies_in_turn_agree_with_the_dense_computation(seed, n_dp, rounds, knows,
                                                                  model):
    net, schedule = _two_rounds(seed, min(n_dp, 6))
    # The DP devices, and one more device, add noise (without DP devices: that one alone).
    given = {node: 1.3 if node in schedule.dp_devices else 0.0 for node in net.nodes}
    given[net.nodes[0]] = 0.7
    options = dict(rounds=rounds, model=model, observer_knows_own_noise=knows,
                   noise_multiplier=given)
    audit = privacy_audit(net, schedule, **options)
    mu, lower = dense_audit(net, schedule, rounds, device_noise(net, schedule, given),
                            model=model, knows_own_noise=knows)
    assert_close(audit.mu, mu, DENSE_RTOL)
    if model == "dsgd":
        assert_close(audit.mu_lower, lower, DENSE_RTOL)
    # Not the audit of either topology alone.
    alone = privacy_audit(net, schedule.topology_at(0), **options)
    assert not np.array_equal(audit.mu, alone.mu, equal_nan=True)


def test_per_device_noise_and_sensitivity_on_a_schedule():
    net, schedule = _two_rounds(21, 4)
    rng = np.random.default_rng(21)
    noise = {node: float(rng.uniform(0.5, 2.0)) if node in schedule.dp_devices
             or rng.random() < 0.3 else 0.0 for node in net.nodes}
    audit = privacy_audit(net, schedule, rounds=4, noise_multiplier=noise)
    mu, _ = dense_audit(net, schedule, 4, device_noise(net, schedule, noise))
    assert_close(audit.mu, mu, DENSE_RTOL)
    # A common sensitivity changes nothing (mu is scale-free).
    same = privacy_audit(net, schedule, rounds=4, noise_multiplier=noise, sensitivity=0.1)
    np.testing.assert_allclose(same.mu, audit.mu, rtol=1e-12)


def test_a_generated_schedule_agrees_with_the_dense_computation():
    net = _network(31)
    drawn = [random_topology(net, seed=31 + s, n_dp=3) for s in range(3)]
    dp = frozenset().union(*(t.dp_devices for t in drawn))

    def pick(t, rng):
        return drawn[int(rng.integers(3))]

    schedule = TopologySchedule(pick, seed=5, window=6, dp_devices=dp)
    audit = privacy_audit(net, schedule, rounds=5)
    mu, _ = dense_audit(net, schedule, 5, device_noise(net, schedule, 1.0))
    assert_close(audit.mu, mu, DENSE_RTOL)


# ---------------------------------------------------------------------------------------------
# Exposure through a link some rounds use
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def path():
    """Three devices, social path 0 - 1 - 2: 0 and 2 are strangers."""
    return Network(nx.path_graph(3), [1.0, 1.0, 1.0], [[0, 2, 9], [2, 0, 4], [9, 4, 0]])


def test_a_stranger_is_exposed_through_a_link_used_in_one_round_of_two(path):
    # Round 0 links 0 - 1, round 1 links 1 - 2: in round 1 device 2 hears 1's message,
    # (s_0 + s_1) / 2, and reads s_0, though no round links it to 0 and 1 adds no noise.
    schedule = TopologySchedule([Topology([(0, 1)]), Topology([(1, 2)])])
    audit = privacy_audit(path, schedule, rounds=2)
    assert audit.mu[0, 2] == np.inf
    assert audit.mu[2, 0] == 0.0          # 0 hears 1 only in round 0, before 2's value arrives
    assert audit.summary()["exposed_stranger_pairs"] == 1
    assert privacy_audit(path, schedule, rounds=1).mu[0, 2] == 0.0   # round 0 alone
    assert privacy_audit(path, Topology([(1, 2)]), rounds=2).mu[0, 2] == 0.0  # round 1's alone
    mu, _ = dense_audit(path, schedule, 2, np.zeros(3))
    assert_close(audit.mu, mu, DENSE_RTOL)
    for model in ("gossip", "dsgd"):  # in D-SGD too, and a noisy relay protects 0
        assert privacy_audit(path, schedule, rounds=3, model=model).mu[0, 2] == np.inf
        noisy = privacy_audit(path, schedule, rounds=3, model=model, noise_multiplier={1: 1.0})
        assert 0.0 < noisy.mu[0, 2] < np.inf


def test_stranger_summary_of_a_schedule_is_the_audits(path):
    schedule = TopologySchedule([Topology([(0, 1)]), Topology([(1, 2)])])
    full = privacy_audit(path, schedule, rounds=3).summary()
    summary = stranger_summary(path, schedule, rounds=3)
    assert summary == {key: full[key] for key in summary}


# ---------------------------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------------------------

def test_a_generated_round_that_breaks_the_rules_is_refused(path):
    def late_stranger_link(t, rng):  # valid in the window, a clear stranger link after it
        return Topology([(0, 2)] if t >= 4 else [(0, 1), (1, 2)])

    schedule = TopologySchedule(late_stranger_link, seed=1, window=4)
    privacy_audit(path, schedule, rounds=4)
    with pytest.raises(InvalidTopologyError, match="round 4"):
        privacy_audit(path, schedule, rounds=5)


def test_a_schedule_too_large_for_memory_is_refused_in_one_line(monkeypatch):
    import topokit._checks

    net, schedule = _two_rounds(41, 3)
    privacy_audit(net, schedule, rounds=4)
    monkeypatch.setattr(topokit._checks, "_physical_memory", lambda: 8.0 * 5 * 8**2 + 1000.0)
    with pytest.raises(InvalidInputError, match="memory") as error:
        privacy_audit(net, schedule, rounds=4)
    assert "\n" not in str(error.value)
