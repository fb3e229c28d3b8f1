"""A measured trait of the model as a feature: ``probe_rounds`` (``Workload.probe_rounds``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import spearmanr

from topokit import Workload, load_example
from topokit.design.baselines import dlfdp
from topokit.design.features import topology_features
from topokit.design.time_predictor import (
    PREDICTOR_NAMES,
    TrainingTimePredictor,
    load_predictor,
    predictor_at_workload,
    workload_outside,
    workload_probe_rounds,
)
from topokit.errors import InvalidInputError
from topokit.network.examples import data_dir
from topokit.training.ceiling import CeilingProbe

FEATURES = ("phi", "heterogeneity_local", "probe_rounds")
FAST, SLOW = 4.0, 34.0


def runs(seed: int, n: int = 1500):
    """Log rounds driven by phi for the fast learner and by heterogeneity for the slow one."""
    rng = np.random.default_rng(seed)
    phi, hetero = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    trait = rng.choice([FAST, SLOW], n)
    slow = (trait == SLOW).astype(float)
    log_rounds = 2.0 + 2.0 * phi * (1 - slow) + 2.0 * hetero * slow + 1.0 * slow \
        + rng.normal(0, 0.05, n)
    return np.column_stack([phi, hetero, trait]), np.exp(log_rounds)


@pytest.fixture(scope="module")
def fitted():
    X, y = runs(0)
    model = TrainingTimePredictor(features=FEATURES, horizon=200,
                                  varying_with=("probe_rounds",)).fit(X, y)
    model.provenance_ = {"trained_models": ["logreg", "mlp"],
                         "probe_rounds": {"logreg": FAST, "mlp": SLOW},
                         "fitted_ranges": {"probe_rounds": [FAST, SLOW]}}
    return model


def test_the_trait_lets_the_topology_coefficients_differ_between_models(fitted):
    rng = np.random.default_rng(1)
    phi, hetero = rng.uniform(0, 1, 200), rng.uniform(0, 1, 200)
    for trait, truth in ((FAST, phi), (SLOW, hetero)):
        X = np.column_stack([phi, hetero, np.full(200, trait)])
        assert spearmanr(fitted.predict(X), truth).statistic > 0.99
    assert fitted.model_columns[0] == "probe_rounds"
    assert fitted.varying_range_["probe_rounds"] == pytest.approx([np.log(FAST), np.log(SLOW)])


def test_the_trait_round_trips_and_is_the_workloads(fitted, tmp_path):
    toy = load_example("toy")
    features = topology_features(toy, dlfdp(toy))
    with pytest.raises(InvalidInputError, match="setting of the workload"):
        fitted.predict_features(features)
    path = fitted.set_params(probe_rounds=FAST).save(tmp_path / "trait.json")
    assert json.loads(path.read_text())["params"]["probe_rounds"] == FAST
    loaded = load_predictor(path)
    assert loaded.probe_rounds == FAST
    assert loaded.predict_features(features) == fitted.predict_features(features)
    # The model's value from the provenance, else the workload's own.
    mlp = predictor_at_workload(loaded, Workload(model="mlp"))
    assert mlp.probe_rounds == SLOW and workload_probe_rounds(loaded, Workload()) == FAST
    mine = predictor_at_workload(loaded, Workload(model="cnn", probe_rounds=20))
    assert mine.probe_rounds == 20.0
    assert mlp.predict_features(features) != loaded.predict_features(features)


def test_a_model_of_ones_own_is_judged_by_its_measured_trait(fitted):
    assert workload_outside(fitted, Workload(model="mlp")) == ()
    reasons = workload_outside(fitted, Workload(model="cnn"))
    assert any("'cnn'" in r for r in reasons) and any("probe_rounds" in r for r in reasons)
    assert workload_outside(fitted, Workload(model="cnn", ceiling=0.9, probe_rounds=12)) == ()
    reasons = workload_outside(fitted, Workload(model="cnn", ceiling=0.9, probe_rounds=80))
    assert len(reasons) == 1 and "probe rounds 80" in reasons[0]


@pytest.mark.parametrize("name", [n for n in PREDICTOR_NAMES if n != "paper"])
def test_shipped_files_read_and_write_as_before(name):
    record = json.loads((data_dir() / f"predictor_{name}.json").read_text())
    model = load_predictor(name)
    if "probe_rounds" in model.features:  # the shipped trait predictor, at logreg's trait
        assert model.probe_rounds == model.provenance_["probe_rounds"]["logreg"]
        assert model.feature_context["probe_rounds"] == model.probe_rounds
    else:
        assert model.probe_rounds is None and "probe_rounds" not in model.feature_context
    assert model.to_dict()["params"] == record["params"]
    assert model.to_dict()["model"] == record["model"]


def test_the_workload_field_is_left_out_of_records_when_not_given():
    assert "probe_rounds" not in Workload().to_dict()
    given = Workload(model="cnn", probe_rounds=7)
    assert given.to_dict()["probe_rounds"] == 7.0
    assert Workload.from_dict(given.to_dict()) == given
    for bad in (0, -1, float("nan"), float("inf"), "many"):
        with pytest.raises(InvalidInputError, match="probe_rounds"):
            Workload(probe_rounds=bad)


def test_probe_rounds_is_the_rounds_to_ninety_percent_of_the_ceiling():
    accuracy = np.array([0.2, 0.5, 0.8, 0.86, 0.9, 0.95, 0.95])
    probe = CeilingProbe(0.95, np.arange(1, 8), accuracy)
    assert probe.probe_rounds == 4  # the first >= 0.855
    assert CeilingProbe(0.95, np.arange(1, 3), np.array([0.1, 0.2])).probe_rounds is None
