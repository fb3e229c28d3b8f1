"""A model the predictor was not shipped for, calibrated from probe runs: the MLP goal.

The user's situation: they train a model no shipped predictor was fitted on (here
topokit's MLP, judged by the ``"default"`` predictor fitted on logistic regression),
so they train a few probe topologies and calibrate.

1. **Probes**: on three calibration networks (24 devices, seeds 200-202: the
   generator's defaults, co-location links of 50 m, and public devices within 100 m
   with co-location within 30 m), ``topokit.probe_topologies(net, k=8,
   workload=Workload(model="mlp"))``, each trained by ``topokit.validate`` with the
   MLP at K = 0 and 0.8, 2 trials: 3 x 8 x 2 x 2 = 96 probe runs.
2. **Calibration**: ``topokit.calibrate(runs, predictor="default", target=0.85,
   prior_strength=10, settings=Workload(model="mlp"))``: the default predictor
   refitted on the probe runs, kept near its shipped coefficients, and recording that
   they are MLP runs (so ``optimize`` gives its designs the MLP's default weights).
   The arm ``calibrated-untold`` is the same refit told nothing of the runs' model
   (no ``settings``), as a user who forgets it would calibrate: it claims no model, so
   ``optimize`` gives its designs the choices safe for a model never measured.
3. **Judgement** on the six networks of ``analyses/workload_goals.py`` (none seen by
   the probes or any corpus), K = 0 and 0.8, 3 trials: ``optimize`` with the
   calibrated predictor, with the uncalibrated default, and with the shipped
   ``"mlp"`` predictor, against NDLF. Goal: the calibrated design never more than
   2 % slower than NDLF (median over trials of the paired ratio), and at least 1.2x
   faster (geometric mean) at K = 0.8.

Time-to-target: rounds to 85 % x L; never reached: 201 rounds.

Run (from the repository root): python -m analyses.workload_probes [--quick]
About 15 min on 2 cores (MLP runs take 0.6-2.3 s).  Writes
analyses/out/workload_probes.{json,png}, the calibrated predictor as
analyses/out/workload_probes.predictor.json, and keeps every training in
analyses/out/workload_probes_parts/ under a key of all it depends on.
"""

from __future__ import annotations

import time
import warnings
from datetime import date

import numpy as np
import pandas as pd

from analyses._common import (
    digest,
    machine,
    network_digest,
    out_path,
    ratio_figure,
    run_quick,
    training_digest,
    write_json,
)
from analyses.workload_goals import NETWORKS, GoalNetwork
from topokit import Workload, __version__, load_predictor, optimize, validate
from topokit.design.baselines import ndlf
from topokit.training import load_digits, partition_class_counts
from topokit.validation import calibrate, probe_topologies
from topokit.validation.compare import paired_ratios
from topokit.validation.core import trial_seed

CALIBRATION = (GoalNetwork(24, 200), GoalNetwork(24, 201, 50.0),
               GoalNetwork(24, 202, 30.0, 100.0))
SKEWNESS = (0.0, 0.8)
TARGET = 0.85
K_PROBES = 8
PROBE_TRIALS, TRIALS = 2, 3
PRIOR_STRENGTH = 10.0
ARMS = ("calibrated", "calibrated-untold", "default", "mlp")
WORKLOAD = Workload(model="mlp", target=TARGET)


def trained(net, topologies: dict, skewness: float, trials: int, seed: int) -> pd.DataFrame:
    """validate's MLP runs of ``topologies``, kept on disk under a key of their inputs."""
    key = digest(network_digest(net), {n: t.to_dict() for n, t in topologies.items()},
                 skewness, trials, seed, TARGET, training_digest())
    path = out_path("workload_probes_parts") / f"{key[:24]}.parquet"
    path.parent.mkdir(exist_ok=True)
    if path.exists():
        return pd.read_parquet(path)
    X, y = load_digits()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = validate(net, topologies, X=X, y=y, model="mlp", targets=(TARGET,),
                         trials=trials, seed=seed, partition=skewness).frame
    frame = frame.assign(skewness=skewness)
    frame.to_parquet(path, index=False)
    return frame


def probe_runs(networks) -> pd.DataFrame:
    frames = []
    for spec in networks:
        net = spec.build()
        probes = probe_topologies(net, k=K_PROBES, workload=WORKLOAD, seed=spec.seed)
        frames += [trained(net, probes, k, PROBE_TRIALS, spec.seed) for k in SKEWNESS]
    return pd.concat(frames, ignore_index=True)


def designs(net, counts, predictors: dict, seed: int) -> dict:
    trial_net = net.with_class_counts(counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chosen = {arm: optimize(trial_net, predictor=model, seed=seed).topology
                  for arm, model in predictors.items()}
    return {**chosen, "ndlf": ndlf(net)}


def judgement_runs(networks, predictors: dict, trials: int) -> pd.DataFrame:
    y = load_digits()[1]
    frames = []
    for spec in networks:
        net = spec.build()
        for k in SKEWNESS:
            seed = 11 * spec.seed + int(10 * k)
            counts = partition_class_counts(y, net.n_devices, k, trial_seed(seed, 0),
                                            nodes=net.nodes)
            topologies = designs(net, counts, predictors, seed)
            frames.append(trained(net, topologies, k, trials, seed).assign(network=spec.name))
    return pd.concat(frames, ignore_index=True)


def ratios(runs: pd.DataFrame) -> pd.DataFrame:
    rounds = runs["measured_rounds"].fillna(201)
    timed = runs.assign(time=rounds * runs["local_iterate"]).rename(
        columns={"topology": "method"})
    return paired_ratios(timed, [(arm, "ndlf") for arm in ARMS], by=["network", "skewness"],
                         value="time").rename(columns={"top": "method"})


def goals(table: pd.DataFrame, n_probe_runs: int) -> dict:
    out = {"probe_runs": n_probe_runs}
    for arm in ARMS:
        mine = table[table["method"] == arm]
        skewed = mine[mine["skewness"] == 0.8]
        out[arm] = {"worst_ratio": float(mine["ratio"].max()),
                    "settings_slower_than_2pct": int((mine["ratio"] > 1.02).sum()),
                    "geometric_speedup_at_skew_0.8": float(np.exp(-np.log(skewed["ratio"])
                                                                  .mean()))}
    calibrated = out["calibrated"]
    calibrated["met_never_worse"] = calibrated["settings_slower_than_2pct"] == 0
    calibrated["met_speedup"] = calibrated["geometric_speedup_at_skew_0.8"] >= 1.2
    return out


def main(quick: bool) -> None:
    started = time.perf_counter()
    calibration = CALIBRATION[:1] if quick else CALIBRATION
    fresh = NETWORKS[:1] if quick else NETWORKS
    probes = probe_runs(calibration)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = calibrate(probes, predictor="default", target=TARGET,
                           prior_strength=PRIOR_STRENGTH, settings=WORKLOAD)
        untold = calibrate(probes, predictor="default", target=TARGET,
                           prior_strength=PRIOR_STRENGTH)
    stem = "workload_probes_quick" if quick else "workload_probes"
    result.predictor.save(out_path(f"{stem}.predictor.json"))
    predictors = {"calibrated": result.predictor, "calibrated-untold": untold.predictor,
                  "default": load_predictor("default"), "mlp": load_predictor("mlp")}
    runs = judgement_runs(fresh, predictors, 2 if quick else TRIALS)
    table = ratios(runs)
    result_goals = goals(table, len(probes.drop_duplicates(["network", "topology", "trial",
                                                           "skewness"])))
    ratio_figure(table, ["skewness", "network"], ARMS, "MLP time / NDLF's (median over "
                 "trials)").savefig(out_path(f"{stem}.png"), dpi=120)
    print(table.pivot_table(index=["network", "skewness"], columns="method",
                            values="ratio").round(3).to_string())
    for name, values in result_goals.items():
        print(name, values)
    write_json(f"{stem}.json", {
        "command": "python -m analyses.workload_probes" + (" --quick" if quick else ""),
        "topokit_version": __version__, "date": date.today().isoformat(), "machine": machine(),
        "goals": result_goals, "ratios": table.to_dict(orient="records"),
        "seconds": round(time.perf_counter() - started)})


if __name__ == "__main__":
    run_quick(main)
