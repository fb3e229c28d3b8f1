"""topokit.validation.corpus: the corpus behind the shipped predictors.  Its judgement on a
synthetic corpus against plain refits and rank correlations (and against the package's
leave_network_out), and a tiny corpus really trained on the toy network."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata, spearmanr
from sklearn.base import clone

from topokit.design.predictor import GlobalIteratePredictor
from topokit.design.time_predictor import DEFAULT_FEATURES, TrainingTimePredictor
from topokit.errors import InvalidInputError
from topokit.training import load_digits, partition_class_counts
from topokit.validation import corpus, leave_network_out, trial_seed, validate

HORIZON = 200
TARGET = 0.88
SAMPLES = 1347  # the training rows of the corpus's partitions (class_counts_json)


def synthetic_corpus(seed: int = 0) -> pd.DataFrame:
    """Rows of corpus_rows' shape: 4 networks x 2 skewness x 4 topologies (two of them
    also with Metropolis-Hastings weights) x 3 trials x 2 targets.  Rounds grow with the
    features; the slowest runs never reach 88 % within T = 200 rounds."""
    rng = np.random.default_rng(seed)
    shares = np.full((8, 2), 84)
    shares[-1, -1] += SAMPLES - shares.sum()
    counts = json.dumps(shares.tolist())
    rows = []
    for network in ("n1", "n2", "n3", "n4"):
        for skewness in (0.0, 0.8):
            for base in ("ndlf", "dlfdp", "erg", "random-0"):
                for weighting in ("lazy-metropolis", "metropolis"):
                    if weighting == "metropolis" and base in ("erg", "random-0"):
                        continue
                    features = rng.uniform(0.5, 3.0, len(DEFAULT_FEATURES))
                    H, phi, L = rng.uniform(5, 60), rng.uniform(0.05, 0.6), rng.uniform(1, 4)
                    speed = 0.6 if weighting == "metropolis" else 1.0
                    for trial in range(3):
                        rounds = speed * 20 * np.exp(features.mean() + skewness
                                                     + rng.normal(0, 0.3))
                        for target, scale in ((0.85, 0.8), (TARGET, 1.0)):
                            reached = np.ceil(rounds * scale)
                            measured = reached if reached <= HORIZON else np.nan
                            paper = GlobalIteratePredictor().predict(np.array([[H, phi]]))[0]
                            name = base if weighting == "lazy-metropolis" \
                                else f"{base}/{weighting}"
                            rows.append({
                                "network": network, "skewness": skewness, "topology": name,
                                "base_topology": base, "weighting": weighting,
                                "kind": base.split("-")[0], "trial": trial, "target": target,
                                "seed": 100 + trial, "n_devices": 8,
                                "measured_rounds": measured, "measured_time": measured * L,
                                "rounds_run": HORIZON, "local_iterate": L, "hitting_time": H,
                                "phi": phi, "pseudo_time": paper * L,
                                "class_counts_json": counts,
                                **dict(zip(DEFAULT_FEATURES, features, strict=True))})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return synthetic_corpus()


@pytest.fixture(scope="module")
def judgement(table) -> corpus.CorpusJudgement:
    return corpus.judge_corpus(table, target=TARGET, horizon=HORIZON)


def _unfitted() -> TrainingTimePredictor:
    from topokit.design.features import FeatureSettings

    return TrainingTimePredictor(features=DEFAULT_FEATURES,
                                 settings=FeatureSettings(n_samples=SAMPLES))


def _plain_spearman(predicted, measured) -> float:
    """Spearman of the ranks, ``inf`` (never) ranked last on both sides."""
    return float(spearmanr(rankdata(predicted), rankdata(measured)).statistic)


# --------------------------------------------------------------------------------------------
# Fitting and judging
# --------------------------------------------------------------------------------------------


def test_the_corpus_predictor_is_a_plain_fit_on_every_run_at_the_target(table):
    fitted = corpus.fit_corpus_predictor(table, target=TARGET)
    rows = table[table["target"] == TARGET]
    plain = _unfitted().fit(rows[list(DEFAULT_FEATURES)].to_numpy(),
                            rows["measured_rounds"].fillna(np.inf).to_numpy())
    np.testing.assert_array_equal(fitted.rounds_coef_, plain.rounds_coef_)
    np.testing.assert_array_equal(fitted.reach_coef_, plain.reach_coef_)
    assert fitted.feature_settings.n_samples == SAMPLES and fitted.horizon == HORIZON


def test_held_out_predictions_are_refits_without_the_network(table):
    predicted = corpus.held_out_predictions(table, _unfitted(), target=TARGET)
    rows = table[table["target"] == TARGET]
    assert len(predicted) == len(rows) and list(predicted["network"].unique()) == [
        "n1", "n2", "n3", "n4"]
    for network, mine in predicted.groupby("network", sort=False):
        others = rows[rows["network"] != network]
        model = clone(_unfitted()).fit(others[list(DEFAULT_FEATURES)].to_numpy(),
                                       others["measured_rounds"].fillna(np.inf).to_numpy())
        expected = model.predict(mine[list(DEFAULT_FEATURES)].to_numpy())
        np.testing.assert_array_equal(mine["predicted_rounds"], expected)
        np.testing.assert_array_equal(mine["predicted_time"], expected * mine["local_iterate"])
    assert np.isinf(predicted["time"]).any() and np.isinf(predicted["predicted_time"]).any()


def test_the_cells_rank_as_plain_spearman_and_as_leave_network_out(table, judgement):
    cells = judgement.cells.set_index(["network", "skewness"])
    assert len(cells) == 8
    package = leave_network_out(table, _unfitted(), target=TARGET, by=("network", "skewness"))
    for row in package.itertuples():
        assert cells.loc[(row.network, row.skewness), "spearman"] == row.spearman
        assert cells.loc[(row.network, row.skewness), "spearman_paper"] == row.spearman_paper
    for (network, skewness), cell in judgement.predicted.groupby(["network", "skewness"]):
        mine = cells.loc[(network, skewness)]
        assert mine["spearman"] == pytest.approx(
            _plain_spearman(cell["predicted_time"], cell["time"]), rel=1e-12)
        assert mine["spearman_paper"] == pytest.approx(
            _plain_spearman(cell["pseudo_time"], cell["time"]), rel=1e-12)
        medians = cell.groupby("topology")[["time", "predicted_time"]].median()
        assert mine["spearman_topologies"] == pytest.approx(
            _plain_spearman(medians["predicted_time"], medians["time"]), rel=1e-12)
        others = [np.median(cell[(cell["topology"] == t) & (cell["trial"] != k)]["time"])
                  for t, k in zip(cell["topology"], cell["trial"], strict=True)]
        assert mine["spearman_trial_ceiling"] == pytest.approx(
            _plain_spearman(others, cell["time"]), rel=1e-12)
        assert mine["never"] == np.isinf(cell["time"]).sum()


def test_the_summary_counts_never_reached_runs_and_weighting_gains(judgement):
    predicted, summary = judgement.predicted, judgement.summary
    never = np.isinf(predicted["time"]).to_numpy()
    forecast_never = np.isinf(predicted["predicted_time"]).to_numpy()
    assert summary["never"]["measured_never"] == never.sum() > 0
    assert summary["never"]["accuracy"] == pytest.approx(np.mean(never == forecast_never))
    assert summary["spearman"]["median"] == pytest.approx(judgement.cells["spearman"].median())
    gains = summary["weighting_gains"]["metropolis"]
    measured = []
    for _, pair in predicted.groupby(
            ["network", "skewness", "base_topology", "trial"]):
        if len(pair) == 2:
            times = {w: min(r, HORIZON + 1) * L for w, r, L in zip(
                pair["weighting"], pair["rounds"], pair["local_iterate"], strict=True)}
            measured.append(times["metropolis"] / times["lazy-metropolis"])
    assert gains["pairs"] == len(measured) == 4 * 2 * 2 * 3
    assert gains["measured_geometric_mean"] == pytest.approx(
        np.exp(np.mean(np.log(measured))), rel=1e-12)
    assert gains["measured_faster"] == pytest.approx(np.mean(np.array(measured) < 1))
    assert set(summary["by_weighting"]) == {"lazy-metropolis", "metropolis"}


def test_the_judgement_keeps_the_runs_at_the_target(table, judgement):
    runs = judgement.runs
    assert (runs["target"] == TARGET).all() and len(runs) == (table["target"] == TARGET).sum()
    assert np.isinf(runs["rounds"]).sum() == runs["measured_rounds"].isna().sum() > 0


def test_a_table_without_features_is_refused(table):
    with pytest.raises(InvalidInputError, match="lacks column.*noise_felt"):
        corpus.judge_corpus(table.drop(columns="noise_felt"), target=TARGET, horizon=HORIZON)


# --------------------------------------------------------------------------------------------
# A tiny corpus trained on the toy network
# --------------------------------------------------------------------------------------------


def test_trial_seeds_are_validates(toy):
    result = validate(toy, {"paper": toy.topology}, trials=3, seed=17, rounds=2,
                      targets=(0.3,), audit_rounds=0)
    assert result.frame.sort_values("trial")["seed"].tolist() == [
        trial_seed(17, t) for t in range(3)]


@pytest.fixture(scope="module")
def tiny(toy):
    """A corpus cell of the toy network: 2 trials of 4 rounds, two weightings."""
    entries = corpus.corpus_topologies(toy, 3, n_random_dp=1, n_random_social=1,
                                       sparse_social=False,
                                       mixings=("lazy-metropolis", "metropolis"))
    _, y = load_digits()
    frame = corpus.train_runs(toy, {name: e.topology for name, e in entries.items()}, 2, 3,
                              0.8, targets=(0.3, 0.5), rounds=4, audit_rounds=0)
    return entries, corpus.corpus_rows(frame, toy, entries, 0.8, y)


def test_the_corpus_topologies_come_in_every_weighting(tiny):
    entries, _ = tiny
    plain = ["autotag", "ndlf", "dlfdp", "erg", "random-dp-0", "random-social-0"]
    assert list(entries) == plain + [f"{name}/metropolis" for name in plain]
    assert entries["random-social-0"].topology.dp_devices == frozenset()
    assert {e.weighting for e in entries.values()} == {"lazy-metropolis", "metropolis"}


def test_corpus_rows_carry_each_run_s_own_features(toy, tiny):
    entries, rows = tiny
    _, y = load_digits()
    assert len(rows) == len(entries) * 2 * 2
    assert set(rows["weighting"]) == {"lazy-metropolis", "metropolis"}
    assert (rows["base_topology"] == rows["topology"].str.split("/").str[0]).all()
    for row in rows.drop_duplicates(["topology", "seed"]).itertuples():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            counts = partition_class_counts(y, toy.n_devices, 0.8, row.seed, nodes=toy.nodes)
        assert json.loads(row.class_counts_json) == counts.tolist()
        expected = corpus.features_row(toy, entries[row.topology].topology, counts)
        for name in DEFAULT_FEATURES:
            assert getattr(row, name) == expected[name]


def test_trial_predictions_are_validates_own(toy, tiny):
    entries, rows = tiny
    _, y = load_digits()
    replayed = corpus.trial_predictions(rows, toy, {n: e.topology for n, e in entries.items()},
                                        predictor="paper", y=y, skewness=0.8)
    np.testing.assert_allclose(replayed["predicted_time"], rows["pseudo_time"], rtol=1e-12)


def test_bad_corpus_settings_are_refused(toy):
    with pytest.raises(InvalidInputError, match="mixings must be"):
        corpus.corpus_topologies(toy, 0, mixings=["uniform"])
    with pytest.raises(InvalidInputError, match="n_random_dp"):
        corpus.corpus_topologies(toy, 0, n_random_dp=-1)
    with pytest.raises(InvalidInputError, match="weighting must be one of"):
        corpus.weighted_topology(toy.topology, toy, "uniform", 0)
    with pytest.raises(InvalidInputError, match="names must be a sequence of ndlf"):
        corpus.named_topologies(toy, ["ndlf", "ring"], 0)
    with pytest.raises(InvalidInputError, match="n_random"):
        corpus.named_topologies(toy, ["ndlf"], 0, n_random=-1)


# --------------------------------------------------------------------------------------------
# The designs of a benchmark, and its runs with their predictions
# --------------------------------------------------------------------------------------------


def test_named_topologies_come_in_their_order_each_keyed_by_the_seed(toy):
    from topokit._random import keyed_seed
    from topokit.design import autotag
    from topokit.design.baselines import erg, exponential_graph

    built = corpus.named_topologies(toy, list(reversed(corpus.NAMED_TOPOLOGIES)), 5,
                                    n_random=2)
    assert list(built) == [*corpus.NAMED_TOPOLOGIES, "random-0", "random-1"]
    assert [e.kind for e in built.values()] == [*corpus.NAMED_TOPOLOGIES, "random", "random"]
    assert {name: e.weighting for name, e in built.items()
            if e.weighting != "lazy-metropolis"} == {"ndlf-metropolis": "metropolis",
                                                     "ndlf-fastest": "fastest"}
    paper = autotag(toy)
    assert built["autotag"].topology == paper.topology
    assert built["erg"].topology == erg(toy, seed=keyed_seed(5, 1), reference=paper)
    assert built["exponential"].topology == exponential_graph(toy, seed=keyed_seed(5, 2))
    assert built["random-1"].topology == corpus.random_valid_topology(toy, 5, 1, None)
    assert list(corpus.named_topologies(toy, ["dlfdp"], 5)) == ["dlfdp"]


def test_optimize_entries_search_once_per_mixing(toy):
    counts = np.full((toy.n_devices, 2), 10)
    arms = corpus.optimize_entries(toy, {"mine": None, "fast": "fastest", "mh": "metropolis"},
                                   class_counts=counts, seed=4)
    assert arms["mine"][1] is arms["fast"][1]  # the default predictor's mixing is fastest
    assert arms["mh"][1] is not arms["fast"][1]
    for name, (entry, design) in arms.items():
        assert entry.kind == name and entry.topology == design.topology
        assert entry.weighting == design.stats["mixing"]["weights"]


def test_benchmark_entries_design_for_trial_0s_partition_once_per_predictor(toy, monkeypatch):
    _, y = load_digits()
    seen = []

    def entries(net, arms, *, class_counts, seed, predictor, **options):
        seen.append((predictor, class_counts, options))
        return {arm: (corpus.CorpusEntry(arm, "fastest", net.topology), None) for arm in arms}

    monkeypatch.setattr(corpus, "optimize_entries", entries)
    built = corpus.benchmark_entries(toy, ["ndlf"], 9, skewness=[0.0, 0.8], y=y,
                                     arms={"optimize": None}, predictors=["a", "b", "a"],
                                     ndlf_margin=1.0)
    assert list(built) == [(0.0, "a"), (0.0, "b"), (0.8, "a"), (0.8, "b")]
    assert all(list(entries) == ["optimize", "ndlf"] for entries in built.values())
    assert [predictor for predictor, _, _ in seen] == ["a", "b", "a", "b"]
    for (skewness, _), (_, counts, options) in zip(built, seen, strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = partition_class_counts(y, toy.n_devices, skewness, trial_seed(9, 0),
                                          nodes=toy.nodes)
        np.testing.assert_array_equal(counts, want)
        assert options == {"ndlf_margin": 1.0}


def test_predicted_runs_replay_validates_predictor_and_set_eq15_beside(toy, tiny):
    from topokit.design.metrics import evaluate

    entries, rows = tiny
    _, y = load_digits()
    predicted = corpus.predicted_runs(rows, toy, entries, predictor="paper", y=y,
                                      skewness=0.8, check=np.ones(len(rows), bool))
    assert "predicted_global_iterate" not in predicted.columns
    assert (predicted["method"] == rows["kind"]).all()
    np.testing.assert_allclose(predicted["predicted_time"], rows["pseudo_time"], rtol=1e-12)
    for row in predicted.drop_duplicates("topology").itertuples():
        paper = evaluate(toy, entries[row.topology].topology)
        assert (row.pseudo_time, row.pseudo_rounds) == (paper.pseudo_time,
                                                        paper.predicted_global_iterate)
    with pytest.raises(InvalidInputError, match="another predictor"):
        corpus.predicted_runs(rows, toy, entries, predictor="default", y=y, skewness=0.8,
                              check=np.ones(len(rows), bool))
    with pytest.raises(InvalidInputError, match="check must flag each"):
        corpus.predicted_runs(rows, toy, entries, predictor="paper", y=y, skewness=0.8,
                              check=[True])


def test_cell_table_scores_each_cell_and_counts_a_repeated_run_once(table):
    runs = corpus.held_out_predictions(table, target=TARGET).assign(model="m", key="k")
    runs["key"] = runs["topology"] + runs["trial"].astype(str)
    cells = corpus.cell_table(runs, by=["network", "skewness", "model"])
    expected = [corpus.cell_scores(cell) for _, cell in
                runs.groupby(["network", "skewness"], sort=False)]
    assert cells.drop(columns="model").to_dict("records") == expected
    assert set(cells["model"]) == {"m"}
    copy = runs[runs["topology"] == "ndlf"].assign(topology="ndlf-again")
    doubled = pd.concat([runs, copy], ignore_index=True)
    pd.testing.assert_frame_equal(corpus.cell_table(doubled, distinct=["key"]),
                                  corpus.cell_table(runs))
    with pytest.raises(InvalidInputError, match="lacks column.*'bound'"):
        corpus.cell_table(runs, by=["network", "bound"])
