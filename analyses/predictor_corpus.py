"""Measure a corpus of training runs, fit topokit's default training-time predictor, and judge it.

The corpus: SIoT networks from ``topokit.datasets.siot`` at 8-64 devices (for
every size: two networks of the generator's defaults, whose OOR social graphs
are dense, and one with co-location links of 100 m, which gives the sparse,
long social graphs where topology matters most), skewness K = 0 / 0.4 / 0.8,
and on each network AutoTag's design (eq. 15), NDLF, DLFDP, DeepPrivacy-ERG
and random valid topologies (two without DP devices, the rest with a random
DP set).  Every run is ``topokit.validate``: D-PSGD with partial DP (epsilon
= 1, delta = 1e-5 per round, clipped sensitivity), logistic regression on
scikit-learn's digits (the only data set here), lr 0.2 decaying 0.99, T = 200
rounds, the same trial seeds for every topology of a network.  Each run's
rounds to 85 / 88 / 90 % averaged accuracy are recorded next to the
features of :func:`topokit.design.features.topology_features`, computed with
the devices' actual class counts (the partition is reproduced from the trial
seed).

The predictor: :class:`topokit.design.time_predictor.TrainingTimePredictor`
fitted on every run at 88 % (the issue's target), saved to
``datasets/predictor_default.json`` with its provenance.

The judgement: leave-network-out.  For every network, the predictor is fitted
on the other networks' runs and predicts this one's; the Spearman correlation
of predicted and measured time-to-target (rounds x L), runs that never reach
the target ranked slowest (rank of ``inf``), is computed per (network,
skewness) -- the topologies a user would choose between -- for the predictor
and for eq. (15) on the same runs; and how often "never reaches the target"
is predicted right.

Run: python analyses/predictor_corpus.py [--quick] [--n-jobs 2]
Writes analyses/out/predictor_corpus.parquet (the corpus),
analyses/out/predictor_corpus.{json,png}, and datasets/predictor_default.json
(with --quick: analyses/out/predictor_quick.json instead).  The runs of each
(network, skewness) are kept in analyses/out/predictor_corpus_parts/: an
interrupted run resumes there, and a finished cell's runs table is read back
instead of training again (the features are always recomputed); pass
--fresh (or delete the folder) after changing the training settings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import networkx as nx
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import topokit  # noqa: E402
from topokit._random import keyed_seed, spawn_generators  # noqa: E402
from topokit.design._autotag import autotag  # noqa: E402
from topokit.design.baselines import dlfdp, erg, ndlf, random_topology  # noqa: E402
from topokit.design.features import FeatureSettings, topology_features  # noqa: E402
from topokit.design.siot import siot  # noqa: E402
from topokit.design.time_predictor import (  # noqa: E402
    DEFAULT_FEATURES,
    TrainingTimePredictor,
    feature_matrix,
)
from topokit.design.validation import validate  # noqa: E402
from topokit.errors import InvalidInputError  # noqa: E402
from topokit.training import load_digits, make_partitioner  # noqa: E402

from _common import machine, out_path, write_json  # noqa: E402

SIZES = (8, 12, 16, 24, 32, 48, 64)
#: (seed, co-location range in metres or None) of the networks of every size.
VARIANTS = ((0, None), (1, None), (2, 100.0))
SKEWNESS = (0.0, 0.4, 0.8)
TARGETS = (0.85, 0.88, 0.90)
TARGET = 0.88
ROUNDS = 200
TRIALS = 3
N_RANDOM_DP, N_RANDOM_SOCIAL = 4, 2

#: Where the shipped predictor lives (bundled into the wheel as topokit/_data).
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "datasets" / "predictor_default.json"

_RANDOM_KEY = 7
_RANDOM_ATTEMPTS = 50


# ---------------------------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------------------------


class NetworkSpec(NamedTuple):
    """One generated network: ``siot(n_devices, seed=seed, colocation_range_m=colocation)``."""

    n_devices: int
    seed: int
    colocation: float | None

    @property
    def name(self) -> str:
        kind = "oor" if self.colocation is None else f"coloc{self.colocation:g}"
        return f"siot{self.n_devices}-s{self.seed}-{kind}"

    def build(self) -> topokit.Network:
        return siot(self.n_devices, seed=self.seed, colocation_range_m=self.colocation,
                    name=self.name)


class Cell(NamedTuple):
    """The runs of one network at one skewness: every topology, every trial."""

    spec: NetworkSpec
    skewness: float
    topologies: dict  # name -> (kind, Topology)


def network_specs(quick: bool) -> list[NetworkSpec]:
    sizes = (8, 16, 32) if quick else SIZES
    variants = VARIANTS[1:] if quick else VARIANTS
    return [NetworkSpec(n, seed, colocation) for n in sizes for seed, colocation in variants]


def _random_valid(net, seed: int, index: int, n_dp: int | None):
    for attempt in range(_RANDOM_ATTEMPTS):
        try:
            return random_topology(net, n_dp=n_dp,
                                   seed=keyed_seed(seed, _RANDOM_KEY, index, attempt))
        except InvalidInputError:
            continue  # this DP set cannot connect every device: draw again
    raise RuntimeError(f"no random valid topology in {_RANDOM_ATTEMPTS} draws")


def build_topologies(spec: NetworkSpec, quick: bool) -> dict:
    """name -> (kind, Topology): AutoTag (eq. 15), the baselines and random valid topologies."""
    net = spec.build()
    design = autotag(net)
    seed = 1000 * spec.n_devices + spec.seed
    topologies = {"autotag": ("autotag", design.topology), "ndlf": ("ndlf", ndlf(net)),
                  "dlfdp": ("dlfdp", dlfdp(net)),
                  "erg": ("erg", erg(net, seed=keyed_seed(seed, 1), reference=design))}
    n_dp, n_social = (2, 1) if quick else (N_RANDOM_DP, N_RANDOM_SOCIAL)
    for k in range(n_dp):
        topologies[f"random-dp-{k}"] = ("random", _random_valid(net, seed, k, None))
    for k in range(n_social):
        topologies[f"random-social-{k}"] = ("random-social", _random_valid(net, seed, 100 + k, 0))
    if not quick:
        topologies.update(_sparse_social(net))
    return topologies


def _sparse_social(net) -> dict:
    """Social graphs thinned without DP: the mixing a design can lose for a shorter L.

    NDLF pruned to its links of at most t seconds (the most and the least pruned that
    stay connected) and the social spanning tree of the fastest links.  Without them the
    corpus's sparse topologies all had DP devices, so slow mixing and DP noise came
    together and the fit could not tell them apart.
    """
    from topokit.design._optimize import _pruned_social

    pruned = list(_pruned_social(net).values())
    chosen = {"pruned-least": pruned[-1], "pruned-most": pruned[0]} if pruned else {}
    graph = nx.Graph()
    graph.add_nodes_from(net.nodes)
    times = net.link_times
    graph.add_weighted_edges_from((u, v, times[net.index[u], net.index[v]])
                                  for u, v in net.social.edges
                                  if np.isfinite(times[net.index[u], net.index[v]]))
    chosen["social-tree"] = topokit.Topology(list(nx.minimum_spanning_edges(graph, data=False)))
    return {name: ("sparse-social", topology) for name, topology in chosen.items()}


def class_counts(net, skewness: float, trial_seed: int, X, y) -> np.ndarray:
    """The class counts of every device in the run seeded ``trial_seed`` (train's own partition).

    Reproduces :func:`topokit.training.train`'s data split with its private
    planning steps (the "partition" generator draws the held-out split, then
    the partition); :func:`check_counts` guards that it still matches.
    """
    from topokit.training._plan import ROLES, partition_rows, split_data

    rng = spawn_generators(trial_seed, ROLES)["partition"]
    data = split_data(X, y, None, net.n_devices, rng)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="skewness .* needs more rows")
        parts = partition_rows(make_partitioner(skewness), data.codes_train, net.nodes, rng)
    return np.array([np.bincount(data.codes_train[p], minlength=data.n_classes) for p in parts])


def check_counts(X, y) -> None:
    """The reproduced partition has the sizes of a real run's (else the corpus would lie)."""
    from topokit.training import train

    net = NetworkSpec(16, 2, 100.0).build()
    run = train(net, ndlf(net), X, y, rounds=1, partition=0.8, seed=123)
    counts = class_counts(net, 0.8, 123, X, y)
    if tuple(counts.sum(axis=1)) != run.partition_sizes:
        raise RuntimeError("the reproduced partition differs from train's: fix class_counts")


def _seed(spec: NetworkSpec) -> int:
    return 1000 * spec.n_devices + spec.seed


def _measured_runs(cell: Cell, net, trials: int, path: Path, fresh: bool) -> pd.DataFrame:
    """validate's runs table of the cell; runs an earlier call wrote to ``path`` are reused.

    A topology is trained only if ``path`` lacks some of its trials: validate seeds
    trial t the same way whatever the other topologies, so runs of topologies added to
    the corpus later sit beside the old ones as if trained together.
    """
    frame = pd.read_parquet(path) if path.exists() and not fresh else None
    done = set() if frame is None else set(zip(frame["topology"], frame["trial"], strict=True))
    missing = {name: topology for name, (_, topology) in cell.topologies.items()
               if not {(name, t) for t in range(trials)} <= done}
    kept = [] if frame is None else [frame[frame["topology"].isin(
        [name for name in cell.topologies if name not in missing])]]
    if missing:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="skewness .* needs more rows")
            kept.append(validate(net, missing, targets=TARGETS, trials=trials,
                                 seed=_seed(cell.spec), rounds=ROUNDS,
                                 partition=cell.skewness, n_jobs=1).frame)
        combined = pd.concat(kept, ignore_index=True)
        combined.to_parquet(path)
        return combined
    return kept[0]


def run_cell(cell: Cell, trials: int, parts: Path, fresh: bool = False) -> pd.DataFrame:
    """Train every topology of the cell ``trials`` times; the runs with their features."""
    X, y = load_digits()
    net = cell.spec.build()
    path = parts / f"{cell.spec.name}_K{cell.skewness:g}.parquet"
    frame = _measured_runs(cell, net, trials, path, fresh).assign(
        kind=lambda f: f["topology"].map({name: kind for name, (kind, _) in
                                          cell.topologies.items()}))
    return _with_features(frame, net, cell, X, y)


def _with_features(frame: pd.DataFrame, net, cell: Cell, X, y) -> pd.DataFrame:
    counts = {seed: class_counts(net, cell.skewness, seed, X, y)
              for seed in frame["seed"].unique()}
    rows = []
    for row in frame.itertuples():
        topology = cell.topologies[row.topology][1]
        features = topology_features(net, topology, class_counts=counts[row.seed])
        rows.append({**features.to_dict(), "topology_json": json.dumps(topology.to_dict()),
                     "class_counts_json": json.dumps(counts[row.seed].tolist())})
    extra = pd.DataFrame(rows, index=frame.index)
    frame = frame.drop(columns=[c for c in extra.columns if c in frame.columns])
    return pd.concat([frame, extra], axis=1).assign(
        skewness=cell.skewness, n_devices=net.n_devices, net_seed=cell.spec.seed,
        colocation=cell.spec.colocation if cell.spec.colocation is not None else np.nan)


def generate_corpus(quick: bool, n_jobs: int, fresh: bool = False) -> pd.DataFrame:
    """Every cell's runs with features, in parallel over networks and cells."""
    from joblib import Parallel, delayed

    specs = network_specs(quick)
    trials = 2 if quick else TRIALS
    parts = out_path("predictor_corpus_quick_parts" if quick else "predictor_corpus_parts")
    parts.mkdir(exist_ok=True)
    built = Parallel(n_jobs=n_jobs)(delayed(build_topologies)(s, quick) for s in specs)
    skews = (0.0, 0.8) if quick else SKEWNESS
    cells = [Cell(spec, k, topologies) for spec, topologies in zip(specs, built, strict=True)
             for k in skews]
    # Largest cells first: the two workers finish together.
    cells.sort(key=lambda c: -c.spec.n_devices)
    frames = Parallel(n_jobs=n_jobs)(delayed(run_cell)(c, trials, parts, fresh) for c in cells)
    return pd.concat(frames, ignore_index=True)


def load_or_generate(quick: bool, n_jobs: int, path: Path, fresh: bool) -> pd.DataFrame:
    """The corpus: measured now, or read back cell by cell from an earlier run."""
    X, y = load_digits()
    check_counts(X, y)
    frame = generate_corpus(quick, n_jobs, fresh)
    frame.to_parquet(path)
    return frame


# ---------------------------------------------------------------------------------------------
# Fitting and judging
# ---------------------------------------------------------------------------------------------


def at_target(corpus: pd.DataFrame, target: float = TARGET) -> pd.DataFrame:
    """The runs at ``target``: rounds and time with ``inf`` where never reached."""
    rows = corpus[np.isclose(corpus["target"], target)].reset_index(drop=True)
    rounds = rows["measured_rounds"].fillna(np.inf).to_numpy(float)
    return rows.assign(rounds=rounds, time=rounds * rows["local_iterate"].to_numpy(float))


def training_rows(corpus: pd.DataFrame) -> int:
    """Training rows of the data split (the size an IID prediction assumes)."""
    counts = np.array(json.loads(corpus["class_counts_json"].iloc[0]))
    return int(counts.sum())


def fit_predictor(runs: pd.DataFrame, settings: FeatureSettings) -> TrainingTimePredictor:
    predictor = TrainingTimePredictor(features=DEFAULT_FEATURES, settings=settings)
    return predictor.fit(feature_matrix(runs, DEFAULT_FEATURES), runs["rounds"].to_numpy())


def _rank_correlation(predicted: np.ndarray, measured: np.ndarray) -> float:
    """Spearman over runs, ``inf`` (never reached) ranked slowest on both sides."""
    from scipy.stats import rankdata, spearmanr

    if np.ptp(rankdata(predicted)) == 0 or np.ptp(rankdata(measured)) == 0:
        return float("nan")
    return float(spearmanr(rankdata(predicted), rankdata(measured)).statistic)


def _by_topology(cell: pd.DataFrame, column: str) -> pd.Series:
    """Median over trials per topology (``inf`` counts: a majority of never is never)."""
    return cell.groupby("topology")[column].agg(lambda v: float(np.median(v.to_numpy())))


def _trial_ceiling(cell: pd.DataFrame) -> float:
    """Spearman of every run with the median of the other trials of its topology.

    How well the runs themselves agree from trial to trial: a measured
    per-topology "prediction" from two other trials (not an upper bound on a
    model, which can average over more).
    """
    others = np.empty(len(cell))
    times = cell["time"].to_numpy()
    groups = cell.groupby("topology").indices
    for rows in groups.values():
        for k, row in enumerate(rows):
            rest = np.delete(times[rows], k)
            others[row] = np.median(rest) if rest.size else times[row]
    return _rank_correlation(others, times)


def score_cell(cell: pd.DataFrame) -> dict:
    """Rank correlations of one (network, skewness): runs and per-topology medians."""
    measured = cell["time"].to_numpy()
    ours, paper = cell["predicted_time"].to_numpy(), cell["pseudo_time"].to_numpy()
    per_topology = pd.DataFrame({column: _by_topology(cell, column)
                                 for column in ("time", "predicted_time", "pseudo_time")})
    never, predicted_never = ~np.isfinite(measured), ~np.isfinite(ours)
    return {
        "network": cell["network"].iloc[0], "skewness": float(cell["skewness"].iloc[0]),
        "n_devices": int(cell["n_devices"].iloc[0]), "runs": len(cell),
        "never": int(never.sum()), "predicted_never": int(predicted_never.sum()),
        "never_correct": int((never == predicted_never).sum()),
        "spearman": _rank_correlation(ours, measured),
        "spearman_paper": _rank_correlation(paper, measured),
        "spearman_topologies": _rank_correlation(per_topology["predicted_time"].to_numpy(),
                                                 per_topology["time"].to_numpy()),
        "spearman_topologies_paper": _rank_correlation(per_topology["pseudo_time"].to_numpy(),
                                                       per_topology["time"].to_numpy()),
        "spearman_trial_ceiling": _trial_ceiling(cell),
    }


def leave_network_out(runs: pd.DataFrame, settings: FeatureSettings) -> tuple[pd.DataFrame,
                                                                                pd.DataFrame]:
    """Fit on every network but one, predict its runs; (scores per cell, predicted runs)."""
    predicted = []
    for network, held_out in runs.groupby("network", sort=False):
        model = fit_predictor(runs[runs["network"] != network], settings)
        rounds = model.predict(feature_matrix(held_out, DEFAULT_FEATURES))
        predicted.append(held_out.assign(
            predicted_rounds=rounds,
            predicted_time=rounds * held_out["local_iterate"].to_numpy(float)))
    predicted = pd.concat(predicted)
    scores = pd.DataFrame([score_cell(cell) for _, cell in
                           predicted.groupby(["network", "skewness"], sort=False)])
    return scores, predicted


def summarise(scores: pd.DataFrame, predicted: pd.DataFrame) -> dict:
    """Median and spread over held-out cells and networks; never-reached accuracy."""
    def spread(values: pd.Series) -> dict:
        values = values.dropna()
        return {"median": float(values.median()), "q25": float(values.quantile(0.25)),
                "q75": float(values.quantile(0.75)), "min": float(values.min()),
                "max": float(values.max()), "cells": int(values.size)}

    per_network = scores.groupby("network")[["spearman", "spearman_paper"]].median()
    never = ~np.isfinite(predicted["time"].to_numpy())
    predicted_never = ~np.isfinite(predicted["predicted_time"].to_numpy())
    topologies = predicted.groupby(["network", "skewness", "topology"]).agg(
        time=("time", lambda v: float(np.median(v.to_numpy()))),
        predicted_time=("predicted_time", "first"))
    topology_never = ~np.isfinite(topologies["time"].to_numpy())
    topology_predicted = ~np.isfinite(topologies["predicted_time"].to_numpy())
    return {
        "spearman": spread(scores["spearman"]),
        "spearman_paper": spread(scores["spearman_paper"]),
        "spearman_topologies": spread(scores["spearman_topologies"]),
        "spearman_topologies_paper": spread(scores["spearman_topologies_paper"]),
        "spearman_trial_ceiling": spread(scores["spearman_trial_ceiling"]),
        "spearman_per_network": spread(per_network["spearman"]),
        "spearman_per_network_paper": spread(per_network["spearman_paper"]),
        "by_skewness": {f"{k:g}": {"spearman": float(g["spearman"].median()),
                                   "spearman_paper": float(g["spearman_paper"].median())}
                        for k, g in scores.groupby("skewness")},
        "never": {"runs": int(len(never)), "measured_never": int(never.sum()),
                  "predicted_never": int(predicted_never.sum()),
                  "both_never": int((never & predicted_never).sum()),
                  "accuracy": float(np.mean(never == predicted_never)),
                  "accuracy_always_reached": float(np.mean(~never)),
                  "topologies": int(len(topologies)),
                  "topologies_never": int(topology_never.sum()),
                  "topologies_predicted_never": int(topology_predicted.sum()),
                  "topologies_both_never": int((topology_never & topology_predicted).sum()),
                  "topologies_accuracy": float(np.mean(topology_never == topology_predicted))},
    }


def provenance(corpus: pd.DataFrame, runs: pd.DataFrame, summary: dict) -> dict:
    """What the default predictor was fitted on, recorded in its JSON."""
    return {
        "script": "analyses/predictor_corpus.py",
        "data": "scikit-learn digits (1797 rows, 10 classes), 25 % stratified held-out split",
        "model": "multinomial logistic regression (topokit.training, model='logreg')",
        "target": TARGET,
        "dp": {"epsilon": 1.0, "delta": 1e-5, "per": "round", "sensitivity": "clipped",
               "max_grad_norm": 1.0, "noise_multiplier": FeatureSettings().noise_multiplier},
        "training": {"rounds": ROUNDS, "lr": 0.2, "lr_decay": 0.99, "batch_size": 64,
                     "local_steps": 1, "checkpoint_every": 1},
        "corpus_runs": int(len(runs)), "corpus_never": int((~np.isfinite(runs["rounds"])).sum()),
        "networks": sorted(runs["network"].unique().tolist()),
        "network_generator": "siotN-sS-oor: topokit.datasets.siot(N, seed=S); "
                             "siotN-sS-coloc100: the same with colocation_range_m=100",
        "skewness": sorted(float(k) for k in runs["skewness"].unique()),
        "topologies": sorted(runs["kind"].unique().tolist()),
        "trials": int(runs["trial"].nunique()),
        "leave_network_out_spearman_median": summary["spearman"]["median"],
        "leave_network_out_spearman_median_paper": summary["spearman_paper"]["median"],
        "never_accuracy": summary["never"]["accuracy"],
        "never_accuracy_always_reached": summary["never"]["accuracy_always_reached"],
        "note": "predicts rounds to 88 % within T = 200 rounds; inf: not reached within T",
    }


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def figure(predicted: pd.DataFrame):
    """Predicted against measured time-to-target, one panel per held-out network."""
    from topokit.plotting._style import new_figure

    networks = list(dict.fromkeys(predicted["network"]))
    ncols = 6
    nrows = -(-len(networks) // ncols)
    fig = new_figure("scatter", nrows=nrows, ncols=ncols)
    fig.set_size_inches(3.0 * ncols, 2.6 * nrows)
    finite = predicted[["time", "predicted_time"]].replace(np.inf, np.nan)
    top = float(np.nanmax(finite.to_numpy())) * 2.0  # where "never" is drawn
    low = float(np.nanmin(finite.to_numpy())) / 1.5
    for k, network in enumerate(networks):
        axis = fig.add_subplot(nrows, ncols, k + 1)
        part = predicted[predicted["network"] == network]
        for skewness, group in part.groupby("skewness"):
            x = np.minimum(group["predicted_time"].to_numpy(), top)
            y = np.minimum(group["time"].to_numpy(), top)
            axis.scatter(x, y, s=8, alpha=0.6, label=f"K = {skewness:g}")
        axis.axhline(top, color="grey", lw=0.5, ls=":")
        axis.axvline(top, color="grey", lw=0.5, ls=":")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlim(low, top * 1.5)
        axis.set_ylim(low, top * 1.5)
        axis.set_title(network, fontsize=8)
        if k == 0:
            axis.legend(fontsize=6, loc="upper left")
    fig.supxlabel("predicted time to 88 % (s; dotted line: never)")
    fig.supylabel("measured time to 88 % (s; dotted line: never)")
    return fig


def print_summary(summary: dict, scores: pd.DataFrame, predictor: TrainingTimePredictor,
                  seconds: float) -> None:
    def line(label: str, s: dict) -> str:
        return (f"  {label:<34} median {s['median']:.3f}  IQR {s['q25']:.3f}-{s['q75']:.3f}  "
                f"range {s['min']:.3f}-{s['max']:.3f}  ({s['cells']} cells)")

    print(f"\nLeave-network-out Spearman, predicted vs measured time to {TARGET:.0%} "
          "(never = slowest), per (network, skewness):")
    for label, key in (("TrainingTimePredictor, runs", "spearman"),
                       ("eq. (15), runs", "spearman_paper"),
                       ("TrainingTimePredictor, topologies", "spearman_topologies"),
                       ("eq. (15), topologies", "spearman_topologies_paper"),
                       ("other trials' median, runs", "spearman_trial_ceiling"),
                       ("TrainingTimePredictor, per network", "spearman_per_network"),
                       ("eq. (15), per network", "spearman_per_network_paper")):
        print(line(label, summary[key]))
    for skewness, values in summary["by_skewness"].items():
        print(f"  K = {skewness}: median {values['spearman']:.3f} (eq. 15: "
              f"{values['spearman_paper']:.3f})")
    never = summary["never"]
    print(f"Never reached: {never['measured_never']} of {never['runs']} runs measured, "
          f"{never['predicted_never']} predicted, {never['both_never']} both; "
          f"classification accuracy {never['accuracy']:.3f} (always 'reached': "
          f"{never['accuracy_always_reached']:.3f})")
    print(f"  by topology (majority of trials): {never['topologies_never']} of "
          f"{never['topologies']} never, {never['topologies_predicted_never']} predicted, "
          f"{never['topologies_both_never']} both; accuracy {never['topologies_accuracy']:.3f}")
    print("Per cell (Spearman ours / eq. 15 / other trials, never measured / predicted):")
    for row in scores.itertuples():
        print(f"  {row.network:<20} K={row.skewness:<4g} {row.spearman:6.3f} "
              f"{row.spearman_paper:6.3f} {row.spearman_trial_ceiling:6.3f}  "
              f"{row.never}/{row.predicted_never}")
    coef = {name: round(float(c), 4) for name, c in
            zip(predictor.features, predictor.rounds_coef_, strict=True)}
    reach = {name: round(float(a), 4) for name, a in
             zip(predictor.features, predictor.reach_coef_, strict=True)}
    print(f"Default predictor: log-rounds coefficients {coef}; reach coefficients {reach}")
    print(f"{seconds:.0f} s in all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="6 networks of 8-32 devices, K = 0 / 0.8, 2 trials (about a minute)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--fresh", action="store_true",
                        help="train again even where a cell's runs table exists")
    args = parser.parse_args()
    start = time.perf_counter()
    name = "predictor_corpus_quick" if args.quick else "predictor_corpus"
    corpus = load_or_generate(args.quick, min(args.n_jobs, 2), out_path(f"{name}.parquet"),
                              args.fresh)
    print(f"corpus: {len(corpus)} rows ({corpus['network'].nunique()} networks) in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    runs = at_target(corpus)
    settings = FeatureSettings(n_samples=training_rows(corpus))
    scores, predicted = leave_network_out(runs, settings)
    summary = summarise(scores, predicted)
    predictor = fit_predictor(runs, settings)
    target = out_path("predictor_quick.json") if args.quick else DEFAULT_PATH
    predictor.save(target, provenance(corpus, runs, summary))
    from topokit.plotting._style import save_figure

    save_figure(figure(predicted), out_path(f"{name}.png"))
    seconds = time.perf_counter() - start
    write_json(f"{name}.json", {"machine": machine(), "seconds": seconds, "summary": summary,
                                "cells": scores.to_dict(orient="records"),
                                "predictor": str(target)})
    print_summary(summary, scores, predictor, seconds)


if __name__ == "__main__":
    main()
