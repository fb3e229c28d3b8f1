"""Never worse than NDLF for a workload topokit has not seen.

``optimize`` told the workload of a model topokit does not ship, against NDLF, on networks
no corpus saw, across DP budgets, horizons and skewness.  The models
(:mod:`analyses.user_models`, written against topokit's public interfaces):

- ``mlp128``: :class:`~analyses.user_models.DeepMLP` with one hidden layer of 128;
- ``mlp64-32``: the same with two hidden layers of 64 and 32 (deeper, slower to learn);
- ``rff``: a plain ``trainer=`` function, logistic regression on 128 fixed random Fourier
  features of the data (:class:`~analyses.user_models.FeatureTrainer`);
- ``logreg``: topokit's logistic regression by name, told nothing beyond its epsilon,
  target and horizon (topokit knows it), for the horizons 300 and 500 and the budgets
  0.25 and 8 that ``analyses/workload_goals.py`` does not cover.

Data: scikit-learn's digits (``topokit.training.load_digits``).  Each user model's traits
are measured once, as a user would: the median over seeds 0-2 of
``ceiling_probe(X, y, model=..., rounds=200)``'s ``ceiling`` and ``probe_rounds`` (never
reached: 201), 200 rounds being the horizon the workload predictor's trait was measured
at (``analyses/workload_corpus.py``); for ``rff``, ``ceiling_probe`` of its underlying
model (logistic regression) on its features, which is exactly the training its trainer
runs.  They are cached in the parts folder, and told to every workload:
``Workload(model="mlp128", epsilon=..., target=..., rounds=..., ceiling=...,
probe_rounds=...)``.  The target is min(0.85, 0.95 x ceiling) (floored to 0.01;
recorded).

Settings: networks no corpus saw (``topokit.network.siot.siot(24, seed=...)``, seeds 300-304;
the corpora used 0-2, 100-103, 200-203): sparse long ones (co-location links of 50 m,
diameters 5-6: seeds 300 and 304) and ones of the generator's default kind (seeds 301,
302; diameters 5 and 3), alternating so that ``--networks 2`` has one of each.
``--held-out`` runs instead seeds 305 (co-location links of 50 m) and 306 (default
kind), which no rule of ``optimize`` was chosen on: the margins and the comparison of
noiseless designs at every fitted noise level were settled on seeds 300-304.
``--held-out second`` runs seeds 307 (50 m) and 308 (default kind), held out also from the
rule settled on 305 and 306 (a reference must clear the NDLF margin too, for a model the
predictor has no run of).  Settings:
epsilon per round 0.25, 1, 4 and 16 (``logreg`` also 8); horizons T = 100, 200, 300 and
500 rounds; skewness K = 0 and 0.8; 3 trials.  Two arms, trained by
``topokit.validate`` with the same trial seeds:

- ``optimize``: ``topokit.optimize(trial_net, workload=Workload(..., rounds=T),
  seed=seed)`` for the class counts of trial 0's partition (as
  ``workload_goals.run_setting`` designs), one design per horizon;
- ``ndlf``: ``topokit.design.baselines.ndlf(net)``, the social graph, no DP device.

Goals: for a user's own model told its measured ceiling and probe rounds, ``optimize`` is
never more than 2 % slower than NDLF (the median over trials of the paired ratio of
times-to-target), and never misses the target in a trial where NDLF reaches it; the same
for ``logreg`` (reported apart at T = 300 / 500 or epsilon 0.25 / 8).  Every setting more
than 2 % slower is listed with the design's reasons: its mixing weights
(``stats["mixing"]``), whether it kept NDLF and the gain it predicted
(``stats["ndlf_margin"]``), its DP devices, its predicted time, and where the workload lies
outside the predictor's fit (``stats["workload"]``, with any ``clamped`` entry).

Time-to-target is measured rounds x L (eq. 8); a run that does not reach the target within
the horizon T counts as T + 1 rounds and is counted apart.

Cost.  Each distinct topology is trained once, at the longest horizon asked for (500), and
each horizon's outcome is cut from that run: a run whose first round at the target is
later than T never reached it within T.  This is exact: ``topokit.training.train``'s step
size eta_t = lr x lr_decay^t depends on the round t only (``Schedule.step_size`` in
topokit/training/plan.py), ``validate`` sets no early stopping (``convergence=None``: every
run trains all its rounds, ``_loop.StoppingRules``), the workload's DP budget is per round
(``DPConfig(per="round")``: the noise multiplier does not depend on ``rounds``;
``privacy.resolve_noise_multipliers``), and the generators are drawn round by round, so
the first T rounds of a 500-round run are the T-round run.  Designs that are the same
across horizons (same links, DP devices and weights) are trained once, and so is a
topology without DP devices across the budgets (no device adds noise: its runs are the
same at every epsilon).  Measured on this machine (2 cores, shared with other work, so the
figures are rough, not benchmark claims): a 500-round run of 24 devices takes about 0.4 s
for ``logreg``, 0.8 s for ``rff``, 10 s for ``mlp64-32`` and 16 s for ``mlp128`` (9.5 s
for 300 rounds), and ``optimize`` 2-7 s per design (about 3.5).  The quick runs found 1-2.5
distinct topologies per (network, skewness, model, epsilon) (NDLF shared by every budget;
``optimize`` kept NDLF exactly, or the same design for every horizon, in most settings;
``mlp64-32`` at K = 0.8 had a new design at each horizon).  With 3 trials and 4 horizons
that is about 20-27 min per network (both skewness values; the MLPs are 85 % of it), so
all four networks would take 80-110 min, more than the ~90 min one call should take here:
the default runs the first two (one of each kind, about 40-55 min); ``--networks 4`` runs
all four.  The script prints its own estimate from the seconds per run it measured.
``--quick`` (one network, ``logreg`` and ``mlp128``, epsilon 1 and 16, horizons 100 and
300, 2 trials) took 2.5 min.

Resumable: the runs of each (network, skewness, model) live in
analyses/out/workload_unseen_parts/ under a key per topology (``analyses._common``'s run
keys: the network, the topology with its DP devices and weights, the skewness, the model,
the epsilon where the topology has DP devices, the trial seeds, the horizon trained, the
target, ``training_digest()``, the data, the user model's source code and topokit's shipped
predictor files); each (network, skewness, model, epsilon)'s designs and the traits are
cached beside them under a key of all they depend on (topokit's source among them).  An
interrupted call resumes; a changed input trains again.

Run (from the repository root): python -m analyses.workload_unseen [--models
logreg,mlp128,mlp64-32,rff] [--epsilons 0.25,1,4,16] [--horizons 100,200,300,500]
[--networks 2] [--trials 3] [--quick].  Writes analyses/out/workload_unseen.{json,parquet,png}
(``--quick``: workload_unseen_quick.*): the JSON holds the goals, every setting's ratio,
the settings more than 2 % slower with their reasons, every design's reasons, the traits
and the training seconds; the Parquet one row per (setting, trial, arm).
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
import warnings
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from analyses._common import (
    OUT,
    cached_runs,
    data_digest,
    digest,
    machine,
    network_digest,
    out_path,
    parse_ints,
    parse_subset,
    ratio_figure,
    topokit_source,
    training_digest,
    write_json,
)
from analyses.user_models import (
    DeepMLP,
    FeatureTrainer,
    _shared_matmul,
    feature_trainer,
    random_fourier_features,
)
from analyses.workload_goals import GoalNetwork
from topokit import Topology, Workload, __version__, optimize, validate
from topokit._io import atomic_write_text, dumps_json
from topokit.design.baselines import ndlf
from topokit.network.examples import data_dir
from topokit.training import load_digits, partition_class_counts
from topokit.training.ceiling import ceiling_probe
from topokit.validation import curves_path, timings_path
from topokit.validation.compare import paired_ratios
from topokit.validation.core import trial_seed

#: Networks no corpus saw: sparse long ones (co-location links of 50 m) and ones of the
#: generator's default kind, alternating (``--networks 2`` has one of each).
NETWORKS = (GoalNetwork(24, 300, 50.0), GoalNetwork(24, 301),
            GoalNetwork(24, 304, 50.0), GoalNetwork(24, 302))
DEFAULT_NETWORKS = 2
#: Networks held out from every rule chosen on :data:`NETWORKS` (``--held-out``): one of
#: each kind, their results written apart (``workload_unseen_heldout``).
HELD_OUT = (GoalNetwork(24, 305, 50.0), GoalNetwork(24, 306))
#: Networks held out from every rule, those settled on :data:`HELD_OUT` included
#: (``--held-out second``; ``workload_unseen_heldout2``).
HELD_OUT_SETS = {"first": HELD_OUT, "second": (GoalNetwork(24, 307, 50.0), GoalNetwork(24, 308))}
SKEWNESS = (0.0, 0.8)
HORIZONS = (100, 200, 300, 500)
TRIALS = 3
MODELS = ("logreg", "mlp128", "mlp64-32", "rff")
#: The models written by a user (told their measured traits).
USER_MODELS = ("mlp128", "mlp64-32", "rff")
EPSILONS = (0.25, 1.0, 4.0, 16.0)
LOGREG_EPSILONS = (0.25, 1.0, 4.0, 8.0, 16.0)
TARGET = 0.85
CEILING_SHARE = 0.95
TRAIT_SEEDS = (0, 1, 2)
TRAIT_ROUNDS = 200
SLOWER_AT_MOST = 1.02
QUICK = {"networks": 1, "models": ("logreg", "mlp128"), "epsilons": (1.0, 16.0),
         "horizons": (100, 300), "trials": 2}
PARTS = "workload_unseen_parts"


# ---------------------------------------------------------------------------------------------
# Models, data, traits
# ---------------------------------------------------------------------------------------------


def data() -> tuple[np.ndarray, np.ndarray]:
    return load_digits()


def epsilons_of(model: str, epsilons: tuple[float, ...] | None) -> tuple[float, ...]:
    """The budgets a model runs at: ``epsilons`` if given, else its defaults."""
    if epsilons is not None:
        return epsilons
    return LOGREG_EPSILONS if model == "logreg" else EPSILONS


def user_model(name: str, X: np.ndarray, y: np.ndarray, skewness: float = 0.0):
    """The model object (a topokit ``Model``) or trainer of ``name``; None for ``logreg``."""
    n_classes = int(np.unique(y).size)
    if name == "mlp128":
        return DeepMLP(X.shape[1], n_classes, hidden=(128,))
    if name == "mlp64-32":
        return DeepMLP(X.shape[1], n_classes, hidden=(64, 32))
    if name == "rff":
        return feature_trainer(X, y, partition=skewness)
    return None


def validate_options(name: str, X: np.ndarray, y: np.ndarray, skewness: float) -> dict:
    """What ``validate`` is told to train ``name`` with: ``model=`` or ``trainer=``."""
    made = user_model(name, X, y, skewness)
    if made is None:
        return {}
    return {"trainer": made} if isinstance(made, FeatureTrainer) else {"model": made}


def model_source(name: str) -> str:
    """The source code a model's runs depend on (part of their keys)."""
    if name in ("mlp128", "mlp64-32"):
        return inspect.getsource(DeepMLP) + inspect.getsource(_shared_matmul)
    if name == "rff":
        return inspect.getsource(FeatureTrainer) + inspect.getsource(random_fourier_features)
    return ""


def predictor_files() -> list[bytes]:
    return [path.read_bytes() for path in sorted(data_dir().glob("predictor_*.json"))]


def _parts() -> Path:
    folder = out_path(PARTS)
    folder.mkdir(exist_ok=True)
    return folder


def _cached_json(name: str, key: str, compute) -> Any:
    """``compute()``, saved in the parts folder as NAME_KEY.json and read back from there."""
    import json

    path = _parts() / f"{name}_{key[:24]}.json"
    if path.exists():
        return json.loads(path.read_text())
    value = compute()
    atomic_write_text(path, dumps_json(value))
    return json.loads(path.read_text())


def measure_traits(name: str, X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """A user model's ceiling and probe rounds (medians over :data:`TRAIT_SEEDS` of
    ``ceiling_probe`` at :data:`TRAIT_ROUNDS` rounds), its target and the seconds taken."""
    made = user_model(name, X, y)
    features, model = (made.features(), made.model()) if isinstance(made, FeatureTrainer) \
        else (X, made)

    def compute():
        started = time.perf_counter()
        probes = [ceiling_probe(features, y, model=model, rounds=TRAIT_ROUNDS, seed=s)
                  for s in TRAIT_SEEDS]
        rounds = [TRAIT_ROUNDS + 1 if p.probe_rounds is None else int(p.probe_rounds)
                  for p in probes]
        ceiling = float(np.median([p.ceiling for p in probes]))
        return {"ceiling": ceiling, "probe_rounds": float(np.median(rounds)),
                "ceilings": [p.ceiling for p in probes], "probe_rounds_per_seed": rounds,
                "target": math.floor(100 * min(TARGET, CEILING_SHARE * ceiling)) / 100,
                "seconds": round(time.perf_counter() - started, 1)}

    key = digest(name, model_source(name), repr(model), training_digest(), data_digest(X, y),
                 TRAIT_SEEDS, TRAIT_ROUNDS, TARGET, CEILING_SHARE)
    return _cached_json(f"traits_{name}", key, compute)


def workload_of(model: str, epsilon: float, rounds: int, traits: dict) -> Workload:
    """The workload a user states: ``logreg`` by name; a user model with its traits."""
    if model == "logreg":
        return Workload(model="logreg", epsilon=epsilon, target=TARGET, rounds=rounds)
    mine = traits[model]
    return Workload(model=model, epsilon=epsilon, target=mine["target"], rounds=rounds,
                    ceiling=mine["ceiling"], probe_rounds=mine["probe_rounds"])


# ---------------------------------------------------------------------------------------------
# Designs
# ---------------------------------------------------------------------------------------------


def canonical(topology: Topology) -> str:
    """A digest of a topology's links, DP devices and weights, independent of their order."""
    data = topology.to_dict()
    weights = data.get("weights") or [None] * len(data["edges"])
    edges = sorted((sorted((repr(u), repr(v))), None if w is None else round(float(w), 12))
                   for (u, v), w in zip(data["edges"], weights, strict=True))
    return digest(edges, sorted(repr(node) for node in data["dp_devices"]))


def same_links(a: Topology, b: Topology) -> bool:
    """Whether two topologies have the same links and DP devices (any weights)."""
    return (set(map(frozenset, a.edges)) == set(map(frozenset, b.edges))
            and set(a.dp_devices) == set(b.dp_devices))


class Unit(NamedTuple):
    """One (network, skewness, model): its runs share one file of keyed runs."""

    spec: GoalNetwork
    skewness: float
    model: str

    @property
    def seed(self) -> int:
        return 7 * self.spec.seed + int(10 * self.skewness)

    @property
    def stem(self) -> str:
        return f"{self.spec.name}_K{self.skewness:g}_{self.model}"


def _reasons(design, net) -> dict[str, Any]:
    """What a design's stats say of why it is what it is."""
    stats = design.stats
    margin = stats.get("ndlf_margin") or {}
    record = stats.get("workload") or {}
    return {
        "n_dp_devices": len(design.topology.dp_devices),
        "n_links": design.topology.n_links,
        "pseudo_time": float(design.metrics.pseudo_time),
        "kept_ndlf": margin.get("kept_ndlf"), "predicted_gain": margin.get("predicted_gain"),
        "margin": margin.get("margin"), "ndlf_weights": margin.get("ndlf_weights"),
        "mixing": stats.get("mixing"),
        "outside": list(record.get("outside") or []),
        "clamped": record.get("clamped") or {},
        "designed_at": record.get("designed_at"),
        "predicted_rounds_at_workload": record.get("predicted_rounds_at_workload"),
        "same_links_as_ndlf": same_links(design.topology, ndlf(net)),
        # Everything else the stats say (as optimize records it now).
        "ndlf_margin_record": margin,
        "workload_record": {key: value for key, value in record.items() if key != "workload"},
    }


def designs(unit: Unit, epsilon: float, horizons: tuple[int, ...], traits: dict,
            y: np.ndarray) -> dict[int, dict]:
    """horizon -> the ``optimize`` design for the workload of that horizon (its topology as
    a dict, its reasons, the warnings optimize gave), for trial 0's class counts; cached
    under a key of the network, the counts, the workloads, the seed, the shipped predictors
    and topokit's source."""
    net = unit.spec.build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = partition_class_counts(y, net.n_devices, unit.skewness,
                                        trial_seed(unit.seed, 0), nodes=net.nodes)
    trial_net = net.with_class_counts(counts)
    workloads = {h: workload_of(unit.model, epsilon, h, traits) for h in horizons}

    def compute():
        out = {}
        for h, workload in workloads.items():
            started = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                design = optimize(trial_net, workload=workload, seed=unit.seed)
            out[str(h)] = {"topology": design.topology.to_dict(),
                           "seconds": round(time.perf_counter() - started, 2),
                           "warnings": sorted({str(w.message) for w in caught}),
                           **_reasons(design, net)}
        return out

    key = digest(network_digest(net), np.ascontiguousarray(counts).tobytes(), unit.seed,
                 [w.to_dict() for w in workloads.values()], predictor_files(), topokit_source())
    saved = _cached_json(f"designs_{unit.stem}_eps{epsilon:g}", key, compute)
    return {int(h): value for h, value in saved.items()}


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------


class Plan(NamedTuple):
    """A unit's distinct topologies to train and which serves each (epsilon, horizon, arm)."""

    topologies: dict[str, Topology]  # name -> topology
    epsilon: dict[str, float | None]  # name -> the budget it trains at (None: no DP device)
    arms: dict[tuple[float, int, str], str]  # (epsilon, horizon, arm) -> topology name
    reasons: dict[tuple[float, int], dict]  # (epsilon, horizon) -> the design's reasons


def plan_unit(unit: Unit, epsilons: tuple[float, ...], horizons: tuple[int, ...],
              traits: dict, y: np.ndarray) -> Plan:
    """The unit's distinct topologies: NDLF once, each distinct design once per budget (once
    in all if it has no DP device)."""
    net = unit.spec.build()
    baseline = ndlf(net)
    topologies, budget, arms, reasons = {}, {}, {}, {}

    def name_of(kind: str, topology: Topology, epsilon: float) -> str:
        noisy = bool(topology.dp_devices)
        name = f"{kind}-{canonical(topology)[:10]}" + (f"-eps{epsilon:g}" if noisy else "")
        if name not in topologies:
            topologies[name], budget[name] = topology, (epsilon if noisy else None)
        return name

    ndlf_name = name_of("ndlf", baseline, epsilons[0])
    for epsilon in epsilons:
        for h, design in designs(unit, epsilon, horizons, traits, y).items():
            topology = Topology.from_dict(design["topology"])
            same = canonical(topology) == canonical(baseline)
            arms[epsilon, h, "optimize"] = ndlf_name if same else name_of("opt", topology,
                                                                          epsilon)
            arms[epsilon, h, "ndlf"] = ndlf_name
            reasons[epsilon, h] = design
    return Plan(topologies, budget, arms, reasons)


def train_unit(unit: Unit, plan: Plan, trials: int, rounds: int, traits: dict,
               X: np.ndarray, y: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs reused, runs trained now) of the unit's topologies: each trained by
    ``validate`` at ``rounds`` (the longest horizon), saved under its run key."""
    net = unit.spec.build()
    target = TARGET if unit.model == "logreg" else traits[unit.model]["target"]
    common = [network_digest(net), unit.skewness, unit.model, unit.seed, rounds, target,
              training_digest(), data_digest(X, y), model_source(unit.model), predictor_files()]
    keys = {name: digest(*common, canonical(topology), plan.epsilon[name])
            for name, topology in plan.topologies.items()}

    def train(missing: list[str], scratch: Path) -> pd.DataFrame:
        frames = []
        groups: dict[float | None, list[str]] = {}
        for name in missing:
            groups.setdefault(plan.epsilon[name], []).append(name)
        for epsilon, names in groups.items():
            # A topology without DP devices trains without noise at any budget: 1 is as good.
            workload = workload_of(unit.model, 1.0 if epsilon is None else epsilon, rounds,
                                   traits)
            output = scratch.with_name(f"{scratch.stem}-eps{epsilon}.parquet")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = validate(net, {name: plan.topologies[name] for name in names},
                                  X=X, y=y, workload=workload, trials=trials, seed=unit.seed,
                                  partition=unit.skewness, audit_rounds=0, output=output,
                                  **validate_options(unit.model, X, y, unit.skewness))
            timings = result.timings[["topology", "trial", "wall_clock"]]
            frames.append(result.frame.merge(timings, on=["topology", "trial"], how="left"))
            for path in (output, curves_path(output), timings_path(output)):
                path.unlink(missing_ok=True)
        return pd.concat(frames, ignore_index=True)

    return cached_runs(_parts() / f"{unit.stem}.runs.parquet", keys, trials, train)


# ---------------------------------------------------------------------------------------------
# Times, ratios, goals
# ---------------------------------------------------------------------------------------------


def setting_times(unit: Unit, plan: Plan, runs: pd.DataFrame,
                  horizons: tuple[int, ...]) -> pd.DataFrame:
    """One row per (epsilon, horizon, trial, arm): time-to-target within the horizon T
    (measured rounds x L; not reached by round T: T + 1 rounds, ``never``)."""
    rows = []
    for (epsilon, h, arm), name in plan.arms.items():
        if h not in horizons:
            continue
        mine = runs[runs["topology"] == name]
        reached = mine["measured_rounds"].where(mine["measured_rounds"] <= h)
        rows.append(pd.DataFrame({
            "network": unit.spec.name, "skewness": unit.skewness, "model": unit.model,
            "epsilon": epsilon, "horizon": h, "method": arm, "topology": name,
            "trial": mine["trial"].to_numpy(), "target": mine["target"].to_numpy(),
            "local_iterate": mine["local_iterate"].to_numpy(),
            "n_dp_devices": mine["n_dp_devices"].to_numpy(),
            "measured_rounds": reached.to_numpy(),
            "time": (reached.fillna(h + 1) * mine["local_iterate"]).to_numpy(),
            "never": reached.isna().to_numpy(),
            "wall_clock": mine["wall_clock"].to_numpy(),
        }))
    return pd.concat(rows, ignore_index=True)


BY = ["model", "network", "skewness", "epsilon", "horizon"]


def ratios(times: pd.DataFrame) -> pd.DataFrame:
    """Median over trials of time(optimize) / time(NDLF) per setting, with a bootstrap
    95 % interval."""
    table = paired_ratios(times, [("optimize", "ndlf")], by=BY, value="time")
    return table.rename(columns={"top": "method"})


def missed(times: pd.DataFrame) -> pd.DataFrame:
    """Per setting: trials where optimize missed the target within T while NDLF reached it."""
    wide = times.pivot_table(index=[*BY, "trial"], columns="method", values="never",
                             aggfunc="first").reset_index()
    wide["missed"] = wide["optimize"].astype(bool) & ~wide["ndlf"].astype(bool)
    return wide.groupby(BY, as_index=False).agg(
        missed=("missed", "sum"), optimize_never=("optimize", "sum"),
        ndlf_never=("ndlf", "sum"))


def summary(table: pd.DataFrame, misses: pd.DataFrame) -> dict[str, Any]:
    """The goals of one group of settings."""
    skewed = table[table["skewness"] == 0.8]
    speedup = float(np.exp(-np.log(skewed["ratio"]).mean())) if len(skewed) else None
    worst = table.loc[table["ratio"].idxmax()] if len(table) else None
    return {"settings": int(len(table)),
            "worst_ratio": None if worst is None else float(worst["ratio"]),
            "worst_setting": None if worst is None else {k: _plain(worst[k]) for k in BY},
            "settings_slower_than_2pct": int((table["ratio"] > SLOWER_AT_MOST).sum()),
            "trials_optimize_missed_while_ndlf_reached": int(misses["missed"].sum()),
            "optimize_runs_never_reaching": int(misses["optimize_never"].sum()),
            "ndlf_runs_never_reaching": int(misses["ndlf_never"].sum()),
            "geometric_speedup_at_skew_0.8": speedup,
            "met_never_worse": bool(len(table) and table["ratio"].max() <= SLOWER_AT_MOST),
            "met_never_misses": bool(misses["missed"].sum() == 0)}


def goals(table: pd.DataFrame, misses: pd.DataFrame) -> dict[str, dict]:
    """Per model, and for ``logreg`` at T = 300 / 500 or epsilon 0.25 / 8."""
    out = {}
    for model in [m for m in MODELS if m in set(table["model"])]:
        pick = (table["model"] == model), (misses["model"] == model)
        out[model] = summary(table[pick[0]], misses[pick[1]])
        if model == "logreg" and _far(table).any():
            out["logreg_T300-500_or_eps0.25-8"] = summary(table[_far(table)],
                                                          misses[_far(misses)])
    return out


def _far(frame: pd.DataFrame) -> pd.Series:
    """The settings of ``logreg`` beyond analyses/workload_goals.py's: T = 300 / 500 or
    epsilon 0.25 / 8."""
    return ((frame["model"] == "logreg")
            & (frame["horizon"].isin([300, 500]) | frame["epsilon"].isin([0.25, 8.0])))


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _number(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) else str(value)


def why(row: pd.Series, reasons: dict, misses_row: pd.Series | None, trials: int) -> str:
    """One line of what the design's record says of a slower setting."""
    mixing = reasons["mixing"] or {}
    weights = mixing.get("weights") or "lazy-metropolis"
    dropped = f", {mixing['links_dropped']} links dropped" if mixing.get("links_dropped") else ""
    if reasons["kept_ndlf"]:
        parts = [f"kept NDLF ({reasons['ndlf_weights'] or weights} weights{dropped})"]
    elif reasons["same_links_as_ndlf"]:
        parts = [f"NDLF's links with {weights} weights"]
    else:
        parts = [f"{reasons['n_links']} links, {reasons['n_dp_devices']} DP devices, "
                 f"{weights} weights{dropped}"]
    if not reasons["kept_ndlf"] and reasons["predicted_gain"] is not None:
        parts.append(f"predicted {reasons['predicted_gain']:.3f}x faster than NDLF "
                     f"(margin {reasons['margin']:g})")
    if reasons["outside"]:
        parts.append("outside the fit: " + "; ".join(reasons["outside"]))
    if reasons["clamped"]:
        parts.append("clamped into the fit: " + ", ".join(
            f"{name} {_number(v.get('given'))} -> {_number(v.get('used'))}"
            if isinstance(v, dict) else f"{name} {v}" for name, v in reasons["clamped"].items()))
    if misses_row is not None and (misses_row["optimize_never"] or misses_row["ndlf_never"]):
        parts.append(f"never reached within T: optimize {int(misses_row['optimize_never'])}/"
                     f"{trials}, NDLF {int(misses_row['ndlf_never'])}/{trials} trials")
    if row["ci_low"] <= SLOWER_AT_MOST:
        parts.append(f"interval [{row['ci_low']:.3f}, {row['ci_high']:.3f}] reaches below "
                     f"{SLOWER_AT_MOST}")
    return "; ".join(parts)


def slower(table: pd.DataFrame, misses: pd.DataFrame, reasons: dict, trials: int) -> list:
    """Every setting more than 2 % slower than NDLF, with its design's reasons."""
    out = []
    indexed = misses.set_index(BY)
    for _, row in table[table["ratio"] > SLOWER_AT_MOST].sort_values(BY).iterrows():
        key = tuple(_plain(row[k]) for k in BY)
        mine = reasons[key]
        misses_row = indexed.loc[key] if key in indexed.index else None
        out.append({**{k: _plain(row[k]) for k in BY}, "ratio": float(row["ratio"]),
                    "ci_low": float(row["ci_low"]), "ci_high": float(row["ci_high"]),
                    **{k: mine[k] for k in ("n_dp_devices", "n_links", "pseudo_time",
                                            "kept_ndlf", "predicted_gain", "margin",
                                            "ndlf_weights", "mixing", "outside", "clamped",
                                            "same_links_as_ndlf")},
                    "why": why(row, mine, misses_row, trials)})
    return out


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help=f"comma-separated subset of {','.join(MODELS)}")
    parser.add_argument("--epsilons", help="comma-separated budgets per round (default: "
                                           "0.25,1,4,16; logreg also 8)")
    parser.add_argument("--horizons", help="comma-separated horizons T (default 100,200,300,500)")
    parser.add_argument("--networks", type=int,
                        help=f"how many of the {len(NETWORKS)} networks (default "
                             f"{DEFAULT_NETWORKS})")
    parser.add_argument("--trials", type=int, help=f"trials per setting (default {TRIALS})")
    parser.add_argument("--held-out", nargs="?", const="first", choices=tuple(HELD_OUT_SETS),
                        help="networks held out from every rule chosen on the others: 'first' "
                             "(the default of a bare --held-out; seeds "
                             f"{', '.join(str(n.seed) for n in HELD_OUT)}) or 'second' (seeds "
                             f"{', '.join(str(n.seed) for n in HELD_OUT_SETS['second'])}, held "
                             "out from the rules settled on the first too); --networks then "
                             "counts these")
    parser.add_argument("--quick", action="store_true",
                        help="one network, logreg and mlp128, epsilon 1 and 16, horizons 100 "
                             "and 300, 2 trials")
    args = parser.parse_args()
    base = QUICK if args.quick else {"networks": DEFAULT_NETWORKS, "models": MODELS,
                                     "epsilons": None, "horizons": HORIZONS, "trials": TRIALS}
    args.models = (parse_subset(args.models, MODELS, "--models", "model", "no model given")
                   if args.models else base["models"])
    if args.epsilons:
        try:
            args.epsilons = tuple(float(e) for e in args.epsilons.split(","))
        except ValueError:
            parser.error(f"--epsilons: give comma-separated numbers; got {args.epsilons!r}")
        if min(args.epsilons) <= 0:
            parser.error("--epsilons must be > 0")
    else:
        args.epsilons = base["epsilons"]
    args.horizons = (tuple(sorted(set(parse_ints(args.horizons, "--horizons", at_least=1))))
                     if args.horizons else base["horizons"])
    pool = HELD_OUT_SETS[args.held_out] if args.held_out else NETWORKS
    if args.networks is None:
        args.networks = len(pool) if args.held_out else base["networks"]
    if not 1 <= args.networks <= len(pool):
        parser.error(f"--networks must be 1 to {len(pool)}")
    args.specs = pool[:args.networks]
    args.trials = base["trials"] if args.trials is None else args.trials
    if args.trials < 1:
        parser.error("--trials must be >= 1")
    return args


def command() -> str:
    return " ".join(["python -m analyses.workload_unseen", *sys.argv[1:]])


def main() -> None:
    args = parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    X, y = data()
    rounds = max(args.horizons)
    traits = {m: measure_traits(m, X, y) for m in args.models if m in USER_MODELS}
    for model, mine in traits.items():
        print(f"{model}: ceiling {mine['ceiling']:.3f}, probe rounds {mine['probe_rounds']:g} "
              f"(per seed {mine['probe_rounds_per_seed']}), target {mine['target']:.2f}")
    units = [Unit(spec, k, m) for spec in args.specs for k in SKEWNESS
             for m in args.models]
    times, reasons, costs, distinct = [], {}, [], []
    for unit in units:
        epsilons = epsilons_of(unit.model, args.epsilons)
        plan = plan_unit(unit, epsilons, args.horizons, traits, y)
        reused, trained = train_unit(unit, plan, args.trials, rounds, traits, X, y)
        runs = pd.concat([frame for frame in (reused, trained) if len(frame)],
                         ignore_index=True)
        times.append(setting_times(unit, plan, runs, args.horizons))
        for (epsilon, h), record in plan.reasons.items():
            reasons[unit.model, unit.spec.name, unit.skewness, epsilon, h] = record
        per_run = runs.drop_duplicates(["topology", "trial"])
        costs.append({"model": unit.model, "runs": len(per_run),
                      "runs_trained_now": len(trained.drop_duplicates(["topology", "trial"]))
                      if len(trained) else 0,
                      "wall_clock": float(per_run["wall_clock"].sum())})
        distinct.append({"model": unit.model, "epsilons": len(epsilons),
                         "topologies": len(plan.topologies)})
        print(f"{unit.stem}: {len(plan.topologies)} distinct topologies "
              f"({len(trained.drop_duplicates(['topology', 'trial'])) if len(trained) else 0}"
              f" runs trained now), {time.perf_counter() - started:.0f} s so far", flush=True)
    times = pd.concat(times, ignore_index=True)
    table = ratios(times)
    misses = missed(times)
    result = goals(table, misses)
    slow = slower(table, misses, reasons, args.trials)
    cost = pd.DataFrame(costs).groupby("model").sum(numeric_only=True)
    per_run = (cost["wall_clock"] / cost["runs"]).to_dict()
    estimate = full_run_estimate(per_run, pd.DataFrame(distinct), rounds)

    stem = "workload_unseen" + ("_quick" if args.quick else "") \
        + {None: "", "first": "_heldout", "second": "_heldout2"}[args.held_out]
    times.to_parquet(out_path(f"{stem}.parquet"), index=False)
    ratio_figure(table, ["model", "epsilon", "horizon", "skewness", "network"], ("optimize",),
                 "time / NDLF's (median over trials)", SLOWER_AT_MOST
                 ).savefig(out_path(f"{stem}.png"), dpi=120)
    pd.set_option("display.width", 140)
    print(table.pivot_table(index=["model", "epsilon", "skewness", "network"],
                            columns="horizon", values="ratio").round(3).to_string())
    for name, values in result.items():
        print(name, values)
    print(f"settings more than {100 * (SLOWER_AT_MOST - 1):g} % slower than NDLF: {len(slow)}")
    for entry in slow:
        print(f"  {entry['model']} {entry['network']} K={entry['skewness']:g} "
              f"eps={entry['epsilon']:g} T={entry['horizon']}: {entry['ratio']:.3f} "
              f"- {entry['why']}")
    print("seconds per 500-round-equivalent run by model: "
          + ", ".join(f"{m} {s * 500 / rounds:.1f}" for m, s in per_run.items())
          + f"; full default grid about {estimate['default_minutes']:.0f} min, all "
            f"{len(NETWORKS)} networks about {estimate['all_networks_minutes']:.0f} min")
    write_json(f"{stem}.json", {
        "command": command(), "topokit_version": __version__,
        "date": date.today().isoformat(), "machine": machine(),
        "settings": {"networks": [spec.name for spec in args.specs],
                     "held_out": args.held_out,
                     "skewness": list(SKEWNESS), "horizons": list(args.horizons),
                     "trials": args.trials, "trained_rounds": rounds,
                     "epsilons": {m: list(epsilons_of(m, args.epsilons)) for m in args.models},
                     "targets": {m: TARGET if m == "logreg" else traits[m]["target"]
                                 for m in args.models}},
        "traits": traits,
        "traits_note": f"median over seeds {list(TRAIT_SEEDS)} of ceiling_probe(X, y, model, "
                       f"rounds={TRAIT_ROUNDS}) on digits; rff: of its logistic regression on "
                       "its features",
        "goals": result, "slower_than_2pct": slow,
        "ratios": table.to_dict(orient="records"),
        "designs": [{**dict(zip(BY, key, strict=True)),
                     **{k: v for k, v in record.items() if k != "topology"}}
                    for key, record in sorted(reasons.items(), key=lambda kv: str(kv[0]))],
        "training_seconds_per_run": per_run,
        "training_seconds_note": "mean wall-clock seconds of one run of trained_rounds "
                                 "rounds (saved runs: when they were trained)",
        "training_cost": cost.reset_index().to_dict(
            orient="records"),
        "full_run_estimate": estimate,
        "seconds": round(time.perf_counter() - started)})


#: Seconds of a 500-round run of 24 devices, measured on this machine (2 cores, shared).
_SECONDS_GUESS = {"logreg": 0.4, "rff": 0.8, "mlp64-32": 10.0, "mlp128": 16.0}


def full_run_estimate(per_run: dict[str, float], distinct: pd.DataFrame,
                      rounds: int) -> dict[str, float]:
    """Minutes of the default grid and of all networks, from this call's seconds per run
    (scaled to 500 rounds; :data:`_SECONDS_GUESS` for a model not run), the distinct
    topologies per budget it found (per model; 2 for a model not run), 3 trials and 3.5 s
    per design."""
    mean_distinct = (distinct.assign(ratio=distinct["topologies"] / distinct["epsilons"])
                     .groupby("model")["ratio"].mean().to_dict())
    per_network = 0.0
    for model in MODELS:
        seconds = (per_run[model] * max(HORIZONS) / rounds if model in per_run
                   else _SECONDS_GUESS[model])
        n_eps = len(LOGREG_EPSILONS if model == "logreg" else EPSILONS)
        per_budget = mean_distinct.get(model, 2.0)
        per_network += len(SKEWNESS) * n_eps * (per_budget * TRIALS * seconds
                                                + len(HORIZONS) * 3.5)
    return {"default_minutes": DEFAULT_NETWORKS * per_network / 60,
            "all_networks_minutes": len(NETWORKS) * per_network / 60}


if __name__ == "__main__":
    main()
