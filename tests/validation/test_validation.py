"""topokit.validation: predicted next to measured training time, resumption, calibration."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import topokit.validation.core as validation_module
from topokit import autotag, evaluate
from topokit.design.baselines import dlfdp, ndlf
from topokit.design.predictor import GlobalIteratePredictor
from topokit.dp import gaussian_sigma
from topokit.errors import (
    InvalidInputError,
    InvalidTopologyError,
    NetworkFileError,
    NetworkFileNotFoundError,
    TopokitWarning,
)
from topokit.network.core import Topology
from topokit.training import train
from topokit.validation.core import (
    RUN_COLUMNS,
    ValidationResult,
    calibrate,
    parse_topology_specs,
    validate,
)

# eq. (15): its predictions are evaluate's of the topology alone (no data partition).
SETTINGS = dict(topologies=("autotag", "ndlf", "dlfdp"), trials=2, rounds=40,
                targets=(0.8, 0.999), seed=0, predictor="paper")
TOPOLOGIES = ("autotag", "ndlf", "dlfdp")


@pytest.fixture(scope="module")
def result(toy):
    return validate(toy, **SETTINGS)


def _measured(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# validate
# ---------------------------------------------------------------------------------------------


def test_one_row_per_topology_trial_and_target(result):
    frame = result.frame
    assert list(frame.columns) == list(RUN_COLUMNS)
    assert len(frame) == 3 * 2 * 2
    keys = set(zip(frame["topology"], frame["trial"], frame["target"], strict=True))
    assert keys == {(t, k, a) for t in TOPOLOGIES for k in (0, 1) for a in (0.8, 0.999)}
    # Trial k trains every topology with the same seed (common random numbers).
    seeds = frame.groupby("trial")["seed"].nunique()
    assert (seeds == 1).all() and frame["seed"].nunique() == 2
    assert set(result.curves["topology"]) == set(TOPOLOGIES)


def test_topologies_are_autotags_design_and_the_baselines(toy, result):
    assert result.topologies["autotag"] == autotag(toy).topology
    assert result.topologies["ndlf"] == ndlf(toy)
    assert result.topologies["dlfdp"] == dlfdp(toy)


def test_predicted_values_equal_evaluate(toy, result):
    for name, topology in result.topologies.items():
        metrics = evaluate(toy, topology)
        rows = result.frame[result.frame["topology"] == name]
        for column in ("hitting_time", "phi", "local_iterate", "predicted_global_iterate",
                       "pseudo_time", "spectral_gap"):
            np.testing.assert_allclose(rows[column], getattr(metrics, column), rtol=1e-12)


def test_measured_values_are_the_training_runs(toy, digits, result):
    frame = result.frame
    reached = frame.dropna(subset=["measured_rounds"])
    np.testing.assert_allclose(reached["measured_time"],
                               reached["measured_rounds"] * reached["local_iterate"])
    assert len(reached[reached["target"] == 0.8]) == 6  # all reach 80 % in 40 rounds
    # 99.9 % is out of reach on digits: NaN, not an error.
    never = frame[frame["target"] == 0.999]
    assert never["measured_rounds"].isna().all() and never["measured_time"].isna().all()
    # The same numbers as a direct call of the training core.
    row = frame[(frame["topology"] == "dlfdp") & (frame["trial"] == 1)
                & (frame["target"] == 0.8)].iloc[0]
    run = train(toy, result.topologies["dlfdp"], *digits, rounds=40, seed=int(row["seed"]))
    assert row["measured_rounds"] == run.rounds_to(0.8)
    assert row["final_accuracy"] == pytest.approx(run.final_accuracy)
    assert row["epsilon"] == pytest.approx(max(run.epsilon.values()))


def test_noise_variance_is_the_cumulative_per_coordinate_variance(toy, digits):
    topologies = {"ndlf": ndlf(toy), "dlfdp": dlfdp(toy)}
    one = validate(toy, topologies, trials=1, rounds=1, lr=0.5, targets=(0.5,)).frame
    assert one.loc[one["topology"] == "ndlf", "noise_variance"].item() == 0.0
    # One round, K = 1, clipping C = 1: sigma_i = z * lr * 2C / B_i with B_i = min(64, |D_i|).
    run = train(toy, topologies["dlfdp"], *digits, rounds=1, lr=0.5,
                seed=int(one["seed"].iloc[0]))
    z = gaussian_sigma(1.0, 1e-5, 1.0)
    sizes = np.minimum(64, np.array(run.partition_sizes, dtype=float))
    expected = np.sum((z * 0.5 * 2.0 / sizes) ** 2)
    assert one.loc[one["topology"] == "dlfdp", "noise_variance"].item() == pytest.approx(expected)
    # Over T rounds it sums lr_t^2 = (lr decay^t)^2.
    three = validate(toy, {"dlfdp": dlfdp(toy)}, trials=1, rounds=3, lr=0.5, targets=(0.5,))
    factor = sum(0.99 ** (2 * t) for t in range(3))
    assert three.frame["noise_variance"].item() == pytest.approx(expected * factor)


def test_same_seed_same_numbers_other_seed_other_runs(toy, result):
    again = validate(toy, **SETTINGS)
    pd.testing.assert_frame_equal(_measured(again.frame), _measured(result.frame))
    other = validate(toy, **{**SETTINGS, "seed": 1, "topologies": ("ndlf",)})
    assert set(other.frame["seed"]).isdisjoint(result.frame["seed"])


def test_correlations_and_summary(result):
    table = result.correlations()
    assert list(table["target"]) == [0.8, 0.999]
    first = table.iloc[0]
    assert first["n"] == 6 and first["never_reached"] == 0
    for column in ("spearman_time", "pearson_time", "spearman_rounds", "pearson_rounds"):
        assert -1.0 <= first[column] <= 1.0
    never = table.iloc[1]  # nobody reaches 99.9 %: every run ties as slowest
    assert never["n"] == 6 and never["n_reached"] == 0 and np.isnan(never["spearman_time"])
    by_topology = result.correlations(by="topology")
    assert by_topology.iloc[0]["n"] == 3
    summary = result.summary()
    assert len(summary) == 6 and set(summary["reached"]) <= {0, 2}
    record = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert record["n_runs"] == 12 and len(record["correlations"]) == 2
    with pytest.raises(InvalidInputError, match="by must be one of"):
        result.correlations(by="device")


def test_runs_that_never_reach_the_target_rank_slowest():
    from scipy.stats import spearmanr

    from topokit.validation.core import RUN_COLUMNS, ValidationResult

    predicted = [100.0, 200.0, 300.0, 400.0, np.inf]
    measured = [10.0, 20.0, np.nan, 40.0, np.nan]  # runs 3 and 5 never reached the target
    frame = pd.DataFrame({column: np.nan for column in RUN_COLUMNS}, index=range(5))
    frame["target"], frame["topology"] = 0.9, [f"t{k}" for k in range(5)]
    frame["pseudo_time"] = frame["predicted_global_iterate"] = predicted
    frame["measured_time"] = frame["measured_rounds"] = measured
    row = ValidationResult(frame=frame, curves=pd.DataFrame()).correlations().iloc[0]
    censored = [10.0, 20.0, np.inf, 40.0, np.inf]
    expected = spearmanr([1, 2, 3, 4, 5], pd.Series(censored).rank()).statistic
    assert row["spearman_time"] == pytest.approx(expected)
    assert row["spearman_time"] == pytest.approx(8 / np.sqrt(95))  # ranks 1,2,4.5,3,4.5
    assert row["spearman_time_reached"] == pytest.approx(1.0)  # the old, flattering figure
    assert (row["n"], row["n_reached"], row["never_reached"]) == (5, 3, 2)


def test_random_and_custom_topologies(toy):
    specs = {"stored": toy.topology, "r": "random:3"}
    result = validate(toy, specs, trials=1, rounds=5, targets=(0.5,), seed=3)
    names = list(dict.fromkeys(result.frame["topology"]))
    assert names == ["stored", "r-0", "r-1", "r-2"]
    assert result.topologies["stored"] == toy.topology
    assert set(result.frame["kind"]) == {"custom", "random"}
    for name in names[1:]:
        result.topologies[name].validate(toy, require_connected=True)
    again = validate(toy, "random:3", trials=1, rounds=5, targets=(0.5,), seed=3)
    assert [again.topologies[f"random-{k}"] for k in range(3)] == \
        [result.topologies[f"r-{k}"] for k in range(3)]


def test_plot_writes_a_png(result, tmp_path):
    path = result.plot(tmp_path / "validation.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------------------------
# Resumption
# ---------------------------------------------------------------------------------------------


class _Interrupted(Exception):
    pass


def _counting_train(monkeypatch, fail_after: int | None = None) -> list:
    calls = []

    def counted(*args, **kwargs):
        if fail_after is not None and len(calls) >= fail_after:
            raise _Interrupted
        calls.append(kwargs["seed"])
        return train(*args, **kwargs)

    monkeypatch.setattr(validation_module, "train", counted)
    return calls


def test_resume_skips_finished_pieces_and_gives_the_same_table(toy, result, tmp_path,
                                                                monkeypatch):
    output = tmp_path / "runs.parquet"
    parts = tmp_path / "runs.parquet.parts"
    calls = _counting_train(monkeypatch, fail_after=4)
    with pytest.raises(_Interrupted):
        validate(toy, output=output, **SETTINGS)
    assert not output.exists()
    assert len(list(parts.glob("runs-*.parquet"))) == 4 and len(calls) == 4

    calls = _counting_train(monkeypatch)
    resumed = validate(toy, output=output, **SETTINGS)
    assert len(calls) == 2  # only the two pieces that had not finished
    assert not parts.exists()
    pd.testing.assert_frame_equal(_measured(resumed.frame), _measured(result.frame))
    pd.testing.assert_frame_equal(_measured(pd.read_parquet(output)), _measured(result.frame))
    assert len(resumed.curves) == len(result.curves)
    written = pd.read_parquet(validation_module.curves_path(output))
    assert written.shape == resumed.curves.shape

    # A finished run leaves no parts: calling again recomputes everything.
    calls = _counting_train(monkeypatch)
    validate(toy, output=output, **{**SETTINGS, "topologies": ("ndlf",)})
    assert len(calls) == 2


def test_failure_before_any_piece_leaves_no_parts_folder(toy, tmp_path, monkeypatch):
    output = tmp_path / "runs.parquet"
    _counting_train(monkeypatch, fail_after=0)
    with pytest.raises(_Interrupted):
        validate(toy, output=output, **SETTINGS)
    assert list(tmp_path.iterdir()) == []


def test_parts_of_another_job_are_refused_unless_restarted(toy, tmp_path, monkeypatch):
    output = tmp_path / "runs.parquet"
    _counting_train(monkeypatch, fail_after=1)
    with pytest.raises(_Interrupted):
        validate(toy, output=output, **SETTINGS)
    calls = _counting_train(monkeypatch)
    with pytest.raises(InvalidInputError, match="different job"):
        validate(toy, output=output, **{**SETTINGS, "rounds": 41})
    result = validate(toy, output=output, resume=False, **{**SETTINGS, "rounds": 41})
    assert len(calls) == 6 and len(result.frame) == 12


def test_parts_of_another_model_of_the_same_repr_are_refused(toy, tmp_path, monkeypatch):
    """Two user models whose repr names only their sizes are still two jobs."""
    from topokit.training import MLP

    class Mine(MLP):
        def __repr__(self) -> str:  # as Model's own: sizes only
            return f"Mine(n_features={self.n_features}, n_classes={self.n_classes})"

    output = tmp_path / "runs.parquet"
    _counting_train(monkeypatch, fail_after=1)
    with pytest.raises(_Interrupted):
        validate(toy, output=output, model=Mine(64, 10, hidden=4), **SETTINGS)
    _counting_train(monkeypatch)
    with pytest.raises(InvalidInputError, match="different job"):
        validate(toy, output=output, model=Mine(64, 10, hidden=8), **SETTINGS)


def test_parallel_workers_give_the_same_numbers(toy, result):
    parallel = validate(toy, n_jobs=2, **SETTINGS)
    pd.testing.assert_frame_equal(_measured(parallel.frame), _measured(result.frame))


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"topologies": "autotag,foo"}, "unknown topology spec 'foo'"),
        ({"topologies": "random"}, "unknown topology spec"),
        ({"topologies": "random:x"}, "positive integer"),
        ({"topologies": "random:0"}, "positive integer"),
        ({"topologies": ""}, "no topologies"),
        ({"topologies": ["ndlf", 3]}, "spec strings"),
        ({"topologies": ("ndlf", "ndlf")}, "unique"),
        ({"targets": (0.8, 1.5)}, r"\(0, 1\]"),
        ({"targets": (0,)}, r"\(0, 1\]"),
        ({"targets": ()}, "at least one target"),
        ({"trials": 0}, "trials must be an integer >= 1"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"rounds_max": 3}, "unknown training option 'rounds_max'"),
        ({"X": np.zeros((10, 2))}, "both X and y"),
        ({"dataset": "mnist"}, "unknown dataset"),
        ({"predictor": "eq15"}, "unknown predictor .eq15."),
        ({"predictor": 15}, "predictor must be"),
    ],
)
def test_bad_input_raises_a_clear_error(toy, kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        validate(toy, **{"topologies": ("ndlf",), "trials": 1, "rounds": 2, **kwargs})


def test_invalid_custom_topology_and_not_a_network(toy):
    bad = Topology([("A", "E")], ())  # not a social link, no DP device
    with pytest.raises(InvalidTopologyError):
        validate(toy, {"bad": bad}, trials=1, rounds=2)
    with pytest.raises(InvalidInputError, match="Network"):
        validate("toy", trials=1)
    assert parse_topology_specs(" NDLF ,random:2") == [("ndlf", "ndlf", None),
                                                       ("random", "random", 2)]


# ---------------------------------------------------------------------------------------------
# calibrate
# ---------------------------------------------------------------------------------------------

TRUTH = {"hitting_time": 0.05, "phi": 300.0, "noise_variance": 40.0, "intercept": 10.0}


def synthetic_runs(n_topologies=40, trials=2, *, with_u=False, seed=0, noise=0.5):
    """Runs whose rounds follow known coefficients (unlike eq. 15's: phi weighs more)."""
    rng = np.random.default_rng(seed)
    H = rng.uniform(10, 400, n_topologies)
    phi = rng.uniform(0, 1, n_topologies)
    U = rng.uniform(0, 2, n_topologies)
    L = rng.uniform(30, 800, n_topologies)
    rows = []
    for k in range(n_topologies):
        for trial in range(trials):
            G = TRUTH["hitting_time"] * H[k] + TRUTH["phi"] * phi[k] + TRUTH["intercept"]
            G += (TRUTH["noise_variance"] * U[k] if with_u else 0.0) + rng.normal(0, noise)
            rows.append({"topology": f"t{k}", "trial": trial, "target": 0.9,
                         "hitting_time": H[k], "phi": phi[k], "noise_variance": U[k],
                         "local_iterate": L[k], "measured_rounds": G,
                         "measured_time": G * L[k]})
    return pd.DataFrame(rows)


def test_calibrate_recovers_known_coefficients_and_improves_the_ranking():
    result = calibrate(synthetic_runs())
    coefficients = result.coefficients
    for key in ("hitting_time", "phi", "intercept"):
        assert coefficients[key] == pytest.approx(TRUTH[key], rel=0.02, abs=0.01)
    assert result.r2 > 0.999 and result.n_runs == 80 and result.n_topologies == 40
    assert result.cv_folds == 5 and result.cv_rmse < 1.0
    assert result.spearman_fitted > 0.99 and result.spearman_fitted_cv > 0.99
    assert result.spearman_fitted > result.spearman_paper + 0.01
    record = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert record["paper_coefficients"]["phi"] == 121.6365


def test_calibrate_with_noise_variance():
    result = calibrate(synthetic_runs(with_u=True), use_noise_variance=True)
    assert result.predictor.use_noise_variance
    for key, value in TRUTH.items():
        assert result.coefficients[key] == pytest.approx(value, rel=0.02, abs=0.05)
    plain = calibrate(synthetic_runs(with_u=True))
    assert plain.r2 < result.r2


def test_calibrate_warns_when_a_worse_topology_is_fitted_to_fewer_rounds():
    # Rounds that fall as H grows: the fit's hitting-time coefficient comes out negative.
    runs = synthetic_runs()
    runs["measured_rounds"] = 400.0 - runs["hitting_time"] + 300.0 * runs["phi"]
    runs["measured_time"] = runs["measured_rounds"] * runs["local_iterate"]
    wrong = r"negative coefficients \(hitting_time -1\b.*--positive"
    with pytest.warns(TopokitWarning, match=wrong):
        fitted = calibrate(runs)
    assert fitted.coefficients["hitting_time"] == pytest.approx(-1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TopokitWarning)
        constrained = calibrate(runs, positive=True)  # no warning: every slope >= 0
        calibrate(synthetic_runs())
    assert constrained.coefficients["hitting_time"] == 0.0


def test_calibrate_skips_censored_runs_and_reads_parquet(tmp_path):
    runs = synthetic_runs()
    runs.loc[:9, ["measured_rounds", "measured_time"]] = np.nan
    path = tmp_path / "runs.parquet"
    runs.to_parquet(path)
    result = calibrate(path, target=0.9, positive=True)
    assert result.n_censored == 10 and result.n_runs == 70
    saved = GlobalIteratePredictor.load(result.save(tmp_path / "predictor.json"))
    X = runs[["hitting_time", "phi"]].to_numpy()
    np.testing.assert_allclose(saved.predict(X), result.predictor.predict(X))


def test_calibrate_on_a_validation_result(result):
    calibrated = calibrate(result, target=0.8)
    assert calibrated.n_runs == 6 and calibrated.n_topologies == 3
    assert calibrated.predictor.is_fitted and calibrated.cv_folds == 3


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda r: r.drop(columns=["phi"]), InvalidInputError, "lacks column"),
        (lambda r: r.head(3), InvalidInputError, "too few runs"),
        (lambda r: r.assign(phi=0.5), InvalidInputError, "do not vary enough"),
        (lambda r: r.assign(measured_rounds=np.nan), InvalidInputError, "too few runs"),
        (lambda r: r.iloc[:0], InvalidInputError, "empty"),
    ],
)
def test_calibrate_bad_tables(change, error, message):
    with pytest.raises(error, match=message):
        calibrate(change(synthetic_runs()))


def test_calibrate_bad_arguments(tmp_path):
    runs = synthetic_runs()
    with pytest.raises(InvalidInputError, match="no runs for target 0.5"):
        calibrate(runs, target=0.5)
    with pytest.raises(InvalidInputError, match=r"\(0, 1\]"):
        calibrate(runs, target=90)
    with pytest.raises(InvalidInputError, match="noise_variance"):
        calibrate(runs.drop(columns=["noise_variance"]), use_noise_variance=True)
    with pytest.raises(InvalidInputError, match="cv"):
        calibrate(runs, cv=1)
    with pytest.raises(NetworkFileNotFoundError):
        calibrate(tmp_path / "missing.parquet")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(NetworkFileError):
        calibrate(tmp_path / "bad.parquet")
    with pytest.raises(InvalidInputError, match="DataFrame"):
        calibrate([1, 2, 3])
    assert isinstance(ValidationResult(runs, pd.DataFrame()).to_frame(), pd.DataFrame)


def test_same_seed_same_bytes_with_timings_kept_apart(toy, tmp_path):
    from topokit.validation.core import curves_path, timings_path

    written = []
    for name in ("first.parquet", "second.parquet"):
        output = tmp_path / name
        result = validate(toy, **SETTINGS, output=output)
        written.append((output.read_bytes(), curves_path(output).read_bytes()))
        timings = pd.read_parquet(timings_path(output))
        assert len(timings) == len(result.timings) == result.frame.groupby(
            ["topology", "trial"]).ngroups
        assert (timings["wall_clock"] > 0).all()
    assert written[0] == written[1]
    assert "wall_clock" not in result.frame.columns
