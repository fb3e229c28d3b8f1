"""The D-SGD mode of the network-privacy audit (issue 20, part 5): agreement with the
dense twin, a closed form, invariants that follow from the model, outputs, the command
line and bad inputs."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from topokit import Network, Topology, load_example
from topokit.audit import _kernels as kernels
from topokit.audit.core import PrivacyAudit, _problem, device_noise, privacy_audit
from topokit.cli import app
from topokit.design.baselines import random_topology
from topokit.errors import InvalidInputError, NodeNotFoundError
from topokit.network.siot import siot
from topokit.testing.naive_audit import naive_dsgd_gram, naive_privacy_audit

from audit_cases import RTOL, assert_same_mu, random_case

runner = CliRunner()


def _complete_network(n: int) -> Network:
    return Network(nx.complete_graph(n), [10.0] * n, np.full((n, n), 1.0))


# ---------------------------------------------------------------------------------------------
# Exact: agreement with the dense twin
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("knows", [False, True])
def test_dsgd_bounds_agree_with_the_dense_twin(seed, knows):
    net, topology, rounds, noise = random_case(seed)
    problem = _problem(net, topology, device_noise(net, topology, noise), rounds, knows, "dsgd")
    columns = [kernels.observer_bounds(problem, k) for k in range(net.n_devices)]
    upper = np.column_stack([column[0] for column in columns])
    lower = np.column_stack([column[1] for column in columns])
    twin = dict(observer_knows_own_noise=knows, model="dsgd")
    assert_same_mu(upper, naive_privacy_audit(net, topology, rounds, noise, **twin))
    assert_same_mu(lower, naive_privacy_audit(net, topology, rounds, noise, lower=True, **twin))


@pytest.mark.parametrize("seed", range(8))
def test_the_dense_twins_dsgd_exposes_exactly_the_gossip_pairs(seed):
    # The docs' argument: a functional that reads round s's change, shifted back by s
    # rounds, reads s_i in a shorter gossip view.  The twin decides each of the T columns
    # on its own, so this checks the argument, not the code that relies on it.
    net, topology, rounds, noise = random_case(seed)
    gram = naive_dsgd_gram(net, topology, rounds, noise)
    gossip = naive_privacy_audit(net, topology, rounds, noise)
    np.testing.assert_array_equal(np.isinf(gram).any(axis=(2, 3)), np.isinf(gossip))


def test_privacy_audit_dsgd_agrees_with_the_twin_on_a_larger_case():
    net = siot(14, seed=3, colocation_range_m=100.0)
    topology = random_topology(net, seed=3, n_dp=5)
    audit = privacy_audit(net, topology, rounds=12, noise_multiplier=1.5, model="dsgd")
    assert_same_mu(audit.mu, naive_privacy_audit(net, topology, 12, 1.5, model="dsgd"))
    assert_same_mu(audit.mu_lower,
                    naive_privacy_audit(net, topology, 12, 1.5, model="dsgd", lower=True))


# ---------------------------------------------------------------------------------------------
# A closed form and invariants
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, rounds, z", [(2, 1, 1.0), (4, 6, 2.0), (6, 9, 0.5)])
def test_complete_graph_all_dp_gives_sqrt_rounds_over_z(n, rounds, z):
    # k hears every other device and knows its own draws, so from the view it computes
    # every state x^t: the innovation of i's round-t message is delta_t + z eta_i^t, and the
    # other devices' innovations are pure noise.  G_i = I / z^2 and mu = sqrt(T) / z, tight.
    net = _complete_network(n)
    topology = Topology(net.social.edges, dp_devices=list(net.nodes))
    audit = privacy_audit(net, topology, rounds=rounds, noise_multiplier=z, model="dsgd")
    off = ~np.eye(n, dtype=bool)
    np.testing.assert_allclose(audit.mu[off], np.sqrt(rounds) / z, rtol=RTOL)
    np.testing.assert_allclose(audit.mu_lower[off], np.sqrt(rounds) / z, rtol=RTOL)
    assert audit.tight[off].all()
    gram = naive_dsgd_gram(net, topology, rounds, z)
    np.testing.assert_allclose(gram[0, 1], np.eye(rounds) / z**2, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_one_round_of_dsgd_is_gossip(seed):
    net, topology, _, noise = random_case(seed)
    gossip = privacy_audit(net, topology, rounds=1, noise_multiplier=noise)
    dsgd = privacy_audit(net, topology, rounds=1, noise_multiplier=noise, model="dsgd")
    assert_same_mu(dsgd.mu, gossip.mu)
    assert_same_mu(dsgd.mu_lower, gossip.mu)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("knows", [False, True])
def test_dsgd_mu_is_at_least_gossip_mu_and_brackets_the_loss(seed, knows):
    # Gossip is the change delta = e_0 of D-SGD, so mu_dsgd >= mu_gossip; mu_lower is one
    # admissible change sequence, so mu_lower <= mu.
    net, topology, rounds, noise = random_case(seed)
    settings = dict(rounds=rounds, noise_multiplier=noise, observer_knows_own_noise=knows)
    gossip = privacy_audit(net, topology, **settings).mu
    dsgd = privacy_audit(net, topology, model="dsgd", **settings)
    off = ~np.eye(net.n_devices, dtype=bool)
    assert np.all(dsgd.mu[off] >= gossip[off] * (1 - RTOL))
    np.testing.assert_array_equal(np.isinf(dsgd.mu), np.isinf(gossip))
    assert np.all(dsgd.mu_lower[off] <= dsgd.mu[off] * (1 + RTOL))


@pytest.mark.parametrize("seed", range(6))
def test_a_dp_owner_reveals_at_most_its_composed_messages(seed):
    # Post-processing: k's view is a function of owner i's T messages (each delta_t +
    # z_i eta) and of noise independent of i's data, so G_i <= I / z_i^2 (Loewner order).
    # Checked on the twin's G (no cap there), and the audit's mu <= sqrt(T) / z_i.
    net, topology, rounds, noise = random_case(seed)
    z = np.array([noise[node] for node in net.nodes])
    gram = naive_dsgd_gram(net, topology, rounds, noise, observer_knows_own_noise=False)
    audit = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise, model="dsgd")
    for i in np.flatnonzero(z > 0):
        for k in range(net.n_devices):
            if k != i:
                assert np.linalg.eigvalsh(gram[i, k]).max() <= (1 + 1e-9) / z[i] ** 2
        assert np.all(audit.mu[i][np.isfinite(audit.mu[i])] <= np.sqrt(rounds) / z[i] * (1 + RTOL))


def test_gossip_results_are_unchanged_by_the_model_argument():
    net, topology, rounds, noise = random_case(7)
    default = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise)
    named = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise, model="gossip")
    np.testing.assert_array_equal(default.mu, named.mu)
    assert default.model == "gossip" and default.mu_lower is None
    assert default.tight.sum() == default.audited.sum()


# ---------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------

def test_dsgd_summary_frame_and_json(toy):
    audit = privacy_audit(toy, rounds=30, model="dsgd", delta=1e-5)
    summary = audit.summary()
    assert summary["model"] == "dsgd" and summary["exposed_stranger_pairs"] == 4
    finite = audit.stranger & np.isfinite(audit.mu)
    assert 0 <= summary["tight_stranger_pairs"] <= finite.sum() == 12
    assert summary["stranger_mu_lower_max"] <= summary["stranger_mu_max"]
    frame = audit.to_frame()
    assert list(frame.columns) == ["owner", "observer", "social", "mu", "mu_lower", "epsilon"]
    data = json.loads(json.dumps(audit.to_dict(), allow_nan=False))
    assert data["model"] == "dsgd" and len(data["mu_lower"]) == toy.n_devices
    assert isinstance(audit, PrivacyAudit) and not audit.mu_lower.flags.writeable
    assert "mu_lower" not in privacy_audit(toy, rounds=3).to_dict()


def test_cli_dsgd_json_agrees_with_the_api(toy):
    result = runner.invoke(app, ["audit", "--example", "toy", "--rounds", "8",
                                 "--model", "dsgd", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    expected = privacy_audit(toy, rounds=8, model="dsgd").to_dict()
    assert data["summary"] == expected["summary"] and data["model"] == "dsgd"
    np.testing.assert_allclose(np.array(data["mu"], dtype=float),
                               np.array(expected["mu"], dtype=float), rtol=1e-12)


def test_cli_eavesdropper_flag_gives_the_issues_numbers():
    result = runner.invoke(app, ["audit", "--example", "toy", "--rounds", "30", "--json",
                                 "--eavesdropper"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["observer_knows_own_noise"] is False
    assert data["summary"]["exposed_stranger_pairs"] == 2
    default = json.loads(runner.invoke(app, ["audit", "--example", "toy", "--rounds", "30",
                                             "--json"]).output)
    assert default["observer_knows_own_noise"] is True
    assert default["summary"]["exposed_stranger_pairs"] == 4


# ---------------------------------------------------------------------------------------------
# Bad input: one clear line, also in the D-SGD mode
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, words", [
    (dict(rounds=3, model="sgd"), InvalidInputError, "model must be one of 'gossip', 'dsgd'"),
    (dict(rounds=3, model=None), InvalidInputError, "model must be one of"),
    (dict(rounds=0, model="dsgd"), InvalidInputError, "rounds must be an integer >= 1"),
    (dict(rounds=3, model="dsgd", noise_multiplier=-1.0), InvalidInputError,
     "noise_multiplier must be >= 0"),
    (dict(rounds=3, model="dsgd", noise_multiplier=float("nan")), InvalidInputError,
     "must be finite"),
    (dict(rounds=3, model="dsgd", observers=["A", "Q"]), NodeNotFoundError,
     "'Q', which is not in"),
])
def test_dsgd_bad_inputs_are_one_clear_line(toy, kwargs, error, words):
    with pytest.raises(error) as info:
        privacy_audit(toy, **kwargs)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_dsgd_too_large_for_memory_is_refused_before_allocating(toy, monkeypatch):
    import topokit._checks

    # Room for the gossip audit but not for the D-SGD workspace of one observer.
    noise = device_noise(toy, toy.topology, 1.0)
    need = {model: max(kernels.workspace_bytes(_problem(toy, toy.topology, noise, 30, True,
                                                        model), k, toy.n_devices, method)
                       for k in range(toy.n_devices) for method in kernels.METHODS)
            for model in kernels.MODELS}
    assert need["dsgd"] > need["gossip"] * 2
    limit = 8.0 * 5 * toy.n_devices**2 + (need["dsgd"] + need["gossip"]) / 2
    monkeypatch.setattr(topokit._checks, "_physical_memory", lambda: limit)
    privacy_audit(toy, rounds=30)  # gossip fits
    with pytest.raises(InvalidInputError, match="memory"):
        privacy_audit(toy, rounds=30, model="dsgd")


@pytest.mark.parametrize("args, words", [
    (["--model", "sgd"], "--model must be one of 'gossip', 'dsgd'; got 'sgd'"),
    (["--model", "dsgd", "--rounds", "0"], "--rounds must be an integer >= 1"),
])
def test_cli_dsgd_bad_inputs_exit_2_with_one_line(args, words):
    result = runner.invoke(app, ["audit", "--example", "toy", "--rounds", "3", *args])
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------
# The array-level entry point for topology searches
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("model", ["gossip", "dsgd"])
@pytest.mark.parametrize("knows", [False, True])
def test_stranger_mu_max_matches_the_audits_summary(seed, model, knows):
    from topokit.network.quantities import adjacency_matrix

    net, topology, rounds, noise = random_case(seed)
    summary = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise,
                            observer_knows_own_noise=knows, model=model).summary()
    exposed, largest = kernels.stranger_mu_max(
        adjacency_matrix(net, topology), device_noise(net, topology, noise),
        net.social_adjacency.astype(bool), rounds, knows_own_noise=knows, model=model)
    assert exposed == summary["exposed_stranger_pairs"]
    if summary["stranger_mu_max"] is None:
        assert largest is None
    else:
        assert largest == pytest.approx(summary["stranger_mu_max"], rel=RTOL)


def test_stranger_mu_max_on_siot32_autotag():
    from topokit import autotag
    from topokit.network.quantities import adjacency_matrix

    net = load_example("siot32")
    topology = autotag(net).topology
    exposed, largest = kernels.stranger_mu_max(
        adjacency_matrix(net, topology), device_noise(net, topology, 1.0),
        net.social_adjacency.astype(bool), 30)
    assert exposed == 361 and round(largest, 2) == 2.48


@pytest.mark.parametrize("model", ["gossip", "dsgd"])
def test_a_subset_of_owners_gives_the_same_entries(model):
    net, topology, rounds, noise = random_case(3)
    problem = _problem(net, topology, device_noise(net, topology, noise), rounds, True, model)
    rng = np.random.default_rng(0)
    for k in range(net.n_devices):
        wanted = rng.random(net.n_devices) < 0.5
        full, part = (kernels.observer_bounds(problem, k),
                      kernels.observer_bounds(problem, k, wanted=wanted))
        wanted[k] = False
        for whole, some in zip(full, part, strict=True):
            np.testing.assert_allclose(some[wanted], whole[wanted], rtol=RTOL)
            assert np.isnan(some[~wanted]).all()
