"""Leave-network-out evaluation and calibrate refitting a TrainingTimePredictor."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from topokit.design.time_predictor import DEFAULT_FEATURES, TrainingTimePredictor
from topokit.errors import InvalidInputError
from topokit.validation.calibration import calibrate, leave_network_out
from topokit.validation.stats import censored_spearman

HORIZON = 100


def synthetic_runs(seed: int = 0) -> pd.DataFrame:
    """Runs of 4 networks whose rounds follow a known monotone law of noise and heterogeneity."""
    rng = np.random.default_rng(seed)
    rows = []
    for network in range(4):
        for topology in range(12):
            noise = rng.uniform(0, 1)
            hetero = rng.uniform(0, 0.5)
            features = {name: rng.uniform(0.01, 0.02) for name in DEFAULT_FEATURES}
            features.update(noise_average=noise, heterogeneity_local=hetero,
                            effective_neighbours=rng.uniform(5, 10))
            rounds = np.exp(2.0 + 1.5 * noise + 2.0 * hetero + rng.normal(0, 0.05))
            for trial in range(2):
                rows.append({"network": f"n{network}", "topology": f"t{topology}",
                             "trial": trial, "target": 0.8, "local_iterate": 10.0,
                             "hitting_time": 20 + topology, "phi": noise,
                             "measured_rounds": rounds if rounds <= HORIZON else np.nan,
                             "measured_time": rounds * 10 if rounds <= HORIZON else np.nan,
                             "rounds_run": HORIZON, **features})
    return pd.DataFrame(rows)


def test_leave_network_out_ranks_a_monotone_law_and_matches_a_manual_refit():
    runs = synthetic_runs()
    model = TrainingTimePredictor(horizon=HORIZON)
    scores = leave_network_out(runs, model)
    assert list(scores["network"]) == ["n0", "n1", "n2", "n3"]
    assert (scores["spearman"] > 0.9).all()
    assert scores["n_never"].sum() == runs.loc[runs["measured_rounds"].isna()].shape[0]
    # Manually: fit without n2 on the censored rounds, predict n2, rank with inf slowest.
    train = runs[runs["network"] != "n2"]
    fitted = clone(model).fit(train[list(DEFAULT_FEATURES)].to_numpy(float),
                              train["measured_rounds"].fillna(np.inf).to_numpy())
    test = runs[runs["network"] == "n2"]
    predicted = fitted.predict(test[list(DEFAULT_FEATURES)].to_numpy(float)) * 10
    measured = test["measured_rounds"].fillna(np.inf).to_numpy() * 10
    expected = censored_spearman(predicted, measured)
    assert scores.loc[scores["network"] == "n2", "spearman"].item() == pytest.approx(expected)


def test_calibrate_refits_the_time_predictor_on_censored_runs():
    runs = synthetic_runs(1)
    result = calibrate(runs, predictor=TrainingTimePredictor(horizon=HORIZON), seed=0)
    assert isinstance(result.predictor, TrainingTimePredictor)
    assert result.n_runs == len(runs) and result.n_censored == runs["measured_rounds"].isna().sum()
    assert result.spearman_fitted > 0.9 and result.spearman_fitted_cv > 0.8
    coefficients = result.coefficients
    # The law grows with noise (std 0.29 x 1.5) and heterogeneity (std 0.14 x 2.0) only: in
    # standardised units about 0.43 and 0.29, the irrelevant features near 0.
    assert coefficients["noise_average"] == pytest.approx(0.43, abs=0.08)
    assert coefficients["heterogeneity_local"] == pytest.approx(0.29, abs=0.08)
    others = [coefficients[name] for name in DEFAULT_FEATURES
              if name not in ("noise_average", "heterogeneity_local")]
    assert max(others) < 0.05


def test_a_refit_claims_the_model_its_runs_were_told_to_be():
    """A refit on a user's runs carries the runs' model and its measurement, not its base's:
    told nothing, it claims no model and optimize gives its designs the safe weights."""
    from topokit import Workload
    from topokit.design import default_mixing, load_predictor

    runs = synthetic_runs(2)
    refit = calibrate(runs, predictor="mlp", seed=0).predictor
    assert "trained_model" not in refit.provenance_
    assert default_mixing(refit) == default_mixing("mlp") == "lazy-metropolis"
    assert refit.to_dict()["model"] != load_predictor("mlp").to_dict()["model"]  # refitted
    told = calibrate(runs, predictor="mlp", seed=0,
                     settings=Workload(model="logreg")).predictor
    assert told.provenance_["trained_model"] == "logreg"
    assert told.provenance_["model_traits"]["probe_rounds"] == 4.0  # topokit's measurement
    assert default_mixing(told) == "fastest"
    plain = calibrate(runs, predictor=TrainingTimePredictor(horizon=HORIZON), seed=0).predictor
    assert "trained_model" not in (getattr(plain, "provenance_", None) or {})
    assert default_mixing(plain) == "lazy-metropolis"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"predictor": "paper"}, "refit a TrainingTimePredictor"),
     ({"by": ("skewness",)}, "including 'network'")],
)
def test_leave_network_out_bad_inputs(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        leave_network_out(synthetic_runs(), **kwargs)


def test_leave_network_out_needs_two_networks():
    runs = synthetic_runs()
    with pytest.raises(InvalidInputError, match="at least 2 networks"):
        leave_network_out(runs[runs["network"] == "n0"])


def test_cli_calibrate_refit_writes_a_loadable_time_predictor(tmp_path):
    from typer.testing import CliRunner

    from topokit.cli import app
    from topokit.design.time_predictor import load_predictor

    runs = synthetic_runs(2)
    runs.to_parquet(tmp_path / "runs.parquet")
    result = CliRunner().invoke(app, ["calibrate", str(tmp_path / "runs.parquet"), "-o",
                                      str(tmp_path / "p.json"), "--refit", "default", "--json"])
    assert result.exit_code == 0, result.output
    refitted = load_predictor(tmp_path / "p.json")
    assert isinstance(refitted, TrainingTimePredictor)
    assert refitted.n_samples_fit_ == len(runs)
    refused = CliRunner().invoke(app, ["calibrate", str(tmp_path / "runs.parquet"), "-o",
                                       str(tmp_path / "q.json"), "--refit", "default",
                                       "--positive"])
    assert refused.exit_code == 2 and "--refit" in refused.output
    assert "Traceback" not in refused.output
