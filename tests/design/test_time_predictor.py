"""Topology features (design/features.py) and the training-time predictor (time_predictor)."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator

import topokit
from topokit import load_example
from topokit.design.baselines import dlfdp, ndlf, random_topology
from topokit.design.features import DEFAULT_NOISE_MULTIPLIER, FeatureSettings, topology_features
from topokit.design.predictor import GlobalIteratePredictor
from topokit.design.time_predictor import (
    DEFAULT_FEATURES,
    FEATURE_TRANSFORMS,
    WORKLOAD_FEATURES,
    TrainingTimePredictor,
    feature_matrix,
    load_predictor,
    predict_topology,
)
from topokit.errors import InputFileError, InvalidInputError, InvalidTopologyError
from topokit.network.core import Network, Topology
from topokit.network.siot import siot

GAMMA = 0.9


def _complete_network(n: int) -> Network:
    """n devices, every pair socially linked, uniform times."""
    delay = np.full((n, n), 10.0)
    np.fill_diagonal(delay, 0.0)
    return Network(nx.complete_graph(n), np.full(n, 5.0), delay)


@pytest.fixture(scope="module")
def net16():
    return siot(16, seed=2, colocation_range_m=100.0)


# ---------------------------------------------------------------------------------------------
# Features
# ---------------------------------------------------------------------------------------------


def test_iid_class_counts_have_zero_heterogeneity(net16):
    # Proportional rows (different sizes, same label distribution) are IID.
    sizes = np.arange(1, net16.n_devices + 1)[:, None]
    counts = sizes * np.array([[3, 1, 2, 4]])
    features = topology_features(net16, ndlf(net16), class_counts=counts)
    assert features.heterogeneity_local == pytest.approx(0.0, abs=1e-15)
    assert features.heterogeneity_neighbourhood == pytest.approx(0.0, abs=1e-15)
    assert features.heterogeneity_disagreement == pytest.approx(0.0, abs=1e-15)
    unknown = topology_features(net16, ndlf(net16))
    assert unknown.heterogeneity_local == unknown.heterogeneity_disagreement == 0.0


def test_skewed_counts_have_positive_heterogeneity_and_mixing_reduces_it(net16):
    counts = np.eye(4)[np.arange(net16.n_devices) % 4] * 50 + 5
    features = topology_features(net16, ndlf(net16), class_counts=counts)
    assert 0 < features.heterogeneity_neighbourhood < features.heterogeneity_local


def test_adding_a_dp_device_never_lowers_the_injected_noise(net16):
    topology = random_topology(net16, n_dp=4, seed=3)
    before = topology_features(net16, topology)
    for node in net16.nodes:
        if node in topology.dp_devices:
            continue
        after = topology_features(net16, Topology(topology.edges, topology.dp_devices | {node}))
        for name in ("noise_average", "noise_disagreement", "noise_felt"):
            assert getattr(after, name) >= getattr(before, name), (node, name)
        assert after.noise_average > before.noise_average
        # The links did not change: the mixing features did not either.
        assert after.spectral_gap == before.spectral_gap
        assert after.effective_neighbours == before.effective_neighbours


@pytest.mark.parametrize("n", [3, 8, 20])
def test_complete_graph_has_closed_form_mixing(n):
    net = _complete_network(n)
    features = topology_features(net, dlfdp(net), gamma=GAMMA)
    mu = (n - 2) / (2 * (n - 1))  # every non-consensus eigenvalue of Lazy-Metropolis on K_n
    assert features.spectral_gap == pytest.approx(n / (2 * (n - 1)), rel=1e-12)
    assert features.hitting_time == pytest.approx(2 * (n - 1), rel=1e-9)
    expected_neff = n / (1 + (n - 1) * (1 - GAMMA) * mu**2 / (1 - GAMMA * mu**2))
    assert features.effective_neighbours == pytest.approx(expected_neff, rel=1e-12)
    s2 = (DEFAULT_NOISE_MULTIPLIER * 2.0 / 64) ** 2  # every device DP, B = 64
    assert features.noise_average == pytest.approx(s2 / n, rel=1e-12)
    assert features.noise_disagreement == pytest.approx(
        s2 * (n - 1) / n * mu**2 / (1 - mu**2), rel=1e-10, abs=1e-18)


def _dense_reference(adjacency, dp_rows, counts, s2, gamma):
    """The features from their formulas, with dense linear algebra only."""
    n = adjacency.shape[0]
    degree = adjacency.sum(axis=1)
    W = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if adjacency[i, j]:
                W[i, j] = 1.0 / (2.0 * max(degree[i], degree[j]))
        W[i, i] = 1.0 - W[i].sum()
    J, eye = np.full((n, n), 1.0 / n), np.eye(n)
    s = np.zeros(n)
    s[dp_rows] = s2
    W2 = W @ W
    M = W2 @ np.linalg.inv(eye - W2 + J) - J
    C = W2 @ np.linalg.inv(eye - gamma * W2)
    pi = counts / counts.sum(axis=1, keepdims=True)
    centred = (eye - J) @ pi
    drift = (1 - gamma) * W @ np.linalg.inv(eye - gamma * W) @ centred
    return {
        "spectral_gap": 1.0 - np.sort(np.abs(np.linalg.eigvalsh(W)))[-2],
        "noise_average": s.sum() / n**2,
        "noise_disagreement": s @ np.diag(M) / n,
        "noise_felt": (1 - gamma) * (s @ np.diag(C)) / n,
        "effective_neighbours": 1.0 / ((1 - gamma) * np.trace(C) / n),
        "heterogeneity_local": np.mean(np.sum(centred**2, axis=1)),
        "heterogeneity_neighbourhood": np.mean(np.sum((W @ centred) ** 2, axis=1)),
        "heterogeneity_disagreement": np.sum(drift**2) / n,
    }


def test_features_agree_with_a_dense_numpy_computation():
    net = load_example("toy")
    rng = np.random.default_rng(5)
    counts = rng.integers(1, 30, size=(net.n_devices, 3))
    features = topology_features(net, net.topology, class_counts=counts, gamma=GAMMA,
                                 batch_size=16)
    adjacency = np.zeros((net.n_devices, net.n_devices))
    for u, v in net.topology.edges:
        adjacency[net.index[u], net.index[v]] = adjacency[net.index[v], net.index[u]] = 1
    dp_rows = [net.index[node] for node in net.topology.dp_devices]
    batch = np.minimum(16, counts.sum(axis=1))[dp_rows]
    s2 = (DEFAULT_NOISE_MULTIPLIER * 2.0 / batch) ** 2
    expected = _dense_reference(adjacency, dp_rows, counts.astype(float), s2, GAMMA)
    for name, value in expected.items():
        assert getattr(features, name) == pytest.approx(value, rel=1e-9, abs=1e-15), name
    assert features.n_dp_devices == 3 and features.phi == 0.5


def test_disconnected_topology_has_infinite_mixing_features():
    net = load_example("toy")
    features = topology_features(net, Topology([("A", "B")], ["A", "B"]))
    assert not features.connected
    assert features.hitting_time == np.inf and features.noise_disagreement == np.inf
    assert features.spectral_gap == 0.0


def test_to_dict_holds_every_field_as_plain_scalars(net16):
    data = topology_features(net16).to_dict()
    # Every feature of the topology; the workload's (its target's closeness) is not one.
    assert set(data) >= set(FEATURE_TRANSFORMS) - set(WORKLOAD_FEATURES)
    json.dumps(data)


@pytest.mark.parametrize("counts, message", [
    (np.ones((3, 4)), "shape (n_devices, n_classes) = (16, C)"),
    (np.ones(16), "2-dimensional"),
    (-np.ones((16, 4)), "must be >= 0"),
    (np.full((16, 4), np.nan), "NaN"),
    (np.vstack([np.zeros((1, 4)), np.ones((15, 4))]), "row 0 is all zero"),
])
def test_bad_class_counts_raise_one_clear_error(net16, counts, message):
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        topology_features(net16, class_counts=counts)


def test_bad_settings_and_topologies_raise():
    net = load_example("toy")
    with pytest.raises(InvalidInputError, match="gamma"):
        topology_features(net, gamma=1.0)
    with pytest.raises(InvalidInputError, match="batch_size"):
        topology_features(net, batch_size=0)
    with pytest.raises(InvalidTopologyError):
        topology_features(net, Topology([("A", "C")]))  # non-social link without DP ends


# ---------------------------------------------------------------------------------------------
# The predictor
# ---------------------------------------------------------------------------------------------


def _synthetic_runs(seed: int = 0, n: int = 300):
    """Rounds that grow with noise and heterogeneity, in runs of T = 70 rounds (inf: more)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([
        rng.uniform(0, 4e-3, n),       # noise_felt
        rng.uniform(0, 2e-3, n),       # noise_average
        rng.uniform(0, 5e-2, n),       # noise_disagreement
        rng.uniform(3, 20, n),         # effective_neighbours
        rng.uniform(0, 0.3, n),        # heterogeneity_local
        rng.uniform(0, 0.2, n),        # heterogeneity_neighbourhood
        rng.uniform(0, 0.3, n),        # heterogeneity_disagreement
    ])
    log_rounds = 2 + 300 * X[:, 0] + 1000 * X[:, 1] + 3 * X[:, 5] + rng.normal(0, 0.1, n)
    return X, np.where(log_rounds < np.log(70), np.exp(log_rounds), np.inf)


@pytest.fixture(scope="module")
def fitted():
    X, y = _synthetic_runs()
    return TrainingTimePredictor(settings=FeatureSettings(n_samples=1347), horizon=70).fit(X, y)


def test_fit_predicts_never_where_the_noise_caps_accuracy(fitted):
    X, y = _synthetic_runs(seed=1)
    predicted = fitted.predict(X)
    assert np.mean(np.isinf(predicted) == np.isinf(y)) > 0.9
    finite = np.isfinite(predicted) & np.isfinite(y)
    assert np.corrcoef(np.log(predicted[finite]), np.log(y[finite]))[0, 1] > 0.9


def _oriented(features, X):
    """X with every column turned so that larger is worse (as the predictor reads it)."""
    return np.column_stack([FEATURE_TRANSFORMS[name](X[:, j]) for j, name in enumerate(features)])


@pytest.mark.parametrize("source", ["synthetic", "default"])
def test_more_noise_never_predicts_fewer_rounds(fitted, source):
    predictor = fitted if source == "synthetic" else load_predictor("default")
    rng = np.random.default_rng(7)
    X, _ = _synthetic_runs(seed=2)
    X = feature_matrix([dict(zip(DEFAULT_FEATURES, row, strict=True)) for row in X],
                       predictor.features) if predictor.features != DEFAULT_FEATURES else X
    base = predictor.predict(X)
    for j, name in enumerate(predictor.features):
        if not name.startswith("noise"):
            continue
        worse = X.copy()
        worse[:, j] *= 1.0 + rng.uniform(0.0, 2.0, len(X))
        worse[:, j] += rng.uniform(0.0, 1e-3, len(X))
        assert np.all(predictor.predict(worse) >= base), name
        assert np.all(predictor.reach_probability(worse) <= predictor.reach_probability(X))


def test_a_topology_worse_in_every_feature_is_never_predicted_faster(fitted):
    better, _ = _synthetic_runs(seed=3)
    rng = np.random.default_rng(3)
    factor = 1.0 + rng.uniform(0.0, 1.0, better.shape)
    # Larger is worse for every feature but the effective number of neighbours.
    fewer = np.array([name == "effective_neighbours" for name in DEFAULT_FEATURES])
    worse = np.where(fewer, better / factor, better * factor)
    assert np.all(_oriented(DEFAULT_FEATURES, worse) >= _oriented(DEFAULT_FEATURES, better))
    assert np.all(fitted.predict(worse) >= fitted.predict(better))


def test_json_round_trip_is_bit_exact(fitted, tmp_path):
    path = fitted.save(tmp_path / "predictor.json", provenance={"data": "synthetic"})
    loaded = load_predictor(path)
    assert isinstance(loaded, TrainingTimePredictor)
    assert loaded.to_dict() == fitted.to_dict(provenance={"data": "synthetic"})
    X, _ = _synthetic_runs(seed=4)
    assert np.array_equal(loaded.predict(X), fitted.predict(X))
    assert np.array_equal(loaded.reach_probability(X), fitted.reach_probability(X))
    assert loaded.provenance_["data"] == "synthetic"
    assert loaded.feature_settings == fitted.feature_settings
    # Saving what was loaded writes the same bytes.
    again = loaded.save(tmp_path / "again.json")
    assert again.read_bytes() == path.read_bytes()


@pytest.mark.parametrize(("name", "model"), [("default", "logreg"), ("mlp", "mlp")])
def test_the_shipped_predictors_round_trip_and_record_their_provenance(tmp_path, name, model):
    shipped = load_predictor(name)
    assert isinstance(shipped, TrainingTimePredictor)
    assert shipped.features == DEFAULT_FEATURES
    record = shipped.provenance_
    for key in ("data", "model", "target", "dp", "corpus_runs", "networks", "topokit_version"):
        assert key in record, key
    assert record["target"] == 0.88 and record["corpus_runs"] > 500
    assert f"model='{model}'" in record["model"]  # fitted on runs of the model it is named for
    copy = load_predictor(shipped.save(tmp_path / f"{name}.json"))
    assert copy.to_dict() == shipped.to_dict()


def test_the_mlp_predictor_is_a_fit_of_its_own():
    default, mlp = load_predictor("default"), load_predictor("mlp")
    assert not np.allclose(default.rounds_coef_, mlp.rounds_coef_)
    assert set(mlp.provenance_["networks"]).isdisjoint(
        {"siot16-s100-oor", "siot16-s200-oor"})  # the benchmark's networks are held out


def test_paper_predictor_is_eq_15_example_3():
    paper = load_predictor("paper")
    assert type(paper) is GlobalIteratePredictor and not paper.is_fitted
    assert paper.predict([[26.0, 0.5]])[0] == pytest.approx(87.672, abs=5e-4)
    net = load_example("toy")  # the exact H = 1584/61 gives 87.662
    assert predict_topology(net, net.topology, predictor="paper") == pytest.approx(87.672, abs=1)


def test_paper_predictor_file_loads_as_its_own_kind(tmp_path):
    path = GlobalIteratePredictor().save(tmp_path / "paper.json")
    loaded = load_predictor(str(path))
    assert type(loaded) is GlobalIteratePredictor
    assert loaded.predict([[26.0, 0.5]])[0] == pytest.approx(87.672, abs=5e-4)


def test_predict_topology_uses_the_predictors_settings(net16):
    default = load_predictor("default")
    features = topology_features(net16, dlfdp(net16), **default.feature_settings.to_dict())
    assert predict_topology(net16, dlfdp(net16)) == default.predict_features(features)
    disconnected = Topology([], [])
    assert predict_topology(net16, disconnected) == np.inf


def test_unknown_predictor_name_is_one_clear_line():
    with pytest.raises(InvalidInputError, match="unknown predictor 'fancy'") as info:
        load_predictor("fancy")
    assert "\n" not in str(info.value)
    assert "'default', 'paper', 'mlp'" in str(info.value)  # names every choice


def test_predictor_files_of_another_kind_or_feature_set_are_refused(fitted, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"kind": "something-else"}))
    with pytest.raises(InputFileError, match="not a topokit predictor"):
        load_predictor(other)
    record = fitted.to_dict()
    record["features"] = ["hitting_time", "betweenness", *record["features"][2:]]
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(record))
    with pytest.raises(InputFileError, match="unknown feature 'betweenness'") as info:
        load_predictor(foreign)
    assert "\n" not in str(info.value)
    record = fitted.to_dict()
    record["settings"]["temperature"] = 1.0
    foreign.write_text(json.dumps(record))
    with pytest.raises(InputFileError, match="unknown feature setting 'temperature'"):
        load_predictor(foreign)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(InputFileError, match="malformed JSON"):
        load_predictor(broken)


def test_bad_training_data_is_refused():
    X, y = _synthetic_runs()
    with pytest.raises(InvalidInputError, match="NaN; give inf"):
        TrainingTimePredictor().fit(X, np.where(np.isfinite(y), y, np.nan))
    with pytest.raises(InvalidInputError, match="expected 7 feature columns"):
        TrainingTimePredictor().fit(X[:, :3], y)
    with pytest.raises(InvalidInputError, match="no run reached the target"):
        TrainingTimePredictor().fit(X, np.full(len(X), np.inf))
    with pytest.raises(InvalidInputError, match="unknown feature 'colour'"):
        TrainingTimePredictor(features=("colour",)).fit(X[:, :1], y)


def test_all_reached_fits_a_predictor_that_never_says_never():
    X, y = _synthetic_runs()
    reached = np.isfinite(y)
    model = TrainingTimePredictor().fit(X[reached], y[reached])
    assert np.all(np.isfinite(model.predict(X)))


#: Failures a scikit-learn check may report: the columns are named features (fixed width),
#: and y are rounds (> 0), not any real number.
ALLOWED_FAILURES = ("feature columns", "rounds > 0")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
def test_scikit_learn_checks_pass_except_fixed_width_and_positive_rounds():
    estimator = TrainingTimePredictor(features=("noise_felt", "noise_average"))
    results = check_estimator(estimator, on_fail=None)
    failed = {r["check_name"]: str(r["exception"]) for r in results if r["status"] == "failed"}
    failed.pop("check_positive_only_tag_during_fit", None)
    unexpected = {name: why for name, why in failed.items()
                  if not any(allowed in why for allowed in ALLOWED_FAILURES)}
    assert not unexpected
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    for name in ("check_no_attributes_set_in_init", "check_parameters_default_constructible",
                 "check_get_params_invariance", "check_set_params", "check_requires_y_none",
                 "check_estimators_unfitted", "check_supervised_y_no_nan",
                 "check_estimators_empty_data_messages", "check_estimator_cloneable"):
        assert name in passed, name


def test_clone_and_cross_validation_work_on_rounds():
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_predict

    X, y = _synthetic_runs()
    model = TrainingTimePredictor(C=3.0)
    assert clone(model).get_params() == model.get_params()
    predicted = cross_val_predict(model, X, y, cv=3)
    assert predicted.shape == y.shape
    assert np.mean(np.isinf(predicted) == np.isinf(y)) > 0.9


def test_predict_refuses_nan_and_the_wrong_width_but_reads_inf_as_disconnected(fitted):
    X, _ = _synthetic_runs(seed=5, n=4)
    with pytest.raises(InvalidInputError, match="expected 7 feature columns"):
        fitted.predict(X[:, :2])
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InvalidInputError, match="X contains NaN"):
        fitted.predict(bad)
    bad[0, 0] = np.inf
    assert fitted.predict(bad)[0] == np.inf and fitted.reach_probability(bad)[0] == 0.0


def test_a_missing_predictor_file_is_not_found_and_a_bad_argument_is_refused(tmp_path):
    from topokit.errors import InputFileNotFoundError

    with pytest.raises(InputFileNotFoundError, match="no such predictor file"):
        load_predictor(tmp_path / "missing.json")
    with pytest.raises(InvalidInputError, match="predictor must be"):
        load_predictor(3)


def test_default_predicts_never_for_the_all_dp_complete_graph_at_64_devices():
    # The corpus (analyses/predictor_corpus.py): DLFDP at 64 devices never reached 88 % in
    # 15 of its 27 runs (final accuracy 0.871-0.886 over three networks and three skewness
    # values, whatever the skewness), and the default predictor says never.
    net = siot(64, seed=1)
    assert predict_topology(net, dlfdp(net)) == np.inf
    # NDLF on the same network (no DP device) reached 88 % in every run of the corpus.
    assert np.isfinite(predict_topology(net, ndlf(net)))


def test_evaluate_and_the_cli_use_the_default_predictor():
    from typer.testing import CliRunner

    from topokit.cli import app
    from topokit.design.baselines import dlfdp

    net = topokit.load_example("siot32")
    default = topokit.load_predictor("default")
    for topology in (None, dlfdp(net)):
        metrics = topokit.evaluate(net, topology, default)
        assert metrics.predicted_global_iterate == topokit.predict_topology(net, topology)
        assert metrics.pseudo_time == metrics.predicted_global_iterate * metrics.local_iterate
    runner = CliRunner()
    shown = runner.invoke(app, ["analyze", "--example", "siot32", "--predictor", "default",
                                "--json"])
    assert shown.exit_code == 0
    assert json.loads(shown.output)["predicted_global_iterate"] == pytest.approx(
        topokit.predict_topology(net))
    refused = runner.invoke(app, ["design", "--example", "toy", "--method", "autotag",
                                  "--predictor", "default"], env={"COLUMNS": "400"})
    assert refused.exit_code == 2 and "AutoTag" in refused.output
