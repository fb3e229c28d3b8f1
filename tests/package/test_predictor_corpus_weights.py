"""Weighted runs in the predictor corpus (analyses/predictor_corpus.py, issue 17): the
weightings, the run key that tells runs apart, the features of a weighted topology, and the
keyed resume of analyses/_common.py (reuse only from identical inputs, adoption of runs
saved before run keys only when they match)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import analyses._common as common
import analyses.predictor_corpus as script
import topokit
from topokit.design.baselines import ndlf
from topokit.design.features import FeatureSettings, features_of_arrays
from topokit.errors import InvalidInputError
from topokit.network.siot import siot
from topokit.training import load_digits, partition_class_counts
from topokit.validation import corpus

RUN_KEY = common.RUN_KEY
SETTINGS = {"skewness": 0.4, "seed": 8001, "targets": (0.85, 0.88), "rounds": 200, "data": "d"}


@pytest.fixture(scope="module")
def net():
    return siot(12, seed=7)


@pytest.fixture(scope="module")
def plain(net):
    """The social graph with four DP devices (so that the noise features are not 0)."""
    return topokit.Topology(ndlf(net).edges, net.nodes[:4])


def _counts(net, skewness=0.8, seed=3):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return partition_class_counts(load_digits()[1], net.n_devices, skewness, seed,
                                      nodes=net.nodes)


# --------------------------------------------------------------------------------------------
# Weightings and their names
# --------------------------------------------------------------------------------------------


def test_parse_mixing_orders_the_weightings_and_refuses_unknown_ones_in_one_line():
    assert script.parse_mixing("fastest,lazy-metropolis, metropolis") == corpus.MIXINGS
    assert script.parse_mixing("metropolis") == ("metropolis",)
    for bad, said in (("fastest,lazy", "unknown weighting 'lazy'"), (" , ", "nothing")):
        with pytest.raises(InvalidInputError) as caught:
            script.parse_mixing(bad)
        message = str(caught.value)
        assert said in message and "lazy-metropolis,metropolis,fastest" in message
        assert "\n" not in message


def test_fastest_weights_only_where_the_sdp_is_exact():
    limit = corpus.FASTEST_MAX_DEVICES
    assert corpus.weightings_for(limit, corpus.MIXINGS) == corpus.MIXINGS
    assert corpus.weightings_for(limit + 1, corpus.MIXINGS) == ("lazy-metropolis", "metropolis")
    assert corpus.weightings_for(8, ("lazy-metropolis",)) == ("lazy-metropolis",)


def test_every_topology_comes_in_every_weighting_with_its_links_and_dp_devices(net, plain):
    entries = corpus.with_weightings({"ndlf": ("ndlf", plain)}, net, corpus.MIXINGS, seed=5)
    assert list(entries) == ["ndlf", "ndlf/metropolis", "ndlf/fastest"]
    assert entries["ndlf"] == corpus.CorpusEntry("ndlf", "lazy-metropolis", plain)
    metropolis, fastest = entries["ndlf/metropolis"], entries["ndlf/fastest"]
    assert metropolis.weighting == "metropolis" and metropolis.kind == "ndlf"
    # Metropolis-Hastings: the same links, 1 / (1 + max degree) on each.
    degree = {node: d for node, d in plain.graph(net.nodes).degree}
    assert metropolis.topology.edges == plain.edges
    np.testing.assert_allclose(metropolis.topology.weights,
                               [1 / (1 + max(degree[u], degree[v])) for u, v in plain.edges])
    # Fastest mixing: a subset of the links (unused ones dropped), the same DP devices.
    assert set(fastest.topology.edges) <= set(plain.edges)
    assert fastest.topology.dp_devices == plain.dp_devices
    assert fastest.topology.weights is not None


def test_unknown_weighting_is_refused(net, plain):
    with pytest.raises(InvalidInputError, match="weighting must be one of"):
        corpus.weighted_topology(plain, net, "uniform", 0)


# --------------------------------------------------------------------------------------------
# The run key
# --------------------------------------------------------------------------------------------


def test_the_run_key_includes_the_weighting(net, plain):
    network = common.network_digest(net)
    key = common.run_key(network, corpus.CorpusEntry("ndlf", "lazy-metropolis", plain), SETTINGS)
    # Same links and label, another weighting: another key, even before the weights differ.
    assert common.run_key(network, corpus.CorpusEntry("ndlf", "metropolis", plain), SETTINGS) != key
    weighted = corpus.weighted_topology(plain, net, "metropolis", 0)
    assert common.run_key(network, corpus.CorpusEntry("ndlf", "lazy-metropolis", weighted),
                          SETTINGS) != key
    # Identical inputs: the same key, however the topology was named or made.
    again = topokit.Topology(list(plain.edges), plain.dp_devices)
    assert common.run_key(network, corpus.CorpusEntry("random", "lazy-metropolis", again),
                          SETTINGS) == key


@pytest.mark.parametrize("change", ["skewness", "seed", "targets", "rounds", "data"])
def test_the_run_key_changes_with_every_setting(net, plain, change):
    network = common.network_digest(net)
    entry = corpus.CorpusEntry("ndlf", "lazy-metropolis", plain)
    other = {**SETTINGS, change: "other"}
    assert common.run_key(network, entry, other) != common.run_key(network, entry, SETTINGS)


def test_the_run_key_changes_with_the_network_and_the_dp_devices(net, plain):
    entry = corpus.CorpusEntry("ndlf", "lazy-metropolis", plain)
    key = common.run_key(common.network_digest(net), entry, SETTINGS)
    slower = topokit.Network(net.social, net.compute_time * 2.0, net.delay)
    assert common.run_key(common.network_digest(slower), entry, SETTINGS) != key
    dp = corpus.CorpusEntry("ndlf", "lazy-metropolis",
                            topokit.Topology(plain.edges, [net.nodes[0]]))
    assert common.run_key(common.network_digest(net), dp, SETTINGS) != key


# --------------------------------------------------------------------------------------------
# Features of weighted topologies
# --------------------------------------------------------------------------------------------


def _arrays(net, topology):
    adjacency = np.zeros((net.n_devices, net.n_devices))
    for u, v in topology.edges:
        adjacency[net.index[u], net.index[v]] = adjacency[net.index[v], net.index[u]] = 1.0
    dp_mask = np.isin(np.array(net.nodes, dtype=object), list(topology.dp_devices))
    return adjacency, dp_mask


@pytest.mark.parametrize("weighting", ["metropolis", "fastest"])
def test_weighted_features_are_those_of_its_mixing_matrix(net, plain, weighting):
    counts = _counts(net)
    topology = corpus.weighted_topology(plain, net, weighting, 0)
    row = corpus.features_row(net, topology, counts)
    adjacency, dp_mask = _arrays(net, topology)
    expected = features_of_arrays(net, adjacency, dp_mask, counts.astype(float),
                                  FeatureSettings(),
                                  weights=topology.mixing_matrix(net.nodes)).to_dict()
    for name, value in expected.items():
        assert row[name] == pytest.approx(value, rel=1e-12, abs=1e-15), name
    lazy = corpus.features_row(net, plain, counts)
    changed = [name for name in expected if not np.isclose(row[name], lazy[name], rtol=1e-6)]
    assert {"spectral_gap", "hitting_time", "noise_felt"} <= set(changed)
    # Both weightings mix faster than the paper's lazy ones (self-weights >= 1/2).
    assert row["spectral_gap"] > lazy["spectral_gap"]
    assert row["topology_json"] != lazy["topology_json"]


def test_lazy_metropolis_features_are_the_unweighted_kernel(net, plain):
    counts = _counts(net)
    adjacency, dp_mask = _arrays(net, plain)
    expected = features_of_arrays(net, adjacency, dp_mask, counts.astype(float),
                                  FeatureSettings()).to_dict()
    row = corpus.features_row(net, plain, counts)
    for name, value in expected.items():
        assert row[name] == pytest.approx(value, rel=1e-12, abs=1e-15), name


def test_fastest_mixing_gap_is_the_largest_of_the_three(net, plain):
    gaps = {w: corpus.features_row(net, corpus.weighted_topology(plain, net, w, 0),
                                   _counts(net))["spectral_gap"] for w in corpus.MIXINGS}
    # Dropping the links of weight <= 1e-6 may cost the optimum a few 1e-6 of its gap.
    assert gaps["fastest"] >= gaps["metropolis"] - 1e-5
    assert gaps["metropolis"] >= gaps["lazy-metropolis"] - 1e-12


# --------------------------------------------------------------------------------------------
# Keyed resume (analyses/_common.py)
# --------------------------------------------------------------------------------------------


def _runs(name: str, key, trials=(0, 1), targets=(0.85, 0.88), seed=100, **columns):
    rows = [{"topology": name, "trial": t, "target": target, "seed": seed + t,
             "measured_rounds": 10.0 + t, RUN_KEY: key, **columns}
            for t in trials for target in targets]
    return pd.DataFrame(rows).astype({RUN_KEY: object})


def test_runs_are_reused_only_under_their_key_and_with_every_trial():
    saved = pd.concat([_runs("a", "ka"), _runs("b", "old-b"), _runs("c", "kc", trials=(0,))],
                      ignore_index=True)
    reused, missing = common.reusable_runs(saved, {"a": "ka", "b": "kb", "c": "kc"}, trials=2)
    assert set(reused["topology"]) == {"a"} and len(reused) == 4
    assert missing == ["b", "c"]  # b's inputs changed; c lacks trial 1
    # Fewer trials asked for: c is complete for one trial.
    reused, missing = common.reusable_runs(saved, {"c": "kc"}, trials=1)
    assert missing == [] and set(reused["trial"]) == {0}


def test_two_names_of_one_topology_share_their_runs():
    saved = _runs("optimize", "k")
    reused, missing = common.reusable_runs(saved, {"optimize": "k", "optimize-fastest": "k"}, 2)
    assert missing == []
    by_name = {name: rows.drop(columns="topology").reset_index(drop=True)
               for name, rows in reused.groupby("topology")}
    pd.testing.assert_frame_equal(by_name["optimize"], by_name["optimize-fastest"])


def test_merge_drops_stale_runs_and_keeps_runs_of_names_not_asked_for():
    saved = pd.concat([_runs("a", "old-a"), _runs("b", "kb"), _runs("a/fastest", "kf")],
                      ignore_index=True)
    trained = _runs("a", None, seed=500).drop(columns=RUN_KEY)
    merged = common.merge_runs(saved, trained, {"a": "ka", "b": "kb"})
    assert set(merged.loc[merged["topology"] == "a", RUN_KEY]) == {"ka"}
    assert (merged.loc[merged["topology"] == "a", "seed"] >= 500).all()  # the old ones gone
    assert set(merged["topology"]) == {"a", "b", "a/fastest"}  # the other weighting stays
    assert len(merged) == 12


def test_read_runs_of_a_file_before_run_keys_marks_them_unkeyed(tmp_path):
    path = tmp_path / "old.parquet"
    _runs("a", None).drop(columns=RUN_KEY).to_parquet(path)
    frame = common.read_runs(path)
    assert frame[RUN_KEY].isna().all() and len(frame) == 4
    empty = common.read_runs(tmp_path / "none.parquet")
    assert empty.empty and {"topology", "trial", RUN_KEY} <= set(empty.columns)


def _legacy(gap=0.25, seed=100, targets=(0.85, 0.88)):
    return _runs("a", None, targets=targets, seed=seed, n_links=5.0, spectral_gap=gap)


EXPECTED = pd.DataFrame({"topology": ["a", "a"], "trial": [0, 1], "seed": [100, 101],
                         "n_links": [5.0, 5.0], "spectral_gap": [0.25, 0.25]})


def test_legacy_runs_are_adopted_when_seed_targets_and_metrics_match():
    adopted = common.adopt_legacy(_legacy(), EXPECTED, {"a": "ka"}, (0.85, 0.88),
                                  ("n_links", "spectral_gap"))
    assert (adopted[RUN_KEY] == "ka").all()


@pytest.mark.parametrize("legacy", [
    pytest.param(_legacy(gap=0.25 * (1 + 1e-6)), id="another-graph"),
    pytest.param(_legacy(seed=7), id="other-trial-seeds"),
    pytest.param(_legacy(targets=(0.85, 0.9)), id="other-targets"),
    pytest.param(_legacy().iloc[:-1], id="a-run-missing"),
])
def test_legacy_runs_that_do_not_match_are_not_adopted(legacy):
    adopted = common.adopt_legacy(legacy, EXPECTED, {"a": "ka"}, (0.85, 0.88),
                                  ("n_links", "spectral_gap"))
    assert adopted[RUN_KEY].isna().all()
    assert common.reusable_runs(adopted, {"a": "ka"}, 2)[1] == ["a"]


# --------------------------------------------------------------------------------------------
# Training: one run per key
# --------------------------------------------------------------------------------------------


def test_topologies_of_one_key_train_once_and_share_the_runs(toy, monkeypatch):
    trained = []
    real = corpus.validate

    def counting(net, topologies, **kwargs):
        trained.extend(topologies)
        return real(net, topologies, **kwargs)

    monkeypatch.setattr(corpus, "validate", counting)
    topology = toy.topology
    frame = corpus.train_runs(toy, {"a": topology, "b": topology, "c": ndlf(toy)}, 2, 11, 0.0,
                              {"a": "k1", "b": "k1", "c": "k2"}, rounds=4, audit_rounds=0)
    assert trained == ["a", "c"]
    first = frame[frame["topology"] == "a"].drop(columns="topology").reset_index(drop=True)
    copy = frame[frame["topology"] == "b"].drop(columns="topology").reset_index(drop=True)
    pd.testing.assert_frame_equal(first, copy)
    assert frame["wall_clock"].notna().all()
