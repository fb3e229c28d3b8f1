"""privacy_audit(sensitivity=...): devices whose private values move by different amounts
(issue 20; D-SGD training gives a clipping device Delta_i = 2 eta C / min(B, |D_i|)).

The reference here simulates the gossip's view directly, as a linear map of the private
values and of standard normal draws, independently of the audit's kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

from topokit import load_example, privacy_audit
from topokit.errors import InvalidInputError, NodeNotFoundError

ROUNDS = 4
DELTAS = {"A": 0.7, "B": 1.3, "C": 0.5, "D": 2.0, "E": 1.1, "F": 0.9}


def view_mu(mixing, noise_std, shift, rounds, owner, observer, heard, knows_own):
    """mu of ``owner`` against ``observer`` from the explicit view of the gossip.

    x^0 = s; m^t = x^t + diag(noise_std) xi^t; x^{t+1} = W m^t.  The observer sees m_j^t
    for j in ``heard`` and knows every value but s_owner (and its own draws if
    ``knows_own``); s_owner moves by ``shift``.
    """
    n = len(mixing)
    values, draws = np.eye(n), []      # x^t = values @ s + sum_u draws[u] @ xi^u
    rows_values, rows_draws = [], []
    for _ in range(rounds):
        sent = [*draws, np.diag(noise_std)]
        for j in heard:
            rows_values.append(values[j])
            rows_draws.append(np.concatenate([block[j] for block in sent]
                                             + [np.zeros(n)] * (rounds - len(sent))))
        values, draws = mixing @ values, [mixing @ block for block in sent]
    move = shift * np.array(rows_values)[:, owner]
    noise = np.array(rows_draws)
    if knows_own:
        noise[:, observer::n] = 0.0    # its own draws are known: subtracted from the view
    cov = noise @ noise.T
    inverse = np.linalg.pinv(cov, rcond=1e-12, hermitian=True)
    outside = move - cov @ (inverse @ move)
    if np.linalg.norm(outside) > 1e-8 * np.linalg.norm(move):
        return np.inf
    return float(np.sqrt(move @ inverse @ move))


def reference(net, topology, z, deltas, knows_own):
    nodes = net.nodes
    mixing = topology.mixing_matrix(nodes)
    noise_std = np.array([(z if node in topology.dp_devices else 0.0) * deltas[node]
                          for node in nodes])
    graph = topology.graph(nodes)
    mu = np.full((len(nodes), len(nodes)), np.nan)
    for k, observer in enumerate(nodes):
        heard = [nodes.index(j) for j in graph.neighbors(observer)]
        for i, owner in enumerate(nodes):
            if i != k:
                mu[i, k] = view_mu(mixing, noise_std, deltas[owner], ROUNDS, i, k, heard,
                                   knows_own)
    return mu


@pytest.fixture(scope="module")
def toy():
    return load_example("toy")


@pytest.mark.parametrize("knows_own", [True, False])
def test_distinct_sensitivities_match_the_explicit_view(toy, knows_own):
    audit = privacy_audit(toy, rounds=ROUNDS, noise_multiplier=1.5, sensitivity=DELTAS,
                          observer_knows_own_noise=knows_own)
    expected = reference(toy, toy.topology, 1.5, DELTAS, knows_own)
    np.testing.assert_array_equal(np.isinf(audit.mu), np.isinf(expected))
    finite = np.isfinite(expected)
    assert finite.sum() > 10
    np.testing.assert_allclose(audit.mu[finite], expected[finite], rtol=1e-8)
    np.testing.assert_array_equal(audit.sensitivity, [DELTAS[node] for node in toy.nodes])


def test_the_reference_is_the_unit_audit_with_unit_sensitivities(toy):
    # The same reference with every Delta = 1 is the audit as it was: a check of the reference.
    unit = {node: 1.0 for node in toy.nodes}
    expected = reference(toy, toy.topology, 1.5, unit, True)
    audit = privacy_audit(toy, rounds=ROUNDS, noise_multiplier=1.5)
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isinf(audit.mu), np.isinf(expected))
    np.testing.assert_allclose(audit.mu[finite], expected[finite], rtol=1e-8)


def test_a_common_sensitivity_changes_nothing(toy):
    base = privacy_audit(toy, rounds=ROUNDS)
    for common in (0.03, 7.0, {node: 0.25 for node in toy.nodes}):
        same = privacy_audit(toy, rounds=ROUNDS, sensitivity=common)
        np.testing.assert_allclose(same.mu, base.mu, rtol=1e-12, equal_nan=True)
        assert same.sensitivity is None


def test_a_device_with_more_noise_protects_its_neighbours_more(toy):
    # D adds z Delta_D: raising Delta_D lowers every other owner's mu at every observer.
    low = privacy_audit(toy, rounds=ROUNDS, sensitivity={**DELTAS, "D": 1.0})
    high = privacy_audit(toy, rounds=ROUNDS, sensitivity={**DELTAS, "D": 3.0})
    others = [i for i, node in enumerate(toy.nodes) if node != "D"]
    finite = np.isfinite(low.mu[others])
    assert np.all(high.mu[others][finite] <= low.mu[others][finite] * (1 + 1e-9))
    assert np.any(high.mu[others][finite] < low.mu[others][finite] * (1 - 1e-3))


@pytest.mark.parametrize(("sensitivity", "error", "said"), [
    (0.0, InvalidInputError, "sensitivity"),
    (float("nan"), InvalidInputError, "sensitivity"),
    (float("inf"), InvalidInputError, "sensitivity"),
    ("1", InvalidInputError, "a number > 0 or a mapping"),
    ({"A": 1.0}, InvalidInputError, "no entry for device 'B'"),
    ({**DELTAS, "Z": 1.0}, NodeNotFoundError, "'Z'"),
    ({**DELTAS, "C": -1.0}, InvalidInputError, "sensitivity['C']"),
])
def test_bad_sensitivities_are_refused_in_one_line(toy, sensitivity, error, said):
    with pytest.raises(error) as caught:
        privacy_audit(toy, rounds=ROUNDS, sensitivity=sensitivity)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_dsgd_bounds_scale_by_the_owner_s_sensitivity(toy):
    # D-SGD's mu is a supremum over per-round changes within a ball of radius Delta_i: it
    # and its lower bound scale by Delta_i, with the noise z_j Delta_j.
    audit = privacy_audit(toy, rounds=ROUNDS, model="dsgd", sensitivity=DELTAS)
    noise = {node: DELTAS[node] for node in toy.topology.dp_devices}
    unit = privacy_audit(toy, rounds=ROUNDS, model="dsgd", noise_multiplier=noise)
    scale = np.array([DELTAS[node] for node in toy.nodes])[:, None]
    np.testing.assert_allclose(audit.mu, unit.mu * scale, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(audit.mu_lower, unit.mu_lower * scale, rtol=1e-12,
                               equal_nan=True)
