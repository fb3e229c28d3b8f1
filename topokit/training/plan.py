"""The plan of a training run: the settings of :func:`~topokit.training.train`, checked.

:func:`plan_training` turns the arguments into a :class:`TrainingPlan` in
the order the random streams require: the held-out split and then the
partition (both from the "partition" generator), the model, the Poisson
sampler, the DP plan (who adds noise, how much, what the accountant is told)
and the mixing matrix.  The round loop (:mod:`topokit.training._loop`) only
executes a plan; it never validates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import (
    check_finite_array,
    check_int_at_least,
    check_nonnegative,
    check_positive,
    check_real,
)
from ..errors import InvalidInputError, InvalidTopologyError
from ..network.core import Network, Topology
from ..network.schedule import TopologySchedule
from ._sampling import PoissonSampler
from .models import Model, make_model
from .partition import Partitioner
from .privacy import DPConfig, DPPlan, plan_dp

if TYPE_CHECKING:
    from .core import Convergence

__all__ = [
    "ROLES",
    "Schedule",
    "DataSplit",
    "TrainingPlan",
    "ScheduledMixing",
    "check_schedule",
    "resolve_topology",
    "resolve_dp",
    "split_data",
    "partition_rows",
    "plan_training",
    "stratified_split",
]

#: The roles of the run's random generators, spawned in this order from one seed.
ROLES = ("partition", "init", "sampling", "noise")


class Schedule(NamedTuple):
    """The counts and step sizes of a run (validated).

    Attributes
    ----------
    rounds : int
        Target round T.
    lr, lr_decay : float
        Step size eta_t = lr * lr_decay**t.
    local_steps : int
        Minibatch SGD steps per device per round (K).
    batch_size : int
        Expected Poisson minibatch size B.
    checkpoint_every : int
        Evaluate every H rounds (and after the last).
    """

    rounds: int
    lr: float
    lr_decay: float
    local_steps: int
    batch_size: int
    checkpoint_every: int

    def step_size(self, t: int) -> float:
        """eta_t of round t = 0, 1, ..."""
        return self.lr * self.lr_decay**t

    def is_checkpoint(self, done: int) -> bool:
        """Whether the accuracy is recorded after ``done`` rounds."""
        return done % self.checkpoint_every == 0 or done == self.rounds


class DataSplit(NamedTuple):
    """Training and held-out data, labels coded 0..n_classes-1 in sorted label order."""

    X_train: NDArray[np.float64]
    codes_train: NDArray[np.intp]
    X_test: NDArray[np.float64]
    codes_test: NDArray[np.intp]
    n_classes: int


@dataclass(frozen=True, eq=False)
class TrainingPlan:
    """Everything a run executes, resolved and validated (no random generators).

    Attributes
    ----------
    schedule : Schedule
    model : Model
    data : DataSplit
    sampler : PoissonSampler
        The partition of the training rows over devices and its minibatches.
    dp : DPPlan
        Who adds noise, how much, and the accountant's inputs.
    mixing : ndarray of shape (n_devices, n_devices)
        The topology's mixing matrix A in node order (its link weights if it
        carries any, else Lazy-Metropolis; :meth:`Topology.mixing_matrix`);
        round 0's for a time-varying topology.
    convergence : Convergence or None
        Early stopping; None runs every round.
    time_varying : ScheduledMixing or None
        The mixing matrix of every round of a time-varying topology
        (:class:`~topokit.network.TopologySchedule`); None: ``mixing`` in
        every round.
    """

    schedule: Schedule
    model: Model
    data: DataSplit
    sampler: PoissonSampler
    dp: DPPlan
    mixing: NDArray[np.float64]
    convergence: Convergence | None
    time_varying: ScheduledMixing | None = None

    @property
    def n_devices(self) -> int:
        return self.mixing.shape[0]


@dataclass(frozen=True, eq=False)
class ScheduledMixing:
    """The mixing matrices of a time-varying topology on a network, round by round.

    Each round's topology is checked against the network as it is built
    (:meth:`TopologySchedule.round_on`): the rounds of a generated schedule
    beyond the window its construction checked are drawn only as they are
    trained.
    """

    topologies: TopologySchedule
    net: Network

    @property
    def period(self) -> int | None:
        """The schedule's period (its matrices repeat); None: a new matrix every round."""
        return self.topologies.period

    def matrix(self, t: int) -> NDArray[np.float64]:
        """W_t, the mixing matrix of round ``t`` in node order."""
        return self.topologies.round_on(self.net, t).mixing_matrix(self.net.nodes)


# ---------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------


def resolve_topology(net: Any, topology: Any) -> Topology | TopologySchedule:
    """The topology to train over (``net.topology`` for None), validated against ``net``.

    A :class:`~topokit.network.TopologySchedule` is validated over its window
    (every round's DeepPrivacy rules, the union connected); its later rounds
    are checked as they are trained (:class:`ScheduledMixing`).
    """
    if not isinstance(net, Network):
        raise InvalidInputError(f"net must be a topokit Network; got {type(net).__name__}")
    if topology is None:
        topology = net.topology
        if topology is None:
            raise InvalidTopologyError("no topology given and the network stores none")
    if not isinstance(topology, (Topology, TopologySchedule)):
        raise InvalidTopologyError(
            "topology must be a topokit Topology or TopologySchedule; got "
            f"{type(topology).__name__}"
        )
    topology.validate(net)
    return topology


def check_schedule(
    *,
    rounds: Any,
    lr: Any,
    lr_decay: Any,
    local_steps: Any,
    batch_size: Any,
    checkpoint_every: Any,
) -> Schedule:
    """Check the counts and step sizes of :func:`~topokit.training.train`."""
    rounds = check_int_at_least(rounds, "rounds")
    local_steps = check_int_at_least(local_steps, "local_steps")
    batch_size = check_int_at_least(batch_size, "batch_size")
    checkpoint_every = check_int_at_least(checkpoint_every, "checkpoint_every")
    return Schedule(
        rounds=rounds,
        lr=check_nonnegative(lr, "lr"),
        lr_decay=check_positive(lr_decay, "lr_decay"),
        local_steps=local_steps,
        batch_size=batch_size,
        checkpoint_every=checkpoint_every,
    )


def resolve_dp(dp: DPConfig | bool | None,
               topology: Topology | TopologySchedule) -> DPConfig | None:
    """The DPConfig of the run: None/True mean ``DPConfig()`` if the topology has DP devices."""
    if dp is False:
        return None
    if dp is None or dp is True:
        return DPConfig() if topology.dp_devices else None
    if isinstance(dp, DPConfig):
        return dp
    raise InvalidInputError(f"dp must be a DPConfig, None or False; got {dp!r}")


# ---------------------------------------------------------------------------------------------
# Data: held-out split and partition
# ---------------------------------------------------------------------------------------------


class Labelled(NamedTuple):
    """Features (float64, no NaN or inf) and their labels."""

    X: NDArray[np.float64]
    y: NDArray


class HeldOut(NamedTuple):
    """The training rows and the held-out rows."""

    train: Labelled
    test: Labelled


class SplitRows(NamedTuple):
    """Row numbers of a stratified split."""

    train: NDArray[np.intp]
    test: NDArray[np.intp]


def _check_data(X: ArrayLike, y: ArrayLike, what: str) -> Labelled:
    features = check_finite_array(X, f"{what} X", ndim=2)
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise InvalidInputError(f"{what} labels y must be 1-dimensional; got shape {labels.shape}")
    if labels.shape[0] != features.shape[0]:
        raise InvalidInputError(
            f"{what} labels do not match the data: X has {features.shape[0]} rows, "
            f"y has {labels.shape[0]} labels"
        )
    if features.shape[0] == 0:
        raise InvalidInputError(f"{what} data is empty")
    return Labelled(features, labels)


def stratified_split(labels: NDArray, fraction: float, rng: np.random.Generator) -> SplitRows:
    """``fraction`` of every class held out, drawn by ``rng`` (class by class, sorted labels).

    The test set of :func:`topokit.training.train` when ``test`` is a fraction;
    each class keeps its share of the rows.

    Examples
    --------
    >>> import numpy as np
    >>> split = stratified_split(np.array([0, 0, 0, 0, 1, 1]), 0.5, np.random.default_rng(0))
    >>> len(split.train), len(split.test)
    (3, 3)
    """
    test = []
    for value in np.unique(labels):
        rows = rng.permutation(np.flatnonzero(labels == value))
        test.append(rows[: int(round(fraction * len(rows)))])
    test_rows = np.sort(np.concatenate(test))
    train_rows = np.setdiff1d(np.arange(labels.shape[0]), test_rows)
    return SplitRows(train=train_rows, test=test_rows)


def _hold_out(data: Labelled, test: Any, rng: np.random.Generator) -> HeldOut:
    """The training and held-out data for the ``test`` argument of ``train``."""
    if test is None or isinstance(test, (float, np.floating)):
        fraction = 0.25
        if test is not None:
            fraction = check_real(test, "test (the held-out fraction)", low=0, high=1,
                                  closed="neither")
        rows = stratified_split(data.y, fraction, rng)
        return HeldOut(
            train=Labelled(data.X[rows.train], data.y[rows.train]),
            test=Labelled(data.X[rows.test], data.y[rows.test]),
        )
    if isinstance(test, tuple) and len(test) == 2:
        held_out = _check_data(*test, "test")
        if held_out.X.shape[1] != data.X.shape[1]:
            raise InvalidInputError(
                f"test data has {held_out.X.shape[1]} features; "
                f"training data has {data.X.shape[1]}"
            )
        return HeldOut(train=data, test=held_out)
    raise InvalidInputError("test must be None, a fraction in (0, 1) or a pair (X_test, y_test)")


def split_data(
    X: ArrayLike, y: ArrayLike, test: Any, n_devices: int, rng: np.random.Generator
) -> DataSplit:
    """Check the data, hold out the test set and code the labels 0..n_classes-1."""
    train, held_out = _hold_out(_check_data(X, y, "training"), test, rng)
    if n_devices > train.X.shape[0]:
        raise InvalidInputError(
            f"more devices than training samples: {n_devices} devices, {train.X.shape[0]} "
            "samples; every device needs at least one sample"
        )
    if held_out.X.shape[0] == 0:
        raise InvalidInputError(
            "the held-out test set is empty (every class too small for the test fraction); "
            "pass test=(X_test, y_test)"
        )
    classes = np.unique(np.concatenate([train.y, held_out.y]))
    return DataSplit(
        X_train=train.X,
        codes_train=np.searchsorted(classes, train.y),
        X_test=held_out.X,
        codes_test=np.searchsorted(classes, held_out.y),
        n_classes=len(classes),
    )


def partition_rows(
    partitioner: Partitioner, codes: NDArray, nodes: list, rng: np.random.Generator
) -> list[NDArray[np.int64]]:
    """Every device's training rows; raise unless each of ``nodes`` gets at least one."""
    n = len(nodes)
    parts = [np.asarray(p, dtype=np.int64) for p in partitioner.split(codes, n, rng)]
    if len(parts) != n:
        raise InvalidInputError(f"the partitioner returned {len(parts)} parts for {n} devices")
    empty = [nodes[i] for i, p in enumerate(parts) if len(p) == 0]
    if empty:
        raise InvalidInputError(f"device {empty[0]!r} got no training data from the partition")
    return parts


# ---------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------


def plan_training(
    net: Network,
    topology: Topology | TopologySchedule,
    X: ArrayLike,
    y: ArrayLike,
    *,
    model: str | Model,
    test: Any,
    schedule: Schedule,
    dp_config: DPConfig | None,
    partitioner: Partitioner,
    convergence: Convergence | None,
    rng: np.random.Generator,
) -> TrainingPlan:
    """Resolve the data, model, partition, DP and mixing of a run.

    ``rng`` is the run's "partition" generator: it draws the held-out split
    first and the partition second.  The DP devices of a time-varying
    topology add noise in every round (:attr:`TopologySchedule.dp_devices`).
    """
    data = split_data(X, y, test, net.n_devices, rng)
    model = make_model(model, data.X_train.shape[1], max(data.n_classes, 2))
    sampler = PoissonSampler(
        partition_rows(partitioner, data.codes_train, net.nodes, rng), schedule.batch_size
    )
    dp_plan = plan_dp(
        dp_config,
        np.array(sorted(net.index[node] for node in topology.dp_devices), dtype=np.int64),
        partition_sizes=sampler.sizes,
        expected_batch=sampler.expected,
        batch_size=schedule.batch_size,
        local_steps=schedule.local_steps,
        rounds=schedule.rounds,
        nodes=net.nodes,
    )
    scheduled = ScheduledMixing(topology, net) if isinstance(topology, TopologySchedule) \
        else None
    return TrainingPlan(
        schedule=schedule,
        model=model,
        data=data,
        sampler=sampler,
        dp=dp_plan,
        mixing=topology.mixing_matrix(net.nodes) if scheduled is None else scheduled.matrix(0),
        convergence=convergence,
        time_varying=scheduled,
    )
