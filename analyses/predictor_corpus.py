"""Measure a corpus of training runs, fit topokit's default training-time predictor, and judge it.

The corpus: SIoT networks from ``topokit.datasets.siot`` at 8-64 devices (for
every size two networks of the generator's defaults, whose OOR social graphs are
dense, and one with co-location links of 100 m: sparse, long social graphs, where
topology matters most), skewness K = 0 / 0.4 / 0.8, and on each network AutoTag's
design (eq. 15), NDLF, DLFDP, DeepPrivacy-ERG, random valid topologies (two without
DP devices, the rest with a random DP set) and social graphs thinned without DP.
Every run is ``topokit.validate``: D-PSGD with partial DP (epsilon = 1, delta =
1e-5 per round, clipped sensitivity), logistic regression on scikit-learn's digits,
lr 0.2 decaying 0.99, T = 200 rounds, the same trial seeds for every topology of a
network.  Each run's rounds to 85 / 88 / 90 % averaged accuracy are recorded next
to the features of :func:`topokit.design.features.topology_features` for its own
partition.

Mixing weights (``--mixing``, default all three): every topology is trained with
the paper's Lazy-Metropolis weights (``lazy-metropolis``), again with
Metropolis-Hastings weights on the same links (``metropolis``) and, on networks of
at most ``FASTEST_MAX_DEVICES`` = 48 devices (where the SDP is exact), with Boyd,
Diaconis and Xiao's fastest-mixing weights (``fastest``, which drops links the
optimum leaves unused): 2,205 Lazy-Metropolis runs, as many Metropolis-Hastings
ones and 1,890 fastest-mixing ones, 6,300 in all.  A weighted run's features come
from its mixing matrix; column ``weighting`` says which weights a run had and
``base_topology`` the topology it weights (weighted runs are named
``BASE/metropolis`` and ``BASE/fastest``).

The predictor: a :class:`topokit.design.time_predictor.TrainingTimePredictor`
fitted on every run at 88 %, every weighting, saved to
``datasets/predictor_default.json`` with its provenance.  ``--model mlp``: the
same corpus trained with topokit's MLP on the networks of ``MLP_SIZES`` = 8-32
devices (an MLP run takes 0.6-2.3 s), saved to ``datasets/predictor_mlp.json``
(``load_predictor("mlp")``); its outputs are named ``predictor_corpus_mlp.*``.

The judgement, leave-network-out: for every network the predictor is fitted on
the other networks' runs and predicts this one's; per (network, skewness) -- the
topologies a user would choose between -- the Spearman correlation of predicted
and measured time-to-target, never-reached runs ranked slowest, for the predictor
and for eq. (15); how often "never reaches the target" is predicted right; and for
weighted runs their time over the Lazy-Metropolis run of the same topology and
trial, measured and predicted (does the fit know what the weights gain?).

The steps -- topologies, runs, features, fit and judgement -- are
:mod:`topokit.validation.corpus`'s; this script sets the networks and settings,
keeps the runs and reports.

Run (from the repository root): python -m analyses.predictor_corpus [--quick]
[--n-jobs 2] [--mixing lazy-metropolis,metropolis,fastest] [--model mlp]
On this 2-core machine about 30-45 min when the Lazy-Metropolis runs saved in
predictor_corpus_parts are adopted, 45-65 min with --fresh, then a few minutes of
fits.  ``--quick`` (6 networks of 8-32 devices, K = 0 / 0.8, 2 trials, 504 runs):
about a minute from scratch, 20-40 s with every run saved.
Writes analyses/out/predictor_corpus.parquet (the corpus),
analyses/out/predictor_corpus.{json,png}, and datasets/predictor_default.json
(with --quick: analyses/out/predictor_corpus_quick.predictor.json instead).  The
runs of each (network, skewness) are kept in analyses/out/predictor_corpus_parts/
under run keys (``analyses/_common.py``): a later call trains only the topologies
whose inputs changed (an interrupted run resumes); the features are always
recomputed.  Files written before run keys are adopted while the training code and
the topologies match.  --fresh trains every run asked for again.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from analyses._common import (
    LEGACY_TRAINING,
    RUN_KEY,
    adopt_from,
    cached_runs,
    data_digest,
    legacy_metrics,
    machine,
    network_digest,
    out_path,
    parse_subset,
    read_runs,
    run_key,
    training_digest,
    write_json,
)
from topokit._jobs import run_resumable
from topokit.design.features import FeatureSettings
from topokit.errors import InvalidInputError
from topokit.training import load_digits
from topokit.validation.corpus import (
    FASTEST_MAX_DEVICES,
    MIXINGS,
    CorpusEntry,
    CorpusJudgement,
    NetworkSpec,
    corpus_rows,
    corpus_topologies,
    fit_corpus_predictor,
    judge_corpus,
    train_runs,
)

SIZES = (8, 12, 16, 24, 32, 48, 64)
#: The models a corpus can be trained with (topokit.training's ``model=``).
MODELS = ("logreg", "mlp")
#: Sizes of the MLP's corpus: its runs take 0.6 s at 16 devices and 2.3 s at 32 (logistic
#: regression 0.1-0.35 s), so 48 and 64 devices would add about two hours on 2 cores.
MLP_SIZES = (8, 12, 16, 24, 32)
#: (seed, co-location range in metres or None) of the networks of every size.
VARIANTS = ((0, None), (1, None), (2, 100.0))
SKEWNESS = (0.0, 0.4, 0.8)
TARGETS = (0.85, 0.88, 0.90)
TARGET = 0.88
ROUNDS = 200
TRIALS = 3
N_RANDOM_DP, N_RANDOM_SOCIAL = 4, 2

#: Where the shipped predictors live (bundled into the wheel as topokit/_data): the default
#: (logistic regression) and the MLP's (``load_predictor("mlp")``).
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "datasets" / "predictor_default.json"
PREDICTOR_PATHS = {"logreg": DEFAULT_PATH, "mlp": DEFAULT_PATH.with_name("predictor_mlp.json")}
#: What each model is, for the predictor's provenance.
MODEL_NAMES = {"logreg": "multinomial logistic regression (topokit.training, model='logreg')",
               "mlp": "one-hidden-layer MLP (topokit.training, model='mlp')"}


class Cell(NamedTuple):
    """The runs of one network at one skewness with one model: every topology, every trial."""

    spec: NetworkSpec
    skewness: float
    topologies: dict  # name -> CorpusEntry
    model: str = "logreg"


def network_specs(quick: bool, sizes: tuple[int, ...] = SIZES) -> list[NetworkSpec]:
    sizes = (8, 16, 32) if quick else sizes
    variants = VARIANTS[1:] if quick else VARIANTS
    return [NetworkSpec(n, seed, colocation) for n in sizes for seed, colocation in variants]


def parse_mixing(text: str) -> tuple[str, ...]:
    """The weightings of a comma-separated ``--mixing`` value, in :data:`MIXINGS` order.

    >>> parse_mixing("fastest, lazy-metropolis")
    ('lazy-metropolis', 'fastest')
    """
    return parse_subset(text, MIXINGS, "--mixing", "weighting", "nothing")


def parse_sizes(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    """The network sizes of a comma-separated ``--sizes`` value (``default`` when None).

    >>> parse_sizes("16, 8", SIZES), parse_sizes(None, MLP_SIZES)
    ((8, 16), (8, 12, 16, 24, 32))
    """
    if text is None:
        return default
    try:
        sizes = sorted({int(part) for part in str(text).split(",") if part.strip()})
    except ValueError:
        sizes = []
    if not sizes or sizes[0] < 4:
        raise InvalidInputError(f"--sizes: give comma-separated device counts of at least 4; "
                                f"got {text!r}")
    return tuple(sizes)


def corpus_seed(spec: NetworkSpec) -> int:
    """The seed of everything random about a network's topologies and trials."""
    return 1000 * spec.n_devices + spec.seed


def build_topologies(spec: NetworkSpec, quick: bool,
                     mixings: tuple[str, ...] = MIXINGS) -> dict[str, CorpusEntry]:
    """name -> CorpusEntry of the network (fewer random ones and no thinned social graphs
    with ``quick``)."""
    return corpus_topologies(spec.build(), corpus_seed(spec),
                             n_random_dp=2 if quick else N_RANDOM_DP,
                             n_random_social=1 if quick else N_RANDOM_SOCIAL,
                             sparse_social=not quick, mixings=mixings)


def _cell_keys(cell: Cell, net, data: str) -> dict[str, str]:
    settings = {"skewness": cell.skewness, "seed": corpus_seed(cell.spec), "targets": TARGETS,
                "rounds": ROUNDS, "data": data, "training": training_digest()}
    if cell.model != "logreg":  # logistic regression's keys predate the option: kept as they were
        settings["model"] = cell.model
    network = network_digest(net)
    return {name: run_key(network, entry, settings) for name, entry in cell.topologies.items()}


def _saved(cell: Cell, net, trials: int, path: Path, keys: dict[str, str]) -> pd.DataFrame:
    """The cell's saved runs, those of a file written before run keys (all Lazy-Metropolis)
    adopted while today's training code is the one that made them."""
    saved = read_runs(path)
    if saved[RUN_KEY].isna().any() and training_digest() == LEGACY_TRAINING:
        plain = {name: entry for name, entry in cell.topologies.items()
                 if entry.weighting == "lazy-metropolis"}
        expected = legacy_metrics(net, plain, corpus_seed(cell.spec), trials)
        saved = adopt_from(saved, [saved], expected, keys, trials, TARGETS)
    return saved


def run_cell(cell: Cell, trials: int, parts: Path, fresh: bool = False) -> tuple[pd.DataFrame]:
    """Train the cell's topologies whose runs are not saved; every run, with its features.

    Saved runs of topologies not asked for now (another ``--mixing``) stay in the file.
    """
    X, y = load_digits()
    net = cell.spec.build()
    path = parts / f"{cell.spec.name}_K{cell.skewness:g}.parquet"
    keys = _cell_keys(cell, net, data_digest(X, y))

    def train(missing: list[str], scratch: Path) -> pd.DataFrame:
        return train_runs(net, {name: cell.topologies[name].topology for name in missing},
                          trials, corpus_seed(cell.spec), cell.skewness, keys, targets=TARGETS,
                          rounds=ROUNDS, model=cell.model, output=scratch)

    reused, trained = cached_runs(path, keys, trials, train, fresh=fresh,
                                  saved=_saved(cell, net, trials, path, keys))
    frame = pd.concat([f for f in (reused, trained) if len(f)], ignore_index=True)
    colocation = cell.spec.colocation if cell.spec.colocation is not None else np.nan
    return (corpus_rows(frame, net, cell.topologies, cell.skewness, y).assign(
        net_seed=cell.spec.seed, colocation=colocation),)


def corpus_name(quick: bool, model: str = "logreg") -> str:
    """The stem of the corpus's outputs: ``predictor_corpus[_mlp][_quick]``.

    >>> corpus_name(False), corpus_name(True, "mlp")
    ('predictor_corpus', 'predictor_corpus_mlp_quick')
    """
    return "predictor_corpus" + ("" if model == "logreg" else f"_{model}") + (
        "_quick" if quick else "")


def generate_corpus(quick: bool, n_jobs: int, fresh: bool = False,
                    mixings: tuple[str, ...] = MIXINGS, model: str = "logreg",
                    sizes: tuple[int, ...] = SIZES) -> pd.DataFrame:
    """Every cell's runs with features, in parallel over networks and cells."""
    from joblib import Parallel, delayed

    specs = network_specs(quick, sizes)
    trials = 2 if quick else TRIALS
    parts = out_path(f"{corpus_name(quick, model)}_parts")
    parts.mkdir(exist_ok=True)
    built = Parallel(n_jobs=n_jobs)(delayed(build_topologies)(s, quick, mixings) for s in specs)
    skews = (0.0, 0.8) if quick else SKEWNESS
    cells = [Cell(spec, k, topologies, model)
             for spec, topologies in zip(specs, built, strict=True) for k in skews]
    cells.sort(key=lambda c: -c.spec.n_devices)  # largest first: the workers finish together
    job = run_resumable(cells, partial(run_cell, trials=trials, parts=parts, fresh=fresh),
                        n_jobs=n_jobs)
    return job.tables["part"].assign(model=model)


def provenance(corpus: pd.DataFrame, runs: pd.DataFrame, summary: dict,
               model: str = "logreg") -> dict:
    """What a shipped predictor was fitted on, recorded in its JSON."""
    return {
        "script": "python -m analyses.predictor_corpus" + ("" if model == "logreg"
                                                            else f" --model {model}"),
        "data": "scikit-learn digits (1797 rows, 10 classes), 25 % stratified held-out split",
        "model": MODEL_NAMES[model],
        # what optimize reads to choose its default mixing weights for this predictor
        "trained_model": model,
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
        "mixing": {str(w): int(n) for w, n in runs["weighting"].value_counts().items()},
        "mixing_note": "each topology trained with Lazy-Metropolis weights, again with "
                       "Metropolis-Hastings weights and, up to "
                       f"{FASTEST_MAX_DEVICES} devices, fastest-mixing weights; features "
                       "from each run's own mixing matrix",
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


def print_summary(judgement: CorpusJudgement, predictor, seconds: float) -> None:
    summary, scores = judgement.summary, judgement.cells

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
    for weighting, values in summary.get("by_weighting", {}).items():
        print(f"  {weighting:<16} runs only: median Spearman {values['spearman']:.3f} over "
              f"{values['cells']} cells ({values['runs']} runs)")
    for weighting, gain in summary.get("weighting_gains", {}).items():
        print(f"  {weighting} / lazy-metropolis, same topology and trial ({gain['pairs']} "
              f"pairs): measured {gain['measured_geometric_mean']:.3f}x (faster in "
              f"{gain['measured_faster']:.0%}), predicted {gain['predicted_geometric_mean']:.3f}x"
              f" (faster in {gain['predicted_faster']:.0%}); same side of 1 in "
              f"{gain['agree']:.0%}, Spearman {gain['spearman']:.3f}")
    coef = {name: round(float(c), 4) for name, c in
            zip(predictor.features, predictor.rounds_coef_, strict=True)}
    reach = {name: round(float(a), 4) for name, a in
             zip(predictor.features, predictor.reach_coef_, strict=True)}
    print(f"Fitted predictor: log-rounds coefficients {coef}; reach coefficients {reach}")
    print(f"{seconds:.0f} s in all")


def parse_options(argv=None) -> argparse.Namespace:
    """The command line; bad values end with one line and exit status 2."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="6 networks of 8-32 devices, K = 0 / 0.8, 2 trials")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--fresh", action="store_true",
                        help="train every run asked for again, even where its runs are saved")
    parser.add_argument("--mixing", default=",".join(MIXINGS),
                        help="comma-separated weightings each topology is trained with "
                             f"(default {','.join(MIXINGS)}; fastest up to "
                             f"{FASTEST_MAX_DEVICES} devices); runs of the others stay saved")
    parser.add_argument("--model", default="logreg", choices=MODELS,
                        help="the model every run trains: logreg fits the default predictor "
                             "(datasets/predictor_default.json), mlp the MLP's "
                             "(datasets/predictor_mlp.json)")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated network sizes (default "
                             f"{','.join(map(str, SIZES))}; with --model mlp "
                             f"{','.join(map(str, MLP_SIZES))})")
    args = parser.parse_args(argv)
    try:
        args.mixing = parse_mixing(args.mixing)
        args.sizes = parse_sizes(args.sizes, MLP_SIZES if args.model == "mlp" else SIZES)
    except InvalidInputError as error:
        parser.error(str(error))
    return args


def main() -> None:
    args = parse_options()
    start = time.perf_counter()
    name = corpus_name(args.quick, args.model)
    corpus = generate_corpus(args.quick, min(max(1, args.n_jobs), 2), args.fresh, args.mixing,
                             args.model, args.sizes)
    corpus.to_parquet(out_path(f"{name}.parquet"))
    print(f"corpus: {len(corpus)} rows ({corpus['network'].nunique()} networks) in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    judgement = judge_corpus(corpus, target=TARGET, horizon=ROUNDS)
    predictor = fit_corpus_predictor(corpus, target=TARGET)
    target = out_path(f"{name}.predictor.json") if args.quick else PREDICTOR_PATHS[args.model]
    predictor.save(target, provenance(corpus, judgement.runs, judgement.summary, args.model))
    from topokit.plotting._style import save_figure

    save_figure(figure(judgement.predicted), out_path(f"{name}.png"))
    seconds = time.perf_counter() - start
    write_json(f"{name}.json", {"machine": machine(), "seconds": seconds,
                                "summary": judgement.summary,
                                "cells": judgement.cells.to_dict(orient="records"),
                                "predictor": str(target), "model": args.model})
    print_summary(judgement, predictor, seconds)


if __name__ == "__main__":
    main()
