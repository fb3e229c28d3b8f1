"""The predictor that knows the workload: log noise features, target closeness, fitted ranges."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from topokit import Workload, load_example, load_predictor, optimize
from topokit.design.baselines import dlfdp, ndlf
from topokit.design.features import topology_features
from topokit.design.time_predictor import (
    DEFAULT_FEATURES,
    NOISE_FEATURES,
    TrainingTimePredictor,
    predictor_at_workload,
    shipped_predictor_for,
    workload_ceiling,
    workload_outside,
)
from topokit.errors import (
    InputFileError,
    InvalidInputError,
    StrangersExposedWarning,
    TopokitWarning,
)

FEATURES = (*DEFAULT_FEATURES, "target_closeness")


def _runs(seed: int = 0, n: int = 300):
    """Synthetic runs whose rounds grow with log noise and with closeness to the ceiling."""
    rng = np.random.default_rng(seed)
    X = np.abs(rng.normal(size=(n, len(FEATURES)))) * 1e-3
    X[:, FEATURES.index("effective_neighbours")] = rng.uniform(1, 10, n)
    X[rng.random(n) < 0.3, :3] = 0.0  # runs without DP devices: no noise at all
    closeness = rng.uniform(0.6, 0.98, n)
    X[:, -1] = closeness
    log_rounds = 2 + np.log1p(X[:, 0] / 1e-4) - np.log1p(-closeness) \
        + rng.normal(0, 0.1, n)
    rounds = np.where(log_rounds < np.log(200), np.exp(log_rounds), np.inf)
    return X, rounds


@pytest.fixture(scope="module")
def fitted():
    X, rounds = _runs()
    return TrainingTimePredictor(features=FEATURES, horizon=200, noise_scale=0.1).fit(X, rounds)


def test_noise_reference_is_the_median_positive_value(fitted):
    X, _ = _runs()
    for j, name in enumerate(FEATURES):
        if name in NOISE_FEATURES:
            assert fitted.noise_reference_[name] == np.median(X[:, j][X[:, j] > 0])


def test_log_noise_and_closeness_are_monotone(fitted):
    X, _ = _runs()
    row = X[:1].copy()
    noisier, closer = row.copy(), row.copy()
    noisier[0, 0] *= 10
    closer[0, -1] = min(0.99, row[0, -1] + 0.05)
    base = fitted.predict(row)[0]
    assert fitted.predict(noisier)[0] >= base
    assert fitted.predict(closer)[0] >= base
    beyond = row.copy()
    beyond[0, -1] = 1.0  # the target at (or above) the ceiling: never reached
    assert fitted.predict(beyond)[0] == np.inf


def test_the_file_round_trip_predicts_the_same(fitted, tmp_path):
    fitted.set_params(target_closeness=0.9)
    path = fitted.save(tmp_path / "p.json")
    again = TrainingTimePredictor.load(path)
    X, _ = _runs(seed=1)
    assert np.array_equal(again.predict(X), fitted.predict(X))
    assert again.noise_scale == 0.1 and again.target_closeness == 0.9
    assert again.noise_reference_ == fitted.noise_reference_


def test_a_file_without_its_noise_reference_is_refused(fitted, tmp_path):
    record = fitted.to_dict()
    del record["model"]["noise_reference"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(record))
    with pytest.raises(InputFileError, match="noise_reference"):
        load_predictor(path)


def test_old_files_read_as_before():
    # The shipped default predates noise_scale and closeness: its params are the two it had.
    record = load_predictor("default").to_dict()
    assert set(record["params"]) == {"C", "horizon"}
    assert "noise_reference" not in record["model"]


def test_topology_features_need_the_closeness_from_the_predictor(fitted):
    toy = load_example("toy")
    features = topology_features(toy, dlfdp(toy))
    without = fitted.set_params(target_closeness=None)
    with pytest.raises(InvalidInputError, match="setting of the workload"):
        without.predict_features(features)
    near = fitted.set_params(target_closeness=0.97).predict_features(features)
    far = TrainingTimePredictor(**{**fitted.get_params(), "target_closeness": 0.7})
    far.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_")})
    assert far.predict_features(features) <= near


def test_a_prior_of_other_transforms_is_refused(fitted):
    X, rounds = _runs(seed=2)
    plain = TrainingTimePredictor(features=FEATURES, horizon=200)
    with pytest.raises(InvalidInputError, match="noise_scale"):
        plain.fit(X, rounds, prior=fitted, prior_strength=1.0)
    refit = TrainingTimePredictor(features=FEATURES, horizon=200, noise_scale=0.1).fit(
        X, rounds, prior=fitted, prior_strength=1.0)
    assert refit.noise_reference_ == fitted.noise_reference_


# -- the shipped predictor and the workload ----------------------------------------------------

def test_the_shipped_workload_predictor_covers_a_range_of_budgets():
    model = load_predictor("workload")
    low, high = model.provenance_["fitted_ranges"]["noise_multiplier"]
    assert low < Workload(epsilon=4).resolved_noise_multiplier < \
        Workload(epsilon=0.5).resolved_noise_multiplier < high
    assert workload_outside(model, Workload(epsilon=0.5, target=0.92)) == ()
    assert workload_outside(model, Workload(epsilon=4, target=0.85)) == ()
    assert shipped_predictor_for(Workload(epsilon=0.5)) == "workload"
    # One predictor for both shipped models, told apart by how fast each learns.
    assert model.provenance_["trained_models"] == ["logreg", "mlp"]
    assert model.provenance_["probe_rounds"] == {"logreg": 4.0, "mlp": 34.0}
    assert shipped_predictor_for(Workload(model="mlp")) == "workload"
    assert workload_outside(model, Workload(model="mlp", epsilon=0.5, target=0.85)) == ()
    assert shipped_predictor_for(None) == "default"


def test_a_model_of_ones_own_is_judged_by_its_measured_ceiling_and_trait():
    model = load_predictor("workload")
    told = Workload(model="cnn", epsilon=1.0, target=0.85, ceiling=0.95, probe_rounds=12)
    assert workload_outside(model, told) == ()
    slow = Workload(model="cnn", epsilon=1.0, target=0.85, ceiling=0.95, probe_rounds=500)
    assert any("probe" in reason for reason in workload_outside(model, slow))
    unknown = workload_outside(model, Workload(model="cnn", ceiling=0.95))
    assert any("learns without noise" in reason for reason in unknown)


def test_optimize_judges_a_measured_model_of_ones_own_at_its_workload():
    import warnings

    from topokit import load_example, optimize

    measured = Workload(model="cnn", epsilon=1.0, target=0.85, ceiling=0.95, probe_rounds=12)
    assert shipped_predictor_for(measured) == "workload"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside the fitted ranges: no warning
        warnings.simplefilter("ignore", StrangersExposedWarning)  # no DP device
        design = optimize(load_example("siot16"), seed=0, workload=measured)
    assert design.predictor["name"] == "workload"
    assert list(design.stats["workload"]["outside"]) == []
    # Without the probe's measurements the model is unknown: the same predictor, at the
    # values it knows (workload_clamps), with the safe choices (tests/design/test_trust.py).
    assert shipped_predictor_for(Workload(model="cnn", ceiling=0.95)) == "workload"


def test_outside_the_ranges_says_which_setting():
    model = load_predictor("workload")
    reasons = workload_outside(model, Workload(epsilon=100.0))
    assert len(reasons) == 1 and "noise multiplier" in reasons[0]
    reasons = workload_outside(model, Workload(model="cnn"))
    assert any("ceiling" in r for r in reasons) and any("'cnn'" in r for r in reasons)
    assert workload_outside(model, Workload(model="cnn", ceiling=0.9)) != ()  # the model
    assert any("target closeness" in r for r in
               workload_outside(model, Workload(target=0.3, ceiling=0.9)))


def test_at_the_workload_the_closeness_is_target_over_ceiling():
    model = load_predictor("workload")
    ceiling = model.provenance_["ceilings"]["logreg"]
    at = predictor_at_workload(model, Workload(epsilon=0.5, target=0.92))
    assert at.target_closeness == pytest.approx(0.92 / ceiling)
    assert workload_ceiling(model, Workload()) == ceiling
    mine = predictor_at_workload(model, Workload(target=0.55, ceiling=0.62))
    assert mine.target_closeness == pytest.approx(0.55 / 0.62)
    assert at.feature_settings.noise_multiplier == Workload(epsilon=0.5).resolved_noise_multiplier


def test_the_closer_target_is_predicted_slower():
    toy = load_example("toy")
    model = load_predictor("workload")
    far = predictor_at_workload(model, Workload(target=0.80)).predict_network(toy, ndlf(toy))
    near = predictor_at_workload(model, Workload(target=0.92)).predict_network(toy, ndlf(toy))
    assert far <= near


# -- optimize with a workload --------------------------------------------------------------------

@pytest.fixture(scope="module")
def toy():
    return load_example("toy")


def test_optimize_designs_at_a_workload_inside_the_fit(toy):
    workload = Workload(epsilon=0.5, target=0.92)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TopokitWarning)  # inside: no warning
        warnings.simplefilter("ignore", StrangersExposedWarning)  # no DP device
        told = optimize(toy, seed=0, workload=workload)
    record = told.stats["workload"]
    assert record["outside"] == [] and record["designed_at"] == "the workload"
    assert told.predictor["name"] == "workload"
    judged = told.predictor["record"]
    assert judged["settings"]["noise_multiplier"] == workload.resolved_noise_multiplier
    # The same search run by hand with the predictor at the workload.
    by_hand = optimize(toy, seed=0, predictor=predictor_at_workload(
        load_predictor("workload"), workload))
    assert by_hand.topology == told.topology
    assert by_hand.metrics.pseudo_time == told.metrics.pseudo_time


def test_optimize_outside_the_fit_clamps_what_lies_outside(toy):
    from topokit.design.time_predictor import predictor_within_fit

    workload = Workload(epsilon=100.0)
    with pytest.warns(TopokitWarning, match="outside what the predictor was fitted on"):
        told = optimize(toy, seed=0, workload=workload)
    record = told.stats["workload"]
    assert record["extrapolated"] is True and list(record["clamped"]) == ["noise_multiplier"]
    assert record["designed_at"] == "the workload, clamped to what the predictor was fitted on"
    clamped, _ = predictor_within_fit(load_predictor("workload"), workload)
    assert told.topology == optimize(toy, seed=0, predictor=clamped).topology


def test_a_named_predictor_is_kept_with_a_workload(toy):
    told = optimize(toy, seed=0, predictor="default", workload=Workload())
    assert told.predictor["name"] == "default"
    assert told.topology == optimize(toy, seed=0).topology


# -- calibrating it from the user's runs -----------------------------------------------------------

@pytest.fixture(scope="module")
def user_runs(tmp_path_factory, toy):
    import pandas as pd

    from topokit import save_network, save_topology

    folder = tmp_path_factory.mktemp("runs")
    save_network(toy, folder / "toy.json")
    for name, topology in {"ndlf": ndlf(toy), "dlfdp": dlfdp(toy), "paper": toy.topology}.items():
        save_topology(topology, folder / f"{name}.json")
    runs = pd.DataFrame({"network": "toy.json", "target": [0.8] * 6 + [0.6] * 6,
                         "horizon": 40, "topology": ["ndlf.json", "dlfdp.json", "paper.json"] * 4,
                         "measured_rounds": [9, 38, 21, 8, None, 24, 5, 20, 12, 4, 30, 14]})
    runs.to_csv(folder / "runs.csv", index=False)
    return folder / "runs.csv"


def test_calibrating_it_takes_the_closeness_from_the_workload(user_runs):
    from topokit.validation import calibrate

    result = calibrate(user_runs, predictor="workload", target=0.8, prior_strength=10,
                       settings=Workload(target=0.8, ceiling=0.9))
    assert result.predictor.target_closeness == pytest.approx(0.8 / 0.9)
    assert result.predictor.noise_scale == load_predictor("workload").noise_scale
    assert result.n_runs == 6


def test_calibrating_it_without_a_known_ceiling_is_one_line(user_runs):
    from topokit.validation import calibrate

    with pytest.raises(InvalidInputError, match="ceiling="):
        calibrate(user_runs, predictor="workload", prior_strength=10,
                  settings=Workload(model="cnn", target=0.8))


def test_calibrating_it_on_a_model_of_ones_own_needs_its_trait(user_runs):
    from topokit.validation import calibrate

    with pytest.raises(InvalidInputError, match=r"probe_rounds=\.\.\."):
        calibrate(user_runs, predictor="workload", prior_strength=10,
                  settings=Workload(model="cnn", target=0.8, ceiling=0.9))
    told = calibrate(user_runs, predictor="workload", prior_strength=10,
                     settings=Workload(model="cnn", target=0.8, ceiling=0.9,
                                       probe_rounds=12)).predictor
    assert told.probe_rounds == 12 and told.target_closeness == pytest.approx(0.8 / 0.9)


def test_a_predictor_calibrated_on_a_models_runs_designs_with_its_weights(user_runs):
    from topokit.design import default_mixing
    from topokit.validation import calibrate

    told = calibrate(user_runs, predictor="default", target=0.8, prior_strength=10,
                     settings=Workload(model="mlp", target=0.8)).predictor
    assert told.provenance_["trained_model"] == "mlp"
    assert default_mixing(told) == default_mixing("mlp")
    # Told nothing of the runs' model, the refit claims none: the safe weights.
    untold = calibrate(user_runs, predictor="default", target=0.8, prior_strength=10).predictor
    assert "trained_model" not in untold.provenance_
    assert default_mixing(untold) == "lazy-metropolis"
    # Told a model of one's own and its measured trait, the weights follow the measurement.
    for trait, weights in ((4, "fastest"), (40, "lazy-metropolis")):
        mine = calibrate(user_runs, predictor="default", target=0.8, prior_strength=10,
                         settings=Workload(model="mine", target=0.8, ceiling=0.9,
                                           probe_rounds=trait)).predictor
        assert mine.provenance_["model_traits"] == {
            "model": "mine", "probe_rounds": float(trait), "probe_rounds_source": "the workload",
            "ceiling": 0.9}
        assert default_mixing(mine) == weights
        assert default_mixing(mine, Workload(model="mine")) == weights


def test_rounds_and_oriented_are_predict_features_and_oriented_rows(toy):
    model = predictor_at_workload(load_predictor("workload"), Workload(epsilon=0.5))
    from topokit.network.core import Topology

    for topology in (ndlf(toy), dlfdp(toy), Topology([("A", "B")], ["A", "B"])):
        features = topology_features(toy, topology)
        rounds, oriented = model.rounds_and_oriented(features)
        assert rounds == model.predict_features(features)  # inf where disconnected
        assert np.array_equal(oriented, model.oriented_rows([features])[0])
