"""Coefficients that vary with the workload (``TrainingTimePredictor(varying_with=...)``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import spearmanr

from topokit.design._varying import corner_weights
from topokit.design.features import FeatureSettings
from topokit.design.time_predictor import TrainingTimePredictor
from topokit.errors import InputFileError, InvalidInputError

FEATURES = ("phi", "heterogeneity_local", "target_closeness")


def runs(seed: int, n: int = 1500):
    """Log rounds driven by phi far from the ceiling and by heterogeneity near it."""
    rng = np.random.default_rng(seed)
    phi, hetero = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    closeness = rng.choice([0.5, 0.7, 0.9, 0.95], n)
    near = (-np.log1p(-closeness) - -np.log1p(-0.5)) / (-np.log1p(-0.95) - -np.log1p(-0.5))
    log_rounds = 2.0 + 2.0 * phi * (1 - near) + 2.0 * hetero * near + 0.5 * near \
        + rng.normal(0, 0.05, n)
    return np.column_stack([phi, hetero, closeness]), np.exp(log_rounds)


def ranking(model, closeness: float, seed: int = 1) -> float:
    """Spearman of predicted and true rounds of fresh topologies at one closeness."""
    rng = np.random.default_rng(seed)
    phi, hetero = rng.uniform(0, 1, 200), rng.uniform(0, 1, 200)
    X = np.column_stack([phi, hetero, np.full(200, closeness)])
    near = 0.0 if closeness == 0.5 else 1.0
    truth = phi * (1 - near) + hetero * near
    return spearmanr(model.predict(X), truth).statistic


@pytest.fixture(scope="module")
def fitted():
    X, y = runs(0)
    varying = TrainingTimePredictor(features=FEATURES, horizon=1e6,
                                    varying_with=("target_closeness",)).fit(X, y)
    fixed = TrainingTimePredictor(features=FEATURES, horizon=1e6).fit(X, y)
    return varying, fixed


def test_varying_coefficients_rank_each_workload_by_what_matters_there(fitted):
    varying, fixed = fitted
    assert ranking(varying, 0.5) > 0.99 and ranking(varying, 0.95) > 0.99
    # One coefficient per feature ranks both workloads the same way: wrong in one of them.
    assert min(ranking(fixed, 0.5), ranking(fixed, 0.95)) < 0.8


def test_a_worse_topology_feature_never_predicts_fewer_rounds_at_any_workload(fitted):
    varying, _ = fitted
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(0, 1, 500), rng.uniform(0, 1, 500),
                         rng.uniform(0.3, 0.999, 500)])  # beyond the fitted range too
    base = varying.predict(X)
    for j in (0, 1):
        worse = X.copy()
        worse[:, j] += rng.uniform(0, 0.5, 500)
        assert np.all(varying.predict(worse) >= base * (1 - 1e-12))


def test_model_columns_name_every_coefficient(fitted):
    varying, fixed = fitted
    assert fixed.model_columns == FEATURES
    assert varying.model_columns == (
        "target_closeness", "phi@target_closeness=low", "heterogeneity_local@target_closeness=low",
        "phi@target_closeness=high", "heterogeneity_local@target_closeness=high")
    assert varying.rounds_coef_.shape == (5,) and np.all(varying.rounds_coef_ >= 0)
    low, high = varying.varying_range_["target_closeness"]
    assert low == pytest.approx(-np.log1p(-0.5)) and high == pytest.approx(-np.log1p(-0.95))


def test_corner_weights_are_a_partition_of_one_that_interpolates():
    rng = np.random.default_rng(0)
    oriented = rng.uniform(-1, 3, (50, 2))
    weights = corner_weights(oriented, [(0.0, 2.0), (-1.0, 1.0)])
    assert np.all(weights >= 0) and np.allclose(weights.sum(axis=1), 1.0)
    inside = np.clip(oriented, [0.0, -1.0], [2.0, 1.0])
    corners = np.array([[0.0, -1.0], [0.0, 1.0], [2.0, -1.0], [2.0, 1.0]])
    np.testing.assert_allclose(weights @ corners, inside, atol=1e-12)


def test_round_trip_predicts_the_same(fitted, tmp_path):
    varying, _ = fitted
    path = varying.save(tmp_path / "varying.json")
    again = TrainingTimePredictor.load(path)
    X, _ = runs(5, 300)
    np.testing.assert_array_equal(again.predict(X), varying.predict(X))
    assert again.varying_with == ("target_closeness",)


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.pop("varying_range"), "model.varying_range must map"),
    (lambda m: m.update(varying_range={"target_closeness": [1.0, 1.0]}), "finite low < high"),
    (lambda m: m.update(rounds_coef=m["rounds_coef"][:3]), "5 finite numbers, one per column"),
])
def test_broken_varying_files_are_refused_in_one_line(fitted, tmp_path, edit, message):
    data = fitted[0].to_dict()
    edit(data["model"])
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputFileError, match=message) as caught:
        TrainingTimePredictor.load(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("varying, message", [
    (("phi",), "describe the workload"),
    (("noise_multiplier",), "describe the workload"),  # not among this predictor's features
    ("target_closeness", "a sequence"),
    (("target_closeness", "target_closeness"), "distinct"),
])
def test_varying_with_must_name_workload_features_of_the_predictor(varying, message):
    X, y = runs(0, 100)
    with pytest.raises(InvalidInputError, match=message):
        TrainingTimePredictor(features=FEATURES, varying_with=varying).fit(X, y)


def test_a_workload_feature_that_never_varies_is_refused():
    X, y = runs(0, 100)
    X[:, 2] = 0.9
    with pytest.raises(InvalidInputError, match="takes one value in these runs"):
        TrainingTimePredictor(features=FEATURES, varying_with=("target_closeness",)).fit(X, y)


def test_a_strong_prior_keeps_every_corner_coefficient(fitted):
    varying, _ = fitted
    X, y = runs(9, 60)
    refit = TrainingTimePredictor(features=FEATURES, horizon=1e6,
                                  varying_with=("target_closeness",))
    refit.fit(X, y, prior=varying, prior_strength=1e9)
    np.testing.assert_allclose(refit.rounds_coef_, varying.rounds_coef_, atol=1e-6)
    assert refit.varying_range_ == varying.varying_range_


def test_noise_multiplier_is_the_settings_own_for_topologies():
    model = TrainingTimePredictor(features=("phi", "noise_multiplier"),
                                  settings=FeatureSettings(noise_multiplier=7.5))
    assert model.feature_context == {"noise_multiplier": 7.5}
