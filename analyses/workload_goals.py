"""The workload issue's goals, measured: ``optimize`` told the workload against NDLF.

Networks no corpus saw (seeds 100-102; the corpus used 0-2), from
``topokit.datasets.siot``: two of the generator's kind the corpus has (24 devices with
its defaults, 16 with co-location links of 100 m), whose dense social graphs leave
little to gain from DP links, and four with sparse, long social graphs (24 devices;
co-location links of 50 m, or public devices linked within 100 m and co-location
within 30 m: diameters 6-9), where a link to a stranger can pay for its DP noise.
For every setting (network, skewness K = 0 / 0.8, workload) four topologies are
trained by ``topokit.validate`` with the same trial seeds (3 trials):

- ``optimize``: ``validate``'s ``"optimize"`` spec with the workload, i.e.
  ``topokit.optimize(net, workload=...)`` for trial 0's class counts, judged by
  the predictor that knows the workload (``load_predictor("workload")``);
- ``blind``: ``topokit.optimize`` without a workload (the shipped default, fitted
  at epsilon = 1, target 0.88), for the same class counts: what a user got before;
- ``naive``: ``topokit.optimize`` with the shipped default's noise multiplier set to
  the workload's (``predictor_at_workload(load_predictor("default"), workload)``),
  the only handle a user had, which extrapolates;
- ``ndlf``: the social graph, no DP device.

Three goal sets:

- **told the truth** (digits, logistic regression): epsilon 0.5 and 4 per round x
  target 0.85 and 0.92.  Goal: ``optimize`` never more than 2 % slower than NDLF
  (median over trials of the paired ratio of times), and at least 1.5x faster
  (geometric mean over the settings) at K = 0.8.
- **near the ceiling** (the generated data of ``analyses.workload_corpus``, whose
  centralised accuracy is about 0.62, told to the workload as ``ceiling``):
  epsilon 1, target 0.55.  Goal: no setting more than 2 % slower than NDLF, and no
  design that stalls below the target while NDLF reaches it.
- **the MLP told its workload** (digits): epsilon 0.5 and 4 per round, target 0.85;
  ``blind`` and ``naive`` start from the MLP's shipped predictor (``"mlp"``).  Goal:
  never more than 2 % slower than NDLF.

Time-to-target is rounds x L (eq. 8); a run that never reaches the target counts as
T + 1 = 201 rounds (slowest) and is counted apart.

With ``--predictor PATH`` the ``optimize`` arm is judged by that predictor file for every
model (a candidate for ``"workload"``, say ``analyses/workload_predictor.py --out``'s); the
other arms' runs are those of the shipped predictors (reused from the parts folder), and
only the candidate's design is trained.  A predictor with the trait ``probe_rounds`` is
told it for the generated data, as the ceiling is (the median of three ceiling probes).

Run (from the repository root): python -m analyses.workload_goals [--models logreg,mlp]
[--predictor PATH] [--out NAME] [--quick].  About 10-15 min on 2 cores for logistic
regression, as much again for the MLP (--quick: one network, 2 trials).  Writes
analyses/out/workload_goals.{parquet,json,png} (``--out NAME`` or ``--predictor PATH``:
workload_goals_NAME.*, NAME the predictor file's stem by default); each setting's runs
are kept in analyses/out/workload_goals_parts/ under a key of everything they depend on
(an interrupted call resumes, a changed input trains again).
"""

from __future__ import annotations

import argparse
import time
import warnings
from datetime import date
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from analyses._common import (
    OUT,
    digest,
    machine,
    network_digest,
    out_path,
    ratio_figure,
    source_digest,
    training_digest,
    write_json,
)
from analyses.workload_corpus import generated_data, measure_probe_rounds
from topokit import Workload, __version__, load_predictor, optimize, validate
from topokit.design import predictor_at_workload
from topokit.design.baselines import ndlf
from topokit.design.time_predictor import SHIPPED_FOR_MODEL
from topokit.network.examples import data_dir
from topokit.training import load_digits, partition_class_counts
from topokit.training.ceiling import ceiling_probe
from topokit.validation.compare import paired_ratios
from topokit.validation.core import trial_seed


class GoalNetwork(NamedTuple):
    """A generated SIoT network: ``siot(n_devices, seed=seed, ...)`` with these ranges."""

    n_devices: int
    seed: int
    colocation: float | None = None
    public: float | None = None

    @property
    def name(self) -> str:
        ranges = "".join(f"-{label}{value:g}" for label, value in
                         (("coloc", self.colocation), ("public", self.public))
                         if value is not None)
        return f"siot{self.n_devices}-s{self.seed}{ranges or '-oor'}"

    def build(self):
        from topokit.network.siot import DEFAULT_PUBLIC_RANGE_M, siot

        public = DEFAULT_PUBLIC_RANGE_M if self.public is None else self.public
        return siot(self.n_devices, seed=self.seed, colocation_range_m=self.colocation,
                    public_range_m=public, name=self.name)


NETWORKS = (GoalNetwork(24, 101), GoalNetwork(16, 102, 100.0),
            GoalNetwork(24, 100, 50.0), GoalNetwork(24, 101, 50.0),
            GoalNetwork(24, 100, 30.0, 100.0), GoalNetwork(24, 101, 30.0, 100.0))
SKEWNESS = (0.0, 0.8)
ROUNDS = 200
TRIALS = 3
TRUTH = tuple((eps, target) for eps in (0.5, 4.0) for target in (0.85, 0.92))
NEAR = ((1.0, 0.55),)
#: The MLP told its workload (digits): a model the workload predictor was fitted on beside
#: logistic regression.
MLP = tuple((eps, 0.85) for eps in (0.5, 4.0))
#: Each goal set: (data, model, name) -> (epsilon, target) pairs.
GOAL_SETS = {("digits", "logreg", "told_the_truth"): TRUTH,
             ("generated", "logreg", "near_the_ceiling"): NEAR,
             ("digits", "mlp", "mlp_told_the_truth"): MLP}
SLOWER_AT_MOST = 1.02
SPEEDUP_AT_SKEW = 1.5


class Setting(NamedTuple):
    spec: GoalNetwork
    skewness: float
    data: str
    epsilon: float
    target: float
    model: str = "logreg"

    def key_fields(self) -> tuple:
        """What the runs' key holds of the setting: logistic regression's settings keep the
        key they had before the MLP was added (their saved runs stay valid)."""
        fields = self._replace(spec=self.spec.name)
        return tuple(fields[:-1]) if self.model == "logreg" else tuple(fields)


def settings(quick: bool, models: tuple[str, ...] = ("logreg", "mlp")) -> list[Setting]:
    networks = NETWORKS[:1] if quick else NETWORKS
    return [Setting(spec, k, data, eps, target, model) for spec in networks for k in SKEWNESS
            for (data, model, _), pairs in GOAL_SETS.items() if model in models
            for eps, target in pairs]


def data_of(name: str) -> tuple[np.ndarray, np.ndarray]:
    return load_digits() if name == "digits" else generated_data()


def workload_of(setting: Setting, ceilings: dict[str, float],
                traits: dict[str, float] | None = None) -> Workload:
    """The setting's workload; with ``traits`` (data -> probe rounds) also told how fast the
    model learns on data other than digits, as it is told the ceiling there."""
    ceiling = None if setting.data == "digits" else ceilings[setting.data]
    trait = None if setting.data == "digits" or not traits else traits[setting.data]
    return Workload(model=setting.model, epsilon=setting.epsilon, target=setting.target,
                    rounds=ROUNDS, ceiling=ceiling, probe_rounds=trait)


def run_setting(setting: Setting, ceilings: dict[str, float], trials: int) -> pd.DataFrame:
    """The setting's runs (saved under a key of all they depend on, reused when it matches)."""
    X, y = data_of(setting.data)
    net = setting.spec.build()
    workload = workload_of(setting, ceilings)
    seed = 7 * setting.spec.seed + int(10 * setting.skewness)
    shipped = SHIPPED_FOR_MODEL[setting.model]
    # The designs are made inside the run: topokit's source is an input of every part.
    key = digest(network_digest(net), setting.key_fields(), trials, seed,
                 workload.to_dict(), training_digest(),
                 (data_dir() / "predictor_workload.json").read_bytes(),
                 (data_dir() / f"predictor_{shipped}.json").read_bytes(), source_digest())
    path = out_path("workload_goals_parts") / f"{key[:24]}.parquet"
    path.parent.mkdir(exist_ok=True)
    if path.exists():
        return pd.read_parquet(path)
    counts = partition_class_counts(y, net.n_devices, setting.skewness, trial_seed(seed, 0),
                                    nodes=net.nodes)
    trial_net = net.with_class_counts(counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Blind: the model's shipped predictor at its own settings, as before workloads.
        blind = optimize(trial_net, seed=seed, predictor=shipped).topology
        naive = optimize(trial_net, seed=seed, predictor=predictor_at_workload(
            load_predictor(shipped), workload)).topology
        result = validate(net, {"optimize": "optimize", "blind": blind, "naive": naive,
                                "ndlf": ndlf(net)},
                          X=X, y=y, workload=workload, trials=trials, seed=seed,
                          partition=setting.skewness)
    frame = result.frame.assign(network=setting.spec.name, skewness=setting.skewness,
                                data=setting.data, run_epsilon=setting.epsilon)
    if setting.model != "logreg":  # logistic regression's saved parts have no column
        frame = frame.assign(model=setting.model)
    frame.to_parquet(path, index=False)
    return frame


def run_candidate(setting: Setting, ceilings: dict[str, float], trials: int,
                  predictor_path: Path, traits: dict[str, float] | None) -> pd.DataFrame:
    """The setting's runs with the ``optimize`` arm designed by the predictor file at
    ``predictor_path``: the shipped arms' saved runs (:func:`run_setting`), their
    ``optimize`` runs replaced by the candidate's (trained with the same trial seeds; saved
    under a key of the shipped runs' and the candidate's file)."""
    shipped = run_setting(setting, ceilings, trials)
    X, y = data_of(setting.data)
    net = setting.spec.build()
    workload = workload_of(setting, ceilings, traits)
    seed = 7 * setting.spec.seed + int(10 * setting.skewness)
    key = digest(network_digest(net), setting.key_fields(), trials, seed, workload.to_dict(),
                 training_digest(), predictor_path.read_bytes(), source_digest(),
                 "candidate optimize arm")
    path = out_path("workload_goals_parts") / f"{key[:24]}.parquet"
    if not path.exists():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = validate(net, {"optimize": "optimize"}, X=X, y=y, workload=workload,
                              trials=trials, seed=seed, partition=setting.skewness,
                              predictor=load_predictor(predictor_path))
        frame = result.frame.assign(network=setting.spec.name, skewness=setting.skewness,
                                    data=setting.data, run_epsilon=setting.epsilon,
                                    model=setting.model)
        frame.to_parquet(path, index=False)
    candidate = pd.read_parquet(path)
    others = shipped[shipped["topology"] != "optimize"]
    return pd.concat([candidate, others.assign(model=setting.model)], ignore_index=True)


def times(runs: pd.DataFrame) -> pd.DataFrame:
    """Time-to-target per run; never reached: T + 1 rounds."""
    rounds = runs["measured_rounds"].fillna(ROUNDS + 1)
    return runs.assign(time=rounds * runs["local_iterate"],
                       never=runs["measured_rounds"].isna())


def ratios(runs: pd.DataFrame) -> pd.DataFrame:
    """Median over trials of time(method) / time(NDLF), per setting and method, with a
    bootstrap 95 % interval."""
    keyed = times(runs).rename(columns={"topology": "method"})
    by = ["data", "model", "network", "skewness", "run_epsilon", "target"]
    table = paired_ratios(keyed, [("optimize", "ndlf"), ("blind", "ndlf"), ("naive", "ndlf")],
                          by=by, value="time")
    return table.rename(columns={"top": "method"})


def goals(table: pd.DataFrame, runs: pd.DataFrame) -> dict:
    timed = times(runs)
    out = {}
    for data, model, name in GOAL_SETS:
        mine = table[(table["data"] == data) & (table["model"] == model)
                     & (table["method"] == "optimize")]
        if mine.empty:
            continue
        skewed = mine[mine["skewness"] == 0.8]
        speedup = float(np.exp(-np.log(skewed["ratio"]).mean())) if len(skewed) else None
        here = (timed["data"] == data) & (timed["model"] == model) & timed["never"]
        out[name] = {"settings": int(len(mine)), "worst_ratio": float(mine["ratio"].max()),
                     "settings_slower_than_2pct": int((mine["ratio"] > SLOWER_AT_MOST).sum()),
                     "geometric_speedup_at_skew_0.8": speedup,
                     "optimize_runs_never_reaching": int((here & (timed["topology"]
                                                                  == "optimize")).sum()),
                     "ndlf_runs_never_reaching": int((here & (timed["topology"]
                                                              == "ndlf")).sum()),
                     "met_never_worse": bool(mine["ratio"].max() <= SLOWER_AT_MOST)}
        if name == "told_the_truth":
            out[name]["met_speedup"] = bool(speedup is not None and speedup >= SPEEDUP_AT_SKEW)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="logreg,mlp",
                        help="the goal sets' models to run, comma-separated")
    parser.add_argument("--predictor", type=Path,
                        help="a predictor file that judges the optimize arm for every model")
    parser.add_argument("--out", help="name the outputs workload_goals_NAME.* (default with "
                                      "--predictor: its file's stem)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    quick, models = args.quick, tuple(args.models.split(","))
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    ceilings = {"generated": ceiling_probe(*generated_data(), rounds=ROUNDS, seed=0).ceiling}
    trials = 2 if quick else TRIALS
    if args.predictor is None:
        runs = pd.concat([run_setting(s, ceilings, trials) for s in settings(quick, models)],
                         ignore_index=True)
    else:
        traits = None
        if "probe_rounds" in load_predictor(args.predictor).features:
            traits = {"generated": measure_probe_rounds(("generated",), ("logreg",))[
                "generated", "logreg"][0]}
        runs = pd.concat([run_candidate(s, ceilings, trials, args.predictor, traits)
                          for s in settings(quick, models)], ignore_index=True)
    runs = runs.assign(model=runs["model"].fillna("logreg") if "model" in runs
                       else "logreg")
    table = ratios(runs)
    result = goals(table, runs)
    stem = "workload_goals_quick" if quick else "workload_goals"
    name = args.out or (args.predictor.stem if args.predictor is not None else None)
    if name:
        stem = f"{stem}_{name}"
    runs.to_parquet(out_path(f"{stem}.parquet"), index=False)
    ratio_figure(table, ["data", "model", "run_epsilon", "target", "skewness", "network"],
                 ("optimize", "blind", "naive"), "time / NDLF's (median over trials)",
                 SLOWER_AT_MOST).savefig(out_path(f"{stem}.png"), dpi=120)
    pd.set_option("display.width", 120)
    print(table.pivot_table(index=["data", "model", "run_epsilon", "target", "skewness",
                                   "network"],
                            columns="method", values="ratio").round(3).to_string())
    for name, values in result.items():
        print(name, values)
    options = "".join(f" --{flag} {value}" for flag, value in
                      (("predictor", args.predictor), ("out", args.out)) if value is not None)
    write_json(f"{stem}.json", {"command": f"python -m analyses.workload_goals --models "
                                 f"{args.models}{options}{' --quick' if quick else ''}",
                      "topokit_version": __version__, "date": date.today().isoformat(),
                      "machine": machine(), "ceilings": ceilings, "goals": result,
                      "ratios": table.to_dict(orient="records"),
                      "seconds": round(time.perf_counter() - started)})


if __name__ == "__main__":
    main()
