"""The network-privacy audit: agreement with the dense twin, the issue's numbers,
invariants of the model, bad inputs, and the ``topokit audit`` command."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from topokit import Topology, autotag, load_example
from topokit.audit import _kernels as kernels
from topokit.audit.core import PrivacyAudit, _gdp_epsilon, _problem, device_noise, privacy_audit
from topokit.cli import app
from topokit.design.baselines import ndlf, random_topology
from topokit.design.metrics import exposure
from topokit.errors import InvalidInputError, InvalidTopologyError, NodeNotFoundError
from topokit.network.siot import siot
from topokit.testing.naive_audit import naive_privacy_audit

from audit_cases import RTOL, assert_same_mu, random_case

runner = CliRunner()


# ---------------------------------------------------------------------------------------------
# Exact: agreement with the dense twin
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("knows", [False, True])
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "sparse"])
def test_both_methods_agree_with_the_dense_twin(seed, knows, compiled, monkeypatch):
    # Small networks run the compiled dense filter and dense blocks; with the limit below
    # every size, the same cases run the sparse Python code that large networks run.
    if not compiled:
        monkeypatch.setattr(kernels, "DENSE_DEVICES", -1)
    net, topology, rounds, noise = random_case(seed)
    expected = naive_privacy_audit(net, topology, rounds, noise, observer_knows_own_noise=knows)
    problem = _problem(net, topology, device_noise(net, topology, noise), rounds, knows)
    for method in kernels.METHODS:
        got = np.column_stack([kernels.observer_column(problem, k, method)
                               for k in range(net.n_devices)])
        assert_same_mu(got, expected)


@pytest.mark.parametrize("seed", range(8))
def test_noise_free_views_expose_by_walks_as_the_twin_finds(seed):
    """With no noise anywhere (NDLF, a design without DP devices), exposure is decided by
    which devices a walk of at most T - 1 hops reaches (revealed_leverage's rule then);
    the dense twin decides it by range(C), independently.  Rounds 1-12 on random
    topologies, whose diameters cut the walks short at small T."""
    net, topology, rounds, _ = random_case(seed)
    for horizon in (1, 2, rounds):  # z = 0: the DP devices too add no noise
        audit = privacy_audit(net, topology, rounds=horizon, noise_multiplier=0.0)
        assert_same_mu(audit.mu, naive_privacy_audit(net, topology, horizon, 0.0))


def test_walk_exposure_on_a_path_stops_at_the_horizon():
    """On a path 0-1-...-7 without noise, observer 0 hears 1 and reads s_i exactly for
    the devices a walk from 1 reaches in at most T - 1 hops: i <= T; the others stay
    hidden (mu = 0: nothing of them reaches k)."""
    social = nx.path_graph(8)
    delay = np.ones((8, 8)) - np.eye(8)
    net = topokit_network(social, delay)
    for rounds in (1, 3, 6):
        mu = privacy_audit(net, Topology(social.edges), rounds=rounds, noise_multiplier=0.0).mu
        column = mu[:, 0]
        assert np.isinf(column[1:rounds + 1]).all()
        assert (column[rounds + 1:] == 0).all()


def test_walk_exposure_counts_many_predecessors():
    """Owner i is three hops from observer k through 200 parallel devices (k - j - y_m - i):
    i has 200 predecessors on the walks' frontier, more than a small integer type counts,
    and is exposed at T = 3, out of reach at T = 2."""
    social = nx.Graph([("k", "j")] + [("j", m) for m in range(200)]
                      + [(m, "i") for m in range(200)])
    n = social.number_of_nodes()
    net = topokit_network(social, np.ones((n, n)) - np.eye(n))
    i, k = net.index["i"], net.index["k"]
    for rounds, expected in ((3, np.inf), (2, 0.0)):
        mu = privacy_audit(net, Topology(social.edges), rounds=rounds, noise_multiplier=0.0,
                           observers=["k"]).mu
        assert mu[i, k] == expected


def topokit_network(social, delay):
    from topokit import Network

    return Network(social, np.ones(social.number_of_nodes()), delay)


def test_the_compiled_filter_is_the_sparse_filter():
    # Both work with covariances: agreement to the filter's guarded accuracy (RTOL).
    compared = 0
    for seed in range(10):
        net, topology, _, noise = random_case(seed)
        problem = _problem(net, topology, device_noise(net, topology, noise), 30, True)
        for k in range(net.n_devices):
            owners = np.setdiff1d(np.arange(net.n_devices), [k, *problem.neighbours[k]])
            # Exposed owners have infinite information: the audit never asks the filter.
            leverage = kernels.revealed_leverage(problem, k)[owners]
            owners = owners[leverage <= kernels.LEVERAGE_TOL]
            if owners.size == 0 or problem.neighbours[k].size == 0:
                continue
            compiled = kernels.filter_information(problem, k, owners, compiled=True)
            sparse = kernels.filter_information(problem, k, owners, compiled=False)
            assert (compiled is None) == (sparse is None)
            if compiled is not None:
                np.testing.assert_allclose(compiled, sparse, rtol=RTOL, atol=1e-300)
                compared += 1
    assert compared >= 20


def test_privacy_audit_agrees_with_the_twin_on_a_larger_case():
    net = siot(14, seed=3, colocation_range_m=100.0)
    topology = random_topology(net, seed=3, n_dp=5)
    audit = privacy_audit(net, topology, rounds=12, noise_multiplier=1.5)
    assert_same_mu(audit.mu, naive_privacy_audit(net, topology, 12, 1.5))


def test_a_hidden_owner_that_never_reaches_the_view_has_mu_zero():
    # Path a - b - c - d, no noise anywhere but c: in one round d hears only c's s_c + noise.
    net = _path_network(4)
    topology = Topology(net.social.edges, dp_devices=[2])
    audit = privacy_audit(net, topology, rounds=1)
    assert audit.mu[0, 3] == 0.0  # a's value is not in d's view at all
    assert audit.mu[2, 3] == 1.0  # c's own message: s_c + eta, mu = 1 / z


# ---------------------------------------------------------------------------------------------
# The numbers the issue measured with a direct dense computation (z = 1)
# ---------------------------------------------------------------------------------------------

def test_toy_fig2b_numbers_against_an_eavesdropper(toy):
    # The numbers hold for an observer that does not use its own draws.
    summary = privacy_audit(toy, rounds=30, observer_knows_own_noise=False).summary()
    assert (summary["stranger_pairs"], summary["exposed_stranger_pairs"]) == (16, 2)
    assert summary["stranger_mu_median"] == pytest.approx(1.0, rel=1e-12)
    assert round(summary["stranger_mu_max"], 2) == 1.37


def test_toy_fig2b_numbers_against_the_device_by_default(toy):
    audit = privacy_audit(toy, rounds=30)
    summary = audit.summary()
    assert audit.observer_knows_own_noise is True
    assert (summary["stranger_pairs"], summary["exposed_stranger_pairs"]) == (16, 4)
    assert summary["stranger_mu_median"] == pytest.approx(1.0, rel=1e-12)
    assert round(summary["stranger_mu_max"], 2) == 1.37


def test_toy_observer_that_knows_its_own_noise_reads_two_more(toy):
    weak = privacy_audit(toy, rounds=30, observer_knows_own_noise=False)
    strong = privacy_audit(toy, rounds=30, observer_knows_own_noise=True)
    assert strong.summary()["exposed_stranger_pairs"] == 4
    # C knows its own draws: A's and F's values, which reach C only mixed with C's noise.
    c = toy.nodes.index("C")
    assert np.isinf(strong.mu[[toy.nodes.index("A"), toy.nodes.index("F")], c]).all()
    assert np.isfinite(weak.mu[[toy.nodes.index("A"), toy.nodes.index("F")], c]).all()


@pytest.mark.parametrize("knows, exposed", [(False, 335), (True, 361)])
def test_siot32_autotag_numbers(knows, exposed):
    # False: the numbers (an eavesdropper); True, the default: the device itself.
    net = load_example("siot32")
    summary = privacy_audit(net, autotag(net).topology, rounds=30,
                            observer_knows_own_noise=knows).summary()
    assert (summary["stranger_pairs"], summary["exposed_stranger_pairs"]) == (678, exposed)
    assert round(summary["stranger_mu_max"], 2) == 2.48


@pytest.mark.parametrize("name", ["toy", "siot16"])
def test_ndlf_exposes_every_stranger(name):
    net = load_example(name)
    rounds = nx.diameter(net.social) + 1
    summary = privacy_audit(net, ndlf(net), rounds=rounds).summary()
    assert summary["exposed_stranger_pairs"] == summary["stranger_pairs"] > 0


# ---------------------------------------------------------------------------------------------
# Invariants of the model
# ---------------------------------------------------------------------------------------------

def test_mu_never_decreases_with_rounds():
    net, topology, _, noise = random_case(11)
    previous = privacy_audit(net, topology, rounds=1, noise_multiplier=noise).mu
    for rounds in range(2, 9):
        mu = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise).mu
        off = ~np.eye(net.n_devices, dtype=bool)
        assert np.all(mu[off] >= previous[off] * (1 - RTOL))
        previous = mu


def test_mu_scales_as_one_over_z_when_every_device_adds_noise():
    net = siot(12, seed=4, colocation_range_m=100.0)
    topology = random_topology(net, seed=4, n_dp=12)
    one = privacy_audit(net, topology, rounds=8, noise_multiplier=1.0).mu
    four = privacy_audit(net, topology, rounds=8, noise_multiplier=4.0).mu
    assert not np.isinf(one).any()  # every message carries fresh noise: nothing is exposed
    np.testing.assert_allclose(four, one / 4.0, rtol=RTOL)


def test_a_heard_dp_owner_has_mu_one_over_z(toy):
    audit = privacy_audit(toy, rounds=5, noise_multiplier={"C": 2.0, "D": 0.5, "E": 1.0})
    index = toy.nodes.index
    assert audit.mu[index("C"), index("B")] == pytest.approx(0.5)  # B hears C
    assert audit.mu[index("D"), index("A")] == pytest.approx(2.0)  # A hears D


def test_knowing_its_own_noise_never_lowers_mu():
    net, topology, rounds, noise = random_case(5)
    weak = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise,
                         observer_knows_own_noise=False).mu
    strong = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise,
                           observer_knows_own_noise=True).mu
    off = ~np.eye(net.n_devices, dtype=bool)
    assert np.all(strong[off] >= weak[off] * (1 - RTOL))


def _metric_exposed(net, topology) -> np.ndarray:
    """Pairs (i, k) of :func:`exposure`: i clean and k in or next to i's clean component."""
    clean = [node for node in net.nodes if node not in topology.dp_devices]
    inside = nx.Graph()
    inside.add_nodes_from(clean)
    inside.add_edges_from((u, v) for u, v in topology.edges if u in inside and v in inside)
    graph = topology.graph(net.nodes)
    pairs = np.zeros((net.n_devices, net.n_devices), dtype=bool)
    for component in nx.connected_components(inside):
        reach = set(component).union(*(graph[node] for node in component))
        for i in component:
            for k in reach:
                pairs[net.index[i], net.index[k]] = True
    np.fill_diagonal(pairs, False)
    return pairs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("knows", [False, True])
def test_exposed_pairs_are_among_the_metrics_exposed_pairs(seed, knows):
    # Noise at DP devices only.  If i's clean component (with its border) misses k's
    # neighbours, the DP devices on that border can cancel the change of s_i each round,
    # so nothing reaches k: the audit's exposed pairs are among the metric's.  The metric
    # ignores the noise DP neighbours mix into a clean device's messages, so it counts more.
    net, topology, rounds, _ = random_case(seed)
    audit = privacy_audit(net, topology, rounds=rounds, observer_knows_own_noise=knows)
    exposed = np.isinf(audit.mu)
    assert not (exposed & ~_metric_exposed(net, topology)).any()
    strangers = exposed & audit.stranger
    assert strangers.sum() <= exposure(net, topology).exposed_pairs


def test_toy_metric_counts_pairs_that_incidental_noise_protects(toy):
    # The metric counts F -> B (F, A, B are non-DP); but what B hears from A carries D's
    # noise, which B cannot cancel: the audit finds mu finite.
    assert exposure(toy, toy.topology).exposed_pairs == 5
    audit = privacy_audit(toy, rounds=30, observer_knows_own_noise=True)
    assert np.isfinite(audit.mu[toy.nodes.index("F"), toy.nodes.index("B")])


def test_observer_subset_and_threads_give_the_same_columns():
    net, topology, rounds, noise = random_case(2)
    full = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise)
    chosen = list(net.nodes[:3])
    part = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise,
                         observers=chosen, n_jobs=2)
    np.testing.assert_array_equal(part.mu[:, :3], full.mu[:, :3])
    assert np.isnan(part.mu[:, 3:]).all()
    assert part.observers == tuple(chosen)
    assert len(part.to_frame()) == 3 * (net.n_devices - 1)


# ---------------------------------------------------------------------------------------------
# Epsilon, tables and JSON
# ---------------------------------------------------------------------------------------------

def test_epsilon_matches_dp_accounting():
    from dp_accounting.gaussian_mechanism import get_epsilon_gaussian

    mu = np.array([1e-3, 0.05, 0.3, 1.0, 1.37, 2.48, 7.0, 40.0])
    for delta in (1e-5, 1e-2, 0.3):
        expected = [get_epsilon_gaussian(1.0 / m, delta) for m in mu]
        np.testing.assert_allclose(_gdp_epsilon(mu, delta), expected, rtol=1e-9, atol=1e-10)
    np.testing.assert_array_equal(_gdp_epsilon(np.array([0.0, np.inf, np.nan]), 1e-5),
                                  [0.0, np.inf, np.nan])


def test_frame_summary_and_json(toy):
    audit = privacy_audit(toy, rounds=30, delta=1e-5)
    frame = audit.to_frame()
    assert len(frame) == 30 and list(frame.columns) == ["owner", "observer", "social", "mu",
                                                        "epsilon"]
    assert frame["social"].sum() == 14
    stranger = frame[~frame["social"]]
    assert np.isinf(stranger["mu"]).sum() == 4
    np.testing.assert_array_equal(np.isinf(stranger["epsilon"]), np.isinf(stranger["mu"]))
    data = json.loads(json.dumps(audit.to_dict(), allow_nan=False))
    assert data["summary"]["exposed_stranger_pairs"] == 4
    assert data["observer_knows_own_noise"] is True
    assert data["mu"][0][0] is None and data["exposed"][1][3] is True  # B's value, D reads it
    assert audit.nodes == tuple(toy.nodes) == tuple(toy.social)
    assert isinstance(audit, PrivacyAudit) and not audit.mu.flags.writeable


# ---------------------------------------------------------------------------------------------
# Bad input: one clear line
# ---------------------------------------------------------------------------------------------

def _path_network(n):
    from topokit import Network

    return Network(nx.path_graph(n), [10.0] * n, np.full((n, n), 1.0))


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(rounds=0), InvalidInputError, "rounds must be an integer >= 1"),
    (dict(rounds=2.0), InvalidInputError, "rounds must be an integer"),
    (dict(rounds=3, noise_multiplier=-1.0), InvalidInputError, "noise_multiplier must be >= 0"),
    (dict(rounds=3, noise_multiplier=float("nan")), InvalidInputError, "must be finite"),
    (dict(rounds=3, noise_multiplier=True), InvalidInputError, "noise_multiplier must be"),
    (dict(rounds=3, noise_multiplier={"C": 1.0, "D": 1.0, "E": 1.0, "Z": 1.0}),
     NodeNotFoundError, "'Z', which is not in the network"),
    (dict(rounds=3, noise_multiplier={"C": 1.0, "D": 1.0}), InvalidInputError,
     "no entry for DP device 'E'"),
    (dict(rounds=3, noise_multiplier={"C": 1.0, "D": -2.0, "E": 1.0}), InvalidInputError,
     "noise_multiplier['D'] must be >= 0"),
    (dict(rounds=3, observers=["A", "Q"]), NodeNotFoundError, "'Q', which is not in"),
    (dict(rounds=3, observers="A"), InvalidInputError, "observers must be an iterable"),
    (dict(rounds=3, delta=0.0), InvalidInputError, "delta must lie in (0, 1)"),
    (dict(rounds=3, n_jobs=0), InvalidInputError, "n_jobs must be a non-zero integer"),
    (dict(rounds=3, observer_knows_own_noise="yes"), InvalidInputError, "True or False"),
])
def test_bad_inputs_are_one_clear_line(toy, kwargs, error, words):
    with pytest.raises(error) as info:
        privacy_audit(toy, **kwargs)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_a_topology_that_breaks_the_rules_is_refused(toy):
    # A-C is not a social link and A adds no noise.
    with pytest.raises(InvalidTopologyError, match="A-C|'A'-'C'"):
        privacy_audit(toy, Topology([("A", "C")], dp_devices=["C"]), rounds=3)
    with pytest.raises(InvalidInputError, match="net must be a topokit Network"):
        privacy_audit("toy", rounds=3)


def test_too_large_for_memory_is_refused_before_allocating(toy, monkeypatch):
    import topokit._checks

    monkeypatch.setattr(topokit._checks, "_physical_memory", lambda: 1000.0)
    with pytest.raises(InvalidInputError, match="memory"):
        privacy_audit(toy, rounds=3)


# ---------------------------------------------------------------------------------------------
# The command line and the figure
# ---------------------------------------------------------------------------------------------

def test_cli_json_agrees_with_the_api(toy):
    result = runner.invoke(app, ["audit", "--example", "toy", "--rounds", "30", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    expected = privacy_audit(toy, rounds=30).to_dict()
    assert data["summary"] == expected["summary"]
    assert data["exposed"] == expected["exposed"]
    np.testing.assert_allclose(np.array(data["mu"], dtype=float),
                               np.array(expected["mu"], dtype=float), rtol=1e-12)
    assert data["topology_source"] == "stored topology"


def test_cli_table_accepts_a_design_file_and_draws(tmp_path, toy):
    from topokit._io import write_json

    design = tmp_path / "design.json"
    write_json(design, {"network": "toy", "topology": toy.topology.to_dict()})
    plot = tmp_path / "audit.png"
    result = runner.invoke(app, ["audit", "--example", "toy", "--topology", str(design),
                                 "--rounds", "30", "--delta", "1e-5", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "exposed_stranger_pairs" in result.output and plot.stat().st_size > 0


def test_cli_without_a_stored_topology_says_it_audits_ndlf(tmp_path):
    result = runner.invoke(app, ["audit", "--example", "siot16", "--rounds", "4", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["topology_source"].startswith("NDLF")


@pytest.mark.parametrize("args, words", [
    (["--rounds", "0"], "--rounds must be an integer >= 1"),
    (["--rounds", "3", "--noise-multiplier", "-1"], "--noise-multiplier must be >= 0"),
    (["--rounds", "3", "--delta", "2"], "--delta must lie in (0, 1)"),
    (["--rounds", "3", "--plot", "audit.txt"], "--plot"),
    (["--rounds", "3", "-j", "0"], "--n-jobs must be a non-zero integer"),
    (["--rounds", "3", "--topology", "missing.json"], "missing.json"),
])
def test_cli_bad_inputs_exit_2_with_one_line(args, words):
    result = runner.invoke(app, ["audit", "--example", "toy", *args])
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_audit_figure_marks_exposed_and_social_pairs(toy):
    from topokit.plotting.audit import audit_figure

    figure = audit_figure(privacy_audit(toy, rounds=30))
    axis = figure.axes[0]
    assert "owner" in axis.get_ylabel() and "observer" in axis.get_xlabel()
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert any("exposed" in label for label in labels)
    assert any("social" in label for label in labels)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("model", ["gossip", "dsgd"])
def test_the_stranger_summary_is_the_full_audits(seed, model):
    """stranger_summary skips what cannot change its two numbers (noisy owners bounded by
    1/z_i below the maximum, exposure by walks without unheard noise): it must report what
    the full audit's summary reports, at one z, at none and at per-device levels."""
    from topokit.audit.core import stranger_summary

    net, topology, rounds, noise = random_case(seed)
    for z in (0.0, 0.7, noise):
        full = privacy_audit(net, topology, rounds=rounds, noise_multiplier=z,
                             model=model).summary()
        fast = stranger_summary(net, topology, rounds=rounds, noise_multiplier=z, model=model)
        assert fast["stranger_pairs"] == full["stranger_pairs"]
        assert fast["exposed_stranger_pairs"] == full["exposed_stranger_pairs"]
        if full["stranger_mu_max"] is None:
            assert fast["stranger_mu_max"] is None
        else:
            assert fast["stranger_mu_max"] == pytest.approx(full["stranger_mu_max"], rel=1e-9)
