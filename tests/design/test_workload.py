"""Workload: defaults, validation, JSON round trip, noise calibration, the fitted region."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

import topokit
from topokit.design.features import FeatureSettings
from topokit.design.time_predictor import workload_outside
from topokit.design.workload import (
    DEFAULT_TARGET,
    TOPOKIT_MODELS,
    Workload,
    load_workload,
)
from topokit.errors import InputFileError, InputFileNotFoundError, InvalidInputError
from topokit.training import train
from topokit.training.models import _MODELS
from topokit.training.privacy import DPConfig, resolve_noise_multipliers


@pytest.fixture(scope="module")
def default_predictor():
    return topokit.load_predictor("default")


@pytest.fixture(scope="module")
def mlp_predictor():
    return topokit.load_predictor("mlp")


# -- defaults ---------------------------------------------------------------------------------

def test_defaults_are_todays_feature_settings_dpconfig_and_train_defaults(default_predictor):
    workload, settings, config = Workload(), FeatureSettings(), DPConfig()
    train_defaults = {name: p.default for name, p in inspect.signature(train).parameters.items()}
    assert (workload.epsilon, workload.delta) == (config.epsilon, config.delta)
    assert config.per == "round" and config.noise_multiplier is None
    assert workload.noise_multiplier is None
    assert workload.max_grad_norm == settings.max_grad_norm == config.max_grad_norm
    assert workload.batch_size == settings.batch_size == train_defaults["batch_size"]
    assert workload.local_steps == settings.local_steps == train_defaults["local_steps"]
    assert workload.n_samples == settings.n_samples
    assert workload.model == train_defaults["model"]
    assert workload.rounds == train_defaults["rounds"] == default_predictor.horizon
    assert workload.target == DEFAULT_TARGET == default_predictor.provenance_["target"]
    assert workload.n_classes is None


def test_default_feature_settings_are_feature_settings_defaults():
    assert Workload().feature_settings() == FeatureSettings()


def test_default_dp_config_kwargs_build_the_default_dpconfig():
    assert DPConfig(**Workload().dp_config_kwargs()) == DPConfig()


def test_topokit_models_are_the_models_train_builds():
    assert set(TOPOKIT_MODELS) == set(_MODELS)


@pytest.mark.parametrize("model, trained", [("logreg", True), ("mlp", True), ("cnn", False),
                                            ("MLP", False)])
def test_trained_by_topokit(model, trained):
    assert Workload(model=model).trained_by_topokit is trained


# -- noise multiplier -----------------------------------------------------------------------

def test_noise_multiplier_at_epsilon_1_is_the_default_noise_multiplier():
    from topokit.design.features import DEFAULT_NOISE_MULTIPLIER

    workload = Workload(epsilon=1.0, delta=1e-5)
    assert workload.resolved_noise_multiplier == DEFAULT_NOISE_MULTIPLIER


@pytest.mark.parametrize("epsilon, delta", [(0.25, 1e-5), (0.9, 1e-6), (3.0, 1e-3)])
def test_noise_multiplier_is_what_dpconfig_per_round_calibrates(epsilon, delta):
    workload = Workload(epsilon=epsilon, delta=delta)
    config = DPConfig(**workload.dp_config_kwargs())
    expected = resolve_noise_multipliers(config, np.array([0.1]), rounds=200)[0]
    assert workload.resolved_noise_multiplier == expected


def test_smaller_epsilon_gives_a_larger_noise_multiplier():
    grid = [0.05, 0.1, 0.25, 0.5, 0.99, 1.0, 1.5, 2.0, 4.0, 8.0]
    multipliers = [Workload(epsilon=e).resolved_noise_multiplier for e in grid]
    assert all(a > b for a, b in zip(multipliers, multipliers[1:], strict=False))


def test_a_given_noise_multiplier_wins_and_reaches_dpconfig():
    workload = Workload(epsilon=0.5, noise_multiplier=2.5)
    assert workload.resolved_noise_multiplier == 2.5
    assert DPConfig(**workload.dp_config_kwargs()).noise_multiplier == 2.5
    assert workload.feature_settings().noise_multiplier == 2.5


def test_feature_settings_carry_the_workload():
    workload = Workload(epsilon=0.5, max_grad_norm=2.0, batch_size=16, local_steps=3,
                        n_samples=5000)
    settings = workload.feature_settings()
    assert settings.noise_multiplier == workload.resolved_noise_multiplier
    assert (settings.max_grad_norm, settings.batch_size, settings.local_steps,
            settings.n_samples) == (2.0, 16, 3, 5000)
    assert settings.gamma == FeatureSettings().gamma


# -- JSON ------------------------------------------------------------------------------------

ROUND_TRIPS = [
    Workload(),
    Workload(model="cnn", epsilon=0.5, delta=1e-6, max_grad_norm=0.5, batch_size=32,
             local_steps=2, target=0.7, rounds=500, n_samples=60000, n_classes=10),
    Workload(model="mlp", noise_multiplier=4.25),
    Workload(target=0.55, ceiling=0.62),
]


@pytest.mark.parametrize("workload", ROUND_TRIPS)
def test_dict_round_trip(workload):
    data = workload.to_dict()
    assert Workload.from_dict(json.loads(json.dumps(data))) == workload
    assert set(data) == {"model", "epsilon", "delta", "max_grad_norm", "batch_size",
                         "local_steps", "target", "rounds", "n_samples", "n_classes",
                         "noise_multiplier", "ceiling"}


@pytest.mark.parametrize("workload", ROUND_TRIPS)
def test_file_round_trip(tmp_path, workload):
    path = workload.save(tmp_path / "sub" / "workload.json")
    assert path == tmp_path / "sub" / "workload.json"
    assert load_workload(path) == workload
    assert json.loads(path.read_text())["model"] == workload.model


def test_a_hand_written_file_takes_defaults_for_missing_fields(tmp_path):
    path = tmp_path / "w.json"
    path.write_text('{"model": "cnn", "epsilon": 2}')
    assert load_workload(path) == Workload(model="cnn", epsilon=2.0)


def test_exported_from_the_package():
    assert topokit.Workload is Workload and topokit.design.Workload is Workload
    assert topokit.load_workload is load_workload
    assert "Workload" in topokit.__all__ and "load_workload" in topokit.design.__all__


# -- bad input -------------------------------------------------------------------------------

BAD = [
    ({"epsilon": 0}, "epsilon"), ({"epsilon": -1.0}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"), ({"epsilon": float("inf")}, "epsilon"),
    ({"epsilon": True}, "epsilon"), ({"epsilon": "1"}, "epsilon"),
    ({"delta": 0}, "delta"), ({"delta": 1.0}, "delta"), ({"delta": float("nan")}, "delta"),
    ({"max_grad_norm": 0}, "max_grad_norm"), ({"max_grad_norm": np.nan}, "max_grad_norm"),
    ({"batch_size": 0}, "batch_size"), ({"batch_size": 2.0}, "batch_size"),
    ({"batch_size": True}, "batch_size"),
    ({"local_steps": 0}, "local_steps"),
    ({"target": 0}, "target"), ({"target": 1.01}, "target"), ({"target": -0.5}, "target"),
    ({"target": float("nan")}, "target"), ({"target": False}, "target"),
    ({"rounds": 0}, "rounds"), ({"rounds": -5}, "rounds"), ({"rounds": True}, "rounds"),
    ({"rounds": float("nan")}, "rounds"),
    ({"n_samples": 0}, "n_samples"), ({"n_samples": float("nan")}, "n_samples"),
    ({"n_classes": 1}, "n_classes"), ({"n_classes": True}, "n_classes"),
    ({"noise_multiplier": 0}, "noise_multiplier"),
    ({"noise_multiplier": float("nan")}, "noise_multiplier"),
    ({"noise_multiplier": True}, "noise_multiplier"),
    ({"model": ""}, "model"), ({"model": "   "}, "model"), ({"model": 3}, "model"),
    ({"model": None}, "model"),
]


@pytest.mark.parametrize("kwargs, field", BAD, ids=[repr(k) for k, _ in BAD])
def test_bad_field_is_one_line_naming_it(kwargs, field):
    with pytest.raises(InvalidInputError) as info:
        Workload(**kwargs)
    message = str(info.value)
    assert message.startswith(f"{field} must be ") and "\n" not in message
    with pytest.raises(InvalidInputError, match=f"^{field} must be "):
        Workload.from_dict(kwargs)


@pytest.mark.parametrize("kwargs, accepted", [
    ({"epsilon": float("nan")}, "> 0"), ({"target": 2}, "(0, 1]"), ({"delta": 2}, "(0, 1)"),
    ({"rounds": 0}, ">= 1"), ({"n_classes": 1}, ">= 2"), ({"noise_multiplier": -1}, "> 0"),
])
def test_bad_field_message_gives_the_accepted_range(kwargs, accepted):
    with pytest.raises(InvalidInputError) as info:
        Workload(**kwargs)
    assert accepted in str(info.value)


def test_unknown_key_in_from_dict_is_named():
    with pytest.raises(InvalidInputError, match=r"unknown workload field 'epsilom' \(did you "
                                                r"mean 'epsilon'\?\)"):
        Workload.from_dict({"epsilom": 1.0})
    with pytest.raises(InvalidInputError, match="unknown workload field 'lr'"):
        Workload.from_dict({"lr": 0.1})


def test_from_dict_refuses_a_non_mapping():
    with pytest.raises(InvalidInputError, match="mapping"):
        Workload.from_dict([("epsilon", 1.0)])


def test_workload_is_frozen():
    with pytest.raises(AttributeError):
        Workload().epsilon = 2.0


def test_load_workload_errors_name_the_file(tmp_path):
    with pytest.raises(InputFileNotFoundError):
        load_workload(tmp_path / "missing.json")
    bad_json, not_object, bad_field = (tmp_path / name for name in ("a.json", "b.json", "c.json"))
    bad_json.write_text("{model: cnn}")
    not_object.write_text("[1, 2]")
    bad_field.write_text('{"target": 1.5}')
    for path, fragment in ((bad_json, "malformed JSON"), (not_object, "JSON object"),
                           (bad_field, "target must be an accuracy in (0, 1]")):
        with pytest.raises(InputFileError) as info:
            load_workload(path)
        assert str(path) in str(info.value) and fragment in str(info.value)
    with pytest.raises(InputFileError, match="directory"):
        load_workload(tmp_path)


def test_save_refuses_a_directory(tmp_path):
    with pytest.raises(InvalidInputError, match="directory"):
        Workload().save(tmp_path)


# -- outside what a predictor was fitted on ---------------------------------------------------

def test_default_workload_lies_inside_the_default_predictor(default_predictor):
    assert workload_outside(default_predictor, Workload()) == ()
    assert workload_outside("default", Workload(n_samples=1347, n_classes=10)) == ()


def test_mlp_workload_lies_inside_the_mlp_predictor(mlp_predictor):
    assert workload_outside(mlp_predictor, Workload(model="mlp")) == ()
    assert len(workload_outside(mlp_predictor, Workload())) == 1


@pytest.mark.parametrize("kwargs, field", [
    ({"epsilon": 0.25}, "noise multiplier"), ({"target": 0.55}, "target"),
    ({"model": "cnn"}, "model"), ({"model": "mlp"}, "model"),
    ({"batch_size": 32}, "batch_size"), ({"local_steps": 2}, "local_steps"),
    ({"max_grad_norm": 0.5}, "max_grad_norm"), ({"n_samples": 60000}, "n_samples"),
    ({"noise_multiplier": 5.0}, "noise multiplier"),
])
def test_each_setting_outside_the_fit_gives_one_reason(default_predictor, kwargs, field):
    reasons = workload_outside(default_predictor, Workload(**kwargs))
    assert len(reasons) == 1 and reasons[0].startswith(field)
    assert "\n" not in reasons[0]


@pytest.mark.parametrize("rounds", [50, 200, 500])
def test_the_horizon_is_a_setting_not_a_reason(default_predictor, rounds):
    assert workload_outside(default_predictor, Workload(rounds=rounds)) == ()


def test_reasons_name_both_values(default_predictor):
    (noise,) = workload_outside(default_predictor, Workload(epsilon=0.25))
    fitted = default_predictor.feature_settings.noise_multiplier
    assert "epsilon=0.25" in noise and f"{fitted:.4g}" in noise
    (model,) = workload_outside(default_predictor, Workload(model="cnn"))
    assert "'cnn'" in model and "'logreg'" in model


def test_several_settings_outside_give_several_reasons(default_predictor):
    reasons = workload_outside(default_predictor,
                               Workload(model="cnn", epsilon=0.25, target=0.55))
    assert [r.split()[0] for r in reasons] == ["model", "noise", "target"]


def test_the_same_noise_multiplier_from_another_budget_lies_inside(default_predictor):
    z = default_predictor.feature_settings.noise_multiplier
    assert workload_outside(default_predictor, Workload(epsilon=0.5, noise_multiplier=z)) == ()


def test_equation_15_records_no_training_settings():
    assert workload_outside("paper", Workload(model="cnn", epsilon=0.1)) == ()


def test_workload_outside_refuses_a_non_workload(default_predictor):
    with pytest.raises(InvalidInputError, match="Workload"):
        workload_outside(default_predictor, {"epsilon": 1.0})


def test_a_noise_multiplier_a_rounding_error_away_lies_inside(default_predictor):
    z = default_predictor.feature_settings.noise_multiplier
    assert workload_outside(default_predictor, Workload(noise_multiplier=z * (1 + 1e-9))) == ()
    assert len(workload_outside(default_predictor, Workload(noise_multiplier=z * 1.01))) == 1
