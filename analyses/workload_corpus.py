"""A corpus of training runs across workloads: DP budget, target, data, model.

The runs behind the predictor that knows the workload (``load_predictor("workload")``):
the networks and topologies of ``analyses/predictor_corpus.py`` (SIoT networks of
12, 16 and 24 devices, seeds 0-2: two of the generator's defaults, one with
co-location links of 100 m; AutoTag's design, NDLF, DLFDP, ERG, random valid
topologies with and without DP devices, thinned social graphs), with
Lazy-Metropolis and fastest-mixing weights, trained by ``topokit.validate`` at
epsilon = 0.25, 0.5, 1, 2, 4 and 8 per round (delta = 1e-5, clipped sensitivity; a
topology without DP devices trains once, its runs hold for every epsilon),
skewness K = 0 and 0.8, two trials, on two data sets:

- ``digits``: scikit-learn's digits (1797 rows, 10 classes); targets 0.80-0.94;
- ``generated``: :func:`generated_data`, 1,800 rows of scikit-learn's
  ``make_classification`` (24 features, 10 classes, class_sep 1.1, 5 % flipped
  labels), whose centralised accuracy is about 0.62; targets 0.40-0.60, up to
  the ceiling.

Every run records its rounds to each target; :func:`workload_rows` gives every
(run, target) its features at the run's own noise multiplier and class counts,
and its target closeness ``target / ceiling`` (the ceiling from
:func:`topokit.training.ceiling.ceiling_probe` on the same data and model).

Run (from the repository root): python -m analyses.workload_corpus [--models logreg,mlp]
[--data digits,generated] [--n-jobs 2] [--quick].  Logistic regression on both data
sets: about 25 min on 2 cores (MLP about five times that).  Writes
analyses/out/workload_corpus.parquet (other models or data:
``workload_corpus_<models>_<data>.parquet``, :func:`corpus_name`); the runs of each
(network, skewness, data, model) are kept under run keys in
analyses/out/workload_corpus_parts/ (an interrupted call resumes; a changed input trains
again).
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from typing import NamedTuple

import numpy as np
import pandas as pd

from analyses._common import (
    cached_runs,
    data_digest,
    digest,
    network_digest,
    out_path,
    parse_subset,
    training_digest,
)
from analyses.predictor_corpus import corpus_seed
from topokit._jobs import run_resumable
from topokit.design.features import topology_features
from topokit.dp import gaussian_sigma
from topokit.training import DPConfig, load_digits, partition_class_counts
from topokit.training.ceiling import ceiling_probe
from topokit.validation.corpus import CorpusEntry, NetworkSpec, corpus_topologies, train_runs

SIZES = (12, 16, 24)
VARIANTS = ((0, None), (1, None), (2, 100.0))
EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
DELTA = 1e-5
SKEWNESS = (0.0, 0.8)
TRIALS = 2
ROUNDS = 200
MODELS = ("logreg", "mlp")
DATA = ("digits", "generated")
#: Targets of each data set: far below its ceiling up to it.
TARGETS = {"digits": (0.80, 0.85, 0.88, 0.90, 0.92, 0.94),
           "generated": (0.40, 0.45, 0.50, 0.55, 0.58, 0.60)}
MIXINGS = ("lazy-metropolis", "fastest")


def generated_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A 10-class data set whose centralised accuracy is about 0.62 (logistic regression).

    >>> X, y = generated_data()
    >>> X.shape, len(set(y.tolist()))
    ((1800, 24), 10)
    """
    from sklearn.datasets import make_classification

    from topokit.training.data import standardize

    X, y = make_classification(n_samples=1800, n_features=24, n_informative=12, n_redundant=4,
                               n_classes=10, n_clusters_per_class=1, class_sep=1.1, flip_y=0.05,
                               random_state=seed)
    return standardize(X), y.astype(np.int64)


def load_data(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The data set ``name`` of :data:`DATA`."""
    return load_digits() if name == "digits" else generated_data()


def noise_multiplier(epsilon: float) -> float:
    """z of a DP device at ``epsilon`` per round (delta 1e-5; analytic Gaussian mechanism)."""
    return float(gaussian_sigma(epsilon, DELTA, 1.0))


class Cell(NamedTuple):
    """The runs of one network at one skewness, on one data set with one model."""

    spec: NetworkSpec
    skewness: float
    data: str
    model: str


def entries_at_epsilons(entries: dict[str, CorpusEntry]) -> dict[str, tuple[CorpusEntry, float]]:
    """name@eps -> (entry, epsilon) for topologies with DP devices, name -> (entry, nan)
    for those without (their runs hold at every epsilon)."""
    out = {}
    for name, entry in entries.items():
        if entry.topology.dp_devices:
            out.update({f"{name}@{eps:g}": (entry, eps) for eps in EPSILONS})
        else:
            out[name] = (entry, float("nan"))
    return out


def _keys(cell: Cell, net, runs: dict, data: str) -> dict[str, str]:
    settings = {"skewness": cell.skewness, "seed": corpus_seed(cell.spec), "rounds": ROUNDS,
                "targets": TARGETS[cell.data], "data": data, "model": cell.model,
                "training": training_digest()}
    network = network_digest(net)
    return {name: digest(network, entry.weighting, entry.topology.to_dict(),
                         {**settings, "epsilon": None if np.isnan(eps) else eps})
            for name, (entry, eps) in runs.items()}


#: Where each cell's runs are kept (under analyses/out/).
PARTS = "workload_corpus_parts"


def run_cell(cell: Cell, topologies: dict[str, CorpusEntry], trials: int,
             parts: str = PARTS) -> tuple[pd.DataFrame]:
    """Train the cell's runs not saved yet; every run of the cell, with its epsilon (kept in
    analyses/out/``parts``/)."""
    X, y = load_data(cell.data)
    net = cell.spec.build()
    runs = entries_at_epsilons(topologies)
    keys = _keys(cell, net, runs, data_digest(X, y))
    path = out_path(parts) / (
        f"{cell.spec.name}_K{cell.skewness:g}_{cell.data}_{cell.model}.runs.parquet")
    path.parent.mkdir(exist_ok=True)

    def train(missing: list[str], scratch) -> pd.DataFrame:
        frames = []
        # One validate call per epsilon; None: the topologies without DP devices.
        budgets = {name: None if np.isnan(runs[name][1]) else runs[name][1] for name in missing}
        for eps in sorted(set(budgets.values()), key=lambda e: (e is None, e or 0.0)):
            chosen = [name for name in missing if budgets[name] == eps]
            dp = None if eps is None else DPConfig(epsilon=eps, delta=DELTA)
            frames.append(train_runs(
                net, {name: runs[name][0].topology for name in chosen}, trials,
                corpus_seed(cell.spec), cell.skewness, {name: keys[name] for name in chosen},
                targets=TARGETS[cell.data], rounds=ROUNDS, model=cell.model, X=X, y=y, dp=dp))
        return pd.concat(frames, ignore_index=True)

    reused, trained = cached_runs(path, keys, trials, train)
    # One row per run and target, whatever copies a part file holds.
    frame = pd.concat([f for f in (reused, trained) if len(f)], ignore_index=True
                      ).drop_duplicates(["topology", "trial", "target"], ignore_index=True)
    frame = frame.assign(
        base=frame["topology"].str.split("@").str[0],
        run_epsilon=frame["topology"].map(lambda name: runs[name][1]),
        weighting=frame["topology"].map(lambda name: runs[name][0].weighting),
        kind=frame["topology"].map(lambda name: runs[name][0].kind),
        network=cell.spec.name, skewness=cell.skewness, data=cell.data, model=cell.model,
        n_devices=cell.spec.n_devices)
    return (frame,)


def workload_rows(runs: pd.DataFrame, ceilings: dict[tuple[str, str], float],
                  built: dict[str, dict[str, CorpusEntry]]) -> pd.DataFrame:
    """Every (run, target) at every epsilon it holds for, with its features at that epsilon.

    A run without DP devices is repeated at each of :data:`EPSILONS`.  The
    features are those of :func:`~topokit.design.features.topology_features` at
    the epsilon's noise multiplier, for the run's own class counts;
    ``target_closeness`` is the target over the data and model's ceiling.
    """
    plain = runs[runs["run_epsilon"].isna()]
    noisy = runs[runs["run_epsilon"].notna()]
    expanded = pd.concat([noisy.assign(epsilon_run=noisy["run_epsilon"])] + [
        plain.assign(epsilon_run=eps) for eps in EPSILONS], ignore_index=True)
    features = _features(expanded, built)
    rows = pd.concat([expanded.drop(columns=[c for c in features.columns if c in expanded]),
                      features], axis=1)
    ceiling = rows.apply(lambda r: ceilings[r["data"], r["model"]], axis=1)
    return rows.assign(ceiling=ceiling, target_closeness=rows["target"] / ceiling,
                       noise_multiplier=rows["epsilon_run"].map(noise_multiplier))


def _features(rows: pd.DataFrame, built: dict[str, dict[str, CorpusEntry]]) -> pd.DataFrame:
    """Features of every row (one computation per run and epsilon, not per target)."""
    cache, out, nets = {}, [], {}
    for row in rows.itertuples(index=False):
        key = (row.network, row.skewness, row.data, row.topology, row.seed, row.epsilon_run)
        if key not in cache:
            if row.network not in nets:
                nets[row.network] = _spec_of(row.network).build()
            net = nets[row.network]
            counts = _counts(net, row.data, row.skewness, int(row.seed))
            topology = built[row.network][row.base].topology
            cache[key] = topology_features(net, topology, class_counts=counts,
                                           noise_multiplier=noise_multiplier(row.epsilon_run)
                                           ).to_dict()
        out.append(cache[key])
    return pd.DataFrame(out, index=rows.index)


_COUNTS: dict = {}


def _counts(net, data: str, skewness: float, seed: int) -> np.ndarray:
    key = (net.name, data, skewness, seed)
    if key not in _COUNTS:
        _COUNTS[key] = partition_class_counts(load_data(data)[1], net.n_devices, skewness, seed,
                                              nodes=net.nodes)
    return _COUNTS[key]


def _spec_of(name: str) -> NetworkSpec:
    size, seed, kind = name.removeprefix("siot").split("-")
    return NetworkSpec(int(size), int(seed[1:]), None if kind == "oor" else 100.0)


def network_specs(quick: bool) -> list[NetworkSpec]:
    sizes = (12,) if quick else SIZES
    return [NetworkSpec(n, seed, colocation) for n in sizes for seed, colocation in VARIANTS]


def build(spec: NetworkSpec) -> dict[str, CorpusEntry]:
    return corpus_topologies(spec.build(), corpus_seed(spec), n_random_dp=4, n_random_social=1,
                             mixings=MIXINGS)


def measure_ceilings(data: tuple[str, ...], models: tuple[str, ...]) -> dict:
    """(data, model) -> the centralised ceiling (seed 0)."""
    return {(d, m): ceiling_probe(*load_data(d), model=m, rounds=ROUNDS, seed=0).ceiling
            for d in data for m in models}


#: Seeds of the ceiling probes whose median rounds to 90 % of the ceiling is a (data, model)'s
#: trait (``probe_rounds``).
TRAIT_SEEDS = (0, 1, 2)


def measure_probe_rounds(data: tuple[str, ...], models: tuple[str, ...],
                         seeds: tuple[int, ...] = TRAIT_SEEDS) -> dict:
    """(data, model) -> (the median, the values per seed) of the rounds ``ceiling_probe`` takes
    to 90 % of its own ceiling (``CeilingProbe.probe_rounds``; never reached: ``ROUNDS + 1``):
    how fast the model learns with exact averaging and no noise."""
    out = {}
    for d in data:
        for m in models:
            values = [ceiling_probe(*load_data(d), model=m, rounds=ROUNDS, seed=s).probe_rounds
                      for s in seeds]
            values = [ROUNDS + 1 if v is None else int(v) for v in values]
            out[d, m] = (float(np.median(values)), values)
    return out


def with_probe_rounds(rows: pd.DataFrame, seeds: tuple[int, ...] = TRAIT_SEEDS
                      ) -> tuple[pd.DataFrame, dict]:
    """``rows`` with each run's ``probe_rounds`` (its data and model's median of
    :func:`measure_probe_rounds`), and those measurements."""
    pairs = rows[["data", "model"]].drop_duplicates().itertuples(index=False)
    measured = {}
    for d, m in pairs:
        measured.update(measure_probe_rounds((d,), (m,), seeds))
    trait = [measured[d, m][0] for d, m in zip(rows["data"], rows["model"], strict=True)]
    return rows.assign(probe_rounds=trait), measured


def generate(data: tuple[str, ...], models: tuple[str, ...], n_jobs: int,
             quick: bool) -> tuple[pd.DataFrame, dict[str, dict[str, CorpusEntry]]]:
    """Every cell's runs, and the topologies of every network (name -> entries)."""
    from joblib import Parallel, delayed

    specs = network_specs(quick)
    built = Parallel(n_jobs=n_jobs)(delayed(build)(spec) for spec in specs)
    cells = [(Cell(spec, k, d, m), topologies)
             for spec, topologies in zip(specs, built, strict=True)
             for k in SKEWNESS for d in data for m in models]
    job = run_resumable(cells, partial(_run, trials=TRIALS), n_jobs=n_jobs)
    return job.tables["part"], {spec.name: t for spec, t in zip(specs, built, strict=True)}


def _run(task, trials: int):
    cell, topologies = task
    return run_cell(cell, topologies, trials)


def corpus_name(models: tuple[str, ...], data: tuple[str, ...], quick: bool = False) -> str:
    """The corpus file's stem: ``workload_corpus`` for logistic regression on both data sets,
    else named by its models and data (``workload_corpus_mlp_digits``).

    >>> corpus_name(("mlp",), ("digits",))
    'workload_corpus_mlp_digits'
    """
    stem = "workload_corpus" if (models, data) == (("logreg",), DATA) \
        else f"workload_corpus_{'-'.join(models)}_{'-'.join(data)}"
    return f"{stem}_quick" if quick else stem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="logreg")
    parser.add_argument("--data", default=",".join(DATA))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    models = parse_subset(args.models, MODELS, "--models", "model", "no model")
    data = parse_subset(args.data, DATA, "--data", "data set", "no data set")
    started = time.perf_counter()
    runs, built = generate(data, models, args.n_jobs, args.quick)
    ceilings = measure_ceilings(data, models)
    rows = workload_rows(runs, ceilings, built)
    rows.to_parquet(out_path(f"{corpus_name(models, data, args.quick)}.parquet"), index=False)
    print(f"{len(runs)} runs, {len(rows)} rows; ceilings "
          + ", ".join(f"{d}/{m} {c:.3f}" for (d, m), c in ceilings.items())
          + f"; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
