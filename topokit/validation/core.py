"""Validation: predicted against measured training time.

:func:`validate` trains (``topokit.training.train``) over several topologies of
one network -- AutoTag's design, the baselines, random valid topologies or the
user's own -- for several trials, and puts the prediction of each topology
(hitting time H, DP ratio phi, local iterate L, predicted global iterate G',
pseudo time G' x L) next to what the runs measured (rounds and physical time
to each target accuracy).  :func:`calibrate` (in
:mod:`topokit.validation`, re-exported here) refits the
:class:`~topokit.design.GlobalIteratePredictor` on such a table and says how
much the rank correlation of predicted and measured physical time improves.

Eq. (15) was fitted on CIFAR10-CNN rounds to about 70 % accuracy; on other
data and models its absolute values mean little, and its ranking of the
topologies is what :meth:`ValidationResult.correlations` judges.

:func:`validate` runs in steps, one function each: check the inputs
(:func:`_check_inputs`), build the topologies (:func:`_build_topologies`),
plan one piece per topology and trial (:func:`_plan_pieces`), run the pieces
through the resumable-job runner (:func:`topokit._jobs.run_resumable`, which
also serves ``batch``; :func:`_measure` is the work of one piece) and
assemble the :class:`ValidationResult`.  A user's ``trainer`` replaces only
the training of a piece (:func:`_user_run`): its accuracies become the same
row of the runs table.

>>> import topokit                                                      # doctest: +SKIP
>>> result = topokit.validate(topokit.load_example("siot16"), trials=3)  # doctest: +SKIP
>>> result.correlations()                                               # doctest: +SKIP
>>> topokit.calibrate(result).predictor.save("predictor.json")          # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import inspect
import json
import time
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from .._checks import check_int_at_least, check_output_path
from .._jobs import check_n_jobs, check_scheduler, run_resumable
from .._random import SeedLike, int_seed, keyed_seed
from ..audit.core import check_audit_rounds, privacy_audit
from ..design.features import FeatureSettings
from ..design.metrics import DEFAULT_AUDIT_ROUNDS, evaluate, schedule_metrics
from ..design.predictor import GlobalIteratePredictor
from ..design.time_predictor import PREDICTOR_NAMES, load_predictor
from ..design.workload import TOPOKIT_MODELS, Workload, check_workload
from ..errors import InvalidInputError, NotFittedError, TopokitWarning
from ..network.core import Network, Topology
from ..network.schedule import TopologySchedule
from ..training import DPConfig, TrainingRun, partition_class_counts, train
from ..training.core import check_accuracy_threshold, round_clock
from .calibration import (
    CALIBRATION_COLUMNS,
    CalibrationResult,
    calibrate,
    described_topology,
)
from .result import FEATURE_COLUMNS, RUN_COLUMNS, TIMING_COLUMNS, ValidationResult

if TYPE_CHECKING:
    from ..training.plan import TrainingPlan

__all__ = [
    "validate",
    "calibrate",
    "ValidationResult",
    "CalibrationResult",
    "TopologySpec",
    "parse_topology_specs",
    "noise_variance",
    "curves_path",
    "timings_path",
    "TIMING_COLUMNS",
    "TOPOLOGY_KINDS",
    "PEER_KINDS",
    "NOT_PREDICTED_NOTE",
    "SCHEDULE_PREDICTION_NOTE",
    "DEFAULT_TOPOLOGIES",
    "DEFAULT_TARGETS",
    "trial_seed",
    "RUN_COLUMNS",
    "FEATURE_COLUMNS",
    "CALIBRATION_COLUMNS",
]

#: Named topology specs; ``"random:K"`` adds K random valid topologies.  ``"exponential"``
#: is the static exponential graph of Ying et al. (NeurIPS 2021) over the usable links
#: (:func:`~topokit.design.baselines.exponential_graph`), a peer of the field, and so is
#: ``"equistatic"`` / ``"equistatic:M"``, Song et al.'s static U-EquiStatic
#: (:func:`~topokit.design.peers.equistatic`); the :data:`PEER_KINDS` are the time-varying
#: peers (:mod:`topokit.design.peers`).
TOPOLOGY_KINDS = ("optimize", "autotag", "ndlf", "dlfdp", "erg", "exponential", "equistatic",
                  "one-peer-exponential", "base", "epidemic", "random")
#: The kinds that train over a :class:`~topokit.network.TopologySchedule`: Ying et al.'s
#: one-peer exponential graph, Takezawa et al.'s Base-(K+1) graph (``"base:K"``) and de Vos
#: et al.'s epidemic learning (``"epidemic:S"``).
PEER_KINDS = ("one-peer-exponential", "base", "epidemic")
#: The kinds written ``kind:N``, with what N is.
_COUNTED_KINDS = {"random": "K random valid topologies",
                  "base": "the Base-(K+1) graph's max degree",
                  "epidemic": "the peers a device sends to each round",
                  "equistatic": "the ring offsets U-EquiStatic draws, up to 2M peers a device"}
#: The counted kinds whose N may be left out (``"equistatic"``: M = ceil(log2 n)).
_COUNT_OPTIONAL = frozenset({"equistatic"})
#: The letter a counted kind's N is written with, where it is not K.
_COUNT_LETTERS = {"epidemic": "S", "equistatic": "M"}
#: The kinds as a user reads them in a message.
_KINDS_TEXT = ("optimize, autotag, ndlf, dlfdp, erg, exponential, equistatic or equistatic:M "
               "(U-EquiStatic, M ring offsets), one-peer-exponential, "
               "base:K (Base-(K+1) graph, max degree K), epidemic:S (S random peers a round), "
               "random:K (K random valid topologies)")
#: What validate says of the time-varying topologies it trains (in the result's config,
#: ``schedules_extrapolated``, and under the command's tables).
SCHEDULE_PREDICTION_NOTE = (
    "the predictors were fitted on static topologies: a time-varying topology is predicted "
    "from its features over its rounds (the noise, heterogeneity and effective-neighbour sums "
    "with products of its rounds' mixing matrices, H of their mean, the gap their per-round "
    "contraction), an extrapolation; its stranger audit gossips over its rounds' topologies "
    "in turn, and its measured time is the sum of its rounds' times"
)
#: What results written before time-varying topologies were predicted say of them (their
#: config's ``not_predicted``; :meth:`ValidationResult.correlations` leaves those out).
NOT_PREDICTED_NOTE = (
    "the predictors judge static topologies: the prediction columns (H, gap, G', G'L, the "
    "features) of a time-varying topology are NaN; its stranger audit gossips over its "
    "rounds' topologies in turn, and its measured time is the sum of its rounds' times"
)

#: What validate says when the runs train a model of the user's that nothing measured and
#: no predictor was named (a warning, and the result's config, ``unmeasured_model``).
UNMEASURED_MODEL_NOTE = (
    "the runs train a model of your own that no workload describes: its predicted times are "
    "topokit's logistic-regression fit's, and the 'optimize' design has the safe "
    "Lazy-Metropolis weights; measure the model with topokit.training.ceiling.ceiling_probe "
    "and pass workload=Workload(model=..., ceiling=..., probe_rounds=...)"
)

#: What :func:`validate` compares by default: AutoTag's design and the three baselines.
DEFAULT_TOPOLOGIES = ("autotag", "ndlf", "dlfdp", "erg")

# Sub-streams of the validation seed (keyed_seed(seed, role, index)).
_TRIAL, _ERG, _RANDOM, _OPTIMIZE, _EPIDEMIC, _EQUISTATIC = 0, 1, 2, 3, 4, 5


def trial_seed(seed: int, trial: int) -> int:
    """The training seed :func:`validate` gives trial ``trial`` of a job seeded ``seed``
    (the ``seed`` column of its runs table; the same for every topology).

    >>> trial_seed(11, 0) == trial_seed(11, 0) != trial_seed(11, 1)
    True
    """
    return keyed_seed(seed, _TRIAL, trial)
_RANDOM_ATTEMPTS = 20
_RESERVED = {"seed", "progress", "X", "y", "net", "topology"}

Progress = Callable[[int, int], Any]
#: A user's trainer: ``fn(net, topology, *, rounds, seed, dp)`` -> test accuracy after each round.
Trainer = Callable[..., Sequence[float]]

#: Keyword arguments of :func:`topokit.training.train` that validate passes on.
_TRAIN_OPTIONS = frozenset(inspect.signature(train).parameters) - _RESERVED
#: Their defaults, for checking the options a caller leaves out.
_TRAIN_DEFAULTS = {name: parameter.default
                   for name, parameter in inspect.signature(train).parameters.items()}


# ---------------------------------------------------------------------------------------------
# Topology specs
# ---------------------------------------------------------------------------------------------


class TopologySpec(NamedTuple):
    """One entry of the ``topologies`` argument of :func:`validate`, not built yet.

    ``item`` is the Topology (or schedule, or design) of a user's entry (kind
    ``"custom"``), N for ``random:K``, ``base:K``, ``epidemic:S`` and
    ``equistatic:M``, and None for a named design or baseline (and for
    ``equistatic`` without M).
    """

    name: str
    kind: str
    item: Topology | TopologySchedule | int | None


def _parse_spec(spec: str) -> tuple[str, int | None]:
    """(kind, count) of a spec string: count is N of ``random:K``, ``base:K``,
    ``epidemic:S`` and ``equistatic:M``, None for ``equistatic`` (its default M), else 1.

    >>> _parse_spec("base:2"), _parse_spec("one-peer-exponential"), _parse_spec("equistatic")
    (('base', 2), ('one-peer-exponential', 1), ('equistatic', None))
    """
    text = spec.strip().lower()
    kind, colon, count = text.partition(":")
    counted = kind in _COUNTED_KINDS and (bool(colon) or kind not in _COUNT_OPTIONAL)
    if kind not in TOPOLOGY_KINDS or counted != bool(colon):
        raise InvalidInputError(
            f"unknown topology spec {spec!r}; expected one of {_KINDS_TEXT}, or a Topology"
        )
    if not counted:
        return kind, None if kind in _COUNT_OPTIONAL else 1
    if not count.strip().isdigit() or int(count) < 1:
        letter = _COUNT_LETTERS.get(kind, "K")
        raise InvalidInputError(
            f"{kind}:{letter} needs a positive integer {letter} ({_COUNTED_KINDS[kind]}); "
            f"got {spec.strip()!r}"
        )
    return kind, int(count)


def _spec_entries(topologies) -> list[tuple[Any, Any]]:
    """(name, value) pairs of the three accepted forms of ``topologies``."""
    if isinstance(topologies, str):
        return [(part.strip(), part) for part in topologies.split(",") if part.strip()]
    if isinstance(topologies, Mapping):
        return list(topologies.items())
    if isinstance(topologies, Sequence):
        for spec in topologies:
            if not isinstance(spec, str):
                raise InvalidInputError(
                    f"a list of topologies holds spec strings ({_KINDS_TEXT}); "
                    f"got {spec!r}. Pass your own topologies as a dict name -> Topology"
                )
        return [(spec.strip(), spec) for spec in topologies]
    raise InvalidInputError(
        "topologies must be a comma-separated string, a list of specs or a dict name -> "
        f"Topology; got {type(topologies).__name__}"
    )


def _parse_entry(name: Any, value: Any) -> TopologySpec:
    from ..design.result import Design

    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"topology names must be non-empty strings; got {name!r}")
    if isinstance(value, (Topology, TopologySchedule, Design)):
        return TopologySpec(name, "custom", value)
    if not isinstance(value, str):
        raise InvalidInputError(
            f"topology {name!r} must be a Topology or a spec string; got {type(value).__name__}"
        )
    kind, count = _parse_spec(value)
    # A spec given as itself ("random:3" -> "random:3") is named by its kind; a peer with a
    # count by the kind and count ("base:2"), without one by the kind ("equistatic").
    named_by_kind = name.strip().lower() == value.strip().lower()
    if kind == "random":
        return TopologySpec(name.split(":")[0] if named_by_kind else name, kind, count)
    if kind in _COUNTED_KINDS and count is not None:
        return TopologySpec(f"{kind}:{count}" if named_by_kind else name, kind, count)
    return TopologySpec(kind if named_by_kind else name, kind, None)


def parse_topology_specs(
    topologies: str | Sequence[str] | Mapping[str, Topology | str],
) -> list[TopologySpec]:
    """Turn the ``topologies`` argument of :func:`validate` into (name, kind, item) triples.

    ``item`` is the Topology of a user's entry, K for ``random:K`` and None for
    a named design or baseline.  Nothing is built yet, so a bad spec fails fast.

    Examples
    --------
    >>> [tuple(spec) for spec in parse_topology_specs("autotag, random:2")]
    [('autotag', 'autotag', None), ('random', 'random', 2)]
    """
    entries = _spec_entries(topologies)
    if not entries:
        raise InvalidInputError("no topologies to validate")
    return [_parse_entry(name, value) for name, value in entries]


class BuiltTopology(NamedTuple):
    """A topology (or schedule) that :func:`validate` trains over, with its name and kind
    (and the design it came from, when a user gave a :class:`~topokit.design.Design`)."""

    name: str
    kind: str
    topology: Topology | TopologySchedule
    design: Any = None


def _random_valid(net: Network, seed: int, index: int) -> Topology:
    from ..design.baselines import random_topology

    for attempt in range(_RANDOM_ATTEMPTS):
        try:
            return random_topology(net, seed=keyed_seed(seed, _RANDOM, index * 1000 + attempt))
        except InvalidInputError:
            continue  # this DP set cannot connect every device: draw again
    raise InvalidInputError(
        f"no valid connected random topology found in {_RANDOM_ATTEMPTS} draws on this network"
    )


def _random_topologies(net: Network, spec: TopologySpec, start: int,
                       seed: int) -> list[BuiltTopology]:
    """The K topologies of ``random:K``; ``start`` keeps seeds distinct across specs."""
    return [
        BuiltTopology(f"{spec.name}-{start + k if spec.name == 'random' else k}", spec.kind,
                      _random_valid(net, seed, start + k))
        for k in range(spec.item)
    ]


def _peer_schedule(net: Network, spec: TopologySpec, seed: int) -> TopologySchedule:
    """The schedule of a peer spec: in node order (the exponential graph's ring order), one
    schedule for every trial (epidemic's draws seeded from the validation seed).  What the
    network cannot give is refused in one line naming the spec."""
    from ..design.peers import base_graph, epidemic, one_peer_exponential

    try:
        if spec.kind == "one-peer-exponential":
            return one_peer_exponential(net)
        if spec.kind == "base":
            return base_graph(net, spec.item)
        return epidemic(net, spec.item, seed=keyed_seed(seed, _EPIDEMIC, 0))
    except InvalidInputError as exc:
        raise type(exc)(f"topology {spec.name!r}: {exc.args[0]}") from None


def _equistatic(net: Network, spec: TopologySpec, seed: int) -> Topology:
    """U-EquiStatic over the usable links in node order, its offsets drawn from the validation
    seed: one topology for every trial.  ``spec.item`` is M (None: ceil(log2 n)); what the
    network cannot give is refused in one line naming the spec."""
    from ..design.peers import equistatic

    try:
        return equistatic(net, spec.item, seed=keyed_seed(seed, _EQUISTATIC, 0))
    except InvalidInputError as exc:
        raise type(exc)(f"topology {spec.name!r}: {exc.args[0]}") from None


def _build_topologies(net: Network, specs: Sequence[TopologySpec],
                      settings: _Settings) -> list[BuiltTopology]:
    from ..design import autotag
    from ..design.baselines import dlfdp, erg, exponential_graph, ndlf

    seed, predictor = settings.seed, settings.predictor
    design = None
    built: list[BuiltTopology] = []
    for spec in specs:
        if spec.kind in ("autotag", "erg") and design is None:
            # Once: ERG takes AutoTag's link count.  AutoTag's scores need eq. (15)'s form.
            design = autotag(net, predictor if isinstance(predictor, GlobalIteratePredictor)
                             else None)
        if spec.kind == "random":
            start = sum(1 for b in built if b.kind == "random")
            built.extend(_random_topologies(net, spec, start, seed))
            continue
        if spec.kind == "custom":
            given = spec.item
            if not isinstance(given, (Topology, TopologySchedule)):  # a Design: its own noise
                built.append(BuiltTopology(spec.name, spec.kind, given.topology.validate(net),
                                           given))
                continue
            topology = given.validate(net)
        elif spec.kind == "optimize":
            topology = _optimized(net, settings)
        elif spec.kind == "autotag":
            topology = design.topology
        elif spec.kind == "ndlf":
            topology = ndlf(net)
        elif spec.kind == "dlfdp":
            topology = dlfdp(net)
        elif spec.kind == "exponential":  # in node order: the same graph every trial
            topology = exponential_graph(net)
        elif spec.kind == "equistatic":
            topology = _equistatic(net, spec, seed)
        elif spec.kind in PEER_KINDS:
            topology = _peer_schedule(net, spec, seed)
        else:  # erg
            topology = erg(net, seed=keyed_seed(seed, _ERG, 0), reference=design)
        built.append(BuiltTopology(spec.name, spec.kind, topology))
    names = [b.name for b in built]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidInputError(f"topology names must be unique; {duplicates[0]!r} appears twice")
    return built


# ---------------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------------


def noise_variance(run) -> float:
    """The paper's cumulative noise variance U of a training run.

    U = sum over rounds t < T and DP devices i of sigma_{i,t}^2, the
    per-coordinate variance of device i's Gaussian noise in round t (Theorem
    1), over the run's target round T (``rounds``; the same for every
    topology, so U is known before training).  With the clipped sensitivity
    sigma_{i,t} = z_i eta_t Delta_i (eta_t = lr lr_decay^t, Delta_i the
    sensitivity of one step at eta = 1).  0 without DP devices; NaN with
    ``sensitivity="paper"``, whose noise depends on the data and is not
    recorded.
    """
    config = run.config
    if not run.dp_devices:
        return 0.0
    index = {node: k for k, node in enumerate(run.nodes)}
    # The sensitivity each device's noise was calibrated for (NaN with sensitivity="paper").
    unit = np.asarray(run.sensitivity, dtype=float)[[index[node] for node in run.dp_devices]]
    if np.isnan(unit).any():
        return float("nan")
    z = np.array([run.noise_multiplier[node] for node in run.dp_devices])
    steps = config["lr"] * config["lr_decay"] ** np.arange(config["rounds"])
    return float(np.sum((z * unit) ** 2) * np.sum(steps**2))


@dataclass(frozen=True, eq=False)
class _Piece:
    """One piece of a validation job: a training run over one topology in one trial."""

    net: Network
    name: str
    kind: str
    topology: Topology | TopologySchedule
    trial: int
    seed: int
    X: Any
    y: Any
    targets: tuple[float, ...]
    predictor: GlobalIteratePredictor
    train_kwargs: dict
    audit_rounds: int = DEFAULT_AUDIT_ROUNDS
    trainer: Trainer | None = None


class _Measured(NamedTuple):
    """What one piece measured: its rows of the runs table, its accuracy curve, its timing."""

    rows: pd.DataFrame
    curve: pd.DataFrame
    timing: pd.DataFrame


def _run_features(piece: _Piece, run) -> dict[str, float]:
    """The topology's features for the run's own settings and partition (FEATURE_COLUMNS).

    The noise features are NaN when the noise depended on the data
    (``sensitivity="paper"``): no setting describes it.  A time-varying
    topology's are those of its rounds (:func:`~topokit.design.features.features_of_schedule`).
    """
    config = run.config
    dp = config.get("dp") or {}
    multipliers = [z for z in run.noise_multiplier.values() if z is not None]
    # A run with per-device levels (DPConfig(noise_multiplier={device: z})) is described
    # by those levels, not by the largest.
    per_device = None if len(set(multipliers)) <= 1 else tuple(
        float(run.noise_multiplier.get(node) or 0.0) for node in piece.net.nodes)
    settings = FeatureSettings(noise_multiplier=max(multipliers, default=0.0),
                               max_grad_norm=dp.get("max_grad_norm", 1.0),
                               batch_size=config["batch_size"],
                               local_steps=config["local_steps"],
                               device_noise_multipliers=per_device)
    described = described_topology(piece.net, piece.topology, settings)
    values = {name: described[name] for name in FEATURE_COLUMNS}
    if run.dp_devices and dp.get("sensitivity") != "clipped":
        values.update(dict.fromkeys(("noise_average", "noise_disagreement", "noise_felt"),
                                    float("nan")))
    return values


def _stranger_audit(piece: _Piece, run) -> dict[str, float]:
    """What strangers learn of the run's topology: the privacy audit's stranger summary.

    Linear gossip of one private value over ``piece.audit_rounds`` rounds, each
    DP device with the noise multiplier it trained with and each device with the
    sensitivity of its clipped update (:func:`_run_sensitivity`): a device with
    fewer examples than the batch size adds more noise.  NaN when the audit is
    off (``audit_rounds=0``) or the noise depended on the data
    (``sensitivity="paper"``): no z describes it.  The worst finite mu is NaN
    when every stranger pair is exposed.  A time-varying topology gossips over
    its rounds' topologies in turn, as it trained.
    """
    dp = run.config.get("dp") or {}
    if piece.audit_rounds == 0 or (run.dp_devices and dp.get("sensitivity") != "clipped"):
        return {"exposed_stranger_pairs": np.nan, "stranger_mu_max": np.nan}
    noise = {node: z for node, z in run.noise_multiplier.items() if z is not None}
    summary = privacy_audit(piece.net, piece.topology, rounds=piece.audit_rounds,
                            noise_multiplier=noise, sensitivity=_run_sensitivity(run)
                            ).summary()
    worst = summary["stranger_mu_max"]
    return {"exposed_stranger_pairs": float(summary["exposed_stranger_pairs"]),
            "stranger_mu_max": np.nan if worst is None else float(worst)}


def _run_sensitivity(run) -> dict[Hashable, float] | float:
    """Every device's Delta_i per unit step, as D-SGD with clipping gives it.

    2 C (1 / min(B, |D_i|) + K - 1) (:func:`topokit.training.privacy.clipped_sensitivity`):
    what the run's DP devices calibrated their noise to (``run.sensitivity``); the other
    devices do not clip, and get the value they would have if they did, so that their
    rows of the audit are the gossip model's in the same units (a model statement, not a
    guarantee: an unclipped update is unbounded).  1.0 without DP (no noise: mu is 0 or inf
    whatever the units).
    """
    from ..training.privacy import clipped_sensitivity

    dp = run.config.get("dp") or {}
    if not run.dp_devices:
        return 1.0
    batches = np.minimum(int(run.config["batch_size"]), np.asarray(run.partition_sizes))
    deltas = clipped_sensitivity(1.0, float(dp["max_grad_norm"]), batches.astype(float),
                                 int(run.config["local_steps"]))
    return dict(zip(run.nodes, (float(value) for value in deltas), strict=True))


def _run_rows(piece: _Piece, run, metrics, variance: float) -> pd.DataFrame:
    """One row per target: the prediction for the topology next to what the run measured."""
    epsilon = max(run.epsilon.values()) if run.epsilon else float("nan")
    features = _run_features(piece, run)
    strangers = _stranger_audit(piece, run)
    rows = []
    for target in piece.targets:
        rounds = run.rounds_to(target)
        rows.append({
            "network": piece.net.name or "network", "topology": piece.name, "kind": piece.kind,
            "trial": piece.trial, "seed": piece.seed, "target": target,
            "hitting_time": metrics.hitting_time, "spectral_gap": metrics.spectral_gap,
            "phi": metrics.phi, "n_links": metrics.n_links,
            "n_dp_devices": metrics.n_dp_devices, "noise_variance": variance,
            "local_iterate": metrics.local_iterate,
            "predicted_global_iterate": metrics.predicted_global_iterate,
            "pseudo_time": metrics.pseudo_time,
            "measured_rounds": np.nan if rounds is None else float(rounds),
            "measured_time": np.nan if rounds is None else run.elapsed(rounds),
            "final_accuracy": run.final_accuracy, "rounds_run": run.rounds_run,
            "stop_rule": run.stop_rule, "epsilon": epsilon, "dp_formal": bool(run.dp_formal),
            "stranger_pairs": metrics.stranger_pairs, "exposed_pairs": metrics.exposed_pairs,
            **strangers, **features,
        })
    return pd.DataFrame(rows, columns=list(RUN_COLUMNS))


def _run_curve(piece: _Piece, run) -> pd.DataFrame:
    """The run's averaged accuracy at every checkpoint, by round and physical time."""
    return pd.DataFrame({
        "topology": piece.name, "kind": piece.kind, "trial": piece.trial, "round": run.rounds,
        "time": run.elapsed(run.rounds), "mean_accuracy": run.mean_accuracy,
    })


def _uses_noise_variance(predictor: Any) -> bool:
    return bool(getattr(predictor, "use_noise_variance", False))


def _check_partition(piece: _Piece, run) -> None:
    """The class counts the prediction used are those of the run's partition (sizes agree)."""
    counts = piece.net.class_counts
    if counts is not None and tuple(int(s) for s in counts.sum(axis=1)) != run.partition_sizes:
        raise InvalidInputError(
            f"trial {piece.trial}: the partition could not be replayed for the prediction "
            "(device sizes differ from the run's); a partitioner must draw only from the "
            "generator train gives it"
        )


def _measure(piece: _Piece) -> _Measured:
    """Train once over the piece's topology: the worker of :func:`validate`'s job.

    ``piece.net`` carries the trial's class counts, so a predictor that
    knows the data (a :class:`~topokit.design.TrainingTimePredictor`)
    predicts for the partition the run trains on.  With a user's trainer
    (:func:`_user_run`) only the training differs: the row is made alike.
    """
    if piece.trainer is not None:
        run = _user_run(piece)
    else:
        run = train(piece.net, piece.topology, piece.X, piece.y, seed=piece.seed,
                    **piece.train_kwargs)
        _check_partition(piece, run)
    variance = noise_variance(run)
    if isinstance(piece.topology, TopologySchedule):
        metrics = schedule_metrics(piece.net, piece.topology, piece.predictor, variance
                                   if _uses_noise_variance(piece.predictor) else None,
                                   local_iterate=run.local_iterate)
    else:
        metrics = evaluate(piece.net, piece.topology, piece.predictor, noise_variance=variance
                           if _uses_noise_variance(piece.predictor) else None)
    timing = pd.DataFrame([{"topology": piece.name, "kind": piece.kind, "trial": piece.trial,
                            "seed": piece.seed, "wall_clock": run.wall_clock}],
                          columns=list(TIMING_COLUMNS))
    return _Measured(_run_rows(piece, run, metrics, variance), _run_curve(piece, run), timing)


# ---------------------------------------------------------------------------------------------
# A user's trainer
# ---------------------------------------------------------------------------------------------

#: The stop rule recorded for the runs of a user's trainer.
USER_TRAINER_STOP_RULE = "user trainer"


def _core_plan(piece: _Piece) -> TrainingPlan:
    """The plan topokit's core would execute for the piece, without training it.

    The same steps as :func:`topokit.training.train` before its round loop:
    the schedule, the DP config, the partition (replayed from the piece's
    seed) and the DP plan (who adds noise, how much).  A user's trainer is
    described by it: its DP config is passed to the trainer, and its noise
    settings give the noise columns of the run's row.
    """
    from .._random import spawn_generators
    from ..training.partition import make_partitioner
    from ..training.plan import ROLES, check_schedule, plan_training, resolve_dp

    options = piece.train_kwargs
    schedule = check_schedule(**{key: options.get(key, _TRAIN_DEFAULTS[key])
                                 for key in _SCHEDULE_OPTIONS})
    dp_config = resolve_dp(options.get("dp"), piece.topology)
    if dp_config is not None and dp_config.per_device:
        dp_config.check_devices(piece.topology.dp_devices, piece.net.nodes)
    return plan_training(
        piece.net, piece.topology, piece.X, piece.y, model=options.get("model", "logreg"),
        test=options.get("test"), schedule=schedule, dp_config=dp_config,
        partitioner=make_partitioner(options.get("partition")), convergence=None,
        rng=spawn_generators(piece.seed, ROLES)["partition"],
    )


def _one_line(error: BaseException, limit: int = 300) -> str:
    """``error``'s type and message on one line (whitespace collapsed, cut to ``limit``)."""
    message = " ".join(str(error).split())
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _trainer_place(piece: _Piece) -> str:
    return f"the trainer on topology {piece.name!r}, trial {piece.trial}"


def _accuracies(result: Any, rounds: int, where: str) -> np.ndarray:
    """A trainer's return checked: 1 to ``rounds`` finite accuracies in [0, 1], as floats."""
    expected = "a list of test accuracies in [0, 1], one per round run (e.g. [0.31, 0.52])"
    if isinstance(result, np.ndarray):
        if result.ndim != 1 or result.dtype.kind not in "iuf":
            raise InvalidInputError(
                f"{where} returned an array of shape {result.shape} and dtype {result.dtype}; "
                f"return {expected}"
            )
        values = result.astype(np.float64)
    elif isinstance(result, (list, tuple)):
        number = (int, float, np.integer, np.floating)
        bad = next((k for k, v in enumerate(result)
                    if isinstance(v, (bool, np.bool_)) or not isinstance(v, number)), None)
        if bad is not None:
            shown = repr(result[bad])
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise InvalidInputError(
                f"{where} returned {shown} as the accuracy after round {bad + 1}; "
                f"return {expected}"
            )
        values = np.array([float(v) for v in result], dtype=np.float64)
    else:
        raise InvalidInputError(f"{where} returned a {type(result).__name__}; return {expected}")
    if values.size == 0:
        raise InvalidInputError(
            f"{where} returned no accuracies; return {expected}, at least the one after round 1"
        )
    if values.size > rounds:
        raise InvalidInputError(
            f"{where} returned {values.size} accuracies for rounds={rounds}; return at most "
            "one per round"
        )
    if not np.isfinite(values).all():
        k = int(np.flatnonzero(~np.isfinite(values))[0])
        raise InvalidInputError(
            f"{where} returned {values[k]} as the accuracy after round {k + 1}; accuracies "
            "must be finite numbers in [0, 1]"
        )
    if ((values < 0) | (values > 1)).any():
        k = int(np.flatnonzero((values < 0) | (values > 1))[0])
        raise InvalidInputError(
            f"{where} returned {values[k]:g} as the accuracy after round {k + 1}, outside "
            "[0, 1]; return fractions, not percentages"
        )
    return values


def _call_trainer(piece: _Piece, rounds: int, dp: DPConfig | None) -> np.ndarray:
    """The piece's accuracies by the user's trainer; its errors as one line naming the piece."""
    where = _trainer_place(piece)
    try:
        result = piece.trainer(piece.net, piece.topology, rounds=rounds, seed=piece.seed,
                               dp=dp)
    except Exception as error:  # the user's code: any failure, reported in one line
        raise InvalidInputError(f"{where} raised {_one_line(error)}") from None
    return _accuracies(result, rounds, where)


def _user_run(piece: _Piece) -> TrainingRun:
    """A :class:`~topokit.training.TrainingRun` of the piece trained by the user's trainer.

    Checkpoints are rounds 1, 2, ... (the trainer's sequence; no round 0),
    with one accuracy column, the trainer's (the mean of one column is
    itself).  Partition, noise multipliers and sensitivities are those the
    core plans for the same settings (:func:`_core_plan`), which describe
    the run for the predictions; no epsilon is reported, since topokit does
    not see the trainer's noise.
    """
    started = time.perf_counter()
    plan = _core_plan(piece)
    dp_config = plan.dp.config  # what train resolves its dp argument to
    accuracies = _call_trainer(piece, plan.schedule.rounds, dp_config)
    nodes = tuple(piece.net.nodes)
    noisy = [nodes[row] for row in plan.dp.rows]
    seconds, round_times = round_clock(piece.net, piece.topology, int(accuracies.size))
    return TrainingRun(
        nodes=nodes,
        rounds=np.arange(1, accuracies.size + 1, dtype=np.int64),
        accuracy=accuracies[:, None],
        local_iterate=seconds,
        wall_clock=time.perf_counter() - started,
        rounds_run=int(accuracies.size),
        stop_rule=USER_TRAINER_STOP_RULE,
        dp_devices=tuple(noisy),
        noise_multiplier={} if not noisy else dict(zip(
            noisy, (float(z) for z in plan.dp.noise_multiplier), strict=True)),
        sampling_rate={} if not noisy else dict(zip(
            noisy, (float(q) for q in plan.dp.sampling_rate), strict=True)),
        delta=dp_config.delta if dp_config is not None else None,
        dp_formal=dp_config.formal if dp_config is not None else True,
        sensitivity=plan.dp.device_sensitivity(plan.n_devices),
        partition_sizes=tuple(int(size) for size in plan.sampler.sizes),
        config=_user_run_config(plan, dp_config),
        round_times=round_times,
    )


def _user_run_config(plan: TrainingPlan, dp_config: DPConfig | None) -> dict[str, Any]:
    """The settings of a user trainer's run that its row's noise columns read."""
    schedule = plan.schedule
    dp = None if dp_config is None else {
        key: getattr(dp_config, key) for key in ("max_grad_norm", "sensitivity", "delta")}
    return {"rounds": schedule.rounds, "lr": schedule.lr, "lr_decay": schedule.lr_decay,
            "local_steps": schedule.local_steps, "batch_size": schedule.batch_size,
            "dp": dp, "trainer": True}


def _trainer_name(trainer: Trainer) -> str:
    """``module.qualname`` of a trainer (of its function for a partial): the job's record."""
    function = getattr(trainer, "func", trainer)  # functools.partial
    module = getattr(function, "__module__", None) or type(function).__module__
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}.{name}"


def _check_trainer(trainer: Any) -> Trainer | None:
    """None, or a callable that can be called as ``fn(net, topology, *, rounds, seed, dp)``."""
    if trainer is None:
        return None
    if not callable(trainer):
        raise InvalidInputError(
            "trainer must be a function fn(net, topology, *, rounds, seed, dp) returning the "
            f"test accuracy after each round; got {type(trainer).__name__}"
        )
    try:
        signature = inspect.signature(trainer)
    except (TypeError, ValueError):  # a builtin without a signature: called as is
        return trainer
    try:
        signature.bind(None, None, rounds=1, seed=0, dp=None)
    except TypeError as error:
        raise InvalidInputError(
            f"trainer {_trainer_name(trainer)} cannot be called as fn(net, topology, *, "
            f"rounds, seed, dp): {_one_line(error)}"
        ) from None
    return trainer


def _check_trainer_pickles(trainer: Trainer | None, n_jobs: int, scheduler: str | None) -> None:
    """A trainer sent to joblib or Dask workers must pickle (with cloudpickle, as they do)."""
    if trainer is None or (n_jobs == 1 and scheduler is None):
        return
    try:
        import cloudpickle  # what joblib (1.5 on) and Dask pickle with
    except ImportError:  # older joblib vendors it
        from joblib.externals import cloudpickle
    try:
        cloudpickle.dumps(trainer)
    except Exception as error:  # any pickling failure, reported in one line
        workers = "a Dask scheduler" if scheduler else f"n_jobs={n_jobs}"
        raise InvalidInputError(
            f"trainer {_trainer_name(trainer)} cannot be sent to the workers of {workers} "
            f"({_one_line(error, 120)}); use n_jobs=1 or a trainer that pickles"
        ) from None


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# validate: data, training options, the job's identity
# ---------------------------------------------------------------------------------------------


def _load_dataset(dataset: str):
    from ..training import load_cifar10, load_digits, load_fashion_mnist

    if not isinstance(dataset, str):
        raise InvalidInputError(f"dataset must be a string; got {dataset!r}")
    name, _, directory = dataset.partition(":")
    name = name.strip().lower()
    if name == "digits" and not directory:
        return load_digits()
    if name in ("fashion-mnist", "fmnist", "mnist") and directory:
        return load_fashion_mnist(directory)
    if name == "cifar10" and directory:
        return load_cifar10(directory)
    raise InvalidInputError(
        f"unknown dataset {dataset!r}; expected 'digits' (bundled with scikit-learn), "
        "'fashion-mnist:DIR' (IDX files) or 'cifar10:DIR' (python pickle batches)"
    )


def _check_train_kwargs(train_kwargs: dict) -> dict:
    allowed = _TRAIN_OPTIONS
    unknown = sorted(set(train_kwargs) - allowed)
    if unknown:
        raise InvalidInputError(
            f"unknown training option {unknown[0]!r}; validate passes these to "
            f"topokit.training.train: {', '.join(sorted(allowed))}"
        )
    if train_kwargs.get("progress"):
        raise InvalidInputError("progress is validate's own argument")
    _check_train_values(train_kwargs)
    return dict(train_kwargs)


#: Options of :func:`topokit.training.train` checked by its schedule.
_SCHEDULE_OPTIONS = ("rounds", "lr", "lr_decay", "local_steps", "batch_size", "checkpoint_every")


def _check_train_values(train_kwargs: dict) -> None:
    """Check the training options' values as train would, before the first of many runs."""
    from ..training.partition import make_partitioner
    from ..training.plan import check_schedule

    check_schedule(**{key: train_kwargs.get(key, _TRAIN_DEFAULTS[key])
                      for key in _SCHEDULE_OPTIONS})
    make_partitioner(train_kwargs.get("partition"))


def _jsonable(value: Any) -> Any:
    from ..training.models import Model

    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):  # a repr elides large arrays: digest every byte
        return {"shape": list(value.shape), "dtype": str(value.dtype),
                "sha256": hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}
    if isinstance(value, Model):
        # A user's model: its repr may name only its sizes (Model's does), so two models
        # of one class that differ in width would share a job fingerprint and resume each
        # other's runs; its class and every attribute decide instead.
        kind = type(value)
        return {"model": f"{kind.__module__}.{kind.__qualname__}",
                "attributes": _jsonable(dict(sorted(vars(value).items())))}
    return repr(value)


def _design_inputs(design: Any) -> dict[str, Any] | None:
    """What of a design its runs depend on beyond its topology: its noise and predictor."""
    if design is None:
        return None
    data = design.to_dict()
    return {key: data.get(key) for key in ("noise", "predictor")}


def _job_fingerprint(net, built, X, y, config) -> str:
    """A digest of everything that decides the runs: a parts folder of another job is refused."""
    digest = hashlib.sha256()
    digest.update(repr((net.nodes, sorted(map(repr, net.social.edges)))).encode())
    digest.update(net.compute_time.tobytes())
    digest.update(net.delay.tobytes())
    # A design's noise and predictor change its runs and their predictions.
    digest.update(json.dumps([[b.name, b.kind, b.topology.to_dict(), _design_inputs(b.design)]
                              for b in built], default=str).encode())
    digest.update(np.ascontiguousarray(X).tobytes())
    digest.update(np.ascontiguousarray(y).tobytes())
    digest.update(json.dumps(config, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def timings_path(output: str | Path) -> Path:
    """Where :func:`validate` writes the wall-clock time of every run beside ``output``.

    ``runs.parquet`` -> ``runs.timings.parquet``.
    """
    output = Path(output)
    return output.with_name(f"{output.stem}.timings{output.suffix or '.parquet'}")


def curves_path(output: str | Path) -> Path:
    """Where :func:`validate` writes the accuracy curves beside ``output``.

    ``runs.parquet`` -> ``runs.curves.parquet`` (one row per topology, trial
    and checkpoint).
    """
    output = Path(output)
    return output.with_name(f"{output.stem}.curves{output.suffix or '.parquet'}")


# ---------------------------------------------------------------------------------------------
# validate: check the inputs
# ---------------------------------------------------------------------------------------------


class _Data(NamedTuple):
    """Training data and the name it goes by in the config."""

    X: Any
    y: Any
    name: str


@dataclass(frozen=True, eq=False)
class _Settings:
    """The checked arguments of :func:`validate`."""

    specs: list[TopologySpec]
    targets: tuple[float, ...]
    trials: int
    seed: int
    n_jobs: int
    predictor: GlobalIteratePredictor
    train_kwargs: dict
    data: _Data
    audit_rounds: int = DEFAULT_AUDIT_ROUNDS
    trainer: Trainer | None = None
    workload: Workload | None = None
    predictor_given: bool = False  # else a Design's runs are judged by its own predictor
    predictor_name: str = "paper"  # what the runs table's predictions are by, in words


#: The target accuracies :func:`validate` times when neither ``targets`` nor a workload
#: names one.
DEFAULT_TARGETS = (0.85, 0.9)


def _is_model_object(model: Any) -> bool:
    """Whether ``model`` is a user's :class:`topokit.training.Model` instance (the workload
    then names it, and ``train`` trains it)."""
    from ..training.models import Model

    return isinstance(model, Model)


def _merge_workload(workload: Workload | None, targets: Sequence[float] | None,
                    train_kwargs: dict, trainer: Trainer | None) -> tuple[Sequence[float], dict]:
    """validate's targets and training options with ``workload``'s settings in them.

    Where an option and the workload both name a setting they must agree: one line
    says which to drop, and nothing is silently overridden.
    """
    if workload is None:
        return (DEFAULT_TARGETS if targets is None else targets), train_kwargs
    from ..training.privacy import DPConfig

    told: dict[str, Any] = {"dp": DPConfig(**workload.dp_config_kwargs()),
                            "rounds": workload.rounds, "batch_size": workload.batch_size,
                            "local_steps": workload.local_steps}
    if workload.trained_by_topokit:
        told["model"] = workload.model
    elif trainer is None and not _is_model_object(train_kwargs.get("model")):
        raise InvalidInputError(
            f"the workload's model {workload.model!r} is not one topokit trains "
            f"({', '.join(TOPOKIT_MODELS)}); pass model=YourModel(...) (a "
            "topokit.training.Model) or trainer=your_training_function")
    for name, value in told.items():
        if name in train_kwargs and train_kwargs[name] != value:
            raise InvalidInputError(
                f"{name}={train_kwargs[name]!r} disagrees with the workload's {value!r}; drop "
                f"{name}= (the workload sets it) or change the workload")
    if targets is not None and tuple(float(t) for t in targets) != (workload.target,):
        raise InvalidInputError(
            f"targets={list(targets)} disagree with the workload's target {workload.target}; "
            "drop targets= (the workload sets it) or change the workload")
    return (workload.target,), {**train_kwargs, **told}


def _check_targets(targets: Sequence[float]) -> tuple[float, ...]:
    """Distinct target accuracies in (0, 1], sorted."""
    targets = np.atleast_1d(np.asarray(targets, dtype=object)).tolist()
    if not targets:
        raise InvalidInputError("give at least one target accuracy")
    return tuple(sorted({check_accuracy_threshold(t, "target") for t in targets}))


def _default_predictor(workload: Workload | None, train_kwargs: dict) -> str:
    """What predicts validate's runs when no predictor is given: what ``topokit design``
    (:func:`topokit.optimize`) judges by, the shipped predictor for the workload (at the
    workload, its fields clamped to the fit), else the one fitted on the model trained.

    >>> _default_predictor(None, {}), _default_predictor(None, {"model": "mlp"})
    ('default', 'mlp')
    """
    if workload is not None:
        from ..design.time_predictor import shipped_predictor_for

        return shipped_predictor_for(workload)
    return _shipped_predictor(train_kwargs.get("model", "logreg"))


def _check_predictor(predictor: Any) -> Any:
    """The predictor whose predictions are recorded: a name, a file or a predictor object."""
    if predictor is None:
        return GlobalIteratePredictor()
    if isinstance(predictor, (str, Path)):
        return load_predictor(predictor)
    if not isinstance(predictor, GlobalIteratePredictor):
        if hasattr(predictor, "predict_network"):  # a TrainingTimePredictor
            return predictor
        raise InvalidInputError(
            f"predictor must be {', '.join(map(repr, PREDICTOR_NAMES))}, a predictor file or a "
            "topokit predictor; "
            f"got {type(predictor).__name__}"
        )
    if predictor.use_noise_variance and not predictor.is_fitted:
        raise NotFittedError(
            "a predictor with the noise variance U must be fitted first (topokit calibrate)"
        )
    return predictor


def _training_data(X, y, dataset: str) -> _Data:
    if (X is None) != (y is None):
        raise InvalidInputError("give both X and y, or neither (then dataset is used)")
    if X is None:
        return _Data(*_load_dataset(dataset), dataset)
    return _Data(X, y, "custom")


def _check_inputs(net: Network, topologies, *, X, y, dataset: str, targets: Sequence[float],
                  trials: int, seed: SeedLike, predictor: GlobalIteratePredictor | None,
                  n_jobs: int, output: str | Path | None, train_kwargs: dict,
                  audit_rounds: int = DEFAULT_AUDIT_ROUNDS,
                  trainer: Trainer | None = None, workload: Workload | None = None) -> _Settings:
    """Check every argument of :func:`validate` (in this order) before any work starts."""
    if not isinstance(net, Network):
        raise InvalidInputError(f"net must be a topokit Network; got {type(net).__name__}")
    specs = parse_topology_specs(topologies)
    targets = _check_targets(targets)
    trials = check_int_at_least(trials, "trials")
    seed = int_seed(seed)
    n_jobs = check_n_jobs(n_jobs)
    train_kwargs = _check_train_kwargs(train_kwargs)
    given_predictor = predictor
    named = _default_predictor(workload, train_kwargs) if predictor is None else predictor
    predictor = _check_predictor(named)
    if given_predictor is None and workload is not None:  # at the workload, as optimize is
        from ..design.time_predictor import predictor_within_fit

        predictor = predictor_within_fit(predictor, workload)[0]
    audit_rounds = check_audit_rounds(audit_rounds, "gossip", "audit_rounds", low=0)
    trainer = _check_trainer(trainer)
    if output is not None:
        check_output_path(output, "output")
    settings = _Settings(specs=specs, targets=targets, trials=trials, seed=seed, n_jobs=n_jobs,
                         predictor=predictor, train_kwargs=train_kwargs,
                         data=_training_data(X, y, dataset), audit_rounds=audit_rounds,
                         trainer=trainer, workload=workload,
                         predictor_given=given_predictor is not None,
                         predictor_name=str(named) if isinstance(named, (str, Path))
                         else type(named).__name__)
    if trainer is None:  # a user's trainer's cost is its own
        _check_training_cost(net, settings)
    if _judged_by_another_model(settings):
        warnings.warn(UNMEASURED_MODEL_NOTE, TopokitWarning, stacklevel=3)
    return settings


def _judged_by_another_model(settings: _Settings) -> bool:
    """Whether the runs' predictions are another model's: a model of the user's that no
    workload measured, judged by the shipped fit nobody chose for it."""
    return not settings.predictor_given and _unmeasured_model(settings)


#: The most CPU time validate's training runs may take, as estimated before the first
#: starts (:func:`_check_training_cost`): one day.  A longer horizon is refused with the
#: estimate and the most rounds that fit.
MAX_TRAINING_CPU_SECONDS = 24 * 3600.0
#: Rounds of the calibration run that measures the CPU time of a round; the first is not
#: counted (it warms the caches and loads the compiled kernels).
_CALIBRATION_ROUNDS = 6
#: CPU seconds after which the calibration stops at the next round (a large network).
_CALIBRATION_SECONDS = 1.0
#: Bytes a training run holds per checkpoint while it trains, per run and per device: its
#: accuracies (every device's, each checkpoint) and their bookkeeping.  Measured with
#: tracemalloc on validate of NDLF, digits, 3,000 and 6,000 rounds: 417, 578 and 1,917
#: bytes a round on 6, 16 and 100 devices (320 + 16 n).
_RUN_BYTES_PER_CHECKPOINT = (320.0, 16.0)
#: Bytes each run's accuracy curve keeps until validate returns, per checkpoint: 32, 34
#: and 96 bytes a round on 6, 16 and 100 devices (the same runs, 1 and 3 trials), taken
#: as 40 + n.
_KEPT_BYTES_PER_CHECKPOINT = (40.0, 1.0)


class _CalibrationDone(Exception):
    """Raised from the calibration run's progress callback to end it early."""


def _round_seconds(net: Network, settings: _Settings) -> float:
    """CPU seconds a round of validate's training takes here: measured on a short run of
    the training core with validate's options, over NDLF (the social links).

    The first round is not counted when a later one is: it loads the compiled kernels.
    """
    from ..design.baselines import ndlf
    from ..training.core import train as core_train  # the core itself, whatever wraps train

    rounds = min(settings.train_kwargs.get("rounds", _TRAIN_DEFAULTS["rounds"]),
                 _CALIBRATION_ROUNDS)
    started = time.process_time()
    stamps: list[float] = []

    def tick(done: int, total: int) -> None:
        stamps.append(time.process_time())
        if len(stamps) >= 2 and stamps[-1] - started > _CALIBRATION_SECONDS:
            raise _CalibrationDone

    # NDLF has no DP device, so the DP config changes nothing of the cost, and a per-device
    # one (naming the topologies' DP devices) would not fit it.
    options = {**{key: value for key, value in settings.train_kwargs.items() if key != "dp"},
               "rounds": rounds, "progress": tick}
    with warnings.catch_warnings():  # the runs themselves warn once
        warnings.simplefilter("ignore")
        try:
            core_train(net, ndlf(net), settings.data.X, settings.data.y, seed=settings.seed,
                       **options)
        except _CalibrationDone:
            pass
    if len(stamps) >= 2:
        return (stamps[-1] - stamps[0]) / (len(stamps) - 1)
    return (stamps[0] if stamps else time.process_time()) - started


def _cpu_time_text(seconds: float) -> str:
    """``seconds`` of CPU in the largest unit that reads well: '3.2 hours', '185 days'."""
    for unit, size in (("years", 365 * 86400.0), ("days", 86400.0), ("hours", 3600.0),
                       ("minutes", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.3g} {unit}".replace("e+", "e")
    return f"{seconds:.3g} seconds"


def _check_training_cost(net: Network, settings: _Settings) -> None:
    """Refuse, before any work, a horizon whose training runs would take more CPU time
    than :data:`MAX_TRAINING_CPU_SECONDS`, or more memory than is available now.

    Time: the runs (topologies x trials) x rounds x the CPU time of a round
    measured here (:func:`_round_seconds`); every run trains every round
    (validate stops no run early).  Memory: the accuracies of every device at
    every checkpoint, held by each run while it trains (one per worker) and kept
    for its curve (every run) (:data:`_RUN_BYTES_PER_CHECKPOINT`,
    :data:`_KEPT_BYTES_PER_CHECKPOINT`).  The message names where the rounds
    come from (``rounds=`` or the workload), the estimate and the most rounds
    that fit both.
    """
    from .._checks import _bytes_text, available_memory
    from .._jobs import worker_count

    rounds = settings.train_kwargs.get("rounds", _TRAIN_DEFAULTS["rounds"])
    every = settings.train_kwargs.get("checkpoint_every", _TRAIN_DEFAULTS["checkpoint_every"])
    topologies = sum(spec.item if spec.kind == "random" else 1 for spec in settings.specs)
    runs = topologies * settings.trials
    n = float(net.n_devices)
    per_checkpoint = (min(runs, worker_count(settings.n_jobs))
                      * (_RUN_BYTES_PER_CHECKPOINT[0] + _RUN_BYTES_PER_CHECKPOINT[1] * n)
                      + runs * (_KEPT_BYTES_PER_CHECKPOINT[0] + _KEPT_BYTES_PER_CHECKPOINT[1] * n))
    checkpoints = rounds // every + 1  # and round 0
    memory, available = (checkpoints + 1) * per_checkpoint, available_memory()
    per_round = max(_round_seconds(net, settings), 1e-9)
    seconds = runs * rounds * per_round
    if memory <= available and seconds <= MAX_TRAINING_CPU_SECONDS:
        return
    fits = int(MAX_TRAINING_CPU_SECONDS // (runs * per_round))
    if np.isfinite(available):  # inf where the system does not say
        fits = min(fits, int((available / per_checkpoint - 2) * every))
    if settings.workload is not None:
        what, fix = f"the workload's rounds ({rounds:,})", f"set the workload's rounds to {fits}"
    else:
        what, fix = f"rounds={rounds}", f"use rounds={fits}"
    fix = (f"{fix} or fewer, or fewer trials or topologies" if fits >= 1 else
           "use fewer trials or topologies, or a smaller network (not one round of each run "
           "fits)")
    what += (f": {_count(runs, 'training run')} ({_count(topologies, 'topology', 'topologies')}"
             f" x {_count(settings.trials, 'trial')}) of {rounds:,} rounds")
    if memory > available:
        raise InvalidInputError(
            f"{what} would hold about {_bytes_text(memory)} of memory (every device's accuracy "
            f"at each of {checkpoints:,} checkpoints of a run), more than the "
            f"{_bytes_text(available)} available; {fix}")
    raise InvalidInputError(
        f"{what} would take about {_cpu_time_text(seconds)} of CPU ({per_round * 1e3:.3g} ms "
        f"a round, measured here on {net.n_devices} devices), more than validate's limit of "
        f"one day (MAX_TRAINING_CPU_SECONDS); {fix}")


def _count(number: int, one: str, many: str | None = None) -> str:
    """'1 trial', '5 trials'."""
    return f"{number:,} {one if number == 1 else many or one + 's'}"


# ---------------------------------------------------------------------------------------------
# validate: plan the pieces, describe the job
# ---------------------------------------------------------------------------------------------


def _partition_counts(net: Network, y: Any, seed: int, *, partition: Any = None,
                           test: Any = None) -> np.ndarray:
    """Training rows of each class on each device in :func:`~topokit.training.train`'s run.

    :func:`~topokit.training.partition_class_counts` for ``net``'s devices
    (``partition`` and ``test`` as ``train`` takes them), without its
    warning: ``train`` warns about this very partition itself.  Every
    topology of a trial trains on the same partition.

    Returns
    -------
    ndarray of shape (n_devices, n_classes)
        Integer counts, rows in node order, classes in sorted label order.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return partition_class_counts(y, net.n_devices, partition, seed, nodes=net.nodes,
                                      test=test)


def _trial_network(net: Network, settings: _Settings, seed: int) -> Network:
    """``net`` carrying the class counts of the partition of the trial seeded ``seed``."""
    counts = _partition_counts(net, settings.data.y, seed,
                              partition=settings.train_kwargs.get("partition"),
                              test=settings.train_kwargs.get("test"))
    return net.with_class_counts(counts)


def _shipped_predictor(model: Any) -> str:
    """The shipped predictor fitted on runs of ``model`` (a name topokit trains, or its model
    exactly as that name builds it), else "default".

    >>> _shipped_predictor("mlp"), _shipped_predictor("logreg")
    ('mlp', 'default')
    """
    from ..design.time_predictor import SHIPPED_FOR_MODEL
    from ..training.models import _shipped_name

    return SHIPPED_FOR_MODEL.get(_shipped_name(model), "default")


def _optimized(net: Network, settings: _Settings) -> Topology:
    """The ``"optimize"`` spec: :func:`topokit.optimize` for the data of trial 0.

    One topology serves every trial, as a user deploys one; it is designed
    for the class counts of trial 0's partition (the trials differ in their
    partitions only by sampling).  It is judged by ``predictor`` when that is
    a :class:`~topokit.design.TrainingTimePredictor`, else by the one
    topokit ships for the model trained (``"mlp"`` for the MLP, else
    ``"default"``; eq. 15 is for AutoTag).  A model nothing measured (a
    user's trainer or ``Model`` object, without a workload that gives its
    probe rounds) gets the safe mixing weights (:mod:`topokit.design.trust`).
    """
    from ..design import optimize
    from ..design.trust import SAFE_MIXING

    if settings.predictor_given and hasattr(settings.predictor, "predict_network"):
        judge = settings.predictor
    elif settings.workload is not None:
        judge = None  # optimize's default: the shipped predictor that covers the workload
    else:
        judge = _shipped_predictor(settings.train_kwargs.get("model", "logreg"))
    trial_net = _trial_network(net, settings, trial_seed(settings.seed, 0))
    return optimize(trial_net, predictor=judge, seed=keyed_seed(settings.seed, _OPTIMIZE, 0),
                    workload=settings.workload,
                    mixing=SAFE_MIXING if _unmeasured_model(settings) else None).topology


def _unmeasured_model(settings: _Settings) -> bool:
    """Whether the runs train a model of the user's that no workload describes (a trainer,
    or a ``Model`` object other than topokit's models as their names build them)."""
    from ..training.models import _shipped_name

    if settings.workload is not None:
        return False
    model = settings.train_kwargs.get("model", "logreg")
    return settings.trainer is not None or (_is_model_object(model)
                                            and _shipped_name(model) is None)


#: What validate and its CLI say of runs whose epsilon is nominal (sensitivity="paper").
NOMINAL_EPSILON_NOTE = (
    'runs with DPConfig(sensitivity="paper") report a nominal epsilon, not a formal DP '
    "guarantee (noise scaled by the data's own update norm; column dp_formal is False); "
    'use sensitivity="clipped"'
)


def _warn_if_nominal(runs: pd.DataFrame) -> None:
    """Warn in the calling process: the training workers' own warnings may not reach it."""
    from ..errors import NotAFormalGuaranteeWarning

    if len(runs) and not runs["dp_formal"].astype(bool).all():
        warnings.warn(NOMINAL_EPSILON_NOTE, NotAFormalGuaranteeWarning, stacklevel=3)


def _plan_pieces(net: Network, built: Sequence[BuiltTopology],
                 settings: _Settings) -> list[_Piece]:
    """One piece per (topology, trial); trial t has the same seed for every topology.

    The network of trial t carries that trial's class counts (its partition),
    which the predictions of the trial's runs use.
    """
    trial_seeds = [trial_seed(settings.seed, t) for t in range(settings.trials)]
    trial_nets = [_trial_network(net, settings, seed) for seed in trial_seeds]
    return [
        _Piece(net=trial_nets[t], name=b.name, kind=b.kind, topology=b.topology, trial=t,
               seed=trial_seeds[t], X=settings.data.X, y=settings.data.y,
               targets=settings.targets, predictor=_judge_of(b, settings),
               train_kwargs=_train_kwargs_of(b, settings), audit_rounds=settings.audit_rounds,
               trainer=settings.trainer)
        for b in built for t in range(settings.trials)
    ]


def _judge_of(built: BuiltTopology, settings: _Settings) -> Any:
    """The predictor of a topology's runs: a design's own (one predicted time for the
    design, whatever surface shows it) unless validate was given one."""
    if built.design is None or settings.predictor_given:
        return settings.predictor
    return built.design.judge()


def _train_kwargs_of(built: BuiltTopology, settings: _Settings) -> dict:
    """The training options of a topology's runs: a design's DP devices add the noise it
    decided (:attr:`topokit.design.Design.noise`), at its delta, per round."""
    design = built.design
    if design is None or design.noise is None or not design.noise.noise_multipliers:
        return settings.train_kwargs
    from dataclasses import replace

    given = settings.train_kwargs.get("dp")
    base = given if isinstance(given, DPConfig) else DPConfig()
    dp = replace(base, noise_multiplier=dict(design.noise_multipliers),
                 delta=design.noise.delta, per="round")
    return {**settings.train_kwargs, "dp": dp}


def _run_config(net: Network, settings: _Settings, built: Sequence[BuiltTopology]) -> dict:
    """The settings of the run, JSON-able (:attr:`ValidationResult.config`).

    ``"trainer"`` (the user's trainer's ``module.qualname``) only when one
    was given: the config of a run of the core is as before.
    ``"schedules_extrapolated"`` (the time-varying topologies, and what
    their predictions are) only when there are some.
    """
    config = {
        "network": net.name, "dataset": settings.data.name, "targets": list(settings.targets),
        "trials": settings.trials, "seed": settings.seed,
        "predictor": settings.predictor.to_dict(), "predictor_name": settings.predictor_name,
        "train": _jsonable(settings.train_kwargs), "audit_rounds": settings.audit_rounds,
        "topologies": [[b.name, b.kind] for b in built],
    }
    if settings.trainer is not None:
        config["trainer"] = _trainer_name(settings.trainer)
    if _judged_by_another_model(settings):  # only then: other configs are as before
        config["unmeasured_model"] = UNMEASURED_MODEL_NOTE
    varying = [b.name for b in built if isinstance(b.topology, TopologySchedule)]
    if varying:  # only then: the config (and job) of static topologies is as before
        config["schedules_extrapolated"] = {"topologies": varying,
                                            "why": SCHEDULE_PREDICTION_NOTE}
    return config


def _job_description(net: Network, built: Sequence[BuiltTopology], settings: _Settings,
                     config: dict) -> dict:
    """The manifest of the parts folder: resumption only for the very same job."""
    fingerprint = _job_fingerprint(net, built, settings.data.X, settings.data.y, config)
    # format 2: wall-clock times in their own table, exposure counts in the runs table;
    # format 3: predictions use each trial's class counts (pieces of format 2 did not);
    # format 4: the runs table has the FEATURE_COLUMNS;
    # format 5: and the privacy audit's stranger columns;
    # format 6: a time-varying topology's predictions and features.
    return {"kind": "validate", "format": 6, "network": str(net.name), "job": fingerprint}


# ---------------------------------------------------------------------------------------------
# validate
# ---------------------------------------------------------------------------------------------


def validate(
    net: Network,
    topologies: str | Sequence[str] | Mapping[str, Topology | str] = DEFAULT_TOPOLOGIES,
    *,
    X=None,
    y=None,
    dataset: str = "digits",
    targets: Sequence[float] | None = None,
    trials: int = 5,
    seed: SeedLike = 0,
    predictor: GlobalIteratePredictor | None = None,
    n_jobs: int = 1,
    output: str | Path | None = None,
    resume: bool = True,
    progress: Progress | None = None,
    scheduler: str | None = None,
    audit_rounds: int = DEFAULT_AUDIT_ROUNDS,
    trainer: Trainer | None = None,
    workload: Workload | None = None,
    **train_kwargs,
) -> ValidationResult:
    """Train over several topologies and compare predicted with measured training time.

    For every topology and trial, :func:`topokit.training.train` runs D-PSGD
    with partial DP over the topology, and the rounds and physical time (rounds
    x local iterate L) to each target accuracy are recorded next to what
    :func:`topokit.evaluate` predicts for that topology.

    Parameters
    ----------
    net : Network
    topologies : str, list of str or dict, default ("autotag", "ndlf", "dlfdp", "erg")
        Specs: ``"optimize"`` (:func:`topokit.optimize`'s design, see the
        Notes), ``"autotag"`` (AutoTag's design under ``predictor`` if that
        is an eq. (15) predictor, else under eq. (15) itself), ``"ndlf"``,
        ``"dlfdp"``, ``"erg"`` (DeepPrivacy-ERG with AutoTag's link count),
        ``"exponential"`` (Ying et al.'s static exponential graph over the
        usable links, devices on the ring in node order:
        :func:`~topokit.design.baselines.exponential_graph`),
        ``"equistatic"`` or ``"equistatic:M"`` (Song et al.'s static
        U-EquiStatic in the same node order, M ring offsets drawn from
        ``seed``, default ceil(log2 n), up to 2M peers a device, with its
        mixing weights: :func:`~topokit.design.peers.equistatic`), the
        time-varying peers over the usable links in the same node order
        (:mod:`topokit.design.peers`): ``"one-peer-exponential"`` (Ying et
        al.), ``"base:K"`` (Takezawa et al.'s Base-(K+1) graph, at most K
        peers a round) and ``"epidemic:S"`` (de Vos et al., S random peers a
        round, drawn from ``seed``), ``"random:K"`` (K random valid connected
        topologies, named ``random-0`` ...); a comma-separated string is
        split.  A dict maps names to Topology objects,
        :class:`~topokit.network.TopologySchedule` objects,
        :class:`~topokit.design.Design` objects (or
        :func:`topokit.load_design`'s) or specs.  A time-varying topology's
        measured time is the sum of its rounds' times, and its predictions
        come from its features over its rounds, an extrapolation of
        predictors fitted on static topologies
        (``config["schedules_extrapolated"]`` says so).  A Design trains as it was
        designed: its DP devices add the noise it decided
        (``Design.noise``, per round at its delta), and its runs are predicted
        by its own predictor (:meth:`~topokit.design.Design.judge`) unless
        ``predictor`` is given.
    X, y : array-like, optional
        Data and labels; default: ``dataset``.
    dataset : str, default "digits"
        ``"digits"`` (scikit-learn's, standardised), ``"fashion-mnist:DIR"``
        or ``"cifar10:DIR"`` (files the user has).
    targets : sequence of float in (0, 1], optional
        Averaged test accuracies to time.  Default: the workload's target, or
        :data:`DEFAULT_TARGETS` (0.85 and 0.9) without one.
    trials : int, default 5
        Runs per topology.  Trial t trains with the same seed for every
        topology (same partition, initial model and minibatches: common random
        numbers, which sharpen the comparison).
    seed : int, default 0
        Seeds the trials, ERG and the random topologies (each from its own
        ``SeedSequence([seed, role, index])``).  A Generator or None is turned
        into an int first (then a re-run is not the same job).
    predictor : str, path, GlobalIteratePredictor or TrainingTimePredictor, optional
        Predicts G' (and, if of eq. (15)'s form, guides AutoTag).  Default:
        what ``topokit design`` judges by, the shipped predictor for the
        workload (``"workload"``), else the one fitted on the model trained
        (``"default"`` for logistic regression, ``"mlp"``); ``"paper"`` gives
        eq. (15).  A predictor fitted with the noise variance U gets each
        run's U.  A :class:`~topokit.design.Design` among the topologies is
        predicted by its own predictor unless one is given.
    n_jobs : int, default 1
        joblib workers over (topology, trial) pieces (-1: all cores).
    output : path, optional
        Write the runs table there as Parquet (atomically), and the accuracy
        curves beside it (:func:`curves_path`).  Finished pieces are kept in
        ``OUTPUT.parts/`` meanwhile (``runs-NNNNNN.parquet`` and
        ``curve-NNNNNN.parquet``, see :func:`topokit._jobs.run_resumable`); an
        interrupted run called again with the same arguments skips them.
    resume : bool, default True
        False discards the pieces of an interrupted run.
    progress : callable, optional
        ``progress(done, total)`` after every piece.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``): the training runs
        then go to that cluster's workers as tasks, however few (``n_jobs``
        is ignored), resumable as locally (the parts stay beside ``output``,
        in this process) and with the same results.
    audit_rounds : int >= 0, default 50
        Rounds of gossip of the privacy audit behind the columns
        ``exposed_stranger_pairs`` and ``stranger_mu_max`` (see
        :func:`topokit.privacy_audit`; each DP device with the noise
        multiplier it trained with); 0 skips the audit (NaN columns).
    trainer : callable, optional
        Your own training code instead of topokit's core (the default, None,
        is :func:`topokit.training.train`).  Called once per topology and
        trial as ``trainer(net, topology, rounds=T, seed=s, dp=config)``, it
        returns the averaged test accuracy after each round: a list, tuple
        or 1-D array of 1 to T numbers in [0, 1] (fewer than T when it
        stops early).  ``net`` is the trial's network (with its class
        counts), ``seed`` the trial's seed (the same for every topology),
        ``config`` the :class:`~topokit.training.DPConfig` the core would use
        for the topology's DP devices (None: no noise, which
        :func:`~topokit.training.train` spells ``dp=False``).  A time-varying
        topology comes as its :class:`~topokit.network.TopologySchedule`
        (round t mixes with ``topology.mixing_at(t, net.nodes)``).  With ``n_jobs``
        other than 1 or a ``scheduler`` the trainer is sent to the workers,
        so it must pickle (joblib and Dask use cloudpickle: a module-level
        function, or a closure over picklable data); with ``n_jobs=1`` any
        callable works.  See the Notes.
    workload : Workload, optional
        What the user trains (:class:`topokit.Workload`): its model, DP
        config (epsilon and delta per round, clipping norm), rounds, batch
        size, local steps and target are those of every run, and the
        ``"optimize"`` spec designs for it (:func:`topokit.optimize`'s
        ``workload``).  ``targets``, ``dp``, ``rounds``, ``batch_size``,
        ``local_steps`` and ``model`` given as well must agree with it, or one
        line says which to drop.  A model topokit does not train by name needs
        its :class:`~topokit.training.Model` object (``model=``) or a
        ``trainer``.  None (default): the options as given.
    **train_kwargs
        Passed to :func:`topokit.training.train` (``rounds=200``, ``lr=0.2``,
        ``lr_decay=0.99``, ``partition`` (skewness K), ``dp``, ``model``,
        ``local_steps``, ``batch_size``, ``checkpoint_every``,
        ``convergence``, ``test``).  Its defaults reach 85-90 % on digits
        within a few dozen rounds for most topologies; a run is ~0.3 s.

    Returns
    -------
    ValidationResult

    Raises
    ------
    InvalidInputError
        An unknown topology spec, a target outside (0, 1], a bad number of
        trials, an unknown training option, or a parts folder of another job;
        a peer the network cannot give (``base:K`` with K below 1 or above
        n - 1, ``epidemic:S`` with S above a device's usable degree,
        ``equistatic:M`` with M below 1 or a draw whose offsets all share a
        factor with n, a link it needs with an infinite delay, named);
        a ``trainer`` that cannot be called as above, raises, or returns
        anything but 1 to ``rounds`` finite accuracies in [0, 1] (one line
        naming the topology and trial).
    InvalidTopologyError
        A given Topology that breaks a DeepPrivacy rule on ``net``.

    Notes
    -----
    The noise variance U (column ``noise_variance``) is the paper's cumulative
    per-coordinate noise variance over the target round T, see
    :func:`noise_variance`.  Rows of runs that never reached a target have
    NaN measured rounds and time.

    The predictions of trial t are made for the data the trial trains on:
    the network is given the class counts of the trial's partition (training
    rows per class per device; they replace any ``net.class_counts``),
    which a :class:`~topokit.design.TrainingTimePredictor` turns into its
    heterogeneity and data-size features.  Eq. (15) uses H and phi only and
    predicts the same as before.  AutoTag, ERG and the random topologies are
    built on ``net`` as given.  The ``"optimize"`` design is made for the
    class counts of trial 0 (one topology serves every trial, as one is
    deployed), judged by ``predictor`` when that is a
    :class:`~topokit.design.TrainingTimePredictor`, else by the one topokit
    ships for the model (``load_predictor("mlp")`` for ``model="mlp"``,
    ``"default"`` otherwise).

    A ``trainer``'s accuracies become a row of the runs table as a core
    run's do: ``measured_rounds`` is the first round whose accuracy reaches
    the target (NaN if none does), ``measured_time`` that times L,
    ``rounds_run`` the number of accuracies, ``final_accuracy`` the last,
    ``stop_rule`` ``"user trainer"``; the curves hold rounds 1, 2, ... (no
    round 0).  The other columns describe the run the training options
    configure, as for the core: the partition of ``partition`` and ``test``
    (:func:`topokit.training.partition_class_counts`), the DP config's noise
    for ``rounds``, ``batch_size``, ``local_steps``, ``lr`` and
    ``lr_decay`` (``noise_variance``, the noise features, the stranger
    audit), and ``dp_formal`` as the config says; they hold for the trainer
    when it trains that way.  ``epsilon`` is NaN: topokit does not see the
    trainer's noise.  A trainer's exception or bad return stops ``validate``
    with one line naming the topology and trial; the output tables are
    written only when every run is done (finished runs stay in
    ``OUTPUT.parts/`` for a resumed call with a trainer of the same name).

    A trainer around PyTorch code (a sketch, not run here; ``make_model``,
    ``local_step``, ``accuracy`` and the data loaders are yours)::

        import torch

        def torch_trainer(net, topology, *, rounds, seed, dp):
            torch.manual_seed(seed)
            mixing = torch.as_tensor(topology.mixing_matrix(net.nodes), dtype=torch.float32)
            models = [make_model() for _ in net.nodes]
            noisy = [net.index[node] for node in topology.dp_devices] if dp else []
            accuracies = []
            for _ in range(rounds):
                for i, model in enumerate(models):  # clip per example on DP devices
                    local_step(model, train_loaders[i],
                               max_grad_norm=dp.max_grad_norm if i in noisy else None)
                with torch.no_grad():
                    flat = torch.stack([torch.nn.utils.parameters_to_vector(m.parameters())
                                        for m in models])
                    for i in noisy:  # sigma: your noise for dp (see topokit.dp)
                        flat[i] += sigma * torch.randn_like(flat[i])
                    flat = mixing @ flat  # every device averages with its neighbours
                    for model, row in zip(models, flat):
                        torch.nn.utils.vector_to_parameters(row, model.parameters())
                accuracies.append(sum(accuracy(m, test_loader) for m in models) / len(models))
            return accuracies

        result = topokit.validate(net, trainer=torch_trainer, X=X, y=y, rounds=100)

    Examples
    --------
    A tiny trainer in numpy: every device's class centroids of its share of
    the data, averaged over the topology each round.

    >>> import numpy as np
    >>> from topokit import load_example
    >>> from topokit.training import load_digits
    >>> X, y = load_digits()
    >>> def gossip_centroids(net, topology, *, rounds, seed, dp):
    ...     rows = np.random.default_rng(seed).permutation(len(y))
    ...     test, parts = rows[:450], np.array_split(rows[450:], net.n_devices)
    ...     onehot = np.eye(10)[y]
    ...     sums = np.stack([onehot[p].T @ X[p] for p in parts])  # (devices, classes, features)
    ...     counts = np.stack([onehot[p].sum(axis=0) for p in parts])
    ...     mixing = topology.mixing_matrix(net.nodes)
    ...     accuracies = []
    ...     for _ in range(rounds):
    ...         sums, counts = np.tensordot(mixing, sums, axes=1), mixing @ counts
    ...         centroids = sums / np.maximum(counts, 1e-12)[:, :, None]
    ...         distances = ((X[test, None, None] - centroids) ** 2).sum(axis=3)
    ...         accuracies.append(float(np.mean(distances.argmin(axis=2) == y[test, None])))
    ...     return accuracies
    >>> result = validate(load_example("toy"), "ndlf,dlfdp", trainer=gossip_centroids,
    ...                   trials=1, rounds=5, targets=[0.85], audit_rounds=0)
    >>> result.frame[["topology", "measured_rounds", "rounds_run", "stop_rule"]]
      topology  measured_rounds  rounds_run     stop_rule
    0     ndlf              1.0           5  user trainer
    1    dlfdp              1.0           5  user trainer
    """
    workload = check_workload(workload)
    targets, train_kwargs = _merge_workload(workload, targets, train_kwargs, trainer)
    settings = _check_inputs(net, topologies, X=X, y=y, dataset=dataset, targets=targets,
                             trials=trials, seed=seed, predictor=predictor, n_jobs=n_jobs,
                             output=output, train_kwargs=train_kwargs,
                             audit_rounds=audit_rounds, trainer=trainer, workload=workload)
    scheduler = check_scheduler(scheduler)
    _check_trainer_pickles(settings.trainer, settings.n_jobs, scheduler)
    built = _build_topologies(net, settings.specs, settings)
    config = _run_config(net, settings, built)
    pieces = _plan_pieces(net, built, settings)
    outputs = description = None
    if output is not None:
        outputs = (Path(output), curves_path(output), timings_path(output))
        description = _job_description(net, built, settings, config)
    job = run_resumable(pieces, _measure, tables=("runs", "curve", "timing"), outputs=outputs,
                        description=description, n_jobs=settings.n_jobs, progress=progress,
                        resume=resume, scheduler=scheduler)
    _warn_if_nominal(job.tables["runs"])
    return ValidationResult(frame=job.tables["runs"], curves=job.tables["curve"],
                            topologies={b.name: b.topology for b in built}, config=config,
                            timings=job.tables["timing"])
