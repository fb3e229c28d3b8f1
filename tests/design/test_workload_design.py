"""A workload told to optimize, evaluate, predict_topology and ``topokit design``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from topokit import Workload, evaluate, load_example, load_predictor, optimize, predict_topology
from topokit.cli import app
from topokit.design.baselines import dlfdp
from topokit.errors import InvalidInputError, StrangersExposedWarning, TopokitWarning

runner = CliRunner()


@pytest.fixture(scope="module")
def toy():
    return load_example("toy")


@pytest.fixture(scope="module")
def blind_design(toy):
    return optimize(toy, seed=0)


def test_the_fitted_workload_gives_the_design_without_one(toy, blind_design):
    # The default predictor named: its own workload is inside its fit.
    with warnings.catch_warnings():
        warnings.simplefilter("error", TopokitWarning)  # inside the fit: no warning
        warnings.simplefilter("ignore", StrangersExposedWarning)  # no DP device
        told = optimize(toy, seed=0, predictor="default", workload=Workload())
    assert told.topology == blind_design.topology
    assert told.metrics.pseudo_time == blind_design.metrics.pseudo_time
    record = told.stats["workload"]
    assert record["outside"] == [] and record["extrapolated"] is False
    assert record["workload"] == Workload().to_dict()
    assert "workload" not in blind_design.stats
    json.dumps(told.to_dict())  # the record is JSON as it is


def test_a_workload_outside_the_fit_keeps_the_vouched_design_and_says_why(toy, blind_design):
    with pytest.warns(TopokitWarning, match="outside what the predictor was fitted on"):
        told = optimize(toy, seed=0, predictor="default",
                        workload=Workload(epsilon=0.5, target=0.92))
    assert told.topology == blind_design.topology
    record = told.stats["workload"]
    assert record["extrapolated"] is True
    assert len(record["outside"]) == 2  # the noise level and the target
    assert any("epsilon=0.5" in reason for reason in record["outside"])


def test_a_workload_dict_is_read_as_a_workload(toy, blind_design):
    told = optimize(toy, seed=0, predictor="default", workload={"epsilon": 1.0})
    assert told.topology == blind_design.topology


def test_a_workload_of_the_wrong_type_is_refused_in_one_line(toy):
    with pytest.raises(InvalidInputError, match="workload must be a topokit Workload"):
        optimize(toy, seed=0, workload=0.5)


def test_predict_topology_at_a_smaller_epsilon_predicts_more_noise(toy):
    # Against an independent computation: the predictor with its noise multiplier set by hand.
    predictor = load_predictor("default")
    topology = dlfdp(toy)
    assert predict_topology(toy, topology, workload=Workload()) == predict_topology(toy, topology)
    workload = Workload(epsilon=4.0)
    by_hand = predictor.set_params(settings=predictor.feature_settings.__class__(
        **{**predictor.feature_settings.to_dict(),
           "noise_multiplier": workload.resolved_noise_multiplier}))
    with pytest.warns(TopokitWarning, match="extrapolation"):
        told = predict_topology(toy, topology, workload=workload)
    assert told == predict_topology(toy, topology, predictor=by_hand)
    fitted = load_predictor("default").feature_settings.noise_multiplier
    assert workload.resolved_noise_multiplier < fitted


def test_evaluate_predicts_at_the_workload(toy):
    predictor = load_predictor("default")
    plain = evaluate(toy, None, predictor)
    told = evaluate(toy, None, predictor, workload=Workload())
    assert told.pseudo_time == plain.pseudo_time
    # Eq. (15) sees no workload: the same metrics with any workload.
    assert evaluate(toy, workload=Workload(epsilon=2)) == evaluate(toy)


def test_design_cli_takes_the_workload_options(tmp_path):
    result = runner.invoke(app, ["design", "--example", "toy", "--epsilon", "1", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{"):])
    assert payload["stats"]["workload"]["workload"]["epsilon"] == 1.0
    path = tmp_path / "workload.json"
    Workload(target=0.88).save(path)
    result = runner.invoke(app, ["design", "--example", "toy", "--workload", str(path), "--json"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("arguments, message", [
    (["--epsilon", "-1"], "epsilon must be"),
    (["--epsilon", "nan"], "epsilon must be"),
    (["--target", "1.5"], "target must be"),
    (["--model", ""], "model"),
    (["--method", "autotag", "--model", "cnn"], "--model applies to --method optimize only"),
    (["--workload", "missing.json"], "missing.json"),
    (["--ceiling", "0"], "ceiling must be"),
    (["--ceiling", "1.2"], "ceiling must be"),
])
def test_design_cli_refuses_a_bad_workload_in_one_line(arguments, message):
    result = runner.invoke(app, ["design", "--example", "toy", *arguments])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_design_cli_refuses_a_workload_file_with_flags(tmp_path):
    path = tmp_path / "workload.json"
    Workload().save(path)
    result = runner.invoke(app, ["design", "--example", "toy", "--workload", str(path),
                                 "--epsilon", "2"])
    assert result.exit_code == 2 and "not both" in result.output


def test_the_workload_record_reads_back(toy):
    with pytest.warns(TopokitWarning, match="batch_size 32"):
        told = optimize(toy, seed=0, workload=Workload(batch_size=32))
    record = told.stats["workload"]
    assert Workload.from_dict(record["workload"]) == Workload(batch_size=32)
    assert record["predicted_rounds_at_workload"] is None or np.isfinite(
        record["predicted_rounds_at_workload"])


def test_a_dp_plan_of_a_workload_design_plans_the_workload(toy, tmp_path):
    from topokit import export_design

    workload = Workload(epsilon=0.5, batch_size=32)
    with pytest.warns(TopokitWarning):
        design = optimize(toy, seed=0, workload=workload, max_stranger_mu=0.2)
    assert design.topology.dp_devices  # the bound makes devices DP
    export_design(design, tmp_path / "plan.json", "dp-plan", net=toy)
    plan = json.loads((tmp_path / "plan.json").read_text())
    bound = design.stats["stranger_bound"]["noise_multipliers"]
    for device in plan["devices"]:
        assert device["batch_size"] == 32
        if device["dp"]:
            assert device["noise_multiplier"] == max(bound[device["id"]],
                                                     workload.resolved_noise_multiplier)
    assert plan["settings"]["source"] == "the design's workload"


def test_design_cli_audits_at_the_workload_noise():
    result = runner.invoke(app, ["design", "--example", "toy", "--epsilon", "0.5"])
    assert result.exit_code == 0, result.output
    z = Workload(epsilon=0.5).resolved_noise_multiplier
    assert f"z = {z:.4g}" in " ".join(result.output.split())


def test_design_cli_takes_the_ceiling_of_the_users_model():
    result = runner.invoke(app, ["design", "--example", "toy", "--model", "cnn", "--target",
                                 "0.55", "--ceiling", "0.62", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{"):])
    told = payload["stats"]["workload"]
    assert told["workload"]["ceiling"] == 0.62
    assert any("'cnn'" in reason for reason in told["outside"])  # a model it never saw


def test_a_predictor_of_several_models_gives_each_workload_its_models_weights():
    from topokit.design import default_mixing

    joint = load_predictor("workload")
    joint.provenance_ = {key: value for key, value in joint.provenance_.items()
                         if key != "trained_model"} | {"trained_models": ["logreg", "mlp"]}
    assert default_mixing(joint, Workload(model="mlp")) == default_mixing("mlp")
    assert default_mixing(joint, Workload(model="logreg")) == default_mixing("default")
    assert default_mixing(joint) == default_mixing("default")  # no workload: the default


def test_two_noiseless_designs_are_compared_at_every_fitted_noise_level():
    """Neither adds noise, so the epsilon cannot decide between them: the gain that must
    clear NDLF's margin is the least over the ends of the fitted noise multipliers and the
    workload's own, each as :func:`evaluate` predicts it there."""
    import copy
    from dataclasses import replace

    import networkx as nx

    from topokit import Topology
    from topokit.design._optimize import _least_gain_over_noise, _objective, _Weighted
    from topokit.design.baselines import ndlf
    from topokit.design.time_predictor import predictor_within_fit
    from topokit.network.siot import siot

    net = siot(24, seed=301)
    workload = Workload(model="mine", epsilon=4.0, target=0.85, ceiling=0.95, probe_rounds=27)
    model, _ = predictor_within_fit(load_predictor("workload"), workload)
    social = ndlf(net)
    tree = nx.minimum_spanning_tree(social.graph(net.nodes), weight=None)
    pruned = Topology(tree.edges, ())
    objective = _objective(net, model, None)
    least = _least_gain_over_noise(objective, _Weighted(pruned, None, None),
                                   _Weighted(social, None, None))

    def gain(z):
        at_z = copy.deepcopy(model).set_params(
            settings=replace(model.feature_settings, noise_multiplier=z))
        return evaluate(net, social, at_z).pseudo_time / evaluate(net, pruned, at_z).pseudo_time

    low, high = model.provenance_["fitted_ranges"]["noise_multiplier"]
    gains = [gain(z) for z in (low, high, model.feature_settings.noise_multiplier)]
    # The coefficients vary with the noise, and the workload's own gain is not the least.
    assert gains[-1] > min(gains) * 1.01
    assert least == pytest.approx(min(gains), rel=1e-9)
    noisy = _Weighted(dlfdp(net), None, None)  # DP devices: its epsilon counts
    assert _least_gain_over_noise(objective, noisy, _Weighted(social, None, None)) is None


def _score(time):
    from topokit.design._optimize import _Score

    return _Score(time=time, rounds=time, local_iterate=1.0, features=np.zeros(1),
                  paper_time=time)


@pytest.mark.parametrize(("reference_time", "margin", "kept"), [
    (95.0, 1.0, False),  # margin 1.0: NDLF gives way to a reference predicted faster
    (95.0, 1.12, True),  # a reference faster by less than the margin does not displace NDLF
    (85.0, 1.12, False),  # 100 / 85 clears the margin: NDLF gives way
    (105.0, 1.12, True),
])
def test_a_reference_displaces_ndlf_only_by_the_margin(reference_time, margin, kept):
    """The searched design is the one that replaces NDLF; here its gain, 100 / 92, is
    below the margin 1.12 (as a design's is when its least gain over the fitted noise
    levels is), so only the reference's gain decides."""
    from topokit.design._optimize import _ndlf_unless_clearly_faster, _Weighted
    from topokit.design.baselines import ndlf

    toy = load_example("toy")
    social = _Weighted(ndlf(toy), _score(100.0), None)
    searched = _Weighted(dlfdp(toy), _score(92.0), None)
    result, record = _ndlf_unless_clearly_faster(
        {"dlfdp": _score(reference_time)}, searched, social, margin, references=["dlfdp"])
    assert record["kept_ndlf"] is kept
    assert result is (social if kept else searched)
    assert record["reference_gain"] == pytest.approx(100.0 / reference_time)
