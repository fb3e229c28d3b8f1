"""Design benchmark: measured time-to-target of ``optimize`` against the other designs.

Networks: SIoT networks (``topokit.datasets.siot``) of 16-32 devices with seeds the
predictor corpus (0-2) never used -- 100 and 101 with the generator's defaults (dense OOR
social graphs), 102 and 103 with co-location links of 100 m (sparse, long social graphs) --
and the bundled networks of at most 64 devices (exact AutoTag is too slow on ``siot100``).

Methods (``--methods``): ``optimize`` as a user calls it (the model's shipped predictor,
:data:`PREDICTORS`) and with each ``mixing`` (``optimize-lazy-metropolis`` / ``-metropolis``
/ ``-fastest``), designed for trial 0's class counts at each skewness; ``autotag`` (eq. 15),
``ndlf``, ``dlfdp``, ``erg``, ``exponential``, ``ndlf-metropolis`` / ``ndlf-fastest``;
``random-best``, the fastest of 10 random valid topologies by *measured* time (an oracle).

Training (``topokit.validate``): D-PSGD with partial DP (epsilon 1, delta 1e-5 a round),
digits, lr 0.2 decaying 0.99, T = 200 rounds, skewness K = 0 / 0.4 / 0.8, 5 trials with
common random numbers, logistic regression and the MLP.  Time-to-target: rounds to 88 % x L
(eq. 8); a run that never reaches it counts as T + 1 rounds.

Report per setting (network, K, model), by :mod:`topokit.validation.compare`: the paired
median ratio to NDLF (bootstrap 95 % interval), win rates, geometric-mean speed-ups by
skewness, designs that never reach the target, what weights gain, the hindsight ceiling,
the leave-network-out Spearman of the predictor beside eq. (15)'s, and the goals (never > 2 %
slower than NDLF, >= 1.5x faster at K >= 0.4, always reaching it, median Spearman >= 0.9).

Run: python -m analyses.design_benchmark [--quick] [--n-jobs 2] [--models logreg,mlp]
[--methods optimize,...]: on 2 cores logreg about 35 min, the MLP 1.5-2.5 h; ``--quick``
(toy and two 16-device networks, 2 trials, logreg) about 1 min.  Writes
analyses/out/design_benchmark{,_quick}.{parquet,json,png}.  Resumable: each setting's runs
are saved under run keys in design_benchmark{,_quick}_parts/; a later call trains only the
topologies whose inputs changed.
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

import analyses._common as common
import topokit
from analyses._common import Setting
from topokit._jobs import run_resumable
from topokit.design.time_predictor import SHIPPED_FOR_MODEL
from topokit.errors import InvalidInputError
from topokit.training import load_digits
from topokit.validation import compare, corpus, trial_seed
from topokit.validation.corpus import CorpusEntry, NetworkSpec

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
#: The goals: median Spearman, paired ratio to NDLF at most, speed-up on skewed data.
GOAL_SPEARMAN, GOAL_SLOWER, GOAL_SPEEDUP = 0.9, 1.02, 1.5
#: Skewness from which data count as skewed (the speed-up goal's).
SKEWED = 0.4


def parse_methods(text: str) -> tuple[str, ...]:
    """The methods of a comma-separated ``--methods`` value, in :data:`ALL_METHODS` order;
    NDLF among them.

    >>> parse_methods("ndlf-fastest, ndlf,optimize")
    ('optimize', 'ndlf', 'ndlf-fastest')
    """
    return common.parse_subset(text, ALL_METHODS, "--methods", "method", "no method given",
                               required={"ndlf": "every ratio is to NDLF's time"})


# --- Networks and designs ---------------------------------------------------------------------


def network_specs(quick: bool, variants=VARIANTS) -> tuple[list[NetworkSpec], list[dict]]:
    """The generated networks and the bundled ones of at most :data:`MAX_BUNDLED_DEVICES`
    devices; and the skipped ones (with why)."""
    sizes, bundled = ((16,), ["toy"]) if quick else (SIZES, topokit.list_examples())
    variants = (variants[0], variants[2]) if quick else variants
    specs = [NetworkSpec(n, seed, colocation) for n in sizes for seed, colocation in variants]
    devices = {name: topokit.load_example(name).n_devices for name in bundled}
    specs += [NetworkSpec(n, example=name) for name, n in devices.items()
              if n <= MAX_BUNDLED_DEVICES]
    why = f"more than {MAX_BUNDLED_DEVICES} devices: exact AutoTag too slow"
    return specs, [{"network": name, "n_devices": n, "why": why}
                   for name, n in devices.items() if n > MAX_BUNDLED_DEVICES]


def network_seed(name: str) -> int:
    """The seed of everything random about a network (ERG, rings, random topologies, trials)."""
    return zlib.crc32(name.encode()) % 2**31


def build_designs(spec: NetworkSpec, skews, n_random: int,
                  methods: tuple[str, ...] = ALL_METHODS, models: tuple[str, ...] = MODELS
                  ) -> dict:
    """(skewness, model) -> {"topologies": name -> CorpusEntry, "optimize": arm -> stats}.

    The optimize arms are designed for trial 0's class counts by each model's predictor
    (:data:`PREDICTORS`; models of one predictor share them), without ``optimize``'s
    ``ndlf_margin`` (which would replace some by NDLF): ``analyses/ndlf_margin.py``
    derives what the margin gives from these runs, the NDLF arms' and
    ``stats["ndlf_margin"]["predicted_gain"]``.
    """
    net, seed = spec.build(), network_seed(spec.name)
    built = corpus.benchmark_entries(
        net, [method for method in methods if method in corpus.NAMED_TOPOLOGIES], seed,
        skewness=skews, y=load_digits()[1], predictors=[PREDICTORS[m] for m in models],
        arms={arm: mixing for arm, mixing in OPTIMIZE_ARMS.items() if arm in methods},
        n_random=n_random if "random-best" in methods else 0, ndlf_margin=1.0)
    return {(k, model): split_designs(built[k, PREDICTORS[model]])
            for k in skews for model in models}


def split_designs(built: dict) -> dict:
    """{"topologies": name -> CorpusEntry, "optimize": arm -> stats} of
    :func:`topokit.validation.corpus.benchmark_entries`' entries of one setting."""
    return {"topologies": {name: entry for name, (entry, _) in built.items()},
            "optimize": {name: design_stats(entry, design)
                         for name, (entry, design) in built.items() if design is not None}}


def design_stats(entry: CorpusEntry, design) -> dict:
    """What the JSON records of an optimize arm's design."""
    return {**{k: v for k, v in design.stats.items() if k != "seconds"},
            "seconds": design.stats.get("seconds"), "weights": entry.weighting,
            "predicted_time": design.metrics.pseudo_time, "n_links": design.topology.n_links,
            "n_dp_devices": len(design.topology.dp_devices)}


# --- Measuring the settings -------------------------------------------------------------------


def setting_keys(setting: Setting, net: topokit.Network, data: str) -> dict[str, str]:
    """name -> run key of every topology of the setting (:func:`analyses._common.run_key`)."""
    return common.setting_keys(setting, net, {
        "targets": TARGETS, "train": TRAIN, "seed": network_seed(setting.spec.name),
        "data": data, "topokit": topokit.__version__})


def run_setting(setting: Setting, trials: int, parts: Path, data: str
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train the topologies of the setting whose runs are not saved: (every run with its
    method, weighting and predictions; :func:`analyses._common.trained_cost`'s row)."""
    X, y = load_digits()
    net, seed = setting.spec.build(), network_seed(setting.spec.name)
    reused, trained = common.train_setting(
        setting, net, parts, setting_keys(setting, net, data), trials, seed, targets=TARGETS,
        legacy=partial(common.legacy_metrics, net, setting.topologies, seed, trials),
        X=X, y=y, predictor=PREDICTORS[setting.model], **TRAIN)
    frame = pd.concat([f for f in (reused, trained) if len(f)], ignore_index=True)
    if not (frame.loc[frame["trial"] == 0, "seed"] == trial_seed(seed, 0)).all():
        raise RuntimeError("trial 0's seed differs from the one optimize designed for")
    # the model's predictor recomputed for each trial's class counts; the runs trained now
    # (they come last) were predicted by it in validate: the replay must agree
    runs = corpus.predicted_runs(frame, net, setting.topologies, y=y,
                                 predictor=PREDICTORS[setting.model], skewness=setting.skewness,
                                 check=np.arange(len(frame)) >= len(reused))
    return runs.assign(network=setting.spec.name, source=setting.spec.source,
                       n_devices=net.n_devices, skewness=setting.skewness,
                       model=setting.model), common.trained_cost(trained, setting.model)


def measure(quick: bool, n_jobs: int, models: tuple[str, ...] = MODELS,
            variants=VARIANTS, methods: tuple[str, ...] = ALL_METHODS
            ) -> tuple[pd.DataFrame, dict]:
    """Every setting's runs, in parallel over settings; (runs, what the designs and runs cost)."""
    from joblib import Parallel, delayed

    specs, skipped = network_specs(quick, variants)
    specs.sort(key=lambda s: -s.n_devices)  # the longest designs first: workers finish together
    models = ("logreg",) if quick else models
    trials, n_random = (2, 4) if quick else (TRIALS, N_RANDOM)
    parts = common.out_path("design_benchmark_quick_parts" if quick else "design_benchmark_parts")
    parts.mkdir(exist_ok=True)
    started = time.perf_counter()
    designs = Parallel(n_jobs=n_jobs)(delayed(build_designs)(s, SKEWNESS, n_random, methods,
                                                             models) for s in specs)
    design_seconds = time.perf_counter() - started
    built = [(spec, k, model, design) for spec, by_setting in zip(specs, designs, strict=True)
             for (k, model), design in by_setting.items()]
    settings = sorted((Setting(spec, k, model, design["topologies"])
                       for spec, k, model, design in built),
                      key=lambda s: (s.model != "mlp", -s.spec.n_devices))  # longest first
    job = run_resumable(settings, partial(run_setting, trials=trials, parts=parts,
                                          data=common.data_digest(*load_digits())),
                        tables=("runs", "cost"), n_jobs=n_jobs)
    optimize = [{"network": spec.name, "skewness": k, "model": model, "method": arm,
                 "predictor": PREDICTORS[model], **stats}
                for spec, k, model, design in built for arm, stats in design["optimize"].items()]
    info = {"skipped": skipped, "trials": trials, "n_random": n_random, "models": list(models),
            "methods": list(methods), "skewness": list(SKEWNESS),
            "networks": [{"name": s.name, **s._asdict()} for s in specs],
            "design_seconds": design_seconds, "optimize": optimize}
    return job.tables["runs"], {**info, **common.cost_summary(job.tables["cost"])}


# --- Analysis: topokit.validation.compare's statistics of the runs ----------------------------


def method_times(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, trial, method); random-best is the fastest random run of the trial."""
    columns = [*SETTING, "trial", "method", "time", "censored"]
    return compare.best_per_trial(rows[columns], "random", by=SETTING, name="random-best")


def paired_ratios(times: pd.DataFrame) -> pd.DataFrame:
    """Per setting and method: median over trials of censored time / NDLF's, with CI."""
    return compare.ratios_to_reference(times, "ndlf", by=SETTING, seed=BOOTSTRAP_SEED)


def spearman_cells(rows: pd.DataFrame) -> pd.DataFrame:
    """Per setting: Spearman of predicted vs measured time over every run (never = slowest).

    A topology two methods share (``optimize`` keeping NDLF with its weights, an arm
    whose weights are ``optimize``'s default) has one run key: its runs count once, so
    that the correlation does not depend on how many arms gave the same design.
    """
    return corpus.cell_table(rows, by=SETTING, distinct=[common.RUN_KEY, "trial"])


def mixing_gains(times: pd.DataFrame) -> dict:
    """What other weights on the same links gain: the paired median ratio per setting of
    each comparison of :data:`MIXING_COMPARISONS` that ran, over settings and by skewness."""
    ran = set(times["method"])
    pairs = [(top, bottom) for top, bottom in MIXING_COMPARISONS if {top, bottom} <= ran]
    if not pairs:
        return {}
    rows = compare.paired_ratios(times, pairs, by=SETTING, seed=BOOTSTRAP_SEED)
    return compare.ratio_summaries(rows, group="skewness")


def goals(spearman: pd.DataFrame, ratios: pd.DataFrame, speedup: dict, never: dict,
          method: str = "optimize") -> list:
    """The four goals for ``method`` (an optimize arm): (name, passed, numbers)."""
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


# --- Output -----------------------------------------------------------------------------------


def _shown(ratios: pd.DataFrame) -> list[str]:
    """The methods that ran but NDLF (the reference), in :data:`ALL_METHODS` order."""
    present = set(ratios["method"])
    return [m for m in ALL_METHODS if m != "ndlf" and m in present]


def figure(ratios: pd.DataFrame):
    """Ratio to NDLF per method, one panel per skewness: a box over settings, a point (with
    its bootstrap interval) per setting."""
    return common.ratio_panels(ratios, _shown(ratios), slower_at_most=GOAL_SLOWER,
                               ylabel=f"time to {TARGET:.0%} / NDLF's (median over trials)")


def print_ratio_table(ratios: pd.DataFrame) -> None:
    """Per setting: NDLF's time, the first optimize arm's ratio with its interval, the rest."""
    methods = _shown(ratios)
    lead = next((arm for arm in OPTIMIZE_ARMS if arm in methods), None)
    print(f"\nTime to {TARGET:.0%} / NDLF's, median over paired trials (never reached: T + 1 "
          f"rounds; * = {lead}'s design never reached it in some trial):")
    common.print_ratio_table(ratios, SETTING, lead, [m for m in methods if m != lead],
                             reference="ndlf", label="NDLF s",
                             header=f"{'network':<22}{'K':>4} {'model':<7}",
                             row=lambda key: f"{key[0]:<22}{key[1]:>4g} {key[2]:<7}")


def print_spearman(spearman: pd.DataFrame) -> None:
    print("\nLeave-network-out Spearman, predicted vs measured time over every run of a setting "
          "(never = slowest; no shipped predictor saw these networks):")
    for model, group in spearman.groupby("model"):
        quartiles = group["spearman"].quantile([0.25, 0.75]).tolist()
        print(f"  {model:<7} predictor {PREDICTORS[model]!r} median "
              f"{group['spearman'].median():.3f} (IQR {quartiles[0]:.3f}-{quartiles[1]:.3f})"
              f", eq. (15) {group['spearman_paper'].median():.3f}; per topology (median over "
              f"trials) {group['spearman_topologies'].median():.3f} / "
              f"{group['spearman_topologies_paper'].median():.3f}; {len(group)} settings")


def print_summary(result: dict, info: dict, seconds: float) -> None:
    print_ratio_table(result["ratios"])
    if "random-best" in info["methods"]:
        print(f"random-best is an oracle: the fastest by measured time of {info['n_random']} "
              "random valid topologies in each trial.")
    if result["wins"]:
        print("The optimize arms designed for trial 0's class counts.")
    common.print_speedups(result["speedups"], [m for m in ALL_METHODS if m in info["methods"]])
    common.print_ratio_summaries(result["mixing"], "Other weights on the same links")
    common.print_ceilings(result["ceiling"])
    for arm, wins in result["wins"].items():
        common.print_win_rates(arm, wins)
    common.print_never(result["never"], TARGET)
    print_spearman(result["spearman"])
    print_closing(result, info, seconds)


def print_closing(result: dict, info: dict, seconds: float) -> None:
    """The skipped networks, the goals of each optimize arm and what the run cost."""
    if info["skipped"]:
        print("Skipped: " + "; ".join(f"{s['network']} ({s['n_devices']} devices, {s['why']})"
                                      for s in info["skipped"]))
    common.print_goals(result["goals"])
    clock = ", ".join(f"{m} {s:.2f}" for m, s in info["wall_clock"].items()) or "none trained"
    print(f"\n{seconds:.0f} s in all ({info['design_seconds']:.0f} s designing; "
          f"{info['runs_trained']} runs trained now); training seconds per run: {clock}")


def payload(result: dict, info: dict, seconds: float) -> dict:
    def records(frame: pd.DataFrame) -> list[dict]:
        return json.loads(frame.to_json(orient="records"))

    return {"machine": common.machine(), "seconds": seconds, "target": TARGET, "rounds": ROUNDS,
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
                        help="comma-separated subset of logreg,mlp (default: both)")
    parser.add_argument("--methods", default=",".join(ALL_METHODS),
                        help="comma-separated methods to measure, ndlf among them (default: "
                             "all); runs of the others stay saved")
    parser.add_argument("--network-seeds", default="100,101,102,103",
                        help="four siot seeds >= 3 (the predictor corpus used 0-2): two with "
                             "the generator's defaults, two with co-location links of 100 m")
    parser.add_argument("--name", default="design_benchmark",
                        help="stem of the output files in analyses/out/")
    args = parser.parse_args(argv)
    try:
        first, second, third, fourth = common.parse_ints(args.network_seeds, "--network-seeds",
                                                         at_least=3, count=4)
        args.variants = ((first, None), (second, None), (third, 100.0), (fourth, 100.0))
        args.models = common.parse_subset(args.models, MODELS, "--models", "model", "none")
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
    runs.to_parquet(common.out_path(f"{name}.parquet"))
    result = analyse(runs)
    from topokit.plotting._style import save_figure

    save_figure(figure(result["ratios"]), common.out_path(f"{name}.png"))
    seconds = time.perf_counter() - start
    common.write_json(f"{name}.json", payload(result, info, seconds))
    print_summary(result, info, seconds)


if __name__ == "__main__":
    main()
