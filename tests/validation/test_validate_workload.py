"""validate(..., workload=...): the workload's settings train every run and design "optimize"."""

from __future__ import annotations

import pandas as pd
import pytest

from topokit import Workload, load_example, validate
from topokit.errors import InvalidInputError, TopokitWarning
from topokit.training import DPConfig

TOPOLOGIES = ["ndlf", "dlfdp"]
SMALL = {"trials": 1, "audit_rounds": 0, "seed": 3}


@pytest.fixture(scope="module")
def toy():
    return load_example("toy")


def test_a_workload_trains_as_the_options_it_stands_for(toy):
    workload = Workload(epsilon=2.0, target=0.5, rounds=6, batch_size=32)
    # One predictor for both: by default a workload's runs are predicted at the workload.
    told = validate(toy, TOPOLOGIES, workload=workload, predictor="paper", **SMALL)
    spelled = validate(toy, TOPOLOGIES, targets=[0.5], rounds=6, batch_size=32,
                       dp=DPConfig(epsilon=2.0, delta=1e-5), predictor="paper", **SMALL)
    pd.testing.assert_frame_equal(told.frame, spelled.frame)
    assert set(told.frame["target"]) == {0.5}


def test_options_that_agree_with_the_workload_are_accepted(toy):
    workload = Workload(target=0.5, rounds=4)
    result = validate(toy, ["ndlf"], workload=workload, targets=[0.5], rounds=4, **SMALL)
    assert len(result.frame) == 1


@pytest.mark.parametrize("options, message", [
    ({"dp": DPConfig(epsilon=3.0)}, "dp=.* disagrees with the workload's"),
    ({"rounds": 7}, "rounds=7 disagrees with the workload's 4"),
    ({"targets": [0.9]}, r"targets=\[0.9\] disagree with the workload's target 0.5"),
    ({"model": "mlp"}, "model='mlp' disagrees"),
])
def test_options_that_disagree_with_the_workload_are_refused_in_one_line(toy, options, message):
    with pytest.raises(InvalidInputError, match=message):
        validate(toy, ["ndlf"], workload=Workload(target=0.5, rounds=4), **options, **SMALL)


def test_a_model_topokit_does_not_train_needs_a_trainer(toy):
    with pytest.raises(InvalidInputError, match=r"pass model=YourModel\(...\) .* or "
                                                "trainer=your_training_function"):
        validate(toy, ["ndlf"], workload=Workload(model="cnn"), **SMALL)


def test_a_model_object_of_ones_own_trains_under_the_workload_s_name(toy):
    from topokit.training import MLP

    told = Workload(model="mine", epsilon=1.0, target=0.5, rounds=4)
    result = validate(toy, ["ndlf"], workload=told, model=MLP(64, 10, hidden=8), **SMALL)
    assert list(result.frame["topology"]) == ["ndlf"]


def test_the_optimize_spec_designs_for_the_workload_and_says_when_it_lies_outside(toy):
    with pytest.warns(TopokitWarning, match="outside what the predictor was fitted on"):
        result = validate(toy, ["optimize"], workload=Workload(epsilon=0.5, target=0.5,
                                                                rounds=4), **SMALL)
    assert list(result.frame["topology"]) == ["optimize"]


def test_a_workload_s_runs_are_predicted_as_design_judges_them(toy):
    """No predictor given: the workload's shipped predictor at the workload (its noise), as
    optimize judges designs; without a workload, the model's shipped fit."""
    from topokit import evaluate
    from topokit.design import load_predictor, predictor_within_fit

    workload = Workload(epsilon=2.0, target=0.5, rounds=6)
    result = validate(toy, ["dlfdp"], workload=workload, **SMALL)
    assert result.config["predictor_name"] == "workload"
    judge = predictor_within_fit(load_predictor("workload"), workload)[0]
    assert judge.feature_settings.noise_multiplier == pytest.approx(
        workload.resolved_noise_multiplier)
    trial = result.frame.iloc[0]
    counts = toy.with_class_counts(_trial_counts(toy, trial["seed"]))
    assert trial["pseudo_time"] == pytest.approx(
        evaluate(counts, result.topologies["dlfdp"], judge).pseudo_time, rel=1e-9)
    plain = validate(toy, ["ndlf"], targets=[0.5], rounds=4, **SMALL)
    assert plain.config["predictor_name"] == "default"


def _trial_counts(net, seed):
    from topokit.training import load_digits
    from topokit.validation.core import _partition_counts

    return _partition_counts(net, load_digits()[1], int(seed), partition=None, test=None)
