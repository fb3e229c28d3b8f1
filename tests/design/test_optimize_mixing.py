"""optimize(mixing=...): fastest-mixing (the default) or other weights on the chosen links
(issue 17, part 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from topokit import (
    Topology,
    Workload,
    evaluate,
    fastest_mixing_topology,
    load_example,
    load_predictor,
    optimize,
    privacy_audit,
)
from topokit._random import keyed_seed
from topokit.cli import app
from topokit.design import default_mixing
from topokit.design._optimize import MIXING_CANDIDATES, pruned_social
from topokit.design.baselines import ndlf
from topokit.errors import InvalidInputError
from topokit.kernels import metropolis, spectral_gap
from topokit.network.siot import siot


@pytest.fixture(scope="module")
def designs():
    net = load_example("siot16")
    return (net, optimize(net, seed=0, mixing="lazy-metropolis", ndlf_margin=1.0),
            optimize(net, seed=0, mixing="fastest"))


def _fastest(topology, net):
    # optimize seeds the weights' solver from its own seed (keyed_seed(seed, 2)).
    return fastest_mixing_topology(topology, net, seed=keyed_seed(0, 2))


def test_the_weighted_design_is_the_fastest_of_the_candidates_weighted(designs):
    net, plain, weighted = designs
    assert plain.topology.weights is None and "mixing" not in plain.stats
    record = weighted.stats["mixing"]
    assert record["weights"] == "fastest"
    # The search is the same; its design, the other searches' results and the best starts
    # get the weights, and the one predicted fastest with them is the design, unless NDLF
    # (weighted too) is kept by the margin (1.0 with fastest-mixing weights).
    predictor = load_predictor("default")
    searched, social = _fastest(plain.topology, net), _fastest(ndlf(net), net)
    times = {name: evaluate(net, topology, predictor).pseudo_time
             for name, topology in (("searched", searched), ("ndlf", social))}
    candidates = record["candidate_times"]
    assert 2 <= record["candidates_weighed"] == len(candidates) <= MIXING_CANDIDATES
    assert candidates[f"search from {weighted.stats['start']}"] == pytest.approx(
        times["searched"], rel=1e-9)  # recomputed here from the plain search's design
    if "ndlf" in candidates:
        assert candidates["ndlf"] == pytest.approx(times["ndlf"], rel=1e-9)
    margin = weighted.stats["ndlf_margin"]
    assert margin["margin"] == 1.0 and margin["ndlf_weights"] == "fastest"
    best = min(time for time in candidates.values() if time is not None)
    assert margin["predicted_gain"] == pytest.approx(times["ndlf"] / best, rel=1e-9)
    assert not margin["kept_ndlf"] or times["ndlf"] < best  # NDLF kept: it was faster
    # Never predicted slower than the searched design or NDLF, both weighted, and its
    # metrics are evaluate's of the topology it returns.
    assert weighted.metrics.pseudo_time <= min(times.values()) * (1 + 1e-9)
    assert weighted.metrics.pseudo_time == pytest.approx(
        evaluate(net, weighted.topology, predictor).pseudo_time, rel=1e-12)
    if margin["kept_ndlf"] or record["from"] == "ndlf":
        assert weighted.topology.edges == social.edges
        np.testing.assert_allclose(weighted.topology.weights, social.weights, rtol=1e-9,
                                   atol=1e-12)
    else:
        assert weighted.metrics.pseudo_time == pytest.approx(best, rel=1e-9)
        assert candidates[record["from"]] == pytest.approx(best, rel=1e-9)


def test_a_start_the_search_left_can_win_once_weighted():
    # On Gaia the search (Lazy-Metropolis weights) ends at dense designs; with
    # fastest-mixing weights NDLF pruned to its links of at most 0.16 s, a start it left,
    # is predicted faster.  Recomputed here: that start, weighted by the solver with
    # optimize's seed, judged by evaluate at the same workload.
    net = load_example("gaia")
    workload = Workload(epsilon=0.5, target=0.92)
    design = optimize(net, workload=workload, seed=0)
    record = design.stats["mixing"]
    assert record["candidates_weighed"] == MIXING_CANDIDATES
    assert not record["from"].startswith("search from ")
    searched = record["candidate_times"][f"search from {design.stats['start']}"]
    assert design.metrics.pseudo_time < searched
    assert design.metrics.pseudo_time == pytest.approx(
        min(t for t in record["candidate_times"].values() if t is not None), rel=1e-12)
    start = pruned_social(net)[record["from"]]
    again = evaluate(net, _fastest(start, net), "workload", workload=workload)
    assert design.metrics.pseudo_time == pytest.approx(again.pseudo_time, rel=1e-9)
    assert design.topology.edges == _fastest(start, net).edges


def test_beyond_the_device_limit_only_the_searched_design_is_weighted(monkeypatch):
    import topokit.design._optimize as module

    net = load_example("toy")
    assert optimize(net, seed=0).stats["mixing"]["candidates_weighed"] > 1
    monkeypatch.setattr(module, "MIXING_CANDIDATE_DEVICES", net.n_devices - 1)
    record = optimize(net, seed=0).stats["mixing"]
    assert record["candidates_weighed"] == 1
    (searched,) = record["candidate_times"]
    assert searched.startswith("search from ") and record["from"] in (searched, "ndlf")
    # Metropolis-Hastings weights cost nothing to compute: no limit for them.
    assert optimize(net, seed=0, mixing="metropolis").stats["mixing"]["candidates_weighed"] > 1


def test_fastest_weights_are_the_default_with_a_fitted_predictor(designs):
    net, _, weighted = designs
    assert optimize(net, seed=0).topology == weighted.topology
    paper = optimize(net, seed=0, predictor="paper")
    assert paper.topology.weights is None and "mixing" not in paper.stats


def test_the_mlp_predictor_keeps_the_paper_s_weights_and_their_margin(designs):
    net = designs[0]
    mlp = optimize(net, seed=0, predictor="mlp")
    assert mlp.topology.weights is None and "mixing" not in mlp.stats
    assert mlp.stats["ndlf_margin"]["margin"] == 1.12  # Lazy-Metropolis's default margin
    explicit = optimize(net, seed=0, predictor="mlp", mixing="lazy-metropolis")
    assert explicit.topology == mlp.topology
    # The rule follows the model's measured trait, not the predictor's name: the same fit
    # loaded from a file or passed as an object gives the same default; one with no record
    # of its model (say calibrated on a user's runs, untold) gets the safe weights, and one
    # told the trait of a fast learner gets fastest-mixing weights.
    fitted = load_predictor("mlp")
    assert default_mixing(fitted) == "lazy-metropolis"
    anonymous = load_predictor("mlp").set_params()
    anonymous.provenance_ = {k: v for k, v in fitted.provenance_.items()
                             if k not in ("trained_model", "model")}
    assert default_mixing(anonymous) == "lazy-metropolis"
    anonymous.provenance_["model_traits"] = {"model": "mine", "probe_rounds": 5.0}
    assert default_mixing(anonymous) == "fastest"


def test_it_mixes_faster_and_is_predicted_no_slower(designs):
    net, plain, weighted = designs
    gap = spectral_gap(weighted.topology.mixing_matrix(net.nodes))
    assert gap > evaluate(net, plain.topology).spectral_gap
    assert weighted.metrics.spectral_gap == pytest.approx(gap, rel=1e-9)
    assert weighted.metrics.pseudo_time <= plain.metrics.pseudo_time * (1 + 1e-9)
    info = weighted.stats["mixing"]
    unweighted = Topology(weighted.topology.edges, weighted.topology.dp_devices)
    # Its links: NDLF's (kept by the margin or weighed among the candidates), else the
    # plain search's design (the candidate searched from the same start).
    from_ndlf = weighted.stats["ndlf_margin"]["kept_ndlf"] or info["from"] == "ndlf"
    assert from_ndlf or info["from"] == f"search from {weighted.stats['start']}"
    links = ndlf(net) if from_ndlf else plain.topology
    assert info["predicted_time_lazy_metropolis"] == pytest.approx(
        evaluate(net, links, load_predictor("default")).pseudo_time, rel=1e-9)
    assert info["links_dropped"] == links.n_links - unweighted.n_links


def test_unknown_mixing_is_refused():
    with pytest.raises(InvalidInputError, match="mixing"):
        optimize(load_example("toy"), mixing="fast")


def test_cli_writes_the_weights_and_refuses_them_for_autotag(tmp_path):
    runner = CliRunner()
    out = tmp_path / "design.json"
    result = runner.invoke(app, ["design", "-e", "siot16", "--mixing", "fastest",
                                 "--audit-rounds", "0", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "mixing weights: fastest" in result.output
    record = json.loads(out.read_text())
    assert record["topology"]["weights"] is not None
    assert len(record["topology"]["weights"]) == len(record["topology"]["edges"])
    bad = runner.invoke(app, ["design", "-e", "toy", "--method", "autotag", "--mixing",
                              "fastest"])
    assert bad.exit_code == 2 and "--method optimize only" in bad.output


def test_metropolis_hastings_weights_are_the_kernels(designs):
    net, plain, _ = designs
    design = optimize(net, seed=0, mixing="metropolis")
    assert design.stats["mixing"]["links_dropped"] == 0
    assert design.stats["mixing"]["weights"] == "metropolis"  # predicted faster on siot16
    assert design.stats["ndlf_margin"]["margin"] == 1.02
    links = Topology(design.topology.edges, design.topology.dp_devices)
    assert links in (plain.topology, ndlf(net))
    np.testing.assert_array_equal(design.topology.mixing_matrix(net.nodes),
                                  metropolis(links.graph(net.nodes)))
    assert design.metrics.pseudo_time <= plain.metrics.pseudo_time * (1 + 1e-9)


def test_weights_that_expose_a_stranger_under_a_bound_are_not_kept():
    # Fastest-mixing weights can leave a device no self-weight, so that a stranger reads a
    # value through them: no noise meets the bound, and the Lazy-Metropolis design stays.
    net = siot(10, seed=1)
    options = {"seed": 0, "max_stranger_mu": 0.25, "audit_rounds": 3}
    plain = optimize(net, mixing="lazy-metropolis", **options)
    design = optimize(net, **options)
    assert design.stats["mixing"]["weights"] == "lazy-metropolis"
    assert design.stats["mixing"]["predicted_time_fastest"] is None  # infeasible, not scored
    assert design.topology == plain.topology and design.topology.weights is None
    weighted = fastest_mixing_topology(plain.topology, net, seed=keyed_seed(0, 2))
    exposed = privacy_audit(net, weighted, rounds=3).summary()["exposed_stranger_pairs"]
    assert exposed > 0
