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

Mixing weights (``--mixing``, default all three): every topology is trained
with the paper's Lazy-Metropolis weights (``lazy-metropolis``, the topology as
it is), again with Metropolis-Hastings weights 1 / (1 + max(d_i, d_j)) on the
same links (``metropolis``, :func:`topokit.design.metropolis_hastings_topology`)
and, on networks of at most ``FASTEST_MAX_DEVICES`` = 48 devices (where the
cvxpy SDP is exact and takes seconds; the first-order method at 64 devices is
not certified within its default steps), with Boyd, Diaconis and Xiao's
fastest-mixing weights (``fastest``, :func:`topokit.fastest_mixing_topology`,
which drops links the optimum leaves unused).  So 2,205 Lazy-Metropolis runs
(21 networks x 3 skewness x 11-13 topologies x 3 trials), as many
Metropolis-Hastings ones and 1,890 fastest-mixing ones (the 18 networks of at
most 48 devices): 6,300 runs.  A weighted run trains with its weights and its features are computed
from its mixing matrix W (``Topology.weights``).  The corpus table says which
weighting a run had (column ``weighting``; ``base_topology`` names the
topology it weights, and weighted runs are named ``BASE/metropolis`` and
``BASE/fastest``), so a fit can keep or drop them.

The predictor: :class:`topokit.design.time_predictor.TrainingTimePredictor`
fitted on every run at 88 % (the issue's target), every weighting, saved to
``datasets/predictor_default.json`` with its provenance.

The MLP's predictor (``--model mlp``, ``load_predictor("mlp")``): the same
corpus trained with topokit's MLP instead (``model="mlp"``, same data, DP,
learning rate and T) on the networks of ``MLP_SIZES`` = 8-32 devices (an MLP
run takes 0.6 s at 16 devices and 2.3 s at 32 on one core, so 48 and 64 would
add about two hours), fitted and judged the same way and saved to
``datasets/predictor_mlp.json``; its outputs are named
``predictor_corpus_mlp.*`` and its runs kept in ``predictor_corpus_mlp_parts``.

The judgement: leave-network-out.  For every network, the predictor is fitted
on the other networks' runs and predicts this one's; the Spearman correlation
of predicted and measured time-to-target (rounds x L), runs that never reach
the target ranked slowest (rank of ``inf``), is computed per (network,
skewness) -- the topologies a user would choose between -- for the predictor
and for eq. (15) on the same runs; and how often "never reaches the target"
is predicted right.  For the weighted runs also: the time of each weighted
run over the Lazy-Metropolis run of the same topology and trial, measured and
predicted (held out), i.e. whether the fit knows what the weights gain.

Run: python analyses/predictor_corpus.py [--quick] [--n-jobs 2]
[--mixing lazy-metropolis,metropolis,fastest]
Time on this 2-core machine (estimated from the quick run and one full-size
cell, siot48-s2-coloc100 at K = 0.4: its 66 weighted runs took 42 s on one
core, 0.6 s a run with validate's audit and features, and its designs with 11
fastest-mixing SDPs 38 s): about 30-45 min for the 4,095 weighted runs when
the 2,205 Lazy-Metropolis runs saved in predictor_corpus_parts are adopted (as
they were in every cell tried), about 45-65 min with --fresh; then the 21
leave-network-out fits and the figure, a few minutes.  ``--quick`` (6
networks of 8-32 devices, K = 0 / 0.8, 2 trials, 7 topologies each, 504
runs): 1.5-3 min (with the machine's load) with its Lazy-Metropolis runs read
back, 20-40 s with every run saved.
Writes analyses/out/predictor_corpus.parquet (the corpus),
analyses/out/predictor_corpus.{json,png}, and datasets/predictor_default.json
(with --quick: analyses/out/predictor_corpus_quick.predictor.json instead).  The runs of each
(network, skewness) are kept in analyses/out/predictor_corpus_parts/, each run
with a key (column ``run_key``) digesting everything it depends on: the
network, the topology with its DP devices and weights, the weighting, the
skewness, the trial seeds, the targets, T, the data, and what the training
code does (:func:`training_digest`, two tiny seeded runs: a change of the
training code that changes results makes every saved run stale).  A later call
reuses a topology's runs only under the key its inputs give now and trains the
rest (an interrupted run resumes; a changed topology is trained again); the
features are always recomputed.  Files written before run keys are read too:
while the training code gives the results it gave them (``LEGACY_TRAINING``),
their (Lazy-Metropolis) runs are adopted when every trial's seed, targets and
the topology's links, DP devices, phi, H, spectral gap, L and (where
recorded) exposure counts match the topology built now, and trained again
otherwise.  --fresh trains every run asked for again.
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
from topokit.design.validation import _TRIAL, validate  # noqa: E402
from topokit.errors import InvalidInputError  # noqa: E402
from topokit.kernels._fmmc import SDP_MAX_NODES  # noqa: E402
from topokit.training import load_digits, make_partitioner  # noqa: E402

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

#: The mixing weights a run can have: the paper's Lazy-Metropolis (the topology as it is),
#: Metropolis-Hastings, Boyd-Diaconis-Xiao fastest mixing (the names of ``optimize(mixing=)``).
MIXINGS = ("lazy-metropolis", "metropolis", "fastest")
#: Fastest-mixing weights only up to this many devices: the exact SDP (seconds at 48
#: devices); at 64 the first-order method is not certified within its default steps.
FASTEST_MAX_DEVICES = SDP_MAX_NODES

#: Where the shipped predictors live (bundled into the wheel as topokit/_data): the default
#: (logistic regression) and the MLP's (``load_predictor("mlp")``).
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "datasets" / "predictor_default.json"
PREDICTOR_PATHS = {"logreg": DEFAULT_PATH, "mlp": DEFAULT_PATH.with_name("predictor_mlp.json")}
#: What each model is, for the predictor's provenance.
MODEL_NAMES = {"logreg": "multinomial logistic regression (topokit.training, model='logreg')",
               "mlp": "one-hidden-layer MLP (topokit.training, model='mlp')"}

#: Structural metrics of validate's runs table that identify a topology's graph and DP set
#: (the exposure counts depend on which devices are DP, not only how many; the first
#: corpus runs did not record them, so they are compared where recorded): runs saved
#: before run keys are adopted only when they match.
LEGACY_COLUMNS = ("n_links", "n_dp_devices", "phi", "hitting_time", "spectral_gap",
                  "local_iterate")
LEGACY_OPTIONAL = ("stranger_pairs", "exposed_pairs")

#: training_digest() of the training code that the runs saved before run keys (in both
#: scripts' parts) were made with: runs of each retrained now gave the same rounds and
#: accuracies to the bit (NDLF, DLFDP and a random DP topology, with and without skew).
#: Those runs are adopted only while the training code still gives this digest.
LEGACY_TRAINING = "642afd88fb098e882823a5b730cde4c7a5590a79f2ac9c65ea84da5fe093afa1"

_RANDOM_KEY = 7
_WEIGHTS_KEY = 8
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


class Entry(NamedTuple):
    """A topology to train: its kind (how it was made), its mixing weights, the Topology."""

    kind: str
    weighting: str
    topology: topokit.Topology


class Cell(NamedTuple):
    """The runs of one network at one skewness with one model: every topology, every trial."""

    spec: NetworkSpec
    skewness: float
    topologies: dict  # name -> Entry
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
    names = [name.strip() for name in str(text).split(",") if name.strip()]
    unknown = [name for name in names if name not in MIXINGS]
    if unknown or not names:
        got = f"unknown weighting {unknown[0]!r}" if unknown else "nothing"
        raise InvalidInputError(f"--mixing: {got}; give a comma-separated subset of "
                                f"{','.join(MIXINGS)}")
    return tuple(name for name in MIXINGS if name in names)


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


def weighted(plain: topokit.Topology, net: topokit.Network, weighting: str,
             seed: int) -> topokit.Topology:
    """``plain`` (links and DP devices) with the mixing weights ``weighting`` of :data:`MIXINGS`.

    As ``optimize(mixing=...)`` weights its design: Metropolis-Hastings weights on
    the same links, or fastest-mixing ones (which may drop links the optimum leaves
    unused; ``seed`` drives the first-order method, used beyond 128 devices only).
    """
    if weighting == "lazy-metropolis":
        return plain.with_weights(None)
    if weighting == "metropolis":
        return topokit.design.metropolis_hastings_topology(plain, net)
    if weighting == "fastest":
        return topokit.fastest_mixing_topology(plain, net, seed=seed)
    raise InvalidInputError(f"weighting must be one of {', '.join(MIXINGS)}; got {weighting!r}")


def weightings_for(n_devices: int, mixings: tuple[str, ...]) -> tuple[str, ...]:
    """The weightings of ``mixings`` a network of ``n_devices`` gets (fastest up to 48)."""
    return tuple(w for w in mixings if w != "fastest" or n_devices <= FASTEST_MAX_DEVICES)


def with_weightings(plain: dict, net: topokit.Network, weightings: tuple[str, ...],
                    seed: int) -> dict:
    """name -> Entry of every plain (name -> (kind, Topology)) topology in every weighting.

    Lazy-Metropolis runs keep the plain name (as in corpora before weights); the
    others are named ``NAME/WEIGHTING``.
    """
    entries, weights_seed = {}, keyed_seed(seed, _WEIGHTS_KEY)
    for weighting in weightings:
        for name, (kind, topology) in plain.items():
            label = name if weighting == "lazy-metropolis" else f"{name}/{weighting}"
            entries[label] = Entry(kind, weighting, weighted(topology, net, weighting,
                                                             weights_seed))
    return entries


def _random_valid(net, seed: int, index: int, n_dp: int | None):
    for attempt in range(_RANDOM_ATTEMPTS):
        try:
            return random_topology(net, n_dp=n_dp,
                                   seed=keyed_seed(seed, _RANDOM_KEY, index, attempt))
        except InvalidInputError:
            continue  # this DP set cannot connect every device: draw again
    raise RuntimeError(f"no random valid topology in {_RANDOM_ATTEMPTS} draws")


def build_topologies(spec: NetworkSpec, quick: bool,
                     mixings: tuple[str, ...] = MIXINGS) -> dict:
    """name -> Entry: AutoTag (eq. 15), the baselines and random valid topologies, each in
    every weighting of ``mixings`` the network's size allows."""
    net = spec.build()
    design = autotag(net)
    seed = _seed(spec)
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
    return with_weightings(topologies, net, weightings_for(net.n_devices, mixings), seed)


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


def trial_seed(seed: int, trial: int) -> int:
    """The training seed validate gives trial ``trial`` of a job seeded ``seed``."""
    return keyed_seed(seed, _TRIAL, trial)


def training_digest() -> str:
    """What the training code does now: a digest of two tiny seeded runs.

    Logistic regression and the MLP on the toy network, two DP devices,
    Metropolis-Hastings weights, skewness 0.5, 5 rounds; the final models and
    accuracies to 9 decimals.  It is part of every run key, so a change of the
    training code that changes results makes every saved run stale.  Computed
    once per process.
    """
    if not _TRAINING_DIGEST:  # a list, not functools.cache: joblib pickles __main__'s globals
        _TRAINING_DIGEST.append(_reference_runs_digest())
    return _TRAINING_DIGEST[0]


_TRAINING_DIGEST: list[str] = []


def _reference_runs_digest() -> str:
    from topokit.training import train

    net = topokit.load_example("toy")
    plain = topokit.Topology(ndlf(net).edges, net.nodes[:2])
    topology = topokit.design.metropolis_hastings_topology(plain, net)
    X, y = load_digits()
    parts = []
    for model in ("logreg", "mlp"):
        run = train(net, topology, X, y, rounds=5, partition=0.5, seed=0, model=model)
        parts += [np.round(run.final_params, 9).tobytes(), np.round(run.accuracy, 9).tobytes()]
    return digest(*parts)


def data_digest(X, y) -> str:
    return digest(np.ascontiguousarray(X).tobytes(), np.ascontiguousarray(y).tobytes())


def run_key(network: str, entry: Entry, settings: dict) -> str:
    """The key of a topology's runs: a digest of all they depend on.

    ``network`` is the network's digest (:func:`_common.network_digest`);
    ``entry`` gives the weighting and the topology (links, DP devices, weights);
    ``settings`` the rest (skewness, validate's seed, targets, training options,
    the data's digest...).  Trial t of a topology depends on these and t only
    (validate seeds trial t alike whatever else it trains), not on how the
    topology was made: two methods that give the same topology share a key.
    """
    return digest(network, entry.weighting, entry.topology.to_dict(), settings)


def _cell_keys(cell: Cell, net, data: str) -> dict[str, str]:
    settings = {"skewness": cell.skewness, "seed": _seed(cell.spec), "targets": TARGETS,
                "rounds": ROUNDS, "data": data, "training": training_digest()}
    if cell.model != "logreg":  # logistic regression's keys predate the option: kept as they were
        settings["model"] = cell.model
    network = network_digest(net)
    return {name: run_key(network, entry, settings) for name, entry in cell.topologies.items()}


def expected_metrics(net, entries: dict, seed: int, trials: int) -> pd.DataFrame:
    """:func:`legacy_metrics` of the Lazy-Metropolis entries only: the corpus's runs saved
    before run keys were all Lazy-Metropolis."""
    plain = {name: entry for name, entry in entries.items()
             if entry.weighting == "lazy-metropolis"}
    return legacy_metrics(net, plain, seed, trials)


def legacy_metrics(net, entries: dict, seed: int, trials: int) -> pd.DataFrame:
    """One row per (topology, trial): its seed and :data:`LEGACY_COLUMNS` (and
    :data:`LEGACY_OPTIONAL`), what a run saved before run keys must show to be adopted."""
    rows = []
    for name, entry in entries.items():
        metrics = topokit.evaluate(net, entry.topology)
        values = {column: float(getattr(metrics, column))
                  for column in (*LEGACY_COLUMNS, *LEGACY_OPTIONAL)}
        rows += [{"topology": name, "trial": t, "seed": trial_seed(seed, t), **values}
                 for t in range(trials)]
    return pd.DataFrame(rows, columns=["topology", "trial", "seed", *LEGACY_COLUMNS,
                                       *LEGACY_OPTIONAL])


def train_runs(net, topologies: dict, trials: int, seed: int, skewness: float,
               keys: dict[str, str] | None = None, **options) -> pd.DataFrame:
    """validate's runs table of ``topologies`` (name -> Topology), with each run's
    ``wall_clock`` seconds (from validate's timings) as a column.

    Topologies of the same run key (``keys``, name -> key) train once: the others
    get a copy of its runs under their own name (the runs would be the same).
    """
    first = {}
    for name in topologies:
        first.setdefault(name if keys is None else keys[name], name)
    chosen = {name: topologies[name] for name in first.values()}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="skewness .* needs more rows")
        result = validate(net, chosen, targets=options.pop("targets", TARGETS),
                          trials=trials, seed=seed, partition=skewness, n_jobs=1, **options)
    timing = result.timings[["topology", "trial", "wall_clock"]]
    frame = result.frame.drop(columns=["wall_clock"], errors="ignore").merge(
        timing, on=["topology", "trial"], how="left")
    copies = [frame[frame["topology"] == first[keys[name]]].assign(topology=name)
              for name in topologies if name not in chosen]
    return pd.concat([frame, *copies], ignore_index=True)


def _measured_runs(cell: Cell, net, trials: int, path: Path, fresh: bool) -> pd.DataFrame:
    """validate's runs of the cell: saved runs whose key is unchanged, the rest trained now.

    Saved runs of topologies not asked for now (another ``--mixing``) stay in the file.
    """
    keys = _cell_keys(cell, net, data_digest(*load_digits()))
    saved = read_runs(path)
    if saved[RUN_KEY].isna().any() and training_digest() == LEGACY_TRAINING:
        # a file written before run keys, by the training code of today
        saved = adopt_legacy(saved, expected_metrics(net, cell.topologies, _seed(cell.spec),
                                                     trials), keys, TARGETS, LEGACY_COLUMNS,
                              LEGACY_OPTIONAL)
    reused, missing = reusable_runs(saved, keys, trials)
    if fresh:
        reused, missing = reused.iloc[:0], list(keys)
    if not missing:
        return reused
    trained = train_runs(net, {name: cell.topologies[name].topology for name in missing},
                         trials, _seed(cell.spec), cell.skewness, keys, rounds=ROUNDS,
                         model=cell.model)
    write_runs(path, merge_runs(saved, trained, keys))
    trained = trained.assign(**{RUN_KEY: trained["topology"].map(keys)})
    return pd.concat([frame for frame in (reused, trained) if len(frame)], ignore_index=True)


def run_cell(cell: Cell, trials: int, parts: Path, fresh: bool = False) -> pd.DataFrame:
    """Train every topology of the cell ``trials`` times; the runs with their features."""
    X, y = load_digits()
    net = cell.spec.build()
    path = parts / f"{cell.spec.name}_K{cell.skewness:g}.parquet"
    entries = cell.topologies
    frame = _measured_runs(cell, net, trials, path, fresh)
    frame = frame.assign(kind=frame["topology"].map(lambda name: entries[name].kind),
                         weighting=frame["topology"].map(lambda name: entries[name].weighting),
                         base_topology=frame["topology"].str.split("/").str[0])
    return _with_features(frame, net, cell, X, y)


def features_row(net, topology: topokit.Topology, counts: np.ndarray) -> dict:
    """A run's features (from the mixing matrix the topology carries, else Lazy-Metropolis)
    for its devices' class counts, with the topology and counts as JSON."""
    features = topology_features(net, topology, class_counts=counts)
    return {**features.to_dict(), "topology_json": json.dumps(topology.to_dict()),
            "class_counts_json": json.dumps(np.asarray(counts).tolist())}


def _with_features(frame: pd.DataFrame, net, cell: Cell, X, y) -> pd.DataFrame:
    counts = {seed: class_counts(net, cell.skewness, seed, X, y)
              for seed in frame["seed"].unique()}
    cache: dict[tuple[str, int], dict] = {}  # one per run, not per target
    rows = []
    for name, seed in zip(frame["topology"], frame["seed"], strict=True):
        if (name, seed) not in cache:
            cache[name, seed] = features_row(net, cell.topologies[name].topology, counts[seed])
        rows.append(cache[name, seed])
    extra = pd.DataFrame(rows, index=frame.index)
    frame = frame.drop(columns=[c for c in extra.columns if c in frame.columns])
    return pd.concat([frame, extra], axis=1).assign(
        skewness=cell.skewness, n_devices=net.n_devices, net_seed=cell.spec.seed,
        colocation=cell.spec.colocation if cell.spec.colocation is not None else np.nan)


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
    # Largest cells first: the two workers finish together.
    cells.sort(key=lambda c: -c.spec.n_devices)
    frames = Parallel(n_jobs=n_jobs)(delayed(run_cell)(c, trials, parts, fresh) for c in cells)
    return pd.concat(frames, ignore_index=True)


def load_or_generate(quick: bool, n_jobs: int, path: Path, fresh: bool,
                     mixings: tuple[str, ...] = MIXINGS, model: str = "logreg",
                     sizes: tuple[int, ...] = SIZES) -> pd.DataFrame:
    """The corpus: measured now, or read back cell by cell from an earlier run."""
    X, y = load_digits()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="skewness .* needs more rows")
        check_counts(X, y)  # the partition replay still matches train's
    frame = generate_corpus(quick, n_jobs, fresh, mixings, model, sizes).assign(model=model)
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


def spearman_by_weighting(predicted: pd.DataFrame) -> dict:
    """Per weighting: median over cells of the Spearman among that weighting's runs only."""
    result = {}
    for weighting, runs in predicted.groupby("weighting"):
        scores = [score_cell(cell)["spearman"]
                  for _, cell in runs.groupby(["network", "skewness"], sort=False)]
        values = pd.Series(scores, dtype=float).dropna()
        result[weighting] = {"spearman": float(values.median()) if len(values) else np.nan,
                             "cells": int(values.size), "runs": int(len(runs))}
    return result


def weighting_gains(predicted: pd.DataFrame) -> dict:
    """Per weighting: each weighted run's time over the Lazy-Metropolis run of the same
    topology and trial, measured and predicted (held out); never reached = T + 1 rounds.

    Does the fit know what the weights gain?  ``*_geometric_mean`` over the pairs,
    ``*_faster`` the share of pairs below 1, ``agree`` the share where measured and
    predicted fall on the same side of 1, ``spearman`` between the two ratios.
    """
    from scipy.stats import spearmanr

    if "lazy-metropolis" not in set(predicted["weighting"]):
        return {}
    capped = float(ROUNDS + 1)
    L = predicted["local_iterate"].to_numpy(float)
    frame = predicted.assign(
        measured=np.minimum(predicted["rounds"].to_numpy(float), capped) * L,
        forecast=np.minimum(predicted["predicted_rounds"].to_numpy(float), capped) * L)
    keys = ["network", "skewness", "base_topology", "trial"]
    wide = frame.pivot_table(index=keys, columns="weighting", values=["measured", "forecast"])
    result = {}
    for weighting in wide["measured"].columns.drop("lazy-metropolis"):
        ratios = pd.DataFrame({
            "measured": wide["measured"][weighting] / wide["measured"]["lazy-metropolis"],
            "forecast": wide["forecast"][weighting] / wide["forecast"]["lazy-metropolis"],
        }).dropna()
        measured, forecast = ratios["measured"].to_numpy(), ratios["forecast"].to_numpy()
        result[weighting] = {
            "pairs": int(len(ratios)),
            "measured_geometric_mean": float(np.exp(np.log(measured).mean())),
            "predicted_geometric_mean": float(np.exp(np.log(forecast).mean())),
            "measured_faster": float(np.mean(measured < 1)),
            "predicted_faster": float(np.mean(forecast < 1)),
            "agree": float(np.mean((measured < 1) == (forecast < 1))),
            "spearman": float(spearmanr(measured, forecast).statistic) if len(ratios) > 2
            else np.nan}
    return result


def provenance(corpus: pd.DataFrame, runs: pd.DataFrame, summary: dict,
               model: str = "logreg") -> dict:
    """What a shipped predictor was fitted on, recorded in its JSON."""
    return {
        "script": "analyses/predictor_corpus.py" + ("" if model == "logreg"
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


def main() -> None:
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
    args = parser.parse_args()
    try:
        mixings = parse_mixing(args.mixing)
        sizes = parse_sizes(args.sizes, MLP_SIZES if args.model == "mlp" else SIZES)
    except InvalidInputError as error:
        parser.error(str(error))
    start = time.perf_counter()
    name = corpus_name(args.quick, args.model)
    corpus = load_or_generate(args.quick, min(args.n_jobs, 2), out_path(f"{name}.parquet"),
                              args.fresh, mixings, args.model, sizes)
    print(f"corpus: {len(corpus)} rows ({corpus['network'].nunique()} networks) in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    runs = at_target(corpus)
    settings = FeatureSettings(n_samples=training_rows(corpus))
    scores, predicted = leave_network_out(runs, settings)
    summary = {**summarise(scores, predicted), "by_weighting": spearman_by_weighting(predicted),
               "weighting_gains": weighting_gains(predicted)}
    predictor = fit_predictor(runs, settings)
    target = out_path(f"{name}.predictor.json") if args.quick else PREDICTOR_PATHS[args.model]
    predictor.save(target, provenance(corpus, runs, summary, args.model))
    from topokit.plotting._style import save_figure

    save_figure(figure(predicted), out_path(f"{name}.png"))
    seconds = time.perf_counter() - start
    write_json(f"{name}.json", {"machine": machine(), "seconds": seconds, "summary": summary,
                                "cells": scores.to_dict(orient="records"),
                                "predictor": str(target), "model": args.model})
    print_summary(summary, scores, predictor, seconds)


if __name__ == "__main__":
    main()
