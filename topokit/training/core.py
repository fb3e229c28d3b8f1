"""D-PSGD with partial differential privacy over a communication topology (DeepPrivacy, Alg. 1).

One round t, for all devices at once (parameters stacked in an (n_devices,
n_params) array; no Python loop over devices):

1. every device takes ``local_steps`` minibatch SGD steps x <- x - eta_t g
   (Algorithm 1 prints "+": a typo for gradient descent), eta_t = lr * lr_decay^t;
   minibatches are Poisson samples of expected size B_i = min(batch_size, |D_i|);
   DP devices clip every per-example gradient to ``max_grad_norm`` first and
   divide the clipped sums of their second and later local steps by
   max(B_i, |b|) (other devices take plain SGD steps);
2. every DP device adds Gaussian noise w_i ~ N(0, sigma_t^2 I) to its result
   y_i and sends that same noisy y_i to every neighbour; its own self-term is
   the noisy y_i too (see :mod:`topokit.training.privacy`);
3. every device averages what it holds with the topology's mixing weights
   (Lazy-Metropolis unless it carries weights, see
   :meth:`~topokit.network.Topology.mixing_matrix`): X <- A Y, one
   (n, n) @ (n, p) product (A in CSR form from 16 devices on when it is
   sparse).

Logistic regression takes fused paths: ||x||^2 of the training rows computed
once, the per-example softmax residual, clipping and bias gradient in one
Numba kernel between two batched GEMMs, buffers kept across rounds, and the
accuracy of all devices from one single-precision GEMM with exact labels
(:meth:`LogisticRegression.evaluator`).

Accuracy (top-1 on the held-out set, per device and averaged as the paper does)
is recorded at round 0 and every ``checkpoint_every`` rounds.  The run stops at
``rounds`` (the paper's target round T) or, with a :class:`Convergence` rule,
when the averaged accuracy moves by at most ``tol`` between checkpoints (the
paper's |R_t - R_{t-H}| <= eps, H = ``checkpoint_every``) for ``patience``
consecutive checkpoints, or when it reaches ``target_accuracy``.

The steps of :func:`train` live in their own modules: :mod:`.plan` resolves
and checks every setting into a :class:`~topokit.training.plan.TrainingPlan`
(held-out split, partition, model, DP plan, mixing matrix),
:mod:`._loop` runs the rounds and the stop rules, and this module assembles
the :class:`TrainingRun`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._blas import one_blas_thread
from .._checks import check_int_at_least, check_nonnegative, check_real, shown
from .._random import SeedLike, spawn_generators
from ..errors import InvalidInputError, NotAFormalGuaranteeWarning
from ..network.core import Network, Topology
from ..network.quantities import local_iterate
from ..network.schedule import TopologySchedule

# Names that moved to the step modules stay importable from here ("X as X": re-exported; the
# plain reference in topokit.testing imports ROLES and PoissonSampler).
from ._loop import SPARSE_MIXING_DENSITY as SPARSE_MIXING_DENSITY
from ._loop import SPARSE_MIXING_FROM as SPARSE_MIXING_FROM
from ._loop import Course, run_rounds
from ._sampling import PoissonSampler as PoissonSampler
from .models import Model
from .partition import Partitioner, make_partitioner
from .plan import ROLES as ROLES
from .plan import TrainingPlan, check_schedule, plan_training, resolve_dp, resolve_topology
from .privacy import DPConfig

__all__ = ["train", "TrainingRun", "Convergence", "check_accuracy_threshold", "round_clock"]


def check_accuracy_threshold(threshold: Any, name: str = "threshold") -> float:
    """Return ``threshold`` as float; raise unless it is an accuracy in (0, 1]."""
    try:
        return check_real(threshold, name, low=0, high=1, closed="right")
    except InvalidInputError:
        raise InvalidInputError(
            f"{name} must be an accuracy in (0, 1] (a fraction, not a percentage); "
            f"got {shown(threshold)}"
        ) from None


@dataclass(frozen=True)
class Convergence:
    """When to stop before the target round T (= ``rounds``).

    Parameters
    ----------
    tol : float, default 1e-5
        The paper's convergence index: stop when |R_t - R_{t-H}| <= tol, R the
        averaged accuracy and H = ``checkpoint_every``.  Checkpoints after at
        least one round are compared (the paper's "t != 0").
    patience : int, default 1
        Number of consecutive checkpoints that must satisfy the rule; 1 is the
        paper's rule, which on a small test set fires on the first tie of two
        averaged accuracies.  A larger patience (or a larger H) makes it robust.
    target_accuracy : float in (0, 1], optional
        Also stop as soon as the averaged accuracy reaches this value.
    """

    tol: float = 1e-5
    patience: int = 1
    target_accuracy: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "tol", check_nonnegative(self.tol, "tol"))
        object.__setattr__(self, "patience", check_int_at_least(self.patience, "patience"))
        if self.target_accuracy is not None:
            object.__setattr__(
                self,
                "target_accuracy",
                check_accuracy_threshold(self.target_accuracy, "target_accuracy"),
            )

    @classmethod
    def paper(cls) -> Convergence:
        """Sec. VI: convergence index 1e-5, checked at every checkpoint, no patience."""
        return cls(tol=1e-5, patience=1)


@dataclass(frozen=True, eq=False)
class TrainingRun:
    """The measured course of one training run.

    Attributes
    ----------
    nodes : tuple
        Device ids in node order (``list(net.social)``).
    rounds : ndarray of shape (n_checkpoints,)
        Rounds completed at each checkpoint (0 is the initial model).
    accuracy : ndarray of shape (n_checkpoints, n_devices)
        Top-1 accuracy of every device on the held-out set.
    local_iterate : float
        The topology's local iterate L (seconds per round, eq. 8); for a
        time-varying topology, the mean time of the rounds run (of round 0
        when none ran).
    wall_clock : float
        Seconds the run took on this machine.
    rounds_run : int
    stop_rule : str
        "rounds" (target round T reached), "convergence" (|R_t - R_{t-H}| <=
        tol for ``patience`` checkpoints), "target_accuracy", or "diverged"
        (non-finite parameters at a checkpoint; the run stops there).
    dp_devices : tuple
        Devices that added noise (empty when DP is off).
    epsilon : dict
        Epsilon (at ``delta``) spent by each DP device over the rounds it ran;
        nominal, not a guarantee, when ``dp_formal`` is False.
    noise_multiplier : dict
        sigma / Delta of each DP device.
    sampling_rate : dict
        The Poisson rate q_i the accountant used for each DP device.
    delta : float or None
    dp_formal : bool
        Whether ``epsilon`` is a formal (epsilon, delta) guarantee: False with
        ``sensitivity="paper"``, whose noise is scaled by the data's own
        update norm (the epsilon is then nominal, and :func:`train` warned
        with :class:`~topokit.errors.NotAFormalGuaranteeWarning`); True
        otherwise, also when no device adds noise (nothing is claimed).
    sensitivity : ndarray of shape (n_devices,)
        In node order, the l2 sensitivity each device's noise was calibrated
        for, per unit step size: a DP device adds N(0, (z_i eta_t
        sensitivity_i)^2) per coordinate in round t, z_i its
        ``noise_multiplier``.  2 C (1/B_i + K - 1) for a clipping DP device
        (:func:`topokit.training.privacy.clipped_sensitivity`), 0 for a
        device that adds no noise (all 0 when DP is off), NaN for a DP device
        with ``sensitivity="paper"`` (its Delta_t is measured from the data
        every round, so no bound holds).
    partition_sizes : tuple of int
    config : dict
        The arguments of :func:`train` (JSON-able).
    final_params : ndarray of shape (n_devices, n_params)
        Parameters after the last round (not in :meth:`to_dict`).
    round_times : ndarray of shape (rounds_run,) or None
        Seconds each round took, the local iterate of its topology, for a
        time-varying topology (:class:`~topokit.network.TopologySchedule`);
        None for a static one, whose every round takes ``local_iterate``.
        Physical times (:meth:`elapsed`) sum them.
    """

    nodes: tuple
    rounds: NDArray[np.int64]
    accuracy: NDArray[np.float64]
    local_iterate: float
    wall_clock: float
    rounds_run: int
    stop_rule: str
    dp_devices: tuple = ()
    epsilon: dict = field(default_factory=dict)
    noise_multiplier: dict = field(default_factory=dict)
    sampling_rate: dict = field(default_factory=dict)
    delta: float | None = None
    dp_formal: bool = True
    sensitivity: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    partition_sizes: tuple = ()
    config: dict = field(default_factory=dict)
    final_params: NDArray[np.float64] | None = None
    round_times: NDArray[np.float64] | None = None

    def elapsed(self, rounds: int | NDArray[np.int64]) -> float | NDArray[np.float64]:
        """Physical seconds of the first ``rounds`` rounds (an int or an array of them).

        rounds x L for a static topology; the sum of the rounds' own times
        (:attr:`round_times`) for a time-varying one.

        >>> run = TrainingRun(nodes=("a",), rounds=np.array([0, 2]), accuracy=np.zeros((2, 1)),
        ...                   local_iterate=2.5, wall_clock=0.0, rounds_run=2, stop_rule="rounds",
        ...                   round_times=np.array([2.0, 3.0]))
        >>> run.elapsed(2), run.elapsed(run.rounds).tolist()
        (5.0, [0.0, 5.0])
        """
        if self.round_times is None:
            return rounds * self.local_iterate
        cumulative = np.concatenate(([0.0], np.cumsum(self.round_times)))
        elapsed = cumulative[rounds]
        return float(elapsed) if np.ndim(elapsed) == 0 else elapsed

    @property
    def mean_accuracy(self) -> NDArray[np.float64]:
        """Accuracy averaged over devices at each checkpoint (the paper's R_t)."""
        return self.accuracy.mean(axis=1)

    @property
    def final_accuracy(self) -> float:
        return float(self.mean_accuracy[-1])

    def rounds_to(self, threshold: float) -> int | None:
        """First checkpoint round with averaged accuracy >= ``threshold``; None if never."""
        threshold = check_accuracy_threshold(threshold)
        hits = np.flatnonzero(self.mean_accuracy >= threshold)
        return int(self.rounds[hits[0]]) if hits.size else None

    def time_to(self, threshold: float) -> float | None:
        """Physical time to ``threshold``: rounds_to(threshold) x L seconds (the sum of the
        round times for a time-varying topology, :meth:`elapsed`); None if never."""
        rounds = self.rounds_to(threshold)
        return None if rounds is None else self.elapsed(rounds)

    def reached(self, thresholds):
        """A DataFrame: per threshold, ``rounds`` and ``time`` to reach it (NaN if never)."""
        import pandas as pd

        rows = []
        for threshold in np.atleast_1d(thresholds).tolist():
            rounds = self.rounds_to(threshold)
            rows.append({
                "threshold": float(threshold),
                "rounds": np.nan if rounds is None else float(rounds),
                "time": np.nan if rounds is None else self.elapsed(rounds),
            })
        return pd.DataFrame(rows, columns=["threshold", "rounds", "time"])

    def to_frame(self):
        """A pandas DataFrame with one row per checkpoint.

        Columns: ``round``, ``time`` (round x L, seconds; :meth:`elapsed`), ``mean_accuracy``,
        ``min_accuracy``, ``max_accuracy`` and ``accuracy[<node>]`` per device.
        """
        import pandas as pd

        data = {
            "round": self.rounds,
            "time": self.elapsed(self.rounds),
            "mean_accuracy": self.mean_accuracy,
            "min_accuracy": self.accuracy.min(axis=1),
            "max_accuracy": self.accuracy.max(axis=1),
        }
        for j, node in enumerate(self.nodes):
            data[f"accuracy[{node}]"] = self.accuracy[:, j]
        return pd.DataFrame(data)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary (node ids as strings in the per-device maps); ``round_times``
        only for a time-varying topology."""
        times = {} if self.round_times is None else {"round_times": self.round_times.tolist()}
        return {
            "nodes": [_jsonable(n) for n in self.nodes],
            "rounds": self.rounds.tolist(),
            "mean_accuracy": self.mean_accuracy.tolist(),
            "accuracy": self.accuracy.tolist(),
            "local_iterate": self.local_iterate,
            "wall_clock": self.wall_clock,
            "rounds_run": self.rounds_run,
            "stop_rule": self.stop_rule,
            "dp_devices": [_jsonable(n) for n in self.dp_devices],
            "epsilon": {str(k): v for k, v in self.epsilon.items()},
            "noise_multiplier": {str(k): v for k, v in self.noise_multiplier.items()},
            "sampling_rate": {str(k): v for k, v in self.sampling_rate.items()},
            "delta": self.delta,
            "dp_formal": self.dp_formal,
            # NaN (``sensitivity="paper"``) as null: strict JSON has no NaN.
            "sensitivity": [None if np.isnan(v) else float(v) for v in self.sensitivity],
            "partition_sizes": list(self.partition_sizes),
            "config": self.config,
            **times,
        }

    def __repr__(self) -> str:
        return (
            f"TrainingRun({len(self.nodes)} devices, {self.rounds_run} rounds, "
            f"final accuracy {self.final_accuracy:.3f}, stopped by {self.stop_rule!r})"
        )


def _jsonable(node: Hashable) -> Any:
    return node if isinstance(node, (str, int, float)) else str(node)


def _resolve_convergence(convergence: Convergence | str | None) -> Convergence | None:
    if convergence == "paper":
        return Convergence.paper()
    if convergence is not None and not isinstance(convergence, Convergence):
        raise InvalidInputError(
            f"convergence must be a Convergence, 'paper' or None; got {convergence!r}"
        )
    return convergence


def round_clock(net: Network, topology: Topology | TopologySchedule,
                rounds_run: int) -> tuple[float, NDArray[np.float64] | None]:
    """The physical time of a run: its local iterate L and its round times.

    A static topology: its L (eq. 8) and None (every round takes L).  A
    :class:`~topokit.network.TopologySchedule`: the mean time of the
    ``rounds_run`` rounds (of round 0 if none) and each round's time.
    """
    if not isinstance(topology, TopologySchedule):
        return float(local_iterate(net, topology)), None
    times = topology.round_times(net, rounds_run)
    mean = float(times.mean()) if rounds_run else float(topology.round_times(net, 1)[0])
    return mean, times


def _warn_if_nominal(dp_config: DPConfig | None, topology: Topology | TopologySchedule) -> None:
    """Warn, once per run, when the run's epsilon will not be a formal guarantee."""
    if dp_config is None or dp_config.formal or not topology.dp_devices:
        return
    warnings.warn(
        f'DPConfig(sensitivity="{dp_config.sensitivity}") scales the noise by the data\'s own '
        "update norm (Algorithm 1's rule): the reported epsilon is nominal, not a formal "
        'privacy guarantee (TrainingRun.dp_formal is False); use sensitivity="clipped" for one',
        NotAFormalGuaranteeWarning,
        stacklevel=3,
    )


def _config_dict(**kwargs) -> dict[str, Any]:
    out = {}
    for key, value in kwargs.items():
        if isinstance(value, (DPConfig, Convergence)):
            value = {k: getattr(value, k) for k in value.__dataclass_fields__}
            if isinstance(value.get("noise_multiplier"), Mapping):  # per device: JSON keys
                value["noise_multiplier"] = {str(node): z for node, z in
                                             value["noise_multiplier"].items()}
        elif not isinstance(value, (int, float, str, bool, type(None))):
            value = repr(value)
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def train(
    net: Network,
    topology: Topology | TopologySchedule | None,
    X: ArrayLike,
    y: ArrayLike,
    *,
    model: str | Model = "logreg",
    rounds: int = 200,
    lr: float = 0.2,
    lr_decay: float = 0.99,
    local_steps: int = 1,
    batch_size: int = 64,
    dp: DPConfig | bool | None = None,
    partition: None | str | float | Partitioner = None,
    test: None | float | tuple[ArrayLike, ArrayLike] = None,
    checkpoint_every: int = 1,
    convergence: Convergence | str | None = None,
    seed: SeedLike = None,
    progress: Callable[[int, int], Any] | None = None,
) -> TrainingRun:
    """Train by D-PSGD with partial DP over ``topology`` and measure accuracy and time.

    Parameters
    ----------
    net : Network
    topology : Topology, TopologySchedule or None
        The communication topology and its DP devices; None uses
        ``net.topology``.  Validated against ``net``
        (:class:`~topokit.errors.InvalidTopologyError` on a non-social link
        between non-DP devices, unknown nodes or an infinite delay).  A
        :class:`~topokit.network.TopologySchedule` gives every round its own
        topology (the same rules in every round, its DP devices adding noise
        in every round); the run's physical time is then the sum of its
        rounds' times (:attr:`TrainingRun.round_times`).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Training data and labels (any hashable labels).
    model : {"logreg", "mlp"} or Model, default "logreg"
    rounds : int, default 200
        Target round T: the most rounds to run.
    lr, lr_decay : float, default 0.2, 0.99
        Step size eta_t = lr * lr_decay**t in round t = 0, 1, ...
    local_steps : int, default 1
        Minibatch SGD steps per device per round.  The default 1 is Algorithm
        1 literally (one sampled minibatch, one gradient, per round); the
        paper's experiments use 5 local epochs of batch 64 (Appendix D).
        With DP, K > 1 steps use the conservative sensitivity 2 eta C
        (1/B + K - 1), divide the later steps' clipped sums by max(B, |b|)
        (what that bound needs; see
        :func:`topokit.training.privacy.clipped_sensitivity`) and claim no
        subsampling amplification.
    batch_size : int, default 64
        Expected Poisson minibatch size B (capped at the device's data size).
    dp : DPConfig, None or False
        Privacy of the topology's DP devices; None uses ``DPConfig()`` when
        the topology has DP devices.  False switches the noise off (an
        ablation: the DP devices then send in the clear).  A
        ``DPConfig(noise_multiplier={device: z})`` gives each DP device its
        own z (every DP device named, no other device), and each device's
        epsilon is accounted with its own z.
    partition : None, "iid", float or Partitioner
        How the training rows are split over devices: IID (default), the
        paper's skewness K in [0, 1], or a partitioner such as
        :class:`~topokit.training.DirichletPartitioner`.
    test : None, float or (X_test, y_test)
        Held-out set: None holds out a stratified 25% of ``X``, a float that
        fraction; a pair is used as is.
    checkpoint_every : int, default 1
        Evaluate every H rounds (and after the last round).
    convergence : Convergence, "paper" or None
        Early stopping (see :class:`Convergence`); None runs all ``rounds``.
    seed : int, Generator or None
        One seed for four independent generators: partition, init, sampling,
        noise.  Same seed, same numbers.
    progress : callable, optional
        Called as ``progress(done, total)`` after every round.

    Returns
    -------
    TrainingRun

    Raises
    ------
    InvalidTopologyError, InvalidInputError
        On an invalid topology, labels that do not match the data, more
        devices than training samples, or out-of-range settings.

    Warns
    -----
    NotAFormalGuaranteeWarning
        Once per run, when DP devices use ``DPConfig(sensitivity="paper")``:
        the run's epsilon is then nominal (``TrainingRun.dp_formal`` False).

    Examples
    --------
    >>> from topokit.examples import load_example
    >>> from topokit.training import train, load_digits
    >>> net = load_example("toy")
    >>> X, y = load_digits()
    >>> run = train(net, net.topology, X, y, rounds=30, seed=0)
    >>> run.rounds_to(0.5) is not None
    True
    """
    started = time.perf_counter()
    topology = resolve_topology(net, topology)
    schedule = check_schedule(
        rounds=rounds, lr=lr, lr_decay=lr_decay, local_steps=local_steps,
        batch_size=batch_size, checkpoint_every=checkpoint_every,
    )
    convergence = _resolve_convergence(convergence)
    if progress is not None and progress is not False and not callable(progress):
        raise InvalidInputError("progress must be a callable progress(done, total) or None")
    dp_config = resolve_dp(dp, topology)
    per_device = dp_config is not None and dp_config.per_device
    if per_device:
        dp_config.check_devices(topology.dp_devices, net.nodes)
    _warn_if_nominal(dp_config, topology)
    partitioner = make_partitioner(partition)
    rngs = spawn_generators(seed, ROLES)
    plan = plan_training(
        net, topology, X, y, model=model, test=test, schedule=schedule, dp_config=dp_config,
        partitioner=partitioner, convergence=convergence, rng=rngs["partition"],
    )
    config = _config_dict(
        model=repr(plan.model), rounds=schedule.rounds, lr=schedule.lr, lr_decay=schedule.lr_decay,
        local_steps=schedule.local_steps, batch_size=schedule.batch_size, dp=dp_config,
        partition=repr(partitioner), checkpoint_every=schedule.checkpoint_every,
        convergence=convergence, seed=seed if isinstance(seed, (int, np.integer)) else None,
    )
    # One BLAS thread: the products of a round are small, threads only contend (measured 20-100x
    # slower on a loaded 2-core machine); parallelise over runs instead (joblib).
    with one_blas_thread():
        course = run_rounds(plan, rngs, progress)
    return _assemble_run(net, topology, plan, course, config, started)


def _assemble_run(
    net: Network,
    topology: Topology | TopologySchedule,
    plan: TrainingPlan,
    course: Course,
    config: dict[str, Any],
    started: float,
) -> TrainingRun:
    """The TrainingRun of a finished run: its course, the DP account and the physical time."""
    dp_config = plan.dp.config
    account = plan.dp.account(course.rounds_run, net.nodes)
    seconds, round_times = round_clock(net, topology, course.rounds_run)
    return TrainingRun(
        nodes=tuple(net.nodes),
        rounds=course.rounds,
        accuracy=course.accuracy,
        local_iterate=seconds,
        wall_clock=time.perf_counter() - started,
        rounds_run=course.rounds_run,
        stop_rule=course.stop_rule,
        dp_devices=tuple(net.nodes[r] for r in plan.dp.rows),
        epsilon=account.epsilon,
        noise_multiplier=account.noise_multiplier,
        sampling_rate=account.sampling_rate,
        delta=dp_config.delta if dp_config else None,
        dp_formal=dp_config.formal if dp_config else True,
        sensitivity=plan.dp.device_sensitivity(plan.n_devices),
        partition_sizes=tuple(int(s) for s in plan.sampler.sizes),
        config=config,
        final_params=course.final_params,
        round_times=round_times,
    )
