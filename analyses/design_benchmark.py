"""Design benchmark (issue 17, part 5): measured time-to-target of ``optimize`` against the rest.

The networks: SIoT networks from ``topokit.datasets.siot`` at 16-32 devices
with seeds the predictor corpus (``analyses/predictor_corpus.py``, seeds 0-2)
never used: seeds 100 and 101 with the generator's defaults (dense OOR social
graphs) and seeds 102 and 103 with co-location links of 100 m (sparse, long
social graphs), at 16, 20, 24, 28 and 32 devices (20 networks); plus the
bundled networks of at most 64 devices (``siot16`` and ``siot32`` from the real
Santander file, and ``toy``); ``siot100`` (100 devices) is skipped, exact
AutoTag being too slow there for a benchmark.

The methods, designed once per network (per (network, skewness) for
``optimize``, which designs for the data):

- ``optimize``: :func:`topokit.optimize` with the default predictor, given
  the class counts of trial 0's partition at that skewness (validate cannot
  take one topology per trial; trials 1-4 train on other partitions of the
  same skewness, which the design did not see);
- ``autotag``: :func:`topokit.autotag` with eq. (15), the paper's design;
- ``ndlf``, ``dlfdp``, ``erg`` (AutoTag's link count, seeded),
  ``exponential`` (:func:`topokit.design.baselines.exponential_graph`, Ying
  et al. 2021, seeded ring order, DP ends on its non-social links);
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
Then win rates of ``optimize`` against every method, geometric-mean speed-ups
over NDLF by skewness, how often each method's design never reaches the
target, and the Spearman correlation of the default predictor's predicted
time with the measured one over every run of a setting (never reached ranked
slowest), beside eq. (15)'s.  The default predictor was fitted on the
corpus's networks only, none of which is benchmarked here, so its plain
predictions are leave-network-out already (it was fitted on logistic
regression runs; its MLP predictions are the same numbers).

Run: python analyses/design_benchmark.py [--quick] [--n-jobs 2]
Writes analyses/out/design_benchmark.{parquet,json,png} (with --quick:
design_benchmark_quick.*).  Each setting's runs are kept in
analyses/out/design_benchmark_parts/, under a name holding a fingerprint of
the network, its topologies, the predictor and the training settings: an
interrupted run resumes there, and a setting whose inputs changed is
trained again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import warnings
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The corpus script's partition replay and random topologies, imported rather than copied.
from predictor_corpus import _random_valid, check_counts, class_counts, score_cell  # noqa: E402

import topokit  # noqa: E402
from topokit._random import keyed_seed  # noqa: E402
from topokit.design._autotag import autotag  # noqa: E402
from topokit.design.baselines import dlfdp, erg, exponential_graph, ndlf  # noqa: E402
from topokit.design.siot import siot  # noqa: E402
from topokit.design.time_predictor import load_predictor  # noqa: E402
from topokit.design.validation import _TRIAL, timings_path, validate  # noqa: E402
from topokit.training import load_digits  # noqa: E402

from _common import machine, out_path, write_json  # noqa: E402

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
BOOTSTRAP = 2000
BOOTSTRAP_SEED = 20211
#: Goals of issue 17.
GOAL_SPEARMAN, GOAL_SLOWER, GOAL_SPEEDUP = 0.9, 1.02, 1.5

_ERG_KEY, _EXPONENTIAL_KEY, _OPTIMIZE_KEY = 1, 2, 3


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


def trial_seed(seed: int, trial: int) -> int:
    """The training seed validate gives trial ``trial`` of a job seeded ``seed``."""
    return keyed_seed(seed, _TRIAL, trial)


def shared_topologies(net: topokit.Network, seed: int, n_random: int) -> dict:
    """name -> (method, Topology) of every method but optimize (the same at every skewness)."""
    design = autotag(net)  # eq. (15): the paper's AutoTag
    topologies = {"autotag": ("autotag", design.topology), "ndlf": ("ndlf", ndlf(net)),
                  "dlfdp": ("dlfdp", dlfdp(net)),
                  "erg": ("erg", erg(net, seed=keyed_seed(seed, _ERG_KEY), reference=design)),
                  "exponential": ("exponential",
                                  exponential_graph(net, seed=keyed_seed(seed, _EXPONENTIAL_KEY)))}
    for k in range(n_random):
        topologies[f"random-{k}"] = ("random", _random_valid(net, seed, k, None))
    return topologies


def build_designs(spec: Spec, skews, n_random: int) -> dict:
    """skewness -> {"topologies": name -> (method, Topology), "optimize": its stats}."""
    X, y = load_digits()
    net, seed = spec.build(), network_seed(spec.name)
    shared = shared_topologies(net, seed, n_random)
    designs = {}
    for skewness in skews:
        counts = class_counts(net, skewness, trial_seed(seed, 0), X, y)
        design = optimize(net, class_counts=counts, seed=keyed_seed(seed, _OPTIMIZE_KEY))
        stats = {k: v for k, v in design.stats.items() if k != "seconds"}
        designs[skewness] = {
            "topologies": {"optimize": ("optimize", design.topology), **shared},
            "optimize": {**stats, "seconds": design.stats.get("seconds"),
                         "predicted_time": design.metrics.pseudo_time,
                         "n_links": design.topology.n_links,
                         "n_dp_devices": len(design.topology.dp_devices)}}
    return designs


# ---------------------------------------------------------------------------------------------
# Measuring one setting
# ---------------------------------------------------------------------------------------------


class Setting(NamedTuple):
    """The runs of one network at one skewness with one model: every topology, every trial."""

    spec: Spec
    skewness: float
    model: str
    topologies: dict  # name -> (method, Topology)


def _digest(*parts: Any) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part if isinstance(part, bytes) else
                      json.dumps(part, sort_keys=True, default=str).encode())
    return hasher.hexdigest()


def network_digest(net: topokit.Network) -> str:
    edges = sorted((repr(u), repr(v)) for u, v in net.social.edges)
    return _digest([repr(node) for node in net.nodes], edges,
                   np.ascontiguousarray(net.compute_time).tobytes(),
                   np.ascontiguousarray(net.delay).tobytes())


def fingerprint(setting: Setting, net: topokit.Network, trials: int, data_digest: str,
                predictor_digest: str) -> str:
    """What a setting's runs depend on: network, topologies, predictor, data and settings."""
    topologies = {name: [method, topology.to_dict()]
                  for name, (method, topology) in setting.topologies.items()}
    settings = {"skewness": setting.skewness, "model": setting.model, "trials": trials,
                "targets": TARGETS, "train": TRAIN, "seed": network_seed(setting.spec.name),
                "topokit": topokit.__version__}
    return _digest(network_digest(net), topologies, settings, data_digest, predictor_digest)


def part_path(parts: Path, setting: Setting, key: str) -> Path:
    return parts / f"{setting.spec.name}_K{setting.skewness:g}_{setting.model}_{key[:16]}.parquet"


def _eq15(net: topokit.Network, topologies: dict) -> dict[str, tuple[float, float]]:
    """name -> (G', pseudo time) of eq. (15), which does not depend on the data."""
    metrics = {name: topokit.evaluate(net, topology) for name, (_, topology) in topologies.items()}
    return {name: (m.predicted_global_iterate, m.pseudo_time) for name, m in metrics.items()}


def run_setting(setting: Setting, trials: int, parts: Path, digests: tuple[str, str]) -> dict:
    """Train every topology of the setting ``trials`` times (or read the runs back)."""
    X, y = load_digits()
    net = setting.spec.build()
    seed = network_seed(setting.spec.name)
    path = part_path(parts, setting, fingerprint(setting, net, trials, *digests))
    if path.exists():
        frame = pd.read_parquet(path)
    else:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="skewness .* needs more rows")
            frame = validate(
                net, {name: topology for name, (_, topology) in setting.topologies.items()},
                X=X, y=y, targets=TARGETS, trials=trials, seed=seed, predictor="default",
                n_jobs=1, output=path, partition=setting.skewness, model=setting.model,
                **TRAIN).frame
    first = frame.loc[frame["trial"] == 0, "seed"]
    if not (first == trial_seed(seed, 0)).all():
        raise RuntimeError("trial 0's seed differs from the one optimize designed for")
    timings = pd.read_parquet(timings_path(path)) if timings_path(path).exists() else None
    return {"runs": _annotated(frame, setting, net), "wall_clock": None if timings is None
            else float(timings["wall_clock"].sum()), "n_runs": int(frame["trial"].size
                                                                   // len(TARGETS))}


def _annotated(frame: pd.DataFrame, setting: Setting, net: topokit.Network) -> pd.DataFrame:
    """validate's runs with the method, the setting, and eq. (15)'s prediction beside ours."""
    eq15 = _eq15(net, setting.topologies)
    methods = {name: method for name, (method, _) in setting.topologies.items()}
    return frame.rename(columns={"pseudo_time": "predicted_time",
                                 "predicted_global_iterate": "predicted_rounds"}).assign(
        network=setting.spec.name, source=setting.spec.source, n_devices=net.n_devices,
        skewness=setting.skewness, model=setting.model,
        method=frame["topology"].map(methods),
        pseudo_rounds=frame["topology"].map(lambda name: eq15[name][0]),
        pseudo_time=frame["topology"].map(lambda name: eq15[name][1]))


def measure(quick: bool, n_jobs: int, models: tuple[str, ...] = MODELS,
            variants=VARIANTS) -> tuple[pd.DataFrame, dict]:
    """Every setting's runs, in parallel over settings; (runs, what the designs and runs cost)."""
    from joblib import Parallel, delayed

    specs, skipped = network_specs(quick, variants)
    specs.sort(key=lambda s: -s.n_devices)  # the longest designs first: workers finish together
    skews, models = SKEWNESS, (("logreg",) if quick else models)
    trials, n_random = (2, 4) if quick else (TRIALS, N_RANDOM)
    parts = out_path("design_benchmark_quick_parts" if quick else "design_benchmark_parts")
    parts.mkdir(exist_ok=True)
    started = time.perf_counter()
    designs = Parallel(n_jobs=n_jobs)(delayed(build_designs)(s, skews, n_random) for s in specs)
    design_seconds = time.perf_counter() - started
    settings = [Setting(spec, k, model, built[k]["topologies"])
                for spec, built in zip(specs, designs, strict=True) for k in skews
                for model in models]
    settings.sort(key=lambda s: (s.model != "mlp", -s.spec.n_devices))  # longest first
    X, y = load_digits()
    digests = (_digest(np.ascontiguousarray(X).tobytes(), np.asarray(y).tobytes()),
               _digest(load_predictor("default").to_dict()))
    measured = Parallel(n_jobs=n_jobs)(delayed(run_setting)(s, trials, parts, digests)
                                       for s in settings)
    runs = pd.concat([m["runs"] for m in measured], ignore_index=True)
    info = {"skipped": skipped, "trials": trials, "n_random": n_random, "models": list(models),
            "skewness": list(skews), "networks": [s._asdict() for s in specs],
            "design_seconds": design_seconds,
            "optimize": [{"network": spec.name, "skewness": k, **built[k]["optimize"]}
                         for spec, built in zip(specs, designs, strict=True) for k in skews],
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
    """Per setting: Spearman of predicted vs measured time over every run (never = slowest)."""
    scores = []
    for key, cell in rows.groupby(SETTING, sort=False):
        score = score_cell(cell)
        scores.append({**score, "model": key[2]})
    return pd.DataFrame(scores)


def goals(spearman: pd.DataFrame, ratios: pd.DataFrame, speedups: dict, never: dict) -> list:
    """The issue's four goals: (name, passed, what the numbers are)."""
    mine = ratios[ratios["method"] == "optimize"]
    worst = mine.loc[mine["ratio"].idxmax()]
    slower = int((mine["ratio"] > GOAL_SLOWER).sum())
    median_rho = float(spearman["spearman"].median())
    speedup = speedups[">=0.4"].get("optimize", float("nan"))
    bad = never["optimize"]
    return [
        ("median leave-network-out Spearman >= 0.9", median_rho >= GOAL_SPEARMAN,
         f"{median_rho:.3f} over {spearman['spearman'].notna().sum()} settings "
         f"(eq. 15: {spearman['spearman_paper'].median():.3f})"),
        ("optimize <= 2 % slower than NDLF (paired median) in every setting", slower == 0,
         f"{slower} of {len(mine)} settings above 1.02; worst {worst['ratio']:.3f} "
         f"({worst['network']}, K={worst['skewness']:g}, {worst['model']}; CI "
         f"{worst['ci_low']:.3f}-{worst['ci_high']:.3f})"),
        ("geometric-mean speed-up over NDLF >= 1.5x at K >= 0.4", speedup >= GOAL_SPEEDUP,
         f"{speedup:.3f}x"),
        ("no optimize design that never reaches the target", bad["settings_never"] == 0,
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
    return {"ratios": ratios, "wins": win_rates(times), "speedups": speedups, "never": never,
            "spearman": spearman, "goals": goals(spearman, ratios, speedups, never)}


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def figure(ratios: pd.DataFrame):
    """Ratio to NDLF per method, one panel per skewness: a box over settings, a point (with
    its bootstrap interval) per setting."""
    from matplotlib.ticker import FormatStrFormatter

    from topokit.plotting._style import new_figure

    skews = sorted(ratios["skewness"].unique())
    methods = [m for m in METHODS if m != "ndlf"]
    fig = new_figure("scatter", ncols=len(skews))
    fig.set_size_inches(5.0 * len(skews), 4.2)
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
        axis.set_xticks(range(len(methods)), methods, rotation=30, fontsize=8)
        axis.set_title(f"skewness K = {skewness:g}")
        if k == 0:
            axis.set_ylabel(f"time to {TARGET:.0%} / NDLF's (median over trials)")
            axis.legend(fontsize=7)
    return fig


def print_ratio_table(ratios: pd.DataFrame) -> None:
    methods = [m for m in METHODS if m != "ndlf"]
    wide = ratios.pivot_table(index=SETTING, columns="method", values="ratio", sort=False)
    mine = ratios[ratios["method"] == "optimize"].set_index(SETTING)
    ndlf_time = ratios[ratios["method"] == "ndlf"].set_index(SETTING)["median_time"]
    print(f"\nTime to {TARGET:.0%} / NDLF's, median over paired trials (never reached: T + 1 "
          "rounds; * = optimize's design never reached it in some trial):")
    print(f"{'network':<22}{'K':>4} {'model':<7}{'NDLF s':>9} {'optimize [95% CI]':>21}"
          + "".join(f"{m[:11]:>12}" for m in methods[1:]))
    for key, row in wide.iterrows():
        own = mine.loc[key]
        flag = "*" if own["never_trials"] else " "
        print(f"{key[0]:<22}{key[1]:>4g} {key[2]:<7}{ndlf_time.loc[key]:>9.0f} "
              f"{row['optimize']:>6.3f} [{own['ci_low']:.2f}-{own['ci_high']:.2f}]{flag}"
              + "".join(f"{row[m]:>12.3f}" for m in methods[1:]))


def print_summary(result: dict, info: dict, seconds: float) -> None:
    print_ratio_table(result["ratios"])
    print(f"random-best is an oracle: the fastest by measured time of {info['n_random']} random "
          "valid topologies in each trial.  optimize designed for trial 0's class counts.")
    print("\nGeometric-mean speed-up over NDLF (NDLF's time / the method's), by skewness:")
    print(f"{'method':<13}" + "".join(f"{k:>9}" for k in result["speedups"]))
    for method in METHODS:
        print(f"{method:<13}" + "".join(f"{v.get(method, np.nan):>9.3f}"
                                        for v in result["speedups"].values()))
    print("\noptimize against each method (settings won / tied / lost on the paired median; "
          "share of paired trials won):")
    for other, w in result["wins"].items():
        print(f"  vs {other:<12} {w['wins']:>3} / {w['ties']:>3} / {w['losses']:>3}  "
              f"win rate {w['win_rate']:.2f}  trials {w['trial_win_rate']:.2f}")
    print(f"\nNever reaching {TARGET:.0%} (settings: majority of trials / any trial; runs):")
    for method, n in result["never"].items():
        print(f"  {method:<13} {n['settings_never']:>3} / {n['settings_any_never']:>3} of "
              f"{n['settings']} settings; {n['runs_never']} of {n['runs']} runs")
    spearman = result["spearman"]
    print("\nLeave-network-out Spearman, predicted vs measured time over every run of a setting "
          "(never = slowest; the default predictor never saw these networks):")
    for model, group in spearman.groupby("model"):
        print(f"  {model:<7} default predictor median {group['spearman'].median():.3f} "
              f"(IQR {group['spearman'].quantile(.25):.3f}-{group['spearman'].quantile(.75):.3f})"
              f", eq. (15) {group['spearman_paper'].median():.3f}; per topology (median over "
              f"trials) {group['spearman_topologies'].median():.3f} / "
              f"{group['spearman_topologies_paper'].median():.3f}; {len(group)} settings")
    if info["skipped"]:
        print("Skipped: " + "; ".join(f"{s['network']} ({s['n_devices']} devices, {s['why']})"
                                      for s in info["skipped"]))
    print("\nGoals of issue 17:")
    for name, passed, numbers in result["goals"]:
        print(f"  {'PASS' if passed else 'FAIL'}  {name}: {numbers}")
    print(f"\n{seconds:.0f} s in all ({info['design_seconds']:.0f} s designing); training "
          f"seconds per run: {', '.join(f'{m} {s:.2f}' for m, s in info['wall_clock'].items())}")


def payload(result: dict, info: dict, seconds: float) -> dict:
    def records(frame: pd.DataFrame) -> list[dict]:
        return json.loads(frame.to_json(orient="records"))

    return {"machine": machine(), "seconds": seconds, "target": TARGET, "rounds": ROUNDS,
            "train": TRAIN, "targets": list(TARGETS), "censoring": "never reached = T + 1 rounds",
            "random_best": f"oracle: the fastest of {info['n_random']} random valid topologies "
                           "in each trial, by measured time",
            "design_counts": "optimize designs for trial 0's class counts",
            **info, "speedups": result["speedups"], "wins": result["wins"],
            "never": result["never"],
            "goals": [{"goal": g, "passed": bool(p), "numbers": n}
                      for g, p, n in result["goals"]],
            "spearman_median": float(result["spearman"]["spearman"].median()),
            "spearman_median_paper": float(result["spearman"]["spearman_paper"].median()),
            "spearman": records(result["spearman"]), "ratios": records(result["ratios"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 small networks, 2 trials, logreg, 4 random topologies")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated subset of logreg,mlp (default: both); the "
                             "parts of each model are kept, so a later run adds the other")
    parser.add_argument("--network-seeds", default="100,101,102,103",
                        help="four siot seeds: two with the generator's defaults, two with "
                             "co-location links of 100 m (default 100,101,102,103; the "
                             "predictor corpus used 0-2)")
    parser.add_argument("--name", default="design_benchmark",
                        help="stem of the output files in analyses/out/")
    args = parser.parse_args()
    try:
        seeds = [int(s) for s in args.network_seeds.split(",")]
    except ValueError:
        seeds = []
    if len(seeds) != 4 or min(seeds) < 3:
        parser.error("--network-seeds takes four integers >= 3 (0-2 made the predictor corpus)")
    variants = ((seeds[0], None), (seeds[1], None), (seeds[2], 100.0), (seeds[3], 100.0))
    models = tuple(m.strip() for m in args.models.split(","))
    if not models or set(models) - set(MODELS):
        parser.error(f"--models must be a comma-separated subset of {','.join(MODELS)}")
    start = time.perf_counter()
    X, y = load_digits()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="skewness .* needs more rows")
        check_counts(X, y)  # the partition replay still matches train's
    runs, info = measure(args.quick, max(1, args.n_jobs), models, variants)
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
