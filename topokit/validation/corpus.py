"""The corpus behind the shipped training-time predictors: its runs, fit and judgement.

topokit's default predictor (``load_predictor("default")``) and the MLP's were
fitted on a corpus of training runs: on generated SIoT networks
(:class:`NetworkSpec`), AutoTag's design, the baselines, random valid topologies
and thinned social graphs (:func:`corpus_topologies`), each with the mixing
weights of :data:`MIXINGS` (:func:`weighted_topology`), trained by
:func:`~topokit.validate` at several skewness values (:func:`train_runs`), with
the features of every run computed for its own partition (:func:`corpus_rows`).
``python -m analyses.predictor_corpus`` sets the sizes, seeds and training
settings and keeps the runs on disk; this module holds the steps, so that a
corpus of your own (other networks, data or model) is built, fitted and judged
the same way.

The fit (:func:`fit_corpus_predictor`) is :func:`~topokit.validation.calibrate`'s
refit of a :class:`~topokit.design.TrainingTimePredictor` on every run at the
target.  The judgement (:func:`judge_corpus`) is leave-network-out: each network's
runs are predicted by the predictor refitted without them
(:func:`~topokit.validation.leave_network_out` for the Spearman correlation of
each (network, skewness), :func:`held_out_predictions` for every run's
prediction), never-reached runs ranked slowest
(:func:`~topokit.validation.censored_spearman`).

===============================  =======================================================
name                             what it is
===============================  =======================================================
:class:`NetworkSpec`             a generated SIoT network (or a bundled one), by seed
:class:`CorpusEntry`             a topology to train: its kind, weighting and Topology
:func:`corpus_topologies`        the corpus's topologies of a network, in every weighting
:func:`weighted_topology`        a topology with Metropolis-Hastings or fastest weights
:func:`weightings_for`           the weightings of :data:`MIXINGS` a network's size allows
:func:`with_weightings`          every topology in every weighting, as corpus entries
:func:`random_valid_topology`    a seeded random valid topology (redrawn until valid)
:func:`named_topologies`         AutoTag's design and the baselines by name, as entries
:func:`optimize_entries`         optimize's designs for several mixing weights, as entries
:func:`benchmark_entries`        both, per skewness: optimize's for trial 0's partition
:func:`train_runs`               validate's runs, one training per distinct topology
:func:`corpus_rows`              runs with kind, weighting and per-run features
:func:`features_row`             the features of one run, for its partition
:func:`run_class_counts`         each device's class counts in a run, as train draws them
:func:`trial_predictions`        a predictor's time for each run's own partition
:func:`predicted_runs`           runs with their method, weighting and predicted times
:func:`fit_corpus_predictor`     the TrainingTimePredictor fitted on a corpus
:func:`held_out_predictions`     every run predicted without its network
:func:`cell_scores`              rank correlations of one (network, skewness)
:func:`cell_table`               :func:`cell_scores` of every cell of a runs table
:func:`judge_corpus`             the leave-network-out judgement (:class:`CorpusJudgement`)
===============================  =======================================================
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._checks import check_int_at_least
from .._random import keyed_seed
from ..design.features import FeatureSettings, topology_features
from ..design.time_predictor import DEFAULT_FEATURES, TrainingTimePredictor, load_predictor
from ..errors import InvalidInputError
from ..kernels import SDP_MAX_NODES
from ..network.core import Network, Topology
from .calibration import (
    _censored_rows,
    _fit_time_predictor,
    _select_target,
    _time_predictor,
    calibrate,
    leave_network_out,
)
from .compare import _check_columns, time_to_target
from .core import trial_seed, validate
from .stats import censored_spearman

__all__ = [
    "MIXINGS",
    "FASTEST_MAX_DEVICES",
    "NetworkSpec",
    "CorpusEntry",
    "CorpusJudgement",
    "corpus_topologies",
    "weighted_topology",
    "weightings_for",
    "with_weightings",
    "random_valid_topology",
    "NAMED_TOPOLOGIES",
    "named_topologies",
    "optimize_entries",
    "benchmark_entries",
    "train_runs",
    "corpus_rows",
    "features_row",
    "run_class_counts",
    "trial_predictions",
    "predicted_runs",
    "fit_corpus_predictor",
    "held_out_predictions",
    "cell_scores",
    "cell_table",
    "judge_corpus",
]

#: The mixing weights a corpus run can have: the paper's Lazy-Metropolis (the topology as
#: it is), Metropolis-Hastings, Boyd-Diaconis-Xiao fastest mixing (``optimize(mixing=)``'s
#: names).
MIXINGS = ("lazy-metropolis", "metropolis", "fastest")
#: Fastest-mixing weights only up to this many devices: there the SDP is exact (seconds at
#: 48 devices); beyond, the first-order method is not certified within its default steps.
FASTEST_MAX_DEVICES = SDP_MAX_NODES

_ERG_KEY, _RANDOM_KEY, _WEIGHTS_KEY = 1, 7, 8
# The sub-streams of :func:`named_topologies` and :func:`optimize_entries` (ERG's is shared).
_EXPONENTIAL_KEY, _OPTIMIZE_KEY, _NAMED_WEIGHTS_KEY = 2, 3, 4
#: The designs :func:`named_topologies` builds, in the order it returns them.
NAMED_TOPOLOGIES = ("ndlf", "autotag", "erg", "dlfdp", "exponential", "ndlf-metropolis",
                    "ndlf-fastest")
_NAMED_WEIGHTING = {"ndlf-metropolis": "metropolis", "ndlf-fastest": "fastest"}
_RANDOM_ATTEMPTS = 50
#: What a warning about a skewness the data cannot honour says (train warns itself).
_SKEW_WARNING = "skewness .* needs more rows"


class NetworkSpec(NamedTuple):
    """A network of a corpus: ``siot(n_devices, seed=seed, colocation_range_m=colocation)``,
    or the bundled ``example``.

    Examples
    --------
    >>> spec = NetworkSpec(8, seed=2, colocation=100.0)
    >>> spec.name, spec.build().n_devices, NetworkSpec(6, example="toy").name
    ('siot8-s2-coloc100', 8, 'toy')
    """

    n_devices: int
    seed: int | None = None
    colocation: float | None = None
    example: str | None = None

    @property
    def name(self) -> str:
        """``siotN-sS-oor`` (the generator's defaults), ``siotN-sS-coloc100`` (co-location
        links of 100 m), or the example's name."""
        if self.example is not None:
            return self.example
        kind = "oor" if self.colocation is None else f"coloc{self.colocation:g}"
        return f"siot{self.n_devices}-s{self.seed}-{kind}"

    @property
    def source(self) -> str:
        """``"bundled"`` or ``"generated"``."""
        return "bundled" if self.example is not None else "generated"

    def build(self) -> Network:
        from ..network.examples import load_example
        from ..network.siot import siot

        if self.example is not None:
            return load_example(self.example)
        return siot(self.n_devices, seed=self.seed, colocation_range_m=self.colocation,
                    name=self.name)


class CorpusEntry(NamedTuple):
    """A topology to train: how it was made (``kind``), its mixing weights (one of
    :data:`MIXINGS`) and the Topology (carrying those weights)."""

    kind: str
    weighting: str
    topology: Topology


def weighted_topology(plain: Topology, net: Network, weighting: str, seed: int) -> Topology:
    """``plain`` (its links and DP devices) with the mixing weights ``weighting``.

    As ``optimize(mixing=...)`` weights its design: Lazy-Metropolis (no
    weights), Metropolis-Hastings weights on the same links, or fastest-mixing
    ones (which may drop links the optimum leaves unused; ``seed`` drives the
    first-order method, used beyond 128 devices only).

    Examples
    --------
    >>> from topokit import load_example
    >>> from topokit.design.baselines import ndlf
    >>> net = load_example("toy")
    >>> mh = weighted_topology(ndlf(net), net, "metropolis", seed=0)
    >>> mh.edges == ndlf(net).edges, mh.weights is not None
    (True, True)
    """
    from ..design.mixing import fastest_mixing_topology, metropolis_hastings_topology

    if weighting == "lazy-metropolis":
        return plain.with_weights(None)
    if weighting == "metropolis":
        return metropolis_hastings_topology(plain, net)
    if weighting == "fastest":
        return fastest_mixing_topology(plain, net, seed=seed)
    raise InvalidInputError(f"weighting must be one of {', '.join(MIXINGS)}; got {weighting!r}")


def weightings_for(n_devices: int, mixings: Sequence[str]) -> tuple[str, ...]:
    """The weightings of ``mixings`` a network of ``n_devices`` gets (fastest up to
    :data:`FASTEST_MAX_DEVICES`).

    >>> weightings_for(64, MIXINGS)
    ('lazy-metropolis', 'metropolis')
    """
    return tuple(w for w in mixings if w != "fastest" or n_devices <= FASTEST_MAX_DEVICES)


def with_weightings(plain: Mapping[str, tuple[str, Topology]], net: Network,
                    weightings: Sequence[str], seed: int) -> dict[str, CorpusEntry]:
    """name -> CorpusEntry of every plain (name -> (kind, Topology)) topology in every
    weighting; Lazy-Metropolis runs keep the plain name, the others are ``NAME/WEIGHTING``.

    >>> from topokit import load_example
    >>> from topokit.design.baselines import ndlf
    >>> net = load_example("toy")
    >>> list(with_weightings({"ndlf": ("ndlf", ndlf(net))}, net,
    ...                      ["lazy-metropolis", "metropolis"], seed=0))
    ['ndlf', 'ndlf/metropolis']
    """
    entries, weights_seed = {}, keyed_seed(seed, _WEIGHTS_KEY)
    for weighting in weightings:
        for name, (kind, topology) in plain.items():
            label = name if weighting == "lazy-metropolis" else f"{name}/{weighting}"
            entries[label] = CorpusEntry(kind, weighting,
                                         weighted_topology(topology, net, weighting, weights_seed))
    return entries


def random_valid_topology(net: Network, seed: int, index: int, n_dp: int | None) -> Topology:
    """The ``index``-th random valid topology of a job seeded ``seed``.

    :func:`~topokit.design.baselines.random_topology` with ``n_dp`` DP devices
    (None: a random number), redrawn (each draw keyed by ``seed``, ``index``
    and the attempt) until its DP set lets every device connect.

    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> random_valid_topology(net, 5, 0, 0) == random_valid_topology(net, 5, 0, 0)
    True
    """
    from ..design.baselines import random_topology

    for attempt in range(_RANDOM_ATTEMPTS):
        try:
            return random_topology(net, n_dp=n_dp,
                                   seed=keyed_seed(seed, _RANDOM_KEY, index, attempt))
        except InvalidInputError:
            continue  # this DP set cannot connect every device: draw again
    raise InvalidInputError(f"no random valid topology with n_dp={n_dp!r} in "
                            f"{_RANDOM_ATTEMPTS} draws on {net.name}")


def named_topologies(net: Network, names: Sequence[str], seed: int, *,
                     n_random: int = 0) -> dict[str, CorpusEntry]:
    """AutoTag's design and the baselines of ``names`` on ``net``, and ``n_random`` random
    valid topologies, as corpus entries.

    Parameters
    ----------
    net : Network
    names : sequence of str
        Among :data:`NAMED_TOPOLOGIES`: ``ndlf``, ``autotag`` (eq. 15, the paper's
        design), ``erg`` (DeepPrivacy-ERG with AutoTag's link count), ``dlfdp``,
        ``exponential`` (Ying et al. 2021, seeded ring order), ``ndlf-metropolis``
        and ``ndlf-fastest`` (the social graph with Metropolis-Hastings or
        fastest-mixing weights).
    seed : int
        Keys everything random: ERG, the ring order, the first-order fastest
        mixing (beyond 128 devices) and the random topologies.
    n_random : int >= 0, default 0
        Random valid topologies with a random DP set, ``random-0`` ... (kind
        ``"random"``; :func:`random_valid_topology`).

    Returns
    -------
    dict
        name -> :class:`CorpusEntry` whose kind is the name (``"random"`` for
        the random ones), in :data:`NAMED_TOPOLOGIES` order, the random ones last.

    Examples
    --------
    >>> from topokit import load_example
    >>> built = named_topologies(load_example("toy"), ["ndlf-fastest", "ndlf"], 5, n_random=1)
    >>> {name: entry.weighting for name, entry in built.items()}
    {'ndlf': 'lazy-metropolis', 'ndlf-fastest': 'fastest', 'random-0': 'lazy-metropolis'}
    """
    from functools import cache, partial

    from ..design import autotag
    from ..design.baselines import dlfdp, erg, exponential_graph, ndlf

    unknown = [name for name in names if name not in NAMED_TOPOLOGIES]
    if unknown or isinstance(names, str):
        raise InvalidInputError(f"names must be a sequence of {', '.join(NAMED_TOPOLOGIES)}; "
                                f"got {names!r}")
    n_random = check_int_at_least(n_random, "n_random", 0)
    paper = cache(partial(autotag, net))  # built once: ERG takes its link count
    weights_seed = keyed_seed(seed, _NAMED_WEIGHTS_KEY)
    build = {
        "ndlf": lambda: ndlf(net),
        "autotag": lambda: paper().topology,
        "erg": lambda: erg(net, seed=keyed_seed(seed, _ERG_KEY), reference=paper()),
        "dlfdp": lambda: dlfdp(net),
        "exponential": lambda: exponential_graph(net, seed=keyed_seed(seed, _EXPONENTIAL_KEY)),
        **{name: partial(lambda w: weighted_topology(ndlf(net), net, w, weights_seed), weighting)
           for name, weighting in _NAMED_WEIGHTING.items()},
    }
    entries = {name: CorpusEntry(name, _NAMED_WEIGHTING.get(name, "lazy-metropolis"), make())
               for name, make in build.items() if name in names}
    for k in range(n_random):
        entries[f"random-{k}"] = CorpusEntry("random", "lazy-metropolis",
                                             random_valid_topology(net, seed, k, None))
    return entries


def optimize_entries(net: Network, arms: Mapping[str, str | None], *, class_counts: Any,
                     seed: int, predictor: Any = "default",
                     **options: Any) -> dict[str, tuple[CorpusEntry, Any]]:
    """:func:`~topokit.optimize`'s designs for several mixing weights, as corpus entries.

    Parameters
    ----------
    net : Network
    arms : dict
        name -> the ``mixing`` optimize is asked for (one of :data:`MIXINGS`;
        None: the predictor's default, :func:`~topokit.design.default_mixing`).
        Arms of one mixing share one search.
    class_counts : array-like of shape (n_devices, n_classes)
        The devices' class counts the designs are made for.
    seed : int
        Keys optimize's seed (the same for every arm).
    predictor : str, path or predictor, default "default"
        What optimize judges designs by.
    **options
        Passed to optimize (``ndlf_margin`` ...).

    Returns
    -------
    dict
        name -> (:class:`CorpusEntry` (the name, the weights the design kept,
        its topology), optimize's :class:`~topokit.design.DesignResult`).

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> arms = optimize_entries(net, {"optimize": None, "optimize-mh": "metropolis"},
    ...                         class_counts=np.full((net.n_devices, 2), 10), seed=0)
    >>> [(name, entry.weighting) for name, (entry, _) in arms.items()]
    [('optimize', 'fastest'), ('optimize-mh', 'metropolis')]
    """
    from ..design import default_mixing, optimize

    default = default_mixing(predictor)  # one of the named weightings: searched once
    designed: dict[str, Any] = {}
    entries = {}
    for name, mixing in arms.items():
        mixing = mixing or default
        if mixing not in designed:
            designed[mixing] = optimize(net, predictor=predictor, class_counts=class_counts,
                                        seed=keyed_seed(seed, _OPTIMIZE_KEY), mixing=mixing,
                                        **options)
        design = designed[mixing]
        kept = (design.stats.get("mixing") or {}).get("weights", "lazy-metropolis")
        entries[name] = (CorpusEntry(name, kept, design.topology), design)
    return entries


def benchmark_entries(net: Network, names: Sequence[str], seed: int, *,
                      skewness: Sequence[float], y: Any,
                      arms: Mapping[str, str | None] | None = None,
                      predictors: Sequence[Any] = ("default",), n_random: int = 0,
                      **options: Any
                      ) -> dict[tuple[float, Any], dict[str, tuple[CorpusEntry, Any]]]:
    """The topologies a benchmark of designs trains on ``net``, per skewness and predictor.

    The named designs and random topologies (:func:`named_topologies`) are the same
    at every skewness.  optimize's ``arms`` (:func:`optimize_entries`) are designed,
    by each predictor, for the class counts of trial 0 at that skewness
    (:func:`run_class_counts` of :func:`~topokit.validation.trial_seed` (seed, 0)):
    :func:`~topokit.validate` seeded ``seed`` trains trial 0 on the partition they
    were made for and the other trials on partitions they did not see, as a user's
    data would differ from what the design assumed.

    Parameters
    ----------
    net : Network
    names : sequence of str
        Among :data:`NAMED_TOPOLOGIES`.
    seed : int
        Keys everything random, as in :func:`named_topologies` and
        :func:`optimize_entries`, and is validate's seed.
    skewness : sequence of float
    y : array-like
        The labels trained on.
    arms : dict, optional
        name -> mixing of optimize's arms (:func:`optimize_entries`); none by default.
    predictors : sequence, default ("default",)
        The predictors the arms are designed by (names or paths): one search each.
    n_random : int >= 0, default 0
    **options
        Passed to optimize (``ndlf_margin`` ...).

    Returns
    -------
    dict
        (skewness, predictor) -> name -> (:class:`CorpusEntry`, optimize's
        :class:`~topokit.design.DesignResult`, None for the named designs), the
        arms first.

    Examples
    --------
    >>> from topokit import load_example
    >>> from topokit.training import load_digits
    >>> built = benchmark_entries(load_example("toy"), ["ndlf"], 3, skewness=[0.0, 0.8],
    ...                           y=load_digits()[1], arms={"optimize": None})
    >>> {key: list(entries) for key, entries in built.items()}
    {(0.0, 'default'): ['optimize', 'ndlf'], (0.8, 'default'): ['optimize', 'ndlf']}
    """
    named = named_topologies(net, names, seed, n_random=n_random)
    built = {}
    for value in skewness:
        counts = run_class_counts(net, y, value, trial_seed(seed, 0))
        for predictor in dict.fromkeys(predictors):
            designed = optimize_entries(net, arms or {}, class_counts=counts, seed=seed,
                                        predictor=predictor, **options)
            built[value, predictor] = {**designed,
                                       **{name: (entry, None) for name, entry in named.items()}}
    return built


def corpus_topologies(net: Network, seed: int, *, n_random_dp: int = 4,
                      n_random_social: int = 2, sparse_social: bool = True,
                      mixings: Sequence[str] = MIXINGS) -> dict[str, CorpusEntry]:
    """The corpus's topologies of ``net``, each in every weighting of ``mixings`` the
    network's size allows.

    AutoTag's design (eq. 15), NDLF, DLFDP, DeepPrivacy-ERG (AutoTag's link
    count), ``n_random_dp`` random valid topologies with a random DP set
    (``random-dp-K``), ``n_random_social`` without DP devices
    (``random-social-K``) and, with ``sparse_social``, social graphs thinned
    without DP (:func:`_sparse_social`).  Everything random is keyed by ``seed``.

    Parameters
    ----------
    net : Network
    seed : int
    n_random_dp, n_random_social : int >= 0, default 4, 2
    sparse_social : bool, default True
    mixings : sequence of str, default :data:`MIXINGS`
        The weightings (fastest only up to :data:`FASTEST_MAX_DEVICES` devices).

    Returns
    -------
    dict
        name -> :class:`CorpusEntry`; weighted ones are named ``NAME/WEIGHTING``.

    Examples
    --------
    >>> from topokit import load_example
    >>> built = corpus_topologies(load_example("toy"), 1, n_random_dp=1, n_random_social=0,
    ...                           sparse_social=False, mixings=["lazy-metropolis"])
    >>> list(built), built["random-dp-0"].kind
    (['autotag', 'ndlf', 'dlfdp', 'erg', 'random-dp-0'], 'random')
    """
    from ..design import autotag
    from ..design.baselines import dlfdp, erg, ndlf

    n_random_dp = check_int_at_least(n_random_dp, "n_random_dp", 0)
    n_random_social = check_int_at_least(n_random_social, "n_random_social", 0)
    unknown = [name for name in mixings if name not in MIXINGS]
    if unknown or isinstance(mixings, str):
        raise InvalidInputError(f"mixings must be a sequence of {', '.join(MIXINGS)}; got "
                                f"{mixings!r}")
    design = autotag(net)
    plain = {"autotag": ("autotag", design.topology), "ndlf": ("ndlf", ndlf(net)),
             "dlfdp": ("dlfdp", dlfdp(net)),
             "erg": ("erg", erg(net, seed=keyed_seed(seed, _ERG_KEY), reference=design))}
    for k in range(n_random_dp):
        plain[f"random-dp-{k}"] = ("random", random_valid_topology(net, seed, k, None))
    for k in range(n_random_social):
        plain[f"random-social-{k}"] = ("random-social",
                                       random_valid_topology(net, seed, 100 + k, 0))
    if sparse_social:
        plain.update(_sparse_social(net))
    return with_weightings(plain, net, weightings_for(net.n_devices, mixings), seed)


def _sparse_social(net: Network) -> dict[str, tuple[str, Topology]]:
    """Social graphs thinned without DP: the mixing a design can lose for a shorter L.

    NDLF pruned to its links of at most t seconds (the most and the least pruned that
    stay connected) and the social spanning tree of the fastest links.  Without them the
    corpus's sparse topologies all had DP devices, so slow mixing and DP noise came
    together and the fit could not tell them apart.
    """
    import networkx as nx

    from ..design import pruned_social

    pruned = list(pruned_social(net).values())
    chosen = {"pruned-least": pruned[-1], "pruned-most": pruned[0]} if pruned else {}
    graph = nx.Graph()
    graph.add_nodes_from(net.nodes)
    times = net.link_times
    graph.add_weighted_edges_from((u, v, times[net.index[u], net.index[v]])
                                  for u, v in net.social.edges
                                  if np.isfinite(times[net.index[u], net.index[v]]))
    chosen["social-tree"] = Topology(list(nx.minimum_spanning_edges(graph, data=False)))
    return {name: ("sparse-social", topology) for name, topology in chosen.items()}


def train_runs(net: Network, topologies: Mapping[str, Topology], trials: int, seed: int,
               skewness: float, keys: Mapping[str, str] | None = None, *,
               targets: Sequence[float] = (0.85, 0.88, 0.90), **options: Any) -> pd.DataFrame:
    """validate's runs table of ``topologies``, with each run's ``wall_clock`` seconds.

    Parameters
    ----------
    net : Network
    topologies : dict
        name -> Topology.
    trials, seed : int
        As :func:`~topokit.validate` takes them (trial t's seed is
        :func:`~topokit.validation.core.trial_seed` (seed, t), whatever else is trained).
    skewness : float
        ``partition`` of the training.
    keys : dict, optional
        name -> a key of the topology's runs (everything they depend on):
        topologies of one key train once, the others get a copy of its runs
        under their own name.
    targets : sequence of float, default (0.85, 0.88, 0.90)
    **options
        Passed to :func:`~topokit.validate` (``rounds``, ``model``, ``X``,
        ``y``, ``output`` ...); it runs with ``n_jobs=1``.

    Returns
    -------
    DataFrame
        :data:`~topokit.validation.RUN_COLUMNS` and ``wall_clock``.
    """
    first: dict[str, str] = {}
    for name in topologies:
        first.setdefault(name if keys is None else keys[name], name)
    chosen = {name: topologies[name] for name in first.values()}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_SKEW_WARNING)
        # The corpus compares predictors by replaying them; its rows carry eq. (15)'s.
        result = validate(net, chosen, targets=targets, trials=trials, seed=seed,
                          partition=skewness, n_jobs=1, **{"predictor": "paper", **options})
    timing = result.timings[["topology", "trial", "wall_clock"]]
    frame = result.frame.drop(columns=["wall_clock"], errors="ignore").merge(
        timing, on=["topology", "trial"], how="left")
    copies = [frame[frame["topology"] == first[keys[name]]].assign(topology=name)
              for name in topologies if name not in chosen]
    return pd.concat([frame, *copies], ignore_index=True)


def run_class_counts(net: Network, y: Any, skewness: float, seed: int) -> np.ndarray:
    """The class counts of every device in the run seeded ``seed``: the partition
    :func:`~topokit.training.train` makes (without its warning about a skewness the data
    cannot honour).

    Examples
    --------
    >>> from topokit import load_example
    >>> from topokit.training import load_digits
    >>> from topokit.validation import trial_seed
    >>> net = load_example("toy")
    >>> counts = run_class_counts(net, load_digits()[1], 0.8, trial_seed(0, 0))
    >>> counts.shape == (net.n_devices, 10)
    True
    """
    from ..training import partition_class_counts

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_SKEW_WARNING)
        return partition_class_counts(y, net.n_devices, skewness, seed, nodes=net.nodes)


def features_row(net: Network, topology: Topology, counts: np.ndarray) -> dict[str, Any]:
    """A run's features (from the mixing matrix the topology carries, else Lazy-Metropolis)
    for its devices' class counts, with the topology and counts as JSON.

    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> row = features_row(net, net.topology, np.full((net.n_devices, 2), 10))
    >>> row["class_counts_json"][:8], row["effective_neighbours"] > 0
    ('[[10, 10', True)
    """
    features = topology_features(net, topology, class_counts=counts)
    return {**features.to_dict(), "topology_json": json.dumps(topology.to_dict()),
            "class_counts_json": json.dumps(np.asarray(counts).tolist())}


def corpus_rows(frame: pd.DataFrame, net: Network, entries: Mapping[str, CorpusEntry],
                skewness: float, y: Any) -> pd.DataFrame:
    """Runs of ``entries`` as corpus rows: their kind, weighting and base topology, and the
    features of each run for its trial's partition.

    Parameters
    ----------
    frame : DataFrame
        validate's runs of the entries (:func:`train_runs`), ``topology``
        naming the entry.
    net : Network
    entries : dict
        name -> :class:`CorpusEntry`.
    skewness : float
        The runs' ``partition``.
    y : array-like
        The labels trained on (the partitions are replayed from each run's seed).

    Returns
    -------
    DataFrame
        ``frame`` with ``kind``, ``weighting``, ``base_topology`` (the name
        before ``/``), the features of
        :func:`~topokit.design.features.topology_features`, ``topology_json``,
        ``class_counts_json``, ``skewness`` and ``n_devices``.
    """
    frame = frame.assign(kind=frame["topology"].map(lambda name: entries[name].kind),
                         weighting=frame["topology"].map(lambda name: entries[name].weighting),
                         base_topology=frame["topology"].str.split("/").str[0])
    counts = {seed: run_class_counts(net, y, skewness, int(seed))
              for seed in frame["seed"].unique()}
    cache: dict[tuple[str, int], dict] = {}  # one per run, not per target
    rows = []
    for name, seed in zip(frame["topology"], frame["seed"], strict=True):
        if (name, seed) not in cache:
            cache[name, seed] = features_row(net, entries[name].topology, counts[seed])
        rows.append(cache[name, seed])
    extra = pd.DataFrame(rows, index=frame.index)
    frame = frame.drop(columns=[c for c in extra.columns if c in frame.columns])
    return pd.concat([frame, extra], axis=1).assign(skewness=skewness, n_devices=net.n_devices)


def trial_predictions(frame: pd.DataFrame, net: Network, topologies: Mapping[str, Topology],
                      *, predictor: Any, y: Any, skewness: float) -> pd.DataFrame:
    """A predictor's rounds and time for every run, for its trial's class counts.

    What :func:`~topokit.validate` predicts for each run (columns
    ``predicted_global_iterate`` and ``pseudo_time``), recomputed with
    ``predictor``: runs saved beside another predictor get this one's.

    Parameters
    ----------
    frame : DataFrame
        Runs with ``topology`` (a name of ``topologies``) and ``seed``.
    net : Network
    topologies : dict
        name -> Topology.
    predictor : str, path or predictor
        As :func:`~topokit.design.time_predictor.load_predictor` takes it.
    y : array-like
        The labels trained on.
    skewness : float
        The runs' ``partition``.

    Returns
    -------
    DataFrame
        ``predicted_rounds`` and ``predicted_time``, indexed as ``frame``.
    """
    from ..design.metrics import evaluate

    model = load_predictor(predictor)
    trial_nets = {seed: net.with_class_counts(run_class_counts(net, y, skewness, int(seed)))
                  for seed in frame["seed"].unique()}
    values = {}
    for name, seed in set(zip(frame["topology"], frame["seed"], strict=True)):
        metrics = evaluate(trial_nets[seed], topologies[name], model)
        values[name, seed] = (metrics.predicted_global_iterate, metrics.pseudo_time)
    pairs = list(zip(frame["topology"], frame["seed"], strict=True))
    return pd.DataFrame({"predicted_rounds": [values[p][0] for p in pairs],
                         "predicted_time": [values[p][1] for p in pairs]}, index=frame.index)


def predicted_runs(frame: pd.DataFrame, net: Network, entries: Mapping[str, CorpusEntry], *,
                   predictor: Any, y: Any, skewness: float, check: Any = None) -> pd.DataFrame:
    """Runs of ``entries`` with what made them and the times predicted for them: a predictor's
    for each run's partition, and eq. (15)'s of the topology beside it.

    Parameters
    ----------
    frame : DataFrame
        validate's runs of the entries (:func:`train_runs`), ``topology`` naming
        the entry.
    net : Network
    entries : dict
        name -> :class:`CorpusEntry`.
    predictor : str, path or predictor
        As :func:`trial_predictions` takes it.
    y : array-like
        The labels trained on (the partitions are replayed from each run's seed).
    skewness : float
        The runs' ``partition``.
    check : array-like of bool, optional
        The runs whose validate predicted with ``predictor`` (runs trained just
        now, say): their recomputed ``predicted_time`` must equal validate's
        ``pseudo_time`` (relative 1e-9), a guard on the replay.

    Returns
    -------
    DataFrame
        ``frame`` without validate's predictions (``pseudo_time``,
        ``predicted_global_iterate``), with ``predicted_rounds`` and
        ``predicted_time`` (:func:`trial_predictions`), ``method`` (the entry's
        kind), ``weighting``, and eq. (15)'s ``pseudo_rounds`` and ``pseudo_time``.

    Examples
    --------
    >>> from topokit import load_example
    >>> from topokit.design.baselines import ndlf
    >>> from topokit.training import load_digits
    >>> net = load_example("toy")
    >>> entries = {"social": CorpusEntry("ndlf", "lazy-metropolis", ndlf(net))}
    >>> runs = pd.DataFrame({"topology": "social", "seed": [7, 8], "pseudo_time": 0.0,
    ...                      "predicted_global_iterate": 0.0})
    >>> table = predicted_runs(runs, net, entries, predictor="default", y=load_digits()[1],
    ...                        skewness=0.4)
    >>> table.columns.tolist()[2:]
    ['predicted_rounds', 'predicted_time', 'method', 'weighting', 'pseudo_rounds', 'pseudo_time']
    >>> table["method"].tolist(), bool(table["pseudo_time"].iloc[0] > 0)
    (['ndlf', 'ndlf'], True)
    """
    from ..design.metrics import evaluate

    predicted = trial_predictions(frame, net, {n: e.topology for n, e in entries.items()},
                                  predictor=predictor, y=y, skewness=skewness)
    mask = np.zeros(len(frame), bool) if check is None else np.asarray(check, bool)
    if mask.shape != (len(frame),):
        raise InvalidInputError(f"check must flag each of the {len(frame)} runs; got shape "
                                f"{mask.shape}")
    if not np.allclose(predicted.loc[mask, "predicted_time"], frame.loc[mask, "pseudo_time"],
                       rtol=1e-9, equal_nan=True):
        raise InvalidInputError("the recomputed predictions of the checked runs differ from "
                                "validate's: were they trained with another predictor?")
    eq15 = {name: evaluate(net, entry.topology) for name, entry in entries.items()}
    names = frame["topology"]
    return frame.drop(columns=["pseudo_time", "predicted_global_iterate"]).assign(
        **predicted, method=names.map(lambda name: entries[name].kind),
        weighting=names.map(lambda name: entries[name].weighting),
        pseudo_rounds=names.map(lambda name: eq15[name].predicted_global_iterate),
        pseudo_time=names.map(lambda name: eq15[name].pseudo_time))


# ---------------------------------------------------------------------------------------------
# Fitting and judging
# ---------------------------------------------------------------------------------------------


def _unfitted(corpus: pd.DataFrame) -> TrainingTimePredictor:
    """The predictor a corpus fits: the default features, the training rows of its data."""
    counts = np.array(json.loads(corpus["class_counts_json"].iloc[0]))
    return TrainingTimePredictor(features=DEFAULT_FEATURES,
                                 settings=FeatureSettings(n_samples=int(counts.sum())))


def fit_corpus_predictor(corpus: pd.DataFrame, *, target: float) -> TrainingTimePredictor:
    """The :class:`~topokit.design.TrainingTimePredictor` of a corpus: the default
    features, fitted on every run at ``target`` (never-reached ones censored).

    :func:`~topokit.validation.calibrate`'s refit, its settings those of the
    corpus's data (``n_samples``: the training rows of a run's partition).

    Parameters
    ----------
    corpus : DataFrame
        Rows of :func:`corpus_rows`.
    target : float

    Returns
    -------
    TrainingTimePredictor
    """
    _check_corpus(corpus)
    return calibrate(corpus, predictor=_unfitted(corpus), target=target, cv=2).predictor


def _check_corpus(corpus: pd.DataFrame) -> None:
    needed = ("network", "skewness", "topology", "class_counts_json", *DEFAULT_FEATURES)
    missing = [column for column in needed if column not in getattr(corpus, "columns", ())]
    if missing:
        raise InvalidInputError(f"the corpus lacks column(s) {', '.join(missing)}; build its "
                                "rows with corpus_rows")


def held_out_predictions(corpus: pd.DataFrame, predictor: Any = "default", *,
                         target: float | None = None) -> pd.DataFrame:
    """Every run at ``target`` predicted by ``predictor`` refitted without its network.

    The per-run side of :func:`~topokit.validation.leave_network_out`: the
    same refits (a clone of ``predictor`` fitted on the runs of every other
    network) and the same runs (finite features), so the Spearman correlation
    of a group of these predictions is that function's.

    Parameters
    ----------
    corpus : DataFrame
        validate's runs of several networks, with the predictor's feature columns.
    predictor : "default", "mlp", path or TrainingTimePredictor
    target : float, optional
        Default: the highest target of the table.

    Returns
    -------
    DataFrame
        The runs, network by network, with ``rounds`` and ``time`` (``inf``:
        never reached), ``predicted_rounds`` and ``predicted_time``.
    """
    from sklearn.base import clone

    model = _time_predictor(predictor)
    rows = _censored_rows(_select_target(corpus, target), tuple(model.features))
    predicted = []
    for network in rows["network"].unique():
        held = (rows["network"] == network).to_numpy()
        fitted = _fit_time_predictor(clone(model), rows[~held])
        test = rows[held]
        rounds = fitted.predict(test[list(model.features)].to_numpy(float))
        L = test["local_iterate"].to_numpy(float)
        predicted.append(test.assign(time=test["rounds"].to_numpy(float) * L,
                                     predicted_rounds=rounds, predicted_time=rounds * L))
    return pd.concat(predicted)


def _by_topology(cell: pd.DataFrame, column: str) -> pd.Series:
    """Median over trials per topology (``inf`` counts: a majority of never is never)."""
    return cell.groupby("topology")[column].agg(lambda v: float(np.median(v.to_numpy())))


def _trial_ceiling(cell: pd.DataFrame) -> float:
    """Spearman of every run with the median of the other trials of its topology.

    How well the runs themselves agree from trial to trial: a measured
    per-topology "prediction" from the other trials (not an upper bound on a
    model, which can average over more).
    """
    others = np.empty(len(cell))
    times = cell["time"].to_numpy(float)
    for rows in cell.groupby("topology").indices.values():
        for k, row in enumerate(rows):
            rest = np.delete(times[rows], k)
            others[row] = np.median(rest) if rest.size else times[row]
    return censored_spearman(others, times)


def cell_scores(cell: pd.DataFrame) -> dict[str, Any]:
    """Rank correlations of predicted and measured time among the runs of one cell.

    Never-reached runs rank slowest (:func:`~topokit.validation.censored_spearman`).

    Parameters
    ----------
    cell : DataFrame
        The runs of one (network, skewness): ``network``, ``skewness``,
        ``n_devices``, ``topology``, ``time`` (measured, ``inf``: never),
        ``predicted_time`` and ``pseudo_time`` (eq. 15's).

    Returns
    -------
    dict
        ``network``, ``skewness``, ``n_devices``, ``runs``, ``never``,
        ``predicted_never``, ``never_correct``, and the Spearman of the
        predictor and of eq. (15) over the runs (``spearman``,
        ``spearman_paper``) and over the topologies' medians
        (``spearman_topologies``, ``spearman_topologies_paper``), and of each
        run with its topology's other trials (``spearman_trial_ceiling``).

    Examples
    --------
    >>> cell = pd.DataFrame({"network": "a", "skewness": 0.0, "n_devices": 8,
    ...                      "topology": ["x", "x", "y", "y", "z", "z"],
    ...                      "time": [1.0, 1.2, 2.0, 2.5, float("inf"), 9.0],
    ...                      "predicted_time": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0],
    ...                      "pseudo_time": [3.0, 3.0, 2.0, 2.0, 1.0, 1.0]})
    >>> scores = cell_scores(cell)
    >>> scores["spearman_topologies"], scores["spearman_topologies_paper"], scores["never"]
    (1.0, -1.0, 1)
    """
    measured = cell["time"].to_numpy(float)
    ours, paper = cell["predicted_time"].to_numpy(float), cell["pseudo_time"].to_numpy(float)
    medians = pd.DataFrame({column: _by_topology(cell, column)
                            for column in ("time", "predicted_time", "pseudo_time")})
    never, predicted_never = ~np.isfinite(measured), ~np.isfinite(ours)
    topology_time = medians["time"].to_numpy()
    return {
        "network": cell["network"].iloc[0], "skewness": float(cell["skewness"].iloc[0]),
        "n_devices": int(cell["n_devices"].iloc[0]), "runs": len(cell),
        "never": int(never.sum()), "predicted_never": int(predicted_never.sum()),
        "never_correct": int((never == predicted_never).sum()),
        "spearman": censored_spearman(ours, measured),
        "spearman_paper": censored_spearman(paper, measured),
        "spearman_topologies": censored_spearman(medians["predicted_time"].to_numpy(),
                                                 topology_time),
        "spearman_topologies_paper": censored_spearman(medians["pseudo_time"].to_numpy(),
                                                       topology_time),
        "spearman_trial_ceiling": _trial_ceiling(cell),
    }


def cell_table(runs: pd.DataFrame, *, by: Sequence[str] = ("network", "skewness"),
               distinct: Sequence[str] | None = None) -> pd.DataFrame:
    """:func:`cell_scores` of every cell: the runs of each value of ``by``.

    Parameters
    ----------
    runs : DataFrame
        The runs, with the columns :func:`cell_scores` reads and ``by``.
    by : sequence of str, default ("network", "skewness")
        The columns of a cell; those beyond network and skewness (a model, say)
        are added to its row.
    distinct : sequence of str, optional
        Columns that identify a run (a run key and the trial): a run listed
        under several names (two methods that gave one topology) counts once.

    Returns
    -------
    DataFrame
        One row per cell, in the order the cells first appear.

    Examples
    --------
    >>> runs = pd.DataFrame({"network": "a", "skewness": 0.0, "n_devices": 8,
    ...                      "model": ["m1"] * 4 + ["m2"] * 4, "topology": ["x", "y"] * 4,
    ...                      "time": [1.0, 2.0, 1.5, 2.5] * 2,
    ...                      "predicted_time": [1.0, 2.0] * 4, "pseudo_time": [2.0, 1.0] * 4})
    >>> cell_table(runs, by=["network", "skewness", "model"])[["model", "spearman", "runs"]]
      model  spearman  runs
    0    m1  0.894427     4
    1    m2  0.894427     4
    """
    by = list(by)
    _check_columns(runs, by, "the runs table")
    extra = [column for column in by if column not in ("network", "skewness")]
    rows = []
    for key, cell in runs.groupby(by, sort=False):
        cell = cell if distinct is None else cell.drop_duplicates(list(distinct))
        values = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        rows.append({**cell_scores(cell), **{column: values[column] for column in extra}})
    return pd.DataFrame(rows)


class CorpusJudgement(NamedTuple):
    """What :func:`judge_corpus` found.

    Attributes
    ----------
    runs : DataFrame
        The corpus's runs at the target, with ``time`` (``inf``: never) and
        ``censored`` (T + 1 rounds) of :func:`~topokit.validation.compare.time_to_target`.
    predicted : DataFrame
        :func:`held_out_predictions`.
    cells : DataFrame
        One row per (network, skewness): the columns of :func:`cell_scores`,
        ``spearman`` and ``spearman_paper`` those of
        :func:`~topokit.validation.leave_network_out`.
    summary : dict
        Median and spread over cells and networks, never-reached accuracy, and
        per weighting the Spearman among its runs (``by_weighting``) and what
        its weights gain over Lazy-Metropolis, measured and predicted
        (``weighting_gains``).
    """

    runs: pd.DataFrame
    predicted: pd.DataFrame
    cells: pd.DataFrame
    summary: dict[str, Any]


def judge_corpus(corpus: pd.DataFrame, *, target: float, horizon: int) -> CorpusJudgement:
    """Leave-network-out: how well the corpus's predictor ranks the runs of networks it was
    not fitted on.

    For every network, the predictor (:func:`fit_corpus_predictor`'s) is
    refitted on the other networks' runs and predicts this one's.  Per
    (network, skewness) -- the topologies a user would choose between --
    the Spearman correlation of predicted and measured time to ``target``
    (runs that never reach it ranked slowest) of the predictor and of eq.
    (15) (:func:`~topokit.validation.leave_network_out`), per topology and
    against the runs' own trial-to-trial agreement (:func:`cell_scores`); how
    often "never reaches the target" is predicted right; and for weighted runs
    their time over the Lazy-Metropolis run of the same topology and trial,
    measured and predicted.

    Parameters
    ----------
    corpus : DataFrame
        Rows of :func:`corpus_rows` of at least two networks.
    target : float
    horizon : int
        T, the rounds every run was given (a never-reached run counts as
        T + 1 rounds in the weightings' ratios).

    Returns
    -------
    CorpusJudgement
    """
    _check_corpus(corpus)
    predictor = _unfitted(corpus)
    cells = leave_network_out(corpus, predictor, target=target, by=("network", "skewness"))
    predicted = held_out_predictions(corpus, predictor, target=target)
    scores = cell_table(predicted)
    cells = scores.drop(columns=["spearman", "spearman_paper"]).merge(
        cells[["network", "skewness", "spearman", "spearman_paper"]],
        on=["network", "skewness"], how="left")[scores.columns]
    summary = {**_summarise(cells, predicted), "by_weighting": _spearman_by_weighting(predicted),
               "weighting_gains": _weighting_gains(predicted, horizon)}
    runs = time_to_target(corpus, target, horizon=horizon)
    return CorpusJudgement(runs.assign(rounds=runs["measured_rounds"].fillna(np.inf)),
                           predicted, cells, summary)


def _spread(values: pd.Series) -> dict[str, Any]:
    values = values.dropna()
    return {"median": float(values.median()), "q25": float(values.quantile(0.25)),
            "q75": float(values.quantile(0.75)), "min": float(values.min()),
            "max": float(values.max()), "cells": int(values.size)}


def _summarise(cells: pd.DataFrame, predicted: pd.DataFrame) -> dict[str, Any]:
    """Median and spread over held-out cells and networks; never-reached accuracy."""
    per_network = cells.groupby("network")[["spearman", "spearman_paper"]].median()
    by_skewness = {f"{k:g}": {"spearman": float(g["spearman"].median()),
                              "spearman_paper": float(g["spearman_paper"].median())}
                   for k, g in cells.groupby("skewness")}
    return {**{column: _spread(cells[column]) for column in (
                "spearman", "spearman_paper", "spearman_topologies", "spearman_topologies_paper",
                "spearman_trial_ceiling")},
            "spearman_per_network": _spread(per_network["spearman"]),
            "spearman_per_network_paper": _spread(per_network["spearman_paper"]),
            "by_skewness": by_skewness, "never": _never_accuracy(predicted)}


def _never_accuracy(predicted: pd.DataFrame) -> dict[str, Any]:
    """How often "never reaches the target" is predicted right, per run and per topology."""
    never = ~np.isfinite(predicted["time"].to_numpy(float))
    predicted_never = ~np.isfinite(predicted["predicted_time"].to_numpy(float))
    topologies = predicted.groupby(["network", "skewness", "topology"]).agg(
        time=("time", lambda v: float(np.median(v.to_numpy()))),
        predicted_time=("predicted_time", "first"))
    topology_never = ~np.isfinite(topologies["time"].to_numpy())
    topology_predicted = ~np.isfinite(topologies["predicted_time"].to_numpy())
    return {"runs": int(len(never)), "measured_never": int(never.sum()),
            "predicted_never": int(predicted_never.sum()),
            "both_never": int((never & predicted_never).sum()),
            "accuracy": float(np.mean(never == predicted_never)),
            "accuracy_always_reached": float(np.mean(~never)),
            "topologies": int(len(topologies)), "topologies_never": int(topology_never.sum()),
            "topologies_predicted_never": int(topology_predicted.sum()),
            "topologies_both_never": int((topology_never & topology_predicted).sum()),
            "topologies_accuracy": float(np.mean(topology_never == topology_predicted))}


def _spearman_by_weighting(predicted: pd.DataFrame) -> dict[str, Any]:
    """Per weighting: median over cells of the Spearman among that weighting's runs only."""
    result = {}
    for weighting, runs in predicted.groupby("weighting"):
        scores = [cell_scores(cell)["spearman"]
                  for _, cell in runs.groupby(["network", "skewness"], sort=False)]
        values = pd.Series(scores, dtype=float).dropna()
        result[weighting] = {"spearman": float(values.median()) if len(values) else np.nan,
                             "cells": int(values.size), "runs": int(len(runs))}
    return result


def _weighting_gains(predicted: pd.DataFrame, horizon: int) -> dict[str, Any]:
    """Per weighting: each weighted run's time over the Lazy-Metropolis run of the same
    topology and trial, measured and predicted (held out); never reached = T + 1 rounds.

    ``*_geometric_mean`` over the pairs, ``*_faster`` the share of pairs below 1,
    ``agree`` the share where measured and predicted fall on the same side of 1,
    ``spearman`` between the two ratios.
    """
    from scipy.stats import spearmanr

    if "lazy-metropolis" not in set(predicted["weighting"]):
        return {}
    capped = float(horizon + 1)
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
