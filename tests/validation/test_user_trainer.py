"""validate(..., trainer=fn): any trainer's accuracies become the core's runs table."""

import math
import threading
import warnings

import numpy as np
import pandas as pd
import pytest

from topokit import Workload
from topokit.errors import InvalidInputError, TopokitWarning
from topokit.training import DPConfig, train
from topokit.training.models import MLP
from topokit.validation import curves_path, timings_path, validate

TOPOLOGIES = "ndlf,dlfdp"
ROUNDS = 12
#: Reached in a few rounds, and never within ROUNDS: both kinds of measured rounds.
TARGETS = (0.5, 0.8, 0.99)
#: Columns a user trainer's row has as the core's (the others: stop_rule, epsilon).
SAME_COLUMNS = ["network", "topology", "kind", "trial", "seed", "target", "measured_rounds",
                "measured_time", "rounds_run", "final_accuracy", "dp_formal", "noise_variance",
                "hitting_time", "pseudo_time", "noise_average", "noise_disagreement",
                "noise_felt", "exposed_stranger_pairs", "stranger_mu_max"]


def _core_trainer(X, y, **options):
    """A trainer that is topokit's own core: ``train`` on the same data and options."""
    def trainer(net, topology, *, rounds, seed, dp):
        run = train(net, topology, X, y, rounds=rounds, seed=seed,
                    dp=dp if dp is not None else False, **options)
        return run.mean_accuracy[1:].tolist()  # after rounds 1..T (no initial model)
    return trainer


def _validate(net, **kwargs):
    options = {"trials": 2, "rounds": ROUNDS, "targets": TARGETS, "audit_rounds": 5, **kwargs}
    return validate(net, TOPOLOGIES, **options)


@pytest.mark.parametrize("options", [
    {},
    {"partition": 0.5, "dp": DPConfig(noise_multiplier=1.0), "batch_size": 32},
])
def test_the_core_as_a_trainer_gives_the_default_runs_table(toy, digits, options):
    default = _validate(toy, **options)
    dp = options.get("dp")
    core_options = {k: v for k, v in options.items() if k != "dp"}
    user = _validate(toy, trainer=_core_trainer(*digits, **core_options), **options)
    assert default.frame["measured_rounds"].notna().any()
    assert default.frame["measured_rounds"].isna().any()
    pd.testing.assert_frame_equal(user.frame[SAME_COLUMNS], default.frame[SAME_COLUMNS])
    assert (user.frame["stop_rule"] == "user trainer").all()
    assert user.frame["epsilon"].isna().all()
    if dp is not None:
        assert default.frame["noise_variance"].gt(0).any()


def test_a_users_curve_and_row(toy):
    returned = [0.2, 0.45, 0.7, 0.69, 0.75]

    def trainer(net, topology, *, rounds, seed, dp):
        return np.array(returned)

    result = validate(toy, "ndlf", trainer=trainer, trials=1, rounds=8, targets=(0.44, 0.7, 0.9),
                      audit_rounds=0)
    frame = result.frame.set_index("target")
    assert frame["measured_rounds"].tolist()[:2] == [2.0, 3.0]
    assert math.isnan(frame.loc[0.9, "measured_rounds"])
    assert (frame["rounds_run"] == 5).all() and (frame["final_accuracy"] == 0.75).all()
    assert frame["measured_time"].iloc[0] == pytest.approx(2 * frame["local_iterate"].iloc[0])
    assert result.curves["round"].tolist() == [1, 2, 3, 4, 5]
    assert result.curves["mean_accuracy"].tolist() == returned
    assert result.config["trainer"].endswith("test_a_users_curve_and_row.<locals>.trainer")


def test_the_trainer_gets_the_trials_seed_rounds_and_dp(toy):
    calls = []

    def trainer(net, topology, *, rounds, seed, dp):
        calls.append((net.class_counts is not None, sorted(topology.dp_devices), rounds, seed,
                      dp))
        return [0.5]

    dp = DPConfig(noise_multiplier=2.0)
    result = validate(toy, "ndlf,dlfdp", trainer=trainer, trials=2, rounds=3, targets=(0.5,),
                      audit_rounds=0, dp=dp)
    assert [seed for *_, seed, _ in calls] == result.frame["seed"].tolist()
    assert all(has_counts and rounds == 3 for has_counts, _, rounds, _, _ in calls)
    assert sorted(bool(devices) for _, devices, *_ in calls) == [False, False, True, True]
    assert all(config == dp for *_, config in calls)  # the core's, with or without DP devices
    off = []
    validate(toy, "dlfdp", trainer=lambda net, topology, **kw: off.append(kw["dp"]) or [0.5],
             trials=1, rounds=3, targets=(0.5,), audit_rounds=0, dp=False)
    assert off == [None]


def test_the_default_config_has_no_trainer(toy):
    result = validate(toy, "ndlf", trials=1, rounds=2, targets=(0.5,), audit_rounds=0)
    assert "trainer" not in result.config
    assert "unmeasured_model" not in result.config


def test_a_model_nothing_measured_is_said_to_be_judged_by_another_fit(toy):
    """Its predictions are the shipped logistic-regression fit's: validate says so once,
    with how to measure the model, and records it; a workload or a named predictor is a
    choice, and silences it."""
    options = {"trials": 1, "rounds": 3, "targets": (0.5,), "audit_rounds": 0}
    with pytest.warns(TopokitWarning) as caught:
        result = validate(toy, "ndlf", trainer=_returning([0.5]), **options)
    said = [str(w.message) for w in caught if "model of your own" in str(w.message)]
    assert len(said) == 1 and "ceiling_probe" in said[0] and "\n" not in said[0]
    assert result.config["unmeasured_model"] == said[0]
    for chosen in ({"predictor": "default"},
                   {"workload": Workload(model="mine", ceiling=0.9, probe_rounds=12, rounds=3,
                                        target=0.5)}):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = validate(toy, "ndlf", trainer=_returning([0.5]), **options, **chosen)
        assert not [w for w in caught if "model of your own" in str(w.message)]
        assert "unmeasured_model" not in result.config


def _returning(value):
    def trainer(net, topology, *, rounds, seed, dp):
        return value
    return trainer


def _raising(net, topology, *, rounds, seed, dp):
    raise ValueError("the GPU is\nbusy")


@pytest.mark.parametrize("trainer, message", [
    (_returning("0.5"), "returned a str; return a list of test accuracies"),
    (_returning({1: 0.5}), "returned a dict; return a list"),
    (_returning(None), "returned a NoneType; return a list"),
    (_returning(x / 10 for x in range(3)), "returned a generator; return a list"),
    (_returning([0.5] * 5), "returned 5 accuracies for rounds=4; return at most one per round"),
    (_returning([]), "returned no accuracies"),
    (_returning(np.array([])), "returned no accuracies"),
    (_returning([0.5, float("nan")]), "returned nan as the accuracy after round 2; accuracies "
                                      "must be finite"),
    (_returning(np.array([float("inf")])), "returned inf as the accuracy after round 1"),
    (_returning([0.3, 85.0]), r"returned 85 as the accuracy after round 2, outside \[0, 1\]; "
                              "return fractions, not percentages"),
    (_returning([-0.1]), r"returned -0.1 as the accuracy after round 1, outside \[0, 1\]"),
    (_returning([0.5, "0.6"]), "returned '0.6' as the accuracy after round 2"),
    (_returning([True]), "returned True as the accuracy after round 1"),
    (_returning(np.ones((2, 2)) / 2), r"returned an array of shape \(2, 2\)"),
    (_raising, "raised ValueError: the GPU is busy"),
])
def test_a_bad_trainer_is_refused_in_one_line_and_writes_nothing(toy, tmp_path, trainer,
                                                                   message):
    output = tmp_path / "runs.parquet"
    with pytest.raises(InvalidInputError, match=message) as caught:
        validate(toy, "ndlf", trainer=trainer, trials=1, rounds=4, targets=(0.5,),
                 audit_rounds=0, output=output)
    text = str(caught.value)
    assert text.startswith("the trainer on topology 'ndlf', trial 0 ")
    assert "\n" not in text
    error = caught.value  # no chained traceback of the trainer's own
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    assert list(tmp_path.iterdir()) == []  # no table, no parts folder
    assert not curves_path(output).exists() and not timings_path(output).exists()


def test_a_later_failure_names_its_topology_and_trial(toy):
    def trainer(net, topology, *, rounds, seed, dp):
        return [0.5] if topology.dp_devices == frozenset() else [2.0]

    with pytest.raises(InvalidInputError, match="on topology 'dlfdp', trial 0 returned 2"):
        validate(toy, "ndlf,dlfdp", trainer=trainer, trials=1, rounds=2, targets=(0.5,),
                 audit_rounds=0)


@pytest.mark.parametrize("trainer, message", [
    (42, "trainer must be a function fn\\(net, topology, \\*, rounds, seed, dp\\)"),
    (lambda net: [0.5], "cannot be called as fn\\(net, topology, \\*, rounds, seed, dp\\)"),
    (lambda net, topology, rounds, seed: [0.5], "cannot be called as"),
])
def test_a_trainer_that_cannot_be_called_is_refused_before_any_work(toy, trainer, message):
    with pytest.raises(InvalidInputError, match=message) as caught:
        validate(toy, "ndlf", trainer=trainer, trials=1, rounds=2, targets=(0.5,))
    assert "\n" not in str(caught.value)


def test_a_trainer_for_workers_must_pickle(toy):
    lock = threading.Lock()

    def trainer(net, topology, *, rounds, seed, dp):
        with lock:
            return [0.5]

    with pytest.raises(InvalidInputError, match="cannot be sent to the workers of n_jobs=2") \
            as caught:
        validate(toy, "ndlf", trainer=trainer, trials=1, rounds=2, targets=(0.5,), n_jobs=2)
    assert "\n" not in str(caught.value)
    # In this process nothing is pickled: the same trainer runs.
    result = validate(toy, "ndlf", trainer=trainer, trials=1, rounds=2, targets=(0.5,),
                      audit_rounds=0)
    assert result.frame["measured_rounds"].tolist() == [1.0]


def test_a_closure_runs_in_joblib_workers(toy):
    accuracies = [0.3, 0.6]
    result = validate(toy, "ndlf,dlfdp", trainer=lambda net, topology, **kw: accuracies,
                      trials=1, rounds=2, targets=(0.5,), audit_rounds=0, n_jobs=2)
    assert result.frame["measured_rounds"].tolist() == [2.0, 2.0]


def test_topokits_mlp_of_another_width_is_a_model_nothing_measured(toy):
    """The shipped MLP fit has runs of topokit's MLP as "mlp" builds it (32 hidden units)
    only: the class alone does not make another width measured."""
    options = {"trials": 1, "rounds": 3, "targets": (0.5,), "audit_rounds": 0}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shipped = validate(toy, "ndlf", model=MLP(64, 10), **options)
    assert not [w for w in caught if "model of your own" in str(w.message)]
    assert shipped.config["predictor_name"] == "mlp"
    with pytest.warns(TopokitWarning, match="model of your own"):
        wider = validate(toy, "ndlf", model=MLP(64, 10, hidden=128), **options)
    assert wider.config["predictor_name"] == "default" and "unmeasured_model" in wider.config
