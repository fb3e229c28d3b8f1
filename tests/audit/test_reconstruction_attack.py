"""The reconstruction attack (El Mrini, Cyffers and Bellet, ICML 2024) against the audit:
exposed owners come back exactly, the others with the error variance 1 / mu^2."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from topokit import load_example
from topokit.audit import ReconstructionAttack, privacy_audit, reconstruction_attack
from topokit.design.baselines import dlfdp, exponential_graph
from topokit.errors import InvalidInputError

ROUNDS = 30
#: Relative agreement of the attack's std with the audit's 1 / mu, and of an exposed
#: owner's error with 0 (relative to the scale of the values).
RTOL = 1e-8


def _case(name: str):
    if name == "toy":
        net = load_example("toy")
        return net, net.topology
    net = load_example("siot16")
    if name == "siot16-dlfdp":
        return net, dlfdp(net)           # every device adds noise: nobody exposed
    return net, exponential_graph(net, seed=0)  # 14 DP devices of 16: some pairs exposed


CASES = ["toy", "siot16-dlfdp", "siot16-exponential"]


@pytest.fixture(scope="module", params=[(case, knows) for case in CASES
                                        for knows in (True, False)],
                ids=lambda p: f"{p[0]}-{'participant' if p[1] else 'eavesdropper'}")
def attacked(request):
    """The audit and every observer's attack on one case."""
    name, knows = request.param
    net, topology = _case(name)
    audit = privacy_audit(net, topology, rounds=ROUNDS, observer_knows_own_noise=knows)
    attacks = [reconstruction_attack(net, topology, node, rounds=ROUNDS, seed=k,
                                     observer_knows_own_noise=knows)
               for k, node in enumerate(net.nodes)]
    return name, net, audit, attacks


def test_the_attack_exposes_exactly_the_pairs_the_audit_marks_exposed(attacked):
    name, net, audit, attacks = attacked
    n = net.n_devices
    for k, attack in enumerate(attacks):
        owners = np.arange(n) != k
        assert np.array_equal(attack.exposed[owners], np.isinf(audit.mu[owners, k]))
        assert not attack.exposed[k] and np.isnan(attack.estimate[k])
    if name != "siot16-dlfdp":
        assert sum(int(a.exposed.sum()) for a in attacks) > 0  # the check is not empty


def test_exposed_owners_are_reconstructed_exactly(attacked):
    # (1) mu = inf: the attack's error is rounding only.
    _, net, audit, attacks = attacked
    for k, attack in enumerate(attacks):
        scale = np.max(np.abs(attack.values))
        exposed = np.isinf(audit.mu[:, k])
        assert np.all(np.abs(attack.error[exposed]) <= RTOL * scale)
        assert np.all(attack.predicted_std[exposed] == 0.0)


def test_the_attack_std_is_one_over_the_audit_mu(attacked):
    # (2) unit sensitivity (the audit's default): predicted_std = 1 / mu, to 1e-8.
    _, net, audit, attacks = attacked
    checked = 0
    for k, attack in enumerate(attacks):
        mu = audit.mu[:, k]
        finite = np.isfinite(mu)  # NaN on the diagonal
        np.testing.assert_allclose(attack.predicted_std[finite], 1.0 / mu[finite], rtol=RTOL)
        assert np.all(np.isfinite(attack.error[finite]))
        checked += int(finite.sum())
    assert checked > 0


@pytest.mark.parametrize(("name", "observers", "trials"), [
    ("toy", None, 20_000),
    ("siot16-exponential", [0, 5, 11], 10_000),
])
def test_the_error_variance_matches_the_predicted_one(name, observers, trials):
    """(3) Fixed values, ``trials`` independent noise draws (the coordinates of one run).

    The errors are N(0, sigma^2) (the BLUE is unbiased), so sum(e^2) / sigma^2 is
    chi-squared with ``trials`` degrees of freedom: each owner's ratio of mean square
    error to sigma^2 must lie between the chi-squared quantiles at a family-wise level
    of 1e-6 over the tested owners (about +-5.5% at 20,000 trials, +-8% at 10,000).
    The mean error is checked against 6 standard errors.
    """
    net, topology = _case(name)
    rng = np.random.default_rng(12345)
    fixed = rng.normal(size=net.n_devices) * 3.0
    values = np.repeat(fixed[:, None], trials, axis=1)
    chosen = range(net.n_devices) if observers is None else observers
    attacks = [reconstruction_attack(net, topology, net.nodes[k], rounds=ROUNDS,
                                     values=values, seed=100 + k) for k in chosen]
    noisy = [(a, i) for a in attacks for i in range(net.n_devices)
             if np.isfinite(a.predicted_std[i]) and a.predicted_std[i] > 0]
    assert noisy
    alpha = 1e-6 / len(noisy)
    low, high = chi2.ppf(alpha / 2, trials) / trials, chi2.ppf(1 - alpha / 2, trials) / trials
    assert high - 1 < (0.06 if trials >= 20_000 else 0.09)  # a few percent
    for attack, i in noisy:
        sigma = attack.predicted_std[i]
        error = attack.error[i]
        ratio = np.mean(error**2) / sigma**2
        assert low <= ratio <= high, (attack.observer, i, ratio)
        assert abs(error.mean()) <= 6 * sigma / np.sqrt(trials)
    for attack in attacks:  # the exposed ones, in every trial
        assert np.all(np.abs(attack.error[attack.exposed]) <= RTOL * np.abs(fixed).max())


def test_values_seed_and_result():
    toy = load_example("toy")
    one = reconstruction_attack(toy, observer="D", rounds=ROUNDS, seed=3)
    two = reconstruction_attack(toy, observer="D", rounds=ROUNDS, seed=3)
    assert isinstance(one, ReconstructionAttack)
    assert one.observer == "D" and one.nodes == tuple(toy.nodes) and one.rounds == ROUNDS
    np.testing.assert_array_equal(one.estimate, two.estimate)
    np.testing.assert_array_equal(one.error, one.estimate - one.values)
    given = {node: float(v) for node, v in zip(toy.nodes, one.values, strict=True)}
    mapped = reconstruction_attack(toy, observer="D", rounds=ROUNDS, values=given, seed=3)
    np.testing.assert_array_equal(mapped.values, one.values)
    np.testing.assert_array_equal(mapped.predicted_std, one.predicted_std)
    with pytest.raises(ValueError):
        one.estimate[0] = 1.0  # read-only


def test_an_owner_out_of_reach_is_not_identifiable():
    # One round: k hears only its neighbours' first messages, which carry their own values.
    toy = load_example("toy")
    heard = set(toy.topology.graph(toy.nodes).neighbors("A"))
    attack = reconstruction_attack(toy, observer="A", rounds=1, seed=0)
    assert heard and len(heard) < toy.n_devices - 1
    for i, node in enumerate(toy.nodes):
        if node in heard:
            assert np.isfinite(attack.estimate[i]) and attack.predicted_std[i] < np.inf
        elif node != "A":
            assert np.isnan(attack.estimate[i]) and attack.predicted_std[i] == np.inf


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"observer": "D", "model": "dsgd"}, "gossip"),
    ({"observer": "nobody"}, "observer"),
    ({"observer": "D", "rounds": 0}, "rounds"),
    ({"observer": "D", "values": [1.0, 2.0]}, "values"),
])
def test_refusals_are_one_line(kwargs, words):
    toy = load_example("toy")
    with pytest.raises(InvalidInputError) as caught:
        reconstruction_attack(toy, **kwargs)
    text = str(caught.value)
    assert "\n" not in text and words in text
