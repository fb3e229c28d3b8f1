"""calibrate on a table of the user's own runs, and the prior that keeps a refit near its base.

The runs are real: topokit.validate on three small networks (8 topologies x 2 trials,
40 rounds).  Their networks and topologies are saved to files and listed in a plain
table, as a user who trained with another stack would write it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from topokit import Topology, load_example, save_network, save_topology
from topokit.design.baselines import dlfdp
from topokit.design.features import FeatureSettings
from topokit.design.time_predictor import TrainingTimePredictor, load_predictor
from topokit.errors import (
    InputFileError,
    InputFileNotFoundError,
    InvalidInputError,
    InvalidTopologyError,
)
from topokit.network.siot import siot
from topokit.validation import calibrate, leave_network_out, validate
from topokit.validation.calibration import USER_RUN_COLUMNS, _read_runs, described_topology
from topokit.validation.stats import censored_spearman

SKEWNESS = 0.5


class Runs(NamedTuple):
    folder: Path
    frame: pd.DataFrame  # validate's runs tables, concatenated
    table: pd.DataFrame  # the same runs as a user's table (paths relative to folder)


def _trial_network(net, y, seed: int):
    """``net`` with the class counts validate predicted trial ``seed``'s runs for."""
    from topokit.validation.core import _partition_counts  # what validate replays

    return net.with_class_counts(_partition_counts(net, y, seed, partition=SKEWNESS))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, digits) -> Runs:
    folder = tmp_path_factory.mktemp("own-runs")
    X, y = digits
    frames, tables = [], []
    for net in (load_example("toy"), load_example("siot16"), siot(10, seed=3, name="siot10")):
        result = validate(net, "ndlf,dlfdp,random:6", X=X, y=y, trials=2, rounds=40,
                          targets=(0.8, 0.9), audit_rounds=0, partition=SKEWNESS, seed=0)
        frame = result.frame
        for name, topology in result.topologies.items():
            save_topology(topology, folder / "topologies" / f"{net.name}-{name}.json")
        for seed in frame["seed"].unique():
            save_network(_trial_network(net, y, int(seed)),
                         folder / "networks" / f"{net.name}-{seed}.json")
        frames.append(frame)
        tables.append(pd.DataFrame({
            "network": [f"networks/{net.name}-{seed}.json" for seed in frame["seed"]],
            "topology": [f"topologies/{net.name}-{name}.json" for name in frame["topology"]],
            "target": frame["target"], "measured_rounds": frame["measured_rounds"],
            "horizon": frame["rounds_run"], "kind": frame["kind"]}))
    table = pd.concat(tables, ignore_index=True)
    table.to_csv(folder / "runs.csv", index=False)
    return Runs(folder, pd.concat(frames, ignore_index=True), table)


# ---------------------------------------------------------------------------------------------
# A table of your own runs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [0.8, 0.9])
def test_your_own_runs_refit_as_validates_table_of_the_same_runs(runs, target):
    own = calibrate(runs.folder / "runs.csv", predictor="default", target=target)
    theirs = calibrate(runs.frame, predictor="default", target=target)
    assert own.coefficients == theirs.coefficients
    np.testing.assert_array_equal(own.predictor.reach_coef_, theirs.predictor.reach_coef_)
    assert (own.n_runs, own.n_censored) == (theirs.n_runs, theirs.n_censored) == (
        48, int(runs.frame.loc[runs.frame["target"] == target, "measured_rounds"].isna().sum()))
    assert own.spearman_paper == theirs.spearman_paper
    assert own.spearman_fitted == theirs.spearman_fitted
    # eq. (15)'s form too: H, phi and L are validate's.
    assert calibrate(runs.folder / "runs.csv", target=target).coefficients == \
        calibrate(runs.frame, target=target).coefficients


def test_the_features_are_those_validate_wrote(runs):
    described = _read_runs(runs.folder / "runs.csv", load_predictor("default").feature_settings)
    columns = ["hitting_time", "spectral_gap", "phi", "local_iterate", "n_links",
               "n_dp_devices", "noise_felt", "heterogeneity_local", "measured_time"]
    pd.testing.assert_frame_equal(described[columns], runs.frame[columns],
                                  check_dtype=False)
    assert (described["rounds_run"] == runs.frame["rounds_run"]).all()
    assert list(described["kind"]) == list(runs.frame["kind"])  # other columns are kept


def test_a_dataframe_resolves_paths_from_the_working_directory_and_parquet_from_its_folder(
        runs, monkeypatch, tmp_path):
    expected = calibrate(runs.folder / "runs.csv", predictor="default").coefficients
    absolute = runs.table.assign(
        network=[str(runs.folder / p) for p in runs.table["network"]],
        topology=[str(runs.folder / p) for p in runs.table["topology"]])
    assert calibrate(absolute, predictor="default").coefficients == expected
    runs.table.to_parquet(runs.folder / "runs.parquet")
    assert calibrate(runs.folder / "runs.parquet", predictor="default").coefficients == expected
    monkeypatch.chdir(runs.folder)
    assert calibrate(runs.table, predictor="default").coefficients == expected
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputFileNotFoundError, match="row 1"):
        calibrate(runs.table, predictor="default")


def test_leave_network_out_takes_your_table_and_its_extra_columns(runs):
    scores = leave_network_out(runs.folder / "runs.csv", "default", target=0.8,
                               by=("network", "kind"))
    assert set(scores["network"]) == set(runs.table["network"])  # each file is a network
    assert set(scores["kind"]) == {"ndlf", "dlfdp", "random"}
    assert scores["n_runs"].sum() == 48


def test_settings_describe_your_runs_and_go_with_the_refit(runs):
    settings = FeatureSettings(noise_multiplier=8.0, batch_size=32)
    result = calibrate(runs.folder / "runs.csv", predictor="default", settings=settings)
    assert result.predictor.feature_settings == settings
    described = _read_runs(runs.folder / "runs.csv", settings)
    default = _read_runs(runs.folder / "runs.csv", FeatureSettings())
    noisy = described["n_dp_devices"] > 0
    assert (described.loc[noisy, "noise_felt"] > default.loc[noisy, "noise_felt"]).all()


def test_a_design_file_with_noise_levels_describes_its_devices_noise(tmp_path):
    net = load_example("toy")
    topology = dlfdp(net)
    levels = {str(node): 2.0 + k for k, node in enumerate(net.nodes)}
    save_network(net, tmp_path / "toy.json")
    (tmp_path / "design.json").write_text(json.dumps({
        "topology": topology.to_dict(),
        "stats": {"stranger_bound": {"noise_multipliers": levels}}}))
    save_topology(topology, tmp_path / "plain.json")
    table = pd.DataFrame({"network": "toy.json", "topology": ["design.json", "plain.json"],
                          "target": 0.8, "measured_rounds": [20, 30], "horizon": 40})
    table.to_csv(tmp_path / "runs.csv", index=False)
    described = _read_runs(tmp_path / "runs.csv", FeatureSettings())
    per_device = FeatureSettings(device_noise_multipliers=list(levels.values()))
    assert described["noise_felt"].iloc[0] == described_topology(
        net, topology, per_device)["noise_felt"]
    assert described["noise_felt"].iloc[1] == described_topology(
        net, topology, FeatureSettings())["noise_felt"]


def _mutated(runs: Runs, tmp_path: Path, mutate) -> Path:
    """The user's table, changed by ``mutate``, written where its relative paths resolve."""
    path = runs.folder / f"{tmp_path.name}.csv"
    mutate(runs.table.copy()).to_csv(path, index=False)
    return path


def _set(column: str, row: int, value):
    def mutate(frame: pd.DataFrame) -> pd.DataFrame:
        frame[column] = frame[column].astype(object)
        frame.loc[row - 1, column] = value
        return frame
    return mutate


def _invalid_topology(folder: Path) -> str:
    """A topology with a stranger link between devices that add no DP noise."""
    path = folder / "topologies" / "invalid.json"
    save_topology(Topology([("A", "E")]), path)
    return "topologies/invalid.json"


@pytest.mark.parametrize(("mutate", "error", "words"), [
    (lambda f: f.drop(columns=["horizon", "target"]), InvalidInputError,
     ["lacks column(s) target, horizon", ", ".join(USER_RUN_COLUMNS)]),
    (_set("network", 3, "networks/nowhere.json"), InputFileNotFoundError,
     ["row 3", "nowhere.json"]),
    (_set("topology", 2, "missing/t.json"), InputFileNotFoundError, ["row 2", "missing/t.json"]),
    (_set("network", 4, "topologies/toy-ndlf.json"), InputFileError,
     ["row 4", "toy-ndlf.json"]),
    (_set("measured_rounds", 4, -5), InvalidInputError, ["row 4", "measured_rounds must be > 0"]),
    (_set("horizon", 2, -40), InvalidInputError, ["row 2", "horizon must be"]),
    (_set("measured_rounds", 5, 999), InvalidInputError, ["row 5", "beyond horizon"]),
    (_set("measured_rounds", 1, "many"), InvalidInputError, ["row 1", "'many'"]),
    (_set("horizon", 6, None), InvalidInputError, ["row 6", "horizon is empty"]),
    (_set("network", 7, None), InvalidInputError, ["row 7", "network must be a file path"]),
])
def test_a_bad_table_is_refused_in_one_line_naming_the_row(runs, tmp_path, mutate, error, words):
    path = _mutated(runs, tmp_path, mutate)
    with pytest.raises(error) as caught:
        calibrate(path, predictor="default")
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_a_topology_invalid_on_its_network_is_refused_naming_row_and_files(runs, tmp_path):
    path = _mutated(runs, tmp_path, _set("topology", 2, _invalid_topology(runs.folder)))
    with pytest.raises(InvalidTopologyError) as caught:
        calibrate(path, predictor="default")
    message = str(caught.value)
    assert "\n" not in message and "row 2" in message and "invalid.json" in message
    assert "toy-" in message and "both ends must add DP noise" in message


# ---------------------------------------------------------------------------------------------
# The prior toward the base predictor
# ---------------------------------------------------------------------------------------------


def test_a_strong_prior_keeps_the_base_coefficients_and_refits_the_intercept(runs):
    base = load_predictor("default")
    for target in (0.8, 0.9):  # every run reached 0.8; a third never reached 0.9
        refit = calibrate(runs.frame, predictor="default", target=target,
                          prior_strength=1e9).predictor
        np.testing.assert_allclose(refit.rounds_coef_, base.rounds_coef_, rtol=0, atol=1e-6)
        np.testing.assert_array_equal(refit.mean_, base.mean_)
        np.testing.assert_array_equal(refit.scale_, base.scale_)
        assert abs(refit.rounds_intercept_ - base.rounds_intercept_) > 0.1  # 40 rounds, not 200


def test_no_prior_is_the_plain_refit(runs):
    plain = calibrate(runs.frame, predictor="default")
    zero = calibrate(runs.frame, predictor="default", prior_strength=0)
    assert zero.coefficients == plain.coefficients and zero.prior_strength == 0
    rows = runs.frame[runs.frame["target"] == 0.9]
    base = load_predictor("default")
    manual = clone(base).set_params(horizon=40.0).fit(
        rows[list(base.features)].to_numpy(float), rows["measured_rounds"].fillna(np.inf))
    np.testing.assert_array_equal(zero.predictor.rounds_coef_, manual.rounds_coef_)
    np.testing.assert_array_equal(zero.predictor.reach_coef_, manual.reach_coef_)
    assert zero.predictor.rounds_intercept_ == manual.rounds_intercept_


def _held_out_spearman(predictor: TrainingTimePredictor, test: pd.DataFrame) -> float:
    """Mean over the held-out networks of the censored Spearman of predicted and measured
    time to the target (never reached ranked slowest)."""
    scores = []
    for _, group in test.groupby("network"):
        L = group["local_iterate"].to_numpy(float)
        predicted = predictor.predict(group[list(predictor.features)].to_numpy(float)) * L
        scores.append(censored_spearman(predicted, group["measured_rounds"].fillna(np.inf)
                                        .to_numpy(float) * L))
    return float(np.mean(scores))


def test_on_a_few_runs_the_prior_predicts_other_networks_better(runs):
    """Fitted on the 16 runs of one network, ranking the runs of the two others."""
    rows = runs.frame[runs.frame["target"] == 0.8]
    plain, prior = [], []
    for network in rows["network"].unique():
        train, test = rows[rows["network"] == network], rows[rows["network"] != network]
        for strength, scores in ((0.0, plain), (10.0, prior)):
            refit = calibrate(train, predictor="default", prior_strength=strength).predictor
            scores.append(_held_out_spearman(refit, test))
    # measured: plain 0.78, 0.90, 0.95 (mean 0.88); prior 0.89, 0.93, 0.95 (mean 0.92)
    assert np.mean(prior) > np.mean(plain) + 0.02
    assert min(prior) > min(plain)


def test_a_prior_toward_the_mlp_predictor_records_the_model_it_was_told(runs):
    from topokit import Workload

    untold = calibrate(runs.frame, predictor="mlp", prior_strength=10).predictor
    assert "trained_model" not in untold.provenance_  # the runs may be any model's
    result = calibrate(runs.frame, predictor="mlp", prior_strength=10,
                       settings=Workload(model="mlp"))
    assert result.predictor.provenance_["trained_model"] == "mlp"
    assert result.to_dict()["prior_strength"] == 10
    assert result.cv_folds == 5 and np.isfinite(result.spearman_fitted_cv)


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"predictor": "default", "prior_strength": -1}, "prior_strength"),
    ({"prior_strength": 1}, "give predictor="),
    ({"predictor": TrainingTimePredictor(), "prior_strength": 1}, "not fitted"),
    ({"predictor": "default", "settings": {"noise_multiplier": 2}}, "FeatureSettings"),
])
def test_bad_refit_options_are_refused(runs, kwargs, words):
    with pytest.raises(InvalidInputError, match=words):
        calibrate(runs.frame, **kwargs)
