"""Design benchmark (issue 17, part 5): measured time-to-target of ``optimize`` against the rest.

Networks: SIoT networks from ``topokit.datasets.siot`` with seeds the predictor
corpus (``python -m analyses.predictor_corpus``, seeds 0-2) never used -- seeds 100
and 101 with the generator's defaults (dense OOR social graphs), 102 and 103 with
co-location links of 100 m (sparse, long social graphs) -- at 16, 20, 24, 28 and 32
devices (20 networks), and the bundled networks of at most 64 devices (``siot100``
is skipped: exact AutoTag is too slow there).

Methods (``--methods``), designed once per network, the ``optimize`` arms once per
(network, skewness, predictor), for the class counts of trial 0's partition (trials
1-4 train on other partitions of the same skewness, which the design did not see):

- ``optimize``: :func:`topokit.optimize` as a user calls it, with the shipped
  predictor of the model trained (:data:`PREDICTORS`) and its default weights;
  ``optimize-lazy-metropolis`` / ``-metropolis`` / ``-fastest``: the same with
  that ``mixing`` (the arm that is the predictor's default, ``default_mixing``,
  is the same design, searched once; the JSON's ``optimize`` list says which
  weights each design kept);
- ``autotag`` (eq. 15, the paper's design), ``ndlf``, ``dlfdp``, ``erg``
  (AutoTag's link count), ``exponential`` (Ying et al. 2021, seeded ring order,
  DP ends on its non-social links);
- ``ndlf-metropolis``, ``ndlf-fastest``: the social graph with
  Metropolis-Hastings or fastest-mixing weights, simple designs a user could deploy
  without a predictor;
- ``random-best``: the best of 10 seeded random valid topologies by *measured*
  time in each trial: an oracle no user has.

Every topology is trained by ``topokit.validate``: D-PSGD with partial DP (epsilon
= 1, delta = 1e-5 per round, clipped sensitivity), digits, lr 0.2 decaying 0.99, T =
200 rounds, skewness K = 0 / 0.4 / 0.8, 5 trials with common random numbers,
logistic regression and the MLP.  Time-to-target: rounds to 88 % x L (eq. 8); a
run that never reaches it counts as T + 1 rounds (and is counted apart).

The report (:mod:`topokit.validation.compare`), per setting (network, K, model):
the median over trials of the paired ratio time(method) / time(NDLF) with a seeded
bootstrap 95 % interval; win rates of each ``optimize`` arm against every method;
geometric-mean speed-ups over NDLF by skewness; how often each design never
reaches the target; what the weights gain (:data:`MIXING_COMPARISONS`, paired); the
issue's goals for each ``optimize`` arm; the Spearman correlation of the model's
predictor with the measured time over every run of a setting beside eq. (15)'s
(no shipped predictor saw these networks); and the hindsight ceiling, the speed-up
of the best trained topology of each setting chosen on the measured times.

Run (from the repository root): python -m analyses.design_benchmark [--quick]
[--n-jobs 2] [--models logreg,mlp] [--methods optimize,...]
On this 2-core machine: logistic regression about 35 min on network seeds no run
has used, 15 min where the saved runs of the older methods are adopted; the MLP
half (0.6-2.3 s a run) 1.5-2.5 h.  ``--quick`` (toy and two 16-device networks, 2
trials, logreg): about 1 min, 15 s with every run saved.
Writes analyses/out/design_benchmark.{parquet,json,png} (with --quick:
design_benchmark_quick.*).  Each setting's runs are kept in
analyses/out/design_benchmark_parts/NETWORK_KK_MODEL.runs.parquet under run keys
(``analyses/_common.py``; two methods that give the same topology train once): a
later call trains only the topologies whose inputs changed, and an interrupted one
resumes.  The predictions are recomputed from the model's current shipped predictor
every time.  Parts written before run keys (NETWORK_KK_MODEL_<16 hex>.parquet) are
adopted while the training code and the topologies match.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import warnings
import zlib
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

import topokit
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
    reusable_runs,
    run_key,
    training_digest,
    write_json,
)
from topokit._jobs import run_resumable
from topokit._random import keyed_seed
from topokit.design import autotag, default_mixing, optimize
from topokit.design.baselines import dlfdp, erg, exponential_graph, ndlf
from topokit.design.time_predictor import SHIPPED_FOR_MODEL
from topokit.errors import InvalidInputError
from topokit.training import load_digits
from topokit.validation import compare
from topokit.validation.core import trial_seed
from topokit.validation.corpus import (
    CorpusEntry,
    NetworkSpec,
    cell_scores,
    random_valid_topology,
    train_runs,
    trial_predictions,
    weighted_topology,
)

SIZES = (16, 20, 24, 28, 32)
#: (seed, co-location range in metres or None); the predictor corpus used seeds 0-2.
VARIANTS = ((100, None), (101, None), (102, 100.0), (103, 100.0))
MAX_BUNDLED_DEVICES = 64
SKEWNESS = (0.0, 0.4, 0.8)
MODELS = ("logreg", "mlp")
TRIALS = 5
N_RANDOM = 10
TARGETS = (0.85, 0.88)
TARGET = 0.88
ROUNDS = 200
TRAIN = {"rounds": ROUNDS, "lr": 0.2, "lr_decay": 0.99}
METHODS = ("optimize", "autotag", "ndlf", "dlfdp", "erg", "exponential", "random-best")
#: The predictor of each model: what a user training it passes to ``optimize`` (the shipped
#: fit of that model's runs) and what predicts its runs here.
PREDICTORS = SHIPPED_FOR_MODEL
#: optimize arm -> the mixing it is asked for (optimize(mixing=...); None: its default).
OPTIMIZE_ARMS = {"optimize": None, "optimize-lazy-metropolis": "lazy-metropolis",
                 "optimize-metropolis": "metropolis", "optimize-fastest": "fastest"}
#: The other mixing arms (after :data:`METHODS` in the tables).
MIXING_METHODS = ("optimize-lazy-metropolis", "optimize-metropolis", "optimize-fastest",
                  "ndlf-metropolis", "ndlf-fastest")
#: Every method, in the order of the tables; ``--methods`` picks among them.
ALL_METHODS = (*METHODS, *MIXING_METHODS)
#: Paired comparisons of a design with weights against one without: (weighted, plain).
MIXING_COMPARISONS = (("optimize", "optimize-lazy-metropolis"),
                      ("optimize-fastest", "optimize-lazy-metropolis"),
                      ("optimize-metropolis", "optimize-lazy-metropolis"),
                      ("ndlf-metropolis", "ndlf"), ("ndlf-fastest", "ndlf"))
#: The columns that name a setting: its runs are paired by trial.
SETTING = ["network", "skewness", "model"]
BOOTSTRAP_SEED = 20211
#: Goals of issue 17.
GOAL_SPEARMAN, GOAL_SLOWER, GOAL_SPEEDUP = 0.9, 1.02, 1.5
#: Skewness from which data count as skewed (the speed-up goal's).
SKEWED = 0.4

_ERG_KEY, _EXPONENTIAL_KEY, _OPTIMIZE_KEY, _FASTEST_KEY = 1, 2, 3, 4
#: Parts of the benchmark before run keys: one file per setting and set of topologies.
_LEGACY_PART = re.compile(r"_[0-9a-f]{16}\.parquet$")


def parse_methods(text: str) -> tuple[str, ...]:
    """The methods of a comma-separated ``--methods`` value, in :data:`ALL_METHODS` order.

    NDLF must be among them: every ratio is to its time.

    >>> parse_methods("ndlf-fastest, ndlf,optimize")
    ('optimize', 'ndlf', 'ndlf-fastest')
    """
    methods = parse_subset(text, ALL_METHODS, "--methods", "method", "no method given")
    if "ndlf" not in methods:
        raise InvalidInputError("--methods must include ndlf: every ratio is to NDLF's time")
    return methods


# ---------------------------------------------------------------------------------------------
# Networks and designs
# ---------------------------------------------------------------------------------------------


def network_specs(quick: bool, variants=VARIANTS) -> tuple[list[NetworkSpec], list[dict]]:
    """The generated networks and the bundled ones of at most :data:`MAX_BUNDLED_DEVICES`
    devices; and the skipped ones (with why)."""
    if quick:
        variants, sizes, bundled = (variants[0], variants[2]), (16,), ["toy"]
    else:
        sizes, bundled = SIZES, topokit.list_examples()
    specs = [NetworkSpec(n, seed, colocation) for n in sizes for seed, colocation in variants]
    skipped = []
    for name in bundled:
        n = topokit.load_example(name).n_devices
        if n > MAX_BUNDLED_DEVICES:
            skipped.append({"network": name, "n_devices": n, "why": f"more than "
                            f"{MAX_BUNDLED_DEVICES} devices: exact AutoTag too slow"})
        else:
            specs.append(NetworkSpec(n, example=name))
    return specs, skipped


def network_seed(name: str) -> int:
    """The seed of everything random about a network (ERG, rings, random topologies, trials)."""
    return zlib.crc32(name.encode()) % 2**31


def shared_topologies(net: topokit.Network, seed: int, n_random: int,
                      methods: tuple[str, ...] = ALL_METHODS) -> dict[str, CorpusEntry]:
    """name -> CorpusEntry of the selected methods but the optimize arms (the same at every K)."""
    lazy, weights_seed = "lazy-metropolis", keyed_seed(seed, _FASTEST_KEY)
    built = {}
    if "ndlf" in methods:
        built["ndlf"] = CorpusEntry("ndlf", lazy, ndlf(net))
    if "autotag" in methods or "erg" in methods:
        design = autotag(net)  # eq. (15): the paper's AutoTag
        built["autotag"] = CorpusEntry("autotag", lazy, design.topology)
        built["erg"] = CorpusEntry("erg", lazy, erg(net, seed=keyed_seed(seed, _ERG_KEY),
                                                   reference=design))
    if "dlfdp" in methods:
        built["dlfdp"] = CorpusEntry("dlfdp", lazy, dlfdp(net))
    if "exponential" in methods:
        built["exponential"] = CorpusEntry("exponential", lazy, exponential_graph(
            net, seed=keyed_seed(seed, _EXPONENTIAL_KEY)))
    for weighting in ("metropolis", "fastest"):
        if f"ndlf-{weighting}" in methods:
            built[f"ndlf-{weighting}"] = CorpusEntry(f"ndlf-{weighting}", weighting,
                                                     weighted_topology(ndlf(net), net, weighting,
                                                                       weights_seed))
    if "random-best" in methods:
        for k in range(n_random):
            built[f"random-{k}"] = CorpusEntry("random", lazy,
                                               random_valid_topology(net, seed, k, None))
    return {name: entry for name, entry in built.items()
            if name in methods or entry.kind == "random"}


def optimize_arms(net: topokit.Network, counts: np.ndarray, seed: int,
                  methods: tuple[str, ...], predictor: str = "default") -> tuple[dict, dict]:
    """(name -> CorpusEntry, name -> stats) of the selected optimize arms for these class
    counts, judged by ``predictor``.

    The arms are the searched designs, without ``optimize``'s ``ndlf_margin`` (which
    would replace some by NDLF): ``analyses/ndlf_margin.py`` derives what the margin
    gives from these runs, the NDLF arms' and ``stats["ndlf_margin"]["predicted_gain"]``.
    """
    entries, stats, designed = {}, {}, {}
    default = default_mixing(predictor)  # one of the named weightings: searched once
    for arm, mixing in OPTIMIZE_ARMS.items():
        if arm not in methods:
            continue
        mixing = mixing or default
        if mixing not in designed:
            designed[mixing] = optimize(net, predictor=predictor, class_counts=counts,
                                        seed=keyed_seed(seed, _OPTIMIZE_KEY), mixing=mixing,
                                        ndlf_margin=1.0)
        design = designed[mixing]
        kept = (design.stats.get("mixing") or {}).get("weights", "lazy-metropolis")
        entries[arm] = CorpusEntry(arm, kept, design.topology)
        stats[arm] = {**{k: v for k, v in design.stats.items() if k != "seconds"},
                      "seconds": design.stats.get("seconds"), "weights": kept,
                      "predicted_time": design.metrics.pseudo_time,
                      "n_links": design.topology.n_links,
                      "n_dp_devices": len(design.topology.dp_devices)}
    return entries, stats


def build_designs(spec: NetworkSpec, skews, n_random: int,
                  methods: tuple[str, ...] = ALL_METHODS, models: tuple[str, ...] = MODELS
                  ) -> dict:
    """(skewness, model) -> {"topologies": name -> CorpusEntry, "optimize": arm -> stats}.

    The optimize arms are designed for trial 0's class counts by each model's predictor
    (:data:`PREDICTORS`); models of the same predictor share the designs.
    """
    from topokit.training import partition_class_counts

    net, seed = spec.build(), network_seed(spec.name)
    shared = shared_topologies(net, seed, n_random, methods)
    _, y = load_digits()
    designs = {}
    for skewness in skews:
        with warnings.catch_warnings():  # training warns about its own partition
            warnings.filterwarnings("ignore", message="skewness .* needs more rows")
            counts = partition_class_counts(y, net.n_devices, skewness, trial_seed(seed, 0),
                                            nodes=net.nodes)
        by_predictor = {}
        for model in models:
            predictor = PREDICTORS[model]
            if predictor not in by_predictor:
                by_predictor[predictor] = optimize_arms(net, counts, seed, methods, predictor)
            arms, stats = by_predictor[predictor]
            designs[skewness, model] = {"topologies": {**arms, **shared}, "optimize": stats}
    return designs


# ---------------------------------------------------------------------------------------------
# Measuring one setting
# ---------------------------------------------------------------------------------------------


class Setting(NamedTuple):
    """The runs of one network at one skewness with one model: every topology, every trial."""

    spec: NetworkSpec
    skewness: float
    model: str
    topologies: dict  # name -> CorpusEntry

    @property
    def stem(self) -> str:
        return f"{self.spec.name}_K{self.skewness:g}_{self.model}"


def setting_keys(setting: Setting, net: topokit.Network, data: str) -> dict[str, str]:
    """name -> run key of every topology of the setting (:func:`analyses._common.run_key`)."""
    settings = {"skewness": setting.skewness, "model": setting.model, "targets": TARGETS,
                "train": TRAIN, "seed": network_seed(setting.spec.name), "data": data,
                "topokit": topokit.__version__, "training": training_digest()}
    network = network_digest(net)
    return {name: run_key(network, entry, settings)
            for name, entry in setting.topologies.items()}


def saved_runs(setting: Setting, net: topokit.Network, parts: Path, keys: dict[str, str],
               trials: int) -> pd.DataFrame:
    """The setting's saved runs, with those of parts written before run keys (one per set
    of topologies the setting ever had, the newest preferred) adopted."""
    saved = read_runs(parts / f"{setting.stem}.runs.parquet")
    legacy = sorted((path for path in parts.glob(f"{setting.stem}_*.parquet")
                     if _LEGACY_PART.search(path.name)
                     and path.name[:-len("_0123456789abcdef.parquet")] == setting.stem),
                    key=lambda path: path.stat().st_mtime, reverse=True)
    if (not legacy or not reusable_runs(saved, keys, trials)[1]
            or training_digest() != LEGACY_TRAINING):
        return saved
    expected = legacy_metrics(net, setting.topologies, network_seed(setting.spec.name), trials)
    return adopt_from(saved, (read_runs(path) for path in legacy), expected, keys, trials,
                      TARGETS)


def run_setting(setting: Setting, trials: int, parts: Path, data: str
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train the topologies of the setting whose runs are not saved: (every run, annotated;
    one row of what was trained now: ``model``, ``n_runs``, ``wall_clock``)."""
    X, y = load_digits()
    net, seed = setting.spec.build(), network_seed(setting.spec.name)
    keys = setting_keys(setting, net, data)

    def train(missing: list[str], scratch: Path) -> pd.DataFrame:
        return train_runs(net, {name: setting.topologies[name].topology for name in missing},
                          trials, seed, setting.skewness, keys, X=X, y=y, targets=TARGETS,
                          predictor=PREDICTORS[setting.model], output=scratch,
                          model=setting.model, **TRAIN)

    reused, trained = cached_runs(parts / f"{setting.stem}.runs.parquet", keys, trials, train,
                                  saved=saved_runs(setting, net, parts, keys, trials))
    frame = pd.concat([f for f in (reused, trained) if len(f)], ignore_index=True)
    if not (frame.loc[frame["trial"] == 0, "seed"] == trial_seed(seed, 0)).all():
        raise RuntimeError("trial 0's seed differs from the one optimize designed for")
    runs = trained.drop_duplicates([RUN_KEY, "trial"])  # a copy of a run is no run
    fresh = np.arange(len(frame)) >= len(reused)  # the runs trained now come last
    cost = pd.DataFrame({"model": [setting.model], "n_runs": [len(runs)],
                         "wall_clock": [runs["wall_clock"].sum() if len(runs) else np.nan]})
    return _annotated(frame, setting, net, y, fresh), cost


def _annotated(frame: pd.DataFrame, setting: Setting, net: topokit.Network, y,
               fresh: np.ndarray) -> pd.DataFrame:
    """The runs with the method, the weighting, the setting, the model's predictor's
    prediction (recomputed for each trial's class counts) and eq. (15)'s beside it.

    ``fresh`` marks the runs trained now, whose validate predicted with the same
    predictor: the recomputed predictions must equal its (a guard on the replay).
    """
    entries = setting.topologies
    predicted = trial_predictions(frame, net, {n: e.topology for n, e in entries.items()},
                                  predictor=PREDICTORS[setting.model], y=y,
                                  skewness=setting.skewness)
    if not np.allclose(predicted.loc[fresh, "predicted_time"], frame.loc[fresh, "pseudo_time"],
                       rtol=1e-9, equal_nan=True):
        raise RuntimeError("the recomputed predictions differ from validate's")
    eq15 = {name: topokit.evaluate(net, entry.topology) for name, entry in entries.items()}
    return frame.drop(columns=["pseudo_time", "predicted_global_iterate"]).assign(
        **predicted, network=setting.spec.name, source=setting.spec.source,
        n_devices=net.n_devices, skewness=setting.skewness, model=setting.model,
        method=frame["topology"].map(lambda name: entries[name].kind),
        weighting=frame["topology"].map(lambda name: entries[name].weighting),
        pseudo_rounds=frame["topology"].map(lambda name: eq15[name].predicted_global_iterate),
        pseudo_time=frame["topology"].map(lambda name: eq15[name].pseudo_time))


def measure(quick: bool, n_jobs: int, models: tuple[str, ...] = MODELS,
            variants=VARIANTS, methods: tuple[str, ...] = ALL_METHODS
            ) -> tuple[pd.DataFrame, dict]:
    """Every setting's runs, in parallel over settings; (runs, what the designs and runs cost)."""
    from joblib import Parallel, delayed

    specs, skipped = network_specs(quick, variants)
    specs.sort(key=lambda s: -s.n_devices)  # the longest designs first: workers finish together
    models = ("logreg",) if quick else models
    trials, n_random = (2, 4) if quick else (TRIALS, N_RANDOM)
    parts = out_path("design_benchmark_quick_parts" if quick else "design_benchmark_parts")
    parts.mkdir(exist_ok=True)
    started = time.perf_counter()
    designs = Parallel(n_jobs=n_jobs)(delayed(build_designs)(s, SKEWNESS, n_random, methods,
                                                             models) for s in specs)
    design_seconds = time.perf_counter() - started
    settings = [Setting(spec, k, model, built[k, model]["topologies"])
                for spec, built in zip(specs, designs, strict=True) for k in SKEWNESS
                for model in models]
    settings.sort(key=lambda s: (s.model != "mlp", -s.spec.n_devices))  # longest first
    job = run_resumable(settings, partial(run_setting, trials=trials, parts=parts,
                                          data=data_digest(*load_digits())),
                        tables=("runs", "cost"), n_jobs=n_jobs)
    cost = job.tables["cost"]
    per_run = (cost["wall_clock"] / cost["n_runs"]).groupby(cost["model"]).mean().dropna()
    info = {"skipped": skipped, "trials": trials, "n_random": n_random, "models": list(models),
            "methods": list(methods), "skewness": list(SKEWNESS),
            "networks": [{"name": s.name, **s._asdict()} for s in specs],
            "design_seconds": design_seconds,
            "optimize": [{"network": spec.name, "skewness": k, "model": model, "method": arm,
                          "predictor": PREDICTORS[model], **stats}
                         for spec, built in zip(specs, designs, strict=True) for k in SKEWNESS
                         for model in models
                         for arm, stats in built[k, model]["optimize"].items()],
            "runs_trained": int(cost["n_runs"].sum()), "wall_clock": per_run.to_dict()}
    return job.tables["runs"], info


# ---------------------------------------------------------------------------------------------
# Analysis: topokit.validation.compare's statistics of the runs
# ---------------------------------------------------------------------------------------------


def method_times(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, trial, method); random-best is the fastest random run of the trial."""
    columns = [*SETTING, "trial", "method", "time", "censored"]
    named = rows.loc[rows["method"] != "random", columns]
    random = rows[rows["method"] == "random"]
    if random.empty:  # random-best not selected
        return named.reset_index(drop=True)
    best = random.loc[random.groupby([*SETTING, "trial"])["censored"].idxmin(), columns]
    return pd.concat([named, best.assign(method="random-best")], ignore_index=True)


def paired_ratios(times: pd.DataFrame) -> pd.DataFrame:
    """Per setting and method: median over trials of censored time / NDLF's, with CI."""
    return compare.ratios_to_reference(times, "ndlf", by=SETTING, seed=BOOTSTRAP_SEED)


def spearman_cells(rows: pd.DataFrame) -> pd.DataFrame:
    """Per setting: Spearman of predicted vs measured time over every run (never = slowest).

    A topology two methods share (``optimize`` keeping NDLF with its weights, an arm
    whose weights are ``optimize``'s default) has one run key: its runs count once, so
    that the correlation does not depend on how many arms gave the same design.
    """
    return pd.DataFrame([{**cell_scores(cell.drop_duplicates([RUN_KEY, "trial"])),
                          "model": key[2]} for key, cell in rows.groupby(SETTING, sort=False)])


def mixing_gains(times: pd.DataFrame) -> dict:
    """What other weights on the same links gain: per comparison of
    :data:`MIXING_COMPARISONS` whose two methods ran, the paired median ratio per setting
    (bootstrap interval) summarised over settings, and by skewness."""
    ran = set(times["method"])
    pairs = [(top, bottom) for top, bottom in MIXING_COMPARISONS if {top, bottom} <= ran]
    if not pairs:
        return {}
    rows = compare.paired_ratios(times, pairs, by=SETTING, seed=BOOTSTRAP_SEED)
    return {f"{top}/{bottom}": {**compare.ratio_summary(group), "by_skewness": {
                f"{k:g}": compare.ratio_summary(part) for k, part in group.groupby("skewness")}}
            for (top, bottom), group in rows.groupby(["top", "bottom"], sort=False)}


def goals(spearman: pd.DataFrame, ratios: pd.DataFrame, speedup: dict, never: dict,
          method: str = "optimize") -> list:
    """The issue's four goals for ``method`` (an optimize arm): (name, passed, numbers)."""
    mine = ratios[ratios["method"] == method]
    worst = mine.loc[mine["ratio"].idxmax()]
    slower = int((mine["ratio"] > GOAL_SLOWER).sum())
    median_rho = float(spearman["spearman"].median())
    skewed = speedup[f">={SKEWED:g}"].get(method, float("nan"))
    bad = never[method]
    return [
        ("median leave-network-out Spearman >= 0.9", median_rho >= GOAL_SPEARMAN,
         f"{median_rho:.3f} over {spearman['spearman'].notna().sum()} settings "
         f"(eq. 15: {spearman['spearman_paper'].median():.3f})"),
        (f"{method} <= 2 % slower than NDLF (paired median) in every setting", slower == 0,
         f"{slower} of {len(mine)} settings above 1.02; worst {worst['ratio']:.3f} "
         f"({worst['network']}, K={worst['skewness']:g}, {worst['model']}; CI "
         f"{worst['ci_low']:.3f}-{worst['ci_high']:.3f})"),
        ("geometric-mean speed-up over NDLF >= 1.5x at K >= 0.4", skewed >= GOAL_SPEEDUP,
         f"{skewed:.3f}x"),
        (f"no {method} design that never reaches the target", bad["settings_never"] == 0,
         f"{bad['settings_never']} settings never (majority of trials), "
         f"{bad['settings_any_never']} with some trial never; {bad['runs_never']} of "
         f"{bad['runs']} runs"),
    ]


def analyse(runs: pd.DataFrame) -> dict:
    rows = compare.time_to_target(runs, TARGET, horizon=ROUNDS)
    times = method_times(rows)
    ratios = paired_ratios(times)
    speedup = compare.geometric_speedups(ratios, by="skewness", at_least=[SKEWED])
    never = compare.never_reached(times, by=SETTING)
    spearman = spearman_cells(rows)
    arms = [arm for arm in OPTIMIZE_ARMS if arm in set(times["method"])]
    ceiling = {model: compare.hindsight_ceiling(part, "ndlf", by=SETTING, group="skewness",
                                                at_least=[SKEWED])
               for model, part in rows.groupby("model")}
    return {"ratios": ratios, "speedups": speedup, "never": never, "spearman": spearman,
            "ceiling": ceiling,
            "wins": {arm: compare.win_rates(times, arm, by=SETTING) for arm in arms},
            "goals": {arm: goals(spearman, ratios, speedup, never, arm) for arm in arms},
            "mixing": mixing_gains(times)}


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def _shown(ratios: pd.DataFrame) -> list[str]:
    """The methods that ran but NDLF (the reference), in :data:`ALL_METHODS` order."""
    present = set(ratios["method"])
    return [m for m in ALL_METHODS if m != "ndlf" and m in present]


def figure(ratios: pd.DataFrame):
    """Ratio to NDLF per method, one panel per skewness: a box over settings, a point (with
    its bootstrap interval) per setting."""
    from matplotlib.ticker import FormatStrFormatter

    from topokit.plotting._style import new_figure

    skews = sorted(ratios["skewness"].unique())
    methods = _shown(ratios)
    fig = new_figure("scatter", ncols=len(skews))
    fig.set_size_inches(max(5.0, 0.6 * len(methods) + 1.0) * len(skews), 4.4)
    jitter = np.random.default_rng(0)
    for k, skewness in enumerate(skews):
        axis = fig.add_subplot(1, len(skews), k + 1)
        part = ratios[ratios["skewness"] == skewness]
        axis.boxplot([part.loc[part["method"] == m, "ratio"] for m in methods],
                     positions=range(len(methods)), widths=0.6, showfliers=False)
        for offset, (model, group) in enumerate(part.groupby("model")):
            for x, method in enumerate(methods):
                sub = group[group["method"] == method]
                xs = x - 0.15 + 0.3 * offset + jitter.uniform(-0.08, 0.08, len(sub))
                axis.errorbar(xs, sub["ratio"], yerr=[sub["ratio"] - sub["ci_low"],
                                                      sub["ci_high"] - sub["ratio"]],
                              fmt="o", ms=3, lw=0.6, alpha=0.6, color=f"C{offset}",
                              label=model if x == 0 else None)
        axis.axhline(1.0, color="grey", lw=0.8)
        axis.axhline(GOAL_SLOWER, color="grey", lw=0.5, ls=":")
        axis.set_yscale("log")
        axis.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        axis.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
        axis.set_xticks(range(len(methods)), methods, rotation=35, ha="right", fontsize=8)
        axis.set_title(f"skewness K = {skewness:g}")
        if k == 0:
            axis.set_ylabel(f"time to {TARGET:.0%} / NDLF's (median over trials)")
            axis.legend(fontsize=7)
    return fig


def print_ratio_table(ratios: pd.DataFrame) -> None:
    """Per setting: NDLF's time, the first optimize arm's ratio with its interval, the rest."""
    methods = _shown(ratios)
    lead = next((arm for arm in OPTIMIZE_ARMS if arm in methods), None)
    others = [m for m in methods if m != lead]
    wide = ratios.pivot_table(index=SETTING, columns="method", values="ratio", sort=False)
    ndlf_time = ratios[ratios["method"] == "ndlf"].set_index(SETTING)["median_time"]
    widths = [max(9, len(m) + 1) for m in others]
    print(f"\nTime to {TARGET:.0%} / NDLF's, median over paired trials (never reached: T + 1 "
          f"rounds; * = {lead}'s design never reached it in some trial):")
    head = f"{lead + ' [95% CI]':>{max(21, len(lead) + 10)}}" if lead else ""
    print(f"{'network':<22}{'K':>4} {'model':<7}{'NDLF s':>9} {head}"
          + "".join(f"{m:>{w}}" for m, w in zip(others, widths, strict=True)))
    mine = ratios[ratios["method"] == lead].set_index(SETTING) if lead else None
    for key, row in wide.iterrows():
        cell = ""
        if lead:
            own = mine.loc[key]
            flag = "*" if own["never_trials"] else " "
            cell = (f"{row[lead]:>6.3f} [{own['ci_low']:.2f}-{own['ci_high']:.2f}]{flag}"
                    .rjust(max(21, len(lead) + 10)))
        print(f"{key[0]:<22}{key[1]:>4g} {key[2]:<7}{ndlf_time.loc[key]:>9.0f} {cell}"
              + "".join(f"{row[m]:>{w}.3f}" for m, w in zip(others, widths, strict=True)))


def print_mixing(gains: dict) -> None:
    if not gains:
        return
    print("\nOther weights on the same links (paired median ratio per setting; geometric "
          "mean over settings, by skewness; settings with the 95 % interval below / above 1):")
    for comparison, entry in gains.items():
        by_k = ", ".join(f"K={k} {v['geometric_mean_ratio']:.3f}"
                         for k, v in entry["by_skewness"].items())
        print(f"  {comparison:<30} {entry['geometric_mean_ratio']:.3f} ({by_k}); "
              f"{entry['ci_below_1']} / {entry['ci_above_1']} of {entry['settings']}")


def print_summary(result: dict, info: dict, seconds: float) -> None:
    print_ratio_table(result["ratios"])
    if "random-best" in info["methods"]:
        print(f"random-best is an oracle: the fastest by measured time of {info['n_random']} "
              "random valid topologies in each trial.")
    if result["wins"]:
        print("The optimize arms designed for trial 0's class counts.")
    print("\nGeometric-mean speed-up over NDLF (NDLF's time / the method's), by skewness:")
    width = max(13, *(len(m) + 1 for m in ALL_METHODS))
    print(f"{'method':<{width}}" + "".join(f"{k:>9}" for k in result["speedups"]))
    for method in [m for m in ALL_METHODS if m in info["methods"]]:
        print(f"{method:<{width}}" + "".join(f"{v.get(method, np.nan):>9.3f}"
                                            for v in result["speedups"].values()))
    print_mixing(result["mixing"])
    for model, ceiling in result["ceiling"].items():
        print(f"Hindsight ceiling ({model}): the best trained topology of each setting by its "
              "measured median, geometric-mean speed-up over NDLF: "
              + ", ".join(f"K {k} {v:.3f}x" for k, v in ceiling.items()))
    for arm, wins in result["wins"].items():
        print(f"\n{arm} against each method (settings won / tied / lost on the paired median; "
              "share of paired trials won):")
        for other, w in wins.items():
            print(f"  vs {other:<20} {w['wins']:>3} / {w['ties']:>3} / {w['losses']:>3}  "
                  f"win rate {w['win_rate']:.2f}  trials {w['trial_win_rate']:.2f}")
    print(f"\nNever reaching {TARGET:.0%} (settings: majority of trials / any trial; runs):")
    for method, n in result["never"].items():
        print(f"  {method:<20} {n['settings_never']:>3} / {n['settings_any_never']:>3} of "
              f"{n['settings']} settings; {n['runs_never']} of {n['runs']} runs")
    spearman = result["spearman"]
    print("\nLeave-network-out Spearman, predicted vs measured time over every run of a setting "
          "(never = slowest; no shipped predictor saw these networks):")
    for model, group in spearman.groupby("model"):
        print(f"  {model:<7} predictor {PREDICTORS[model]!r} median "
              f"{group['spearman'].median():.3f} "
              f"(IQR {group['spearman'].quantile(.25):.3f}-{group['spearman'].quantile(.75):.3f})"
              f", eq. (15) {group['spearman_paper'].median():.3f}; per topology (median over "
              f"trials) {group['spearman_topologies'].median():.3f} / "
              f"{group['spearman_topologies_paper'].median():.3f}; {len(group)} settings")
    if info["skipped"]:
        print("Skipped: " + "; ".join(f"{s['network']} ({s['n_devices']} devices, {s['why']})"
                                      for s in info["skipped"]))
    for arm, arm_goals in result["goals"].items():
        print(f"\nGoals of issue 17 for {arm}:")
        for name, passed, numbers in arm_goals:
            print(f"  {'PASS' if passed else 'FAIL'}  {name}: {numbers}")
    clock = ", ".join(f"{m} {s:.2f}" for m, s in info["wall_clock"].items()) or "none trained"
    print(f"\n{seconds:.0f} s in all ({info['design_seconds']:.0f} s designing; "
          f"{info['runs_trained']} runs trained now); training seconds per run: {clock}")


def payload(result: dict, info: dict, seconds: float) -> dict:
    def records(frame: pd.DataFrame) -> list[dict]:
        return json.loads(frame.to_json(orient="records"))

    return {"machine": machine(), "seconds": seconds, "target": TARGET, "rounds": ROUNDS,
            "train": TRAIN, "targets": list(TARGETS), "censoring": "never reached = T + 1 rounds",
            "random_best": f"oracle: the fastest of {info['n_random']} random valid topologies "
                           "in each trial, by measured time",
            "design_counts": "the optimize arms design for trial 0's class counts",
            **info, "speedups": result["speedups"], "wins": result["wins"],
            "never": result["never"], "mixing": result["mixing"],
            "hindsight_ceiling": result["ceiling"],
            "goals": {arm: [{"goal": g, "passed": bool(p), "numbers": n}
                            for g, p, n in arm_goals]
                      for arm, arm_goals in result["goals"].items()},
            "spearman_median": float(result["spearman"]["spearman"].median()),
            "spearman_median_paper": float(result["spearman"]["spearman_paper"].median()),
            "spearman": records(result["spearman"]), "ratios": records(result["ratios"])}


def parse_options(argv=None) -> argparse.Namespace:
    """The command line; bad values end with one line and exit status 2."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 small networks, 2 trials, logreg, 4 random topologies")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated subset of logreg,mlp (default: both); the "
                             "parts of each model are kept, so a later run adds the other")
    parser.add_argument("--methods", default=",".join(ALL_METHODS),
                        help="comma-separated methods to measure, ndlf among them (default: "
                             f"all, {','.join(ALL_METHODS)}); runs of the others stay saved")
    parser.add_argument("--network-seeds", default="100,101,102,103",
                        help="four siot seeds: two with the generator's defaults, two with "
                             "co-location links of 100 m (default 100,101,102,103; the "
                             "predictor corpus used 0-2)")
    parser.add_argument("--name", default="design_benchmark",
                        help="stem of the output files in analyses/out/")
    args = parser.parse_args(argv)
    try:
        seeds = [int(s) for s in args.network_seeds.split(",")]
    except ValueError:
        seeds = []
    if len(seeds) != 4 or min(seeds) < 3:
        parser.error("--network-seeds takes four integers >= 3 (0-2 made the predictor corpus)")
    args.variants = ((seeds[0], None), (seeds[1], None), (seeds[2], 100.0), (seeds[3], 100.0))
    args.models = tuple(m.strip() for m in args.models.split(","))
    if not args.models or set(args.models) - set(MODELS):
        parser.error(f"--models must be a comma-separated subset of {','.join(MODELS)}")
    try:
        args.methods = parse_methods(args.methods)
    except InvalidInputError as error:
        parser.error(str(error))
    return args


def main() -> None:
    args = parse_options()
    start = time.perf_counter()
    runs, info = measure(args.quick, max(1, args.n_jobs), args.models, args.variants,
                         args.methods)
    name = f"{args.name}_quick" if args.quick else args.name
    runs.to_parquet(out_path(f"{name}.parquet"))
    result = analyse(runs)
    from topokit.plotting._style import save_figure

    save_figure(figure(result["ratios"]), out_path(f"{name}.png"))
    seconds = time.perf_counter() - start
    write_json(f"{name}.json", payload(result, info, seconds))
    print_summary(result, info, seconds)


if __name__ == "__main__":
    main()
