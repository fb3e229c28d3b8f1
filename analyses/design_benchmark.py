"""Design benchmark (issue 17, part 5): measured time-to-target of ``optimize`` against the rest.

The networks: SIoT networks from ``topokit.datasets.siot`` at 16-32 devices
with seeds the predictor corpus (``analyses/predictor_corpus.py``, seeds 0-2)
never used: seeds 100 and 101 with the generator's defaults (dense OOR social
graphs) and seeds 102 and 103 with co-location links of 100 m (sparse, long
social graphs), at 16, 20, 24, 28 and 32 devices (20 networks); plus the
bundled networks of at most 64 devices (``siot16`` and ``siot32`` from the real
Santander file, and ``toy``); ``siot100`` (100 devices) is skipped, exact
AutoTag being too slow there for a benchmark.

The methods (``--methods``, default all of them), designed once per network
(per (network, skewness, predictor) for the ``optimize`` arms, which design for
the data and the model):

- ``optimize``: :func:`topokit.optimize` as a user calls it (the shipped
  predictor of the model trained, :data:`PREDICTORS`: ``"default"`` for
  logistic regression, ``"mlp"`` for the MLP; its default weights for that
  predictor on the searched design and on NDLF, the faster of the two as
  predicted), given
  the class counts of trial 0's
  partition at that skewness (validate cannot take one topology per trial;
  trials 1-4 train on other partitions of the same skewness, which the design
  did not see);
- ``optimize-lazy-metropolis``, ``optimize-metropolis``, ``optimize-fastest``:
  the same with ``mixing="lazy-metropolis"`` (the paper's weights, the
  search's own design) / ``"metropolis"`` (Metropolis-Hastings weights when
  its predictor says they are no slower) / ``"fastest"``; the one that is
  ``optimize``'s default for the predictor (fastest-mixing weights for
  logistic regression's, the paper's for the MLP's: ``default_mixing``) is
  the same design, searched once; the JSON's ``optimize`` list says which
  weights each design kept and whether it is NDLF's links;
- ``autotag``: :func:`topokit.autotag` with eq. (15), the paper's design;
- ``ndlf``, ``dlfdp``, ``erg`` (AutoTag's link count, seeded),
  ``exponential`` (:func:`topokit.design.baselines.exponential_graph`, Ying
  et al. 2021, seeded ring order, DP ends on its non-social links);
- ``ndlf-metropolis``, ``ndlf-fastest``: the social graph with
  Metropolis-Hastings weights, or with Boyd, Diaconis and Xiao's
  fastest-mixing weights (:func:`topokit.fastest_mixing_topology`, which may
  drop links): strong simple designs a user could deploy without a predictor;
- ``random-best``: the best of 10 random valid topologies
  (:func:`~topokit.design.baselines.random_topology`, seeded), "best" being
  the one with the lowest *measured* time in each trial: an oracle no user
  has, the upper end of what picking among random topologies can give.

Every topology is trained by ``topokit.validate``: D-PSGD with partial DP
(epsilon = 1, delta = 1e-5 per round, clipped sensitivity), digits, lr 0.2
decaying 0.99, T = 200 rounds, skewness K = 0 / 0.4 / 0.8, 5 trials with
common random numbers (trial t has the same seed for every topology of a
network), logistic regression and the MLP.  Time-to-target is rounds to
88 % averaged accuracy x L (eq. 8).

The report, per setting (network, K, model): the median over trials of the
paired ratio time(method) / time(NDLF) with a bootstrap 95 % interval over
trials (seeded); a run that never reaches the target within T is counted
as T + 1 rounds (censored: its ratio is a lower bound when the method never
reaches it, an upper bound when NDLF never does) and is also counted apart.
Then win rates of each ``optimize`` arm against every method, geometric-mean
speed-ups over NDLF by skewness, how often each method's design never reaches
the target, what the weights gain (``optimize`` / ``optimize-lazy-metropolis``,
``optimize-fastest`` and ``optimize-metropolis`` / ``optimize-lazy-metropolis``, ``ndlf-fastest`` /
``ndlf``, paired), the issue's goals for each ``optimize`` arm, and the
Spearman correlation of the model's predictor's predicted time with the
measured one over every run of a setting (never reached ranked slowest),
beside eq. (15)'s, and the hindsight ceiling (:func:`hindsight_ceiling`: the
speed-up of the best trained topology of each setting, chosen on the measured
times, which bounds what choosing among them can give).  Each shipped
predictor was fitted on its corpus's networks only (``analyses/
predictor_corpus.py [--model mlp]``, seeds 0-2), none of which is benchmarked
here, so its plain predictions are leave-network-out already.

Run: python analyses/design_benchmark.py [--quick] [--n-jobs 2]
[--models logreg,mlp] [--methods optimize,...]
Time on this 2-core machine, logistic regression (``--models logreg``): the
7 old methods took 24 min (README); with the 3 new arms (19 topologies per
setting, three ``optimize`` searches per network and skewness) about 35 min
on network seeds no run has used, and about 15 min on seeds 100-103 or
200-203, whose saved parts of the old methods are adopted (checked on
siot16-s200-oor at K = 0.4: all 16 old topologies adopted, the 3 new arms to
train), a refitted predictor retraining only the ``optimize`` arms.  The MLP
half: measured 0.6 s a run at 16 devices and 2.3 s at 32 (logistic
regression 0.1-0.35 s), so about 1.5-2.5 h for its ~6,300 runs.
``--quick`` (toy and two 16-device networks, 2 trials, logreg): about 1 min
with the old methods' runs read back from its parts, 15 s with every run
saved.
Writes analyses/out/design_benchmark.{parquet,json,png} (with --quick:
design_benchmark_quick.*).  Each setting's runs are kept in
analyses/out/design_benchmark_parts/NETWORK_KK_MODEL.runs.parquet, each run
with a key (column ``run_key``) digesting everything it depends on: the
network, the topology with its DP devices and weights, its weighting, the
skewness, the model, the trial seeds, the targets, the training settings, the
data, topokit's version and what its training code does
(:func:`predictor_corpus.training_digest`) (not the method: two methods that
give the same topology, such as ``optimize`` keeping NDLF with its weights, train
once and share the runs).  A later call reuses a topology's runs only under
the key its inputs give now and trains the rest: an interrupted run resumes, a
design that changed (say ``optimize``'s after the predictor is refitted) is
trained again while the others are reused, and runs of methods not selected
now stay saved.  The predictions are not part of a run: they are recomputed
from the model's current shipped predictor (for each trial's class counts) every time.
Parts written before run keys (NETWORK_KK_MODEL_<16 hex>.parquet) are read
too: while the training code gives the results it gave them
(``predictor_corpus.LEGACY_TRAINING``), a topology's runs there are adopted
when every trial's seed, targets and its links, DP devices, phi, H, spectral
gap, L and (where recorded) exposure counts match the topology built now.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The corpus script's partition replay, random topologies, weightings and run keys,
# imported rather than copied.
from predictor_corpus import (  # noqa: E402
    LEGACY_COLUMNS,
    LEGACY_OPTIONAL,
    LEGACY_TRAINING,
    Entry,
    _random_valid,
    check_counts,
    class_counts,
    data_digest,
    legacy_metrics,
    run_key,
    score_cell,
    train_runs,
    training_digest,
    trial_seed,
    weighted,
)

import topokit  # noqa: E402
from topokit._random import keyed_seed  # noqa: E402
from topokit.design import default_mixing  # noqa: E402
from topokit.design._autotag import autotag  # noqa: E402
from topokit.design.baselines import dlfdp, erg, exponential_graph, ndlf  # noqa: E402
from topokit.design.siot import siot  # noqa: E402
from topokit.design.time_predictor import SHIPPED_FOR_MODEL, load_predictor  # noqa: E402
from topokit.design.validation import _partition_counts, curves_path, timings_path  # noqa: E402
from topokit.errors import InvalidInputError  # noqa: E402
from topokit.training import load_digits  # noqa: E402

from _common import (  # noqa: E402
    RUN_KEY,
    adopt_legacy,
    digest,
    machine,
    merge_runs,
    network_digest,
    out_path,
    read_runs,
    reusable_runs,
    write_json,
    write_runs,
)

try:
    from topokit.design._optimize import optimize
except ImportError:  # pragma: no cover - once optimize is exported only there
    from topokit import optimize

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
BOOTSTRAP = 2000
BOOTSTRAP_SEED = 20211
#: Goals of issue 17.
GOAL_SPEARMAN, GOAL_SLOWER, GOAL_SPEEDUP = 0.9, 1.02, 1.5

_ERG_KEY, _EXPONENTIAL_KEY, _OPTIMIZE_KEY, _FASTEST_KEY = 1, 2, 3, 4
#: Parts of the benchmark before run keys: one file per setting and set of topologies.
_LEGACY_PART = re.compile(r"_[0-9a-f]{16}\.parquet$")


def parse_methods(text: str) -> tuple[str, ...]:
    """The methods of a comma-separated ``--methods`` value, in :data:`ALL_METHODS` order.

    NDLF must be among them: every ratio is to its time.

    >>> parse_methods("ndlf-fastest, ndlf,optimize")
    ('optimize', 'ndlf', 'ndlf-fastest')
    """
    names = [name.strip() for name in str(text).split(",") if name.strip()]
    unknown = [name for name in names if name not in ALL_METHODS]
    if unknown or not names:
        got = f"unknown method {unknown[0]!r}" if unknown else "no method given"
        raise InvalidInputError(f"--methods: {got}; give a comma-separated subset of "
                                f"{','.join(ALL_METHODS)}")
    if "ndlf" not in names:
        raise InvalidInputError("--methods must include ndlf: every ratio is to NDLF's time")
    return tuple(name for name in ALL_METHODS if name in names)


# ---------------------------------------------------------------------------------------------
# Networks and designs
# ---------------------------------------------------------------------------------------------


class Spec(NamedTuple):
    """A benchmarked network: ``siot(n, seed=seed, colocation_range_m=...)`` or a bundled one."""

    name: str
    n_devices: int
    seed: int | None = None
    colocation: float | None = None
    example: str | None = None

    def build(self) -> topokit.Network:
        if self.example is not None:
            return topokit.load_example(self.example)
        return siot(self.n_devices, seed=self.seed, colocation_range_m=self.colocation,
                    name=self.name)

    @property
    def source(self) -> str:
        return "bundled" if self.example is not None else "generated"


def generated_specs(sizes=SIZES, variants=VARIANTS) -> list[Spec]:
    specs = []
    for n in sizes:
        for seed, colocation in variants:
            kind = "oor" if colocation is None else f"coloc{colocation:g}"
            specs.append(Spec(f"siot{n}-s{seed}-{kind}", n, seed, colocation))
    return specs


def bundled_specs(limit: int = MAX_BUNDLED_DEVICES) -> tuple[list[Spec], list[dict]]:
    """The bundled networks of at most ``limit`` devices, and the skipped ones (with why)."""
    kept, skipped = [], []
    for name in topokit.list_examples():
        n = topokit.load_example(name).n_devices
        if n > limit:
            skipped.append({"network": name, "n_devices": n,
                            "why": f"more than {limit} devices: exact AutoTag too slow"})
        else:
            kept.append(Spec(name, n, example=name))
    return kept, skipped


def network_specs(quick: bool, variants=VARIANTS) -> tuple[list[Spec], list[dict]]:
    if quick:
        return [Spec("toy", 6, example="toy"),
                *generated_specs((16,), (variants[0], variants[2]))], []
    bundled, skipped = bundled_specs()
    return generated_specs(variants=variants) + bundled, skipped


def network_seed(name: str) -> int:
    """The seed of everything random about a network (ERG, rings, random topologies, trials)."""
    return zlib.crc32(name.encode()) % 2**31


def shared_topologies(net: topokit.Network, seed: int, n_random: int,
                      methods: tuple[str, ...] = ALL_METHODS) -> dict:
    """name -> Entry of the selected methods but the optimize arms (the same at every K)."""
    lazy = "lazy-metropolis"
    topologies = {}
    if "ndlf" in methods:
        topologies["ndlf"] = Entry("ndlf", lazy, ndlf(net))
    if "autotag" in methods or "erg" in methods:
        design = autotag(net)  # eq. (15): the paper's AutoTag
        if "autotag" in methods:
            topologies["autotag"] = Entry("autotag", lazy, design.topology)
        if "erg" in methods:
            topologies["erg"] = Entry("erg", lazy, erg(net, seed=keyed_seed(seed, _ERG_KEY),
                                                       reference=design))
    if "dlfdp" in methods:
        topologies["dlfdp"] = Entry("dlfdp", lazy, dlfdp(net))
    if "exponential" in methods:
        topologies["exponential"] = Entry("exponential", lazy, exponential_graph(
            net, seed=keyed_seed(seed, _EXPONENTIAL_KEY)))
    if "ndlf-metropolis" in methods:
        topologies["ndlf-metropolis"] = Entry("ndlf-metropolis", "metropolis", weighted(
            ndlf(net), net, "metropolis", keyed_seed(seed, _FASTEST_KEY)))
    if "ndlf-fastest" in methods:
        topologies["ndlf-fastest"] = Entry("ndlf-fastest", "fastest", weighted(
            ndlf(net), net, "fastest", keyed_seed(seed, _FASTEST_KEY)))
    if "random-best" in methods:
        for k in range(n_random):
            topologies[f"random-{k}"] = Entry("random", lazy, _random_valid(net, seed, k, None))
    return topologies


def optimize_arms(net: topokit.Network, counts: np.ndarray, seed: int,
                  methods: tuple[str, ...], predictor: str = "default") -> tuple[dict, dict]:
    """(name -> Entry, name -> stats) of the selected optimize arms for these class counts,
    judged by ``predictor``.

    The arms are the searched designs, without ``optimize``'s ``ndlf_margin`` (which
    would replace some by NDLF): ``analyses/ndlf_margin.py`` derives what the margin
    gives from these runs, the NDLF arms' and ``stats["ndlf_margin"]["predicted_gain"]``.
    """
    entries, stats, designed = {}, {}, {}
    # optimize's default is one of the named weightings: the same call, searched once
    default = default_mixing(predictor)
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
        entries[arm] = Entry(arm, kept, design.topology)
        stats[arm] = {**{k: v for k, v in design.stats.items() if k != "seconds"},
                      "seconds": design.stats.get("seconds"), "weights": kept,
                      "predicted_time": design.metrics.pseudo_time,
                      "n_links": design.topology.n_links,
                      "n_dp_devices": len(design.topology.dp_devices)}
    return entries, stats


def build_designs(spec: Spec, skews, n_random: int,
                  methods: tuple[str, ...] = ALL_METHODS, models: tuple[str, ...] = MODELS
                  ) -> dict:
    """(skewness, model) -> {"topologies": name -> Entry, "optimize": arm -> its stats}.

    The optimize arms are designed for each model by its predictor (:data:`PREDICTORS`);
    models of the same predictor share the designs.
    """
    X, y = load_digits()
    net, seed = spec.build(), network_seed(spec.name)
    shared = shared_topologies(net, seed, n_random, methods)
    designs = {}
    for skewness in skews:
        counts = class_counts(net, skewness, trial_seed(seed, 0), X, y)
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

    spec: Spec
    skewness: float
    model: str
    topologies: dict  # name -> Entry

    @property
    def stem(self) -> str:
        return f"{self.spec.name}_K{self.skewness:g}_{self.model}"


def setting_keys(setting: Setting, net: topokit.Network, data: str) -> dict[str, str]:
    """name -> run key of every topology of the setting (:func:`predictor_corpus.run_key`)."""
    settings = {"skewness": setting.skewness, "model": setting.model, "targets": TARGETS,
                "train": TRAIN, "seed": network_seed(setting.spec.name), "data": data,
                "topokit": topokit.__version__, "training": training_digest()}
    network = network_digest(net)
    return {name: run_key(network, entry, settings)
            for name, entry in setting.topologies.items()}


def _legacy_expected(setting: Setting, net: topokit.Network, trials: int) -> pd.DataFrame:
    """Seeds and structural metrics every trial of each topology must show to be adopted."""
    return legacy_metrics(net, setting.topologies, network_seed(setting.spec.name), trials)


def saved_runs(setting: Setting, net: topokit.Network, parts: Path, keys: dict[str, str],
               trials: int) -> pd.DataFrame:
    """The setting's saved runs, with those of parts written before run keys adopted.

    Legacy parts (one per set of topologies the setting ever had) are read newest
    first; a topology's runs are taken from the first that vouches for them.
    """
    saved = read_runs(parts / f"{setting.stem}.runs.parquet")
    legacy = sorted((path for path in parts.glob(f"{setting.stem}_*.parquet")
                     if _LEGACY_PART.search(path.name)
                     and path.name[:-len("_0123456789abcdef.parquet")] == setting.stem),
                    key=lambda path: path.stat().st_mtime, reverse=True)
    if (not legacy or not reusable_runs(saved, keys, trials)[1]
            or training_digest() != LEGACY_TRAINING):
        return saved
    expected = _legacy_expected(setting, net, trials)
    for path in legacy:
        open_names = reusable_runs(saved, keys, trials)[1]
        if not open_names:
            break
        adopted = adopt_legacy(read_runs(path), expected[expected["topology"].isin(open_names)],
                               keys, TARGETS, LEGACY_COLUMNS, LEGACY_OPTIONAL)
        adopted = adopted[adopted[RUN_KEY].notna()]
        if len(adopted):
            saved = pd.concat([saved[~saved["topology"].isin(adopted["topology"])], adopted],
                              ignore_index=True)
    return saved


def _train_missing(setting: Setting, net: topokit.Network, missing: list[str],
                   keys: dict[str, str], saved: pd.DataFrame, trials: int, parts: Path
                   ) -> pd.DataFrame:
    """Train the topologies ``missing``, save them beside the setting's runs; their runs."""
    X, y = load_digits()
    # validate's own resumable pieces (an interrupted setting resumes), named for this job
    job = digest(sorted(keys[name] for name in missing))[:16]
    scratch = parts / f"{setting.stem}.training-{job}.parquet"
    trained = train_runs(net, {name: setting.topologies[name].topology for name in missing},
                         trials, network_seed(setting.spec.name), setting.skewness, keys,
                         X=X, y=y, targets=TARGETS, predictor=PREDICTORS[setting.model],
                         output=scratch,
                         model=setting.model, **TRAIN)
    write_runs(parts / f"{setting.stem}.runs.parquet", merge_runs(saved, trained, keys))
    for path in (scratch, curves_path(scratch), timings_path(scratch)):
        path.unlink(missing_ok=True)
    return trained.assign(**{RUN_KEY: trained["topology"].map(keys)})


def run_setting(setting: Setting, trials: int, parts: Path, data: str) -> dict:
    """Train the topologies of the setting whose runs are not saved; every run, annotated."""
    net = setting.spec.build()
    keys = setting_keys(setting, net, data)
    saved = saved_runs(setting, net, parts, keys, trials)
    reused, missing = reusable_runs(saved, keys, trials)
    trained = (_train_missing(setting, net, missing, keys, saved, trials, parts) if missing
               else reused.iloc[:0])
    frame = pd.concat([f for f in (reused, trained) if len(f)], ignore_index=True)
    first = frame.loc[frame["trial"] == 0, "seed"]
    if not (first == trial_seed(network_seed(setting.spec.name), 0)).all():
        raise RuntimeError("trial 0's seed differs from the one optimize designed for")
    runs = trained.drop_duplicates([RUN_KEY, "trial"])  # a copy of a run is no run
    fresh = np.arange(len(frame)) >= len(reused)  # the runs trained now come last
    return {"runs": _annotated(frame, setting, net, load_digits()[1], fresh),
            "n_runs": int(len(runs)),
            "wall_clock": float(runs["wall_clock"].sum()) if len(runs) else None}


def _eq15(net: topokit.Network, topologies: dict) -> dict[str, tuple[float, float]]:
    """name -> (G', pseudo time) of eq. (15), which does not depend on the data."""
    metrics = {name: topokit.evaluate(net, entry.topology) for name, entry in topologies.items()}
    return {name: (m.predicted_global_iterate, m.pseudo_time) for name, m in metrics.items()}


def _predicted(frame: pd.DataFrame, setting: Setting, net: topokit.Network, y
               ) -> pd.DataFrame:
    """The model's predictor's rounds and time for every run, for its trial's class counts
    (as validate predicts them), whatever predictor the saved runs were trained beside."""
    predictor = load_predictor(PREDICTORS[setting.model])
    trial_nets = {seed: net.with_class_counts(_partition_counts(net, y, int(seed),
                                                                partition=setting.skewness))
                  for seed in frame["seed"].unique()}
    values = {}
    for name, seed in set(zip(frame["topology"], frame["seed"], strict=True)):
        metrics = topokit.evaluate(trial_nets[seed], setting.topologies[name].topology,
                                   predictor)
        values[name, seed] = (metrics.predicted_global_iterate, metrics.pseudo_time)
    pairs = list(zip(frame["topology"], frame["seed"], strict=True))
    return pd.DataFrame({"predicted_rounds": [values[p][0] for p in pairs],
                         "predicted_time": [values[p][1] for p in pairs]}, index=frame.index)


def _annotated(frame: pd.DataFrame, setting: Setting, net: topokit.Network, y,
               fresh: np.ndarray) -> pd.DataFrame:
    """The runs with the method, the weighting, the setting, the model's predictor's
    prediction (recomputed) and eq. (15)'s beside it.

    ``fresh`` marks the runs trained now, whose validate predicted with the same
    predictor: the recomputed predictions must equal its (a guard on the replay).
    """
    eq15 = _eq15(net, setting.topologies)
    predicted = _predicted(frame, setting, net, y)
    if not np.allclose(predicted.loc[fresh, "predicted_time"], frame.loc[fresh, "pseudo_time"],
                       rtol=1e-9, equal_nan=True):
        raise RuntimeError("the recomputed predictions differ from validate's: fix _predicted")
    entries = setting.topologies
    return frame.drop(columns=["pseudo_time", "predicted_global_iterate"]).assign(
        **predicted, network=setting.spec.name, source=setting.spec.source,
        n_devices=net.n_devices, skewness=setting.skewness, model=setting.model,
        method=frame["topology"].map(lambda name: entries[name].kind),
        weighting=frame["topology"].map(lambda name: entries[name].weighting),
        pseudo_rounds=frame["topology"].map(lambda name: eq15[name][0]),
        pseudo_time=frame["topology"].map(lambda name: eq15[name][1]))


def measure(quick: bool, n_jobs: int, models: tuple[str, ...] = MODELS,
            variants=VARIANTS, methods: tuple[str, ...] = ALL_METHODS
            ) -> tuple[pd.DataFrame, dict]:
    """Every setting's runs, in parallel over settings; (runs, what the designs and runs cost)."""
    from joblib import Parallel, delayed

    specs, skipped = network_specs(quick, variants)
    specs.sort(key=lambda s: -s.n_devices)  # the longest designs first: workers finish together
    skews, models = SKEWNESS, (("logreg",) if quick else models)
    trials, n_random = (2, 4) if quick else (TRIALS, N_RANDOM)
    parts = out_path("design_benchmark_quick_parts" if quick else "design_benchmark_parts")
    parts.mkdir(exist_ok=True)
    started = time.perf_counter()
    designs = Parallel(n_jobs=n_jobs)(delayed(build_designs)(s, skews, n_random, methods,
                                                             models) for s in specs)
    design_seconds = time.perf_counter() - started
    settings = [Setting(spec, k, model, built[k, model]["topologies"])
                for spec, built in zip(specs, designs, strict=True) for k in skews
                for model in models]
    settings.sort(key=lambda s: (s.model != "mlp", -s.spec.n_devices))  # longest first
    data = data_digest(*load_digits())
    measured = Parallel(n_jobs=n_jobs)(delayed(run_setting)(s, trials, parts, data)
                                       for s in settings)
    runs = pd.concat([m["runs"] for m in measured], ignore_index=True)
    info = {"skipped": skipped, "trials": trials, "n_random": n_random, "models": list(models),
            "methods": list(methods), "skewness": list(skews),
            "networks": [s._asdict() for s in specs], "design_seconds": design_seconds,
            "optimize": [{"network": spec.name, "skewness": k, "model": model, "method": arm,
                          "predictor": PREDICTORS[model], **stats}
                         for spec, built in zip(specs, designs, strict=True) for k in skews
                         for model in models
                         for arm, stats in built[k, model]["optimize"].items()],
            "runs_trained": int(sum(m["n_runs"] for m in measured)),
            "wall_clock": _wall_clock(settings, measured)}
    return runs, info


def _wall_clock(settings: list[Setting], measured: list[dict]) -> dict:
    """Training seconds per run by model (from validate's timings; settings trained now)."""
    per_model: dict[str, list[float]] = {}
    for setting, result in zip(settings, measured, strict=True):
        if result["wall_clock"] is not None:
            per_model.setdefault(setting.model, []).append(result["wall_clock"] / result["n_runs"])
    return {model: float(np.mean(values)) for model, values in per_model.items()}


# ---------------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------------

SETTING = ["network", "skewness", "model"]


def at_target(runs: pd.DataFrame, target: float = TARGET) -> pd.DataFrame:
    """The runs at ``target``: ``time`` (inf when never reached) and ``censored`` (T + 1 rounds)."""
    rows = runs[np.isclose(runs["target"], target)].reset_index(drop=True)
    rounds = rows["measured_rounds"].fillna(np.inf).to_numpy(float)
    L = rows["local_iterate"].to_numpy(float)
    return rows.assign(time=rounds * L, censored=np.minimum(rounds, ROUNDS + 1) * L)


def method_times(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, trial, method); random-best is the fastest random run of the trial."""
    columns = [*SETTING, "trial", "method", "time", "censored"]
    named = rows.loc[rows["method"] != "random", columns]
    random = rows[rows["method"] == "random"]
    if random.empty:  # random-best not selected
        return named.reset_index(drop=True)
    best = random.loc[random.groupby([*SETTING, "trial"])["censored"].idxmin(), columns]
    return pd.concat([named, best.assign(method="random-best")], ignore_index=True)


def bootstrap_median(values: np.ndarray, rng: np.random.Generator,
                     n: int = BOOTSTRAP) -> tuple[float, float]:
    """95 % percentile interval of the median of ``values`` (resampled with replacement)."""
    draws = rng.integers(0, values.size, size=(n, values.size))
    medians = np.median(values[draws], axis=1)
    return float(np.quantile(medians, 0.025)), float(np.quantile(medians, 0.975))


def paired_median_ratios(wide: pd.DataFrame, keys: list[str], comparisons, seed_label
                         ) -> list[dict]:
    """Per setting and comparison: the median over trials of column top / column bottom.

    ``wide`` has one row per (setting, trial), the setting being the index levels
    ``keys``, and one column per method; ``comparisons`` lists (top, bottom).  The
    bootstrap 95 % interval of each median is seeded by the setting and
    ``seed_label(top, bottom)``.  Rows: the keys, ``top``, ``bottom``, ``ratio``,
    ``ci_low``, ``ci_high``.
    """
    rows = []
    for key, group in wide.groupby(level=keys, sort=False):
        for top, bottom in comparisons:
            ratio = (group[top] / group[bottom]).to_numpy(float)
            label = repr((key, seed_label(top, bottom))).encode()
            low, high = bootstrap_median(ratio, np.random.default_rng(
                keyed_seed(BOOTSTRAP_SEED, zlib.crc32(label))))
            rows.append({**dict(zip(keys, key, strict=True)), "top": top, "bottom": bottom,
                         "ratio": float(np.median(ratio)), "ci_low": low, "ci_high": high})
    return rows


def ratio_summary(ratios: pd.DataFrame) -> dict[str, Any]:
    """Over settings: the geometric mean of the median ratios, and how many settings have
    their 95 % interval below / above 1."""
    return {"geometric_mean_ratio": float(np.exp(np.log(ratios["ratio"]).mean())),
            "settings": int(len(ratios)),
            "ci_below_1": int((ratios["ci_high"] < 1).sum()),
            "ci_above_1": int((ratios["ci_low"] > 1).sum())}


def paired_ratios(times: pd.DataFrame, reference: str = "ndlf") -> pd.DataFrame:
    """Per setting and method: median over trials of censored time / the reference's, with CI."""
    wide = times.pivot_table(index=[*SETTING, "trial"], columns="method", values="censored")
    never = times.assign(never=~np.isfinite(times["time"])).pivot_table(
        index=[*SETTING, "trial"], columns="method", values="never", aggfunc="max")
    rows = []
    for key, group in wide.groupby(level=SETTING, sort=False):
        rng = np.random.default_rng(keyed_seed(BOOTSTRAP_SEED, zlib.crc32(repr(key).encode())))
        for method in group.columns:
            ratio = (group[method] / group[reference]).to_numpy(float)
            low, high = bootstrap_median(ratio, rng)
            rows.append({**dict(zip(SETTING, key, strict=True)), "method": method,
                         "median_time": float(np.median(group[method])),
                         "ratio": float(np.median(ratio)), "ci_low": low, "ci_high": high,
                         "never_trials": int(never.loc[key, method].sum()),
                         "trials": int(ratio.size)})
    return pd.DataFrame(rows)


def win_rates(times: pd.DataFrame, method: str = "optimize") -> dict:
    """``method`` against every other: settings won / tied / lost on the paired median ratio."""
    wide = times.pivot_table(index=[*SETTING, "trial"], columns="method", values="censored")
    result = {}
    for other in wide.columns.drop(method):
        per_trial = wide[method] / wide[other]
        medians = per_trial.groupby(level=SETTING).median()
        result[other] = {"settings": int(medians.size), "wins": int((medians < 1).sum()),
                         "ties": int((medians == 1).sum()), "losses": int((medians > 1).sum()),
                         "win_rate": float((medians < 1).mean()),
                         "trial_win_rate": float((per_trial < 1).mean())}
    return result


def geometric_speedups(ratios: pd.DataFrame) -> dict:
    """Geometric mean over settings of NDLF's time / the method's, by skewness and for K >= 0.4."""
    def speedup(frame: pd.DataFrame) -> dict:
        return {m: float(np.exp(-np.log(g["ratio"]).mean())) for m, g in frame.groupby("method")}

    result = {f"{k:g}": speedup(g) for k, g in ratios.groupby("skewness")}
    result[">=0.4"] = speedup(ratios[ratios["skewness"] >= 0.4])
    result["all"] = speedup(ratios)
    return result


def hindsight_ceiling(rows: pd.DataFrame, reference: str = "ndlf") -> dict:
    """The geometric-mean speed-up over NDLF of the best trained topology of each setting,
    chosen with hindsight, by skewness and for K >= 0.4 (as :func:`geometric_speedups`).

    Every topology trained in a setting (each random one, each design, each weighting)
    has its median over trials of the paired ratio of censored times to NDLF's; the
    setting's ceiling is the smallest.  No design method has this choice (it is made on
    the measured times, and the smallest of many noisy medians is biased low), so it
    bounds from above what choosing among these topologies can give: a speed-up goal
    above it is out of their reach.
    """
    wide = rows.pivot_table(index=[*SETTING, "trial"], columns="topology", values="censored")
    medians = wide.div(wide[reference], axis=0).groupby(level=SETTING).median()
    best = medians.min(axis=1).rename("ratio").reset_index().assign(method="hindsight")
    return {key: speedups["hindsight"] for key, speedups in geometric_speedups(best).items()}


def never_counts(rows: pd.DataFrame, ratios: pd.DataFrame) -> dict:
    """Per method: settings whose design never reaches the target in most trials, and runs."""
    runs = method_times(rows)
    result = {}
    for method, group in ratios.groupby("method"):
        mine = runs[runs["method"] == method]
        majority = 2 * group["never_trials"] > group["trials"]
        result[method] = {"settings_never": int(majority.sum()),
                          "settings_any_never": int((group["never_trials"] > 0).sum()),
                          "settings": int(len(group)),
                          "runs_never": int((~np.isfinite(mine["time"])).sum()),
                          "runs": int(len(mine))}
    return result


def spearman_cells(rows: pd.DataFrame) -> pd.DataFrame:
    """Per setting: Spearman of predicted vs measured time over every run (never = slowest).

    A topology two methods share (``optimize`` keeping NDLF with its weights, an arm
    whose weights are ``optimize``'s default) has one run key: its runs count once, so
    that the correlation does not depend on how many arms gave the same design.
    """
    scores = []
    for key, cell in rows.groupby(SETTING, sort=False):
        score = score_cell(cell.drop_duplicates([RUN_KEY, "trial"]))
        scores.append({**score, "model": key[2]})
    return pd.DataFrame(scores)


def mixing_gains(times: pd.DataFrame) -> dict:
    """What other weights on the same links gain: per comparison of
    :data:`MIXING_COMPARISONS` whose two methods ran, the paired median ratio of
    censored times per setting (bootstrap interval) and its summary over settings."""
    wide = times.pivot_table(index=[*SETTING, "trial"], columns="method", values="censored")
    present = [(top, bottom) for top, bottom in MIXING_COMPARISONS
               if top in wide.columns and bottom in wide.columns]
    if not present:
        return {}
    rows = pd.DataFrame(paired_median_ratios(wide, SETTING, present,
                                             seed_label=lambda top, bottom: f"{top}/{bottom}"))
    return {f"{top}/{bottom}": {**ratio_summary(group), "by_skewness": {
                f"{k:g}": ratio_summary(part) for k, part in group.groupby("skewness")}}
            for (top, bottom), group in rows.groupby(["top", "bottom"], sort=False)}


def goals(spearman: pd.DataFrame, ratios: pd.DataFrame, speedups: dict, never: dict,
          method: str = "optimize") -> list:
    """The issue's four goals for ``method`` (an optimize arm): (name, passed, numbers)."""
    mine = ratios[ratios["method"] == method]
    worst = mine.loc[mine["ratio"].idxmax()]
    slower = int((mine["ratio"] > GOAL_SLOWER).sum())
    median_rho = float(spearman["spearman"].median())
    speedup = speedups[">=0.4"].get(method, float("nan"))
    bad = never[method]
    return [
        ("median leave-network-out Spearman >= 0.9", median_rho >= GOAL_SPEARMAN,
         f"{median_rho:.3f} over {spearman['spearman'].notna().sum()} settings "
         f"(eq. 15: {spearman['spearman_paper'].median():.3f})"),
        (f"{method} <= 2 % slower than NDLF (paired median) in every setting", slower == 0,
         f"{slower} of {len(mine)} settings above 1.02; worst {worst['ratio']:.3f} "
         f"({worst['network']}, K={worst['skewness']:g}, {worst['model']}; CI "
         f"{worst['ci_low']:.3f}-{worst['ci_high']:.3f})"),
        ("geometric-mean speed-up over NDLF >= 1.5x at K >= 0.4", speedup >= GOAL_SPEEDUP,
         f"{speedup:.3f}x"),
        (f"no {method} design that never reaches the target", bad["settings_never"] == 0,
         f"{bad['settings_never']} settings never (majority of trials), "
         f"{bad['settings_any_never']} with some trial never; {bad['runs_never']} of "
         f"{bad['runs']} runs"),
    ]


def analyse(runs: pd.DataFrame) -> dict:
    rows = at_target(runs)
    times = method_times(rows)
    ratios = paired_ratios(times)
    speedups = geometric_speedups(ratios)
    never = never_counts(rows, ratios)
    spearman = spearman_cells(rows)
    arms = [arm for arm in OPTIMIZE_ARMS if arm in set(times["method"])]
    ceiling = {model: hindsight_ceiling(part) for model, part in rows.groupby("model")}
    return {"ratios": ratios, "speedups": speedups, "never": never, "spearman": spearman,
            "ceiling": ceiling,
            "wins": {arm: win_rates(times, arm) for arm in arms},
            "goals": {arm: goals(spearman, ratios, speedups, never, arm) for arm in arms},
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
    X, y = load_digits()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="skewness .* needs more rows")
        check_counts(X, y)  # the partition replay still matches train's
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
