"""Differential privacy of the DP devices in D-PSGD (DeepPrivacy, Algorithm 1).

A DP device releases one message per round, y_i = x_i - (its K local steps) +
w_i with w_i ~ N(0, sigma_t^2 I), and sends that same y_i to every neighbour
(its own self-term too).  This module holds the configuration and the three
numbers behind w_i:

Sensitivity (``sensitivity="clipped"``, the default)
    Every per-example gradient is clipped to l2 norm C = ``max_grad_norm``.
    The first local step divides the clipped sum by the expected batch size
    B_i = min(batch_size, |D_i|) (the usual DP-SGD estimate of the mean
    gradient); every later step (K = ``local_steps`` > 1) divides it by
    max(B_i, |b|), |b| the size of the Poisson batch drawn, so that no later
    step moves by more than eta C, whatever the batch.  Then one round's
    message moves by at most Delta_t = 2 eta_t C (1/B_i + K - 1) when one
    example of the device changes (proof: :func:`clipped_sensitivity`): the
    first step by 2 eta C / B_i, each later one by at most 2 eta C more,
    without any smoothness of the loss.  Valid, but large for K > 1: keep K =
    1 for DP runs.  ``TrainingRun.sensitivity`` reports Delta_t / eta_t of
    every device (0 for the others).

Noise multiplier z = sigma_t / Delta_t (constant over rounds, since both scale with eta_t)
    ``per="round"``: each round on its own is (epsilon, delta)-DP, as the paper
    does (Proposition 1): z = :func:`topokit.dp.gaussian_sigma` (epsilon,
    delta, 1), the analytic Gaussian mechanism by default (the smallest valid
    noise at every epsilon; ``method="classic"`` gives sqrt(2 ln(1.25/delta))
    / epsilon, valid below epsilon = 1).
    ``per="run"``: z is the smallest multiplier whose ``rounds`` releases
    spend (epsilon, delta) in total (:func:`topokit.dp.noise_multiplier_for_run`),
    calibrated with the chosen ``accountant`` (PLD, being tighter, gives less
    noise for the same budget; it takes seconds rather than milliseconds).
    ``noise_multiplier=z`` fixes it directly (Opacus' name); a mapping
    device -> z fixes each DP device's own (such as the levels
    :func:`topokit.optimize` chooses under ``max_stranger_mu``), and each
    device's epsilon is accounted with its own z.

Accounting
    The epsilon spent by each DP device over the rounds it ran is computed by
    ``dp-accounting`` (:func:`topokit.dp.gaussian_epsilon`, RDP or PLD),
    as a Poisson-subsampled Gaussian mechanism with sampling rate
    q_i = min(1, batch_size / |D_i|) -- the training core samples minibatches
    by Poisson sampling for exactly this reason -- and with q_i = 1 (no
    amplification claimed) when ``amplification=False`` or ``local_steps > 1``.
    Neighbouring datasets of a device differ in one example; q_i, B_i and the
    noise are parameters of the mechanism, computed from |D_i|, which is treated
    as public (as DP-SGD does).  With q_i < 1 (K = 1 only),
    dp-accounting's subsampling analysis is for add/remove-one neighbours, for
    which one step moves by at most eta C / B_i = Delta_t / 2, so the reported
    epsilon holds for them with room to spare; with q_i = 1 it holds for
    replace-one and add/remove-one neighbours alike.

``sensitivity="paper"``
    Algorithm 1's data-dependent rule Delta_t = 2 eta_t ||g_i^t|| (no
    clipping; we use 2 ||local update|| so that it also covers K > 1).  The
    noise then depends on the data itself and the gradient norm is unbounded:
    this is **not** a formal DP guarantee.  It is kept to reproduce the
    paper; its reported epsilon is nominal, ``TrainingRun.dp_formal`` is
    False, ``TrainingRun.sensitivity`` is NaN for its DP devices, and
    :func:`~topokit.training.train` warns with
    :class:`~topokit.errors.NotAFormalGuaranteeWarning`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._checks import check_choice, check_in_open_unit_interval, check_positive, check_real
from ..dp import account_epsilon, calibrate_noise
from ..errors import InvalidInputError

__all__ = [
    "DPConfig",
    "DPPlan",
    "DPAccount",
    "plan_dp",
    "clipped_sensitivity",
    "clip_gradients",
    "resolve_noise_multipliers",
    "accounting_sampling_rates",
    "epsilon_spent",
    "DeviceNoiseLevels",
]

_CHOICES = {
    "per": ("round", "run"),
    "sensitivity": ("clipped", "paper"),
    "accountant": ("rdp", "pld"),
    "method": ("auto", "classic", "analytic"),
}


@dataclass(frozen=True)
class DPConfig:
    """Privacy settings of the DP devices of a topology.

    Parameters
    ----------
    epsilon, delta : float, default 1.0, 1e-5
        The budget, per round (``per="round"``) or for the whole run
        (``per="run"``).  The paper uses epsilon = 1, delta = 1e-5 per round.
    max_grad_norm : float, default 1.0
        Per-example clipping norm C (Opacus' name).
    per : {"round", "run"}, default "round"
    noise_multiplier : float > 0 or mapping device -> float >= 0, optional
        sigma / Delta; when given, epsilon is not used for calibration (only
        delta for the accounting).  A mapping gives each DP device its own z
        (0: the device adds no noise, and its epsilon is inf); it must name
        every DP device of the topology trained, and no other device
        (checked by :func:`~topokit.training.train`).
    sensitivity : {"clipped", "paper"}, default "clipped"
        "paper" is Algorithm 1's data-dependent rule: not a formal guarantee.
    accountant : {"rdp", "pld"}, default "rdp"
    method : {"auto", "classic", "analytic"}, default "auto"
        Gaussian calibration of ``per="round"`` (see
        :func:`topokit.dp.gaussian_sigma`).
    amplification : bool, default True
        Account with the Poisson sampling rate (privacy amplification by
        subsampling); False accounts every round as a full-data release.

    Examples
    --------
    >>> DPConfig(epsilon=1.0, delta=1e-5, max_grad_norm=1.0).per
    'round'

    Each DP device its own noise multiplier:

    >>> DPConfig(noise_multiplier={"C": 3.5, "D": 4.0, "E": 4.0}).per_device
    True
    """

    epsilon: float = 1.0
    delta: float = 1e-5
    max_grad_norm: float = 1.0
    per: Literal["round", "run"] = "round"
    noise_multiplier: float | Mapping[Hashable, float] | None = None
    sensitivity: Literal["clipped", "paper"] = "clipped"
    accountant: Literal["rdp", "pld"] = "rdp"
    method: Literal["auto", "classic", "analytic"] = "auto"
    amplification: bool = True

    def __post_init__(self):
        for name, allowed in _CHOICES.items():
            check_choice(getattr(self, name), f"DPConfig.{name}", allowed)
        object.__setattr__(self, "epsilon", check_positive(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", check_in_open_unit_interval(self.delta, "delta"))
        object.__setattr__(
            self, "max_grad_norm", check_positive(self.max_grad_norm, "max_grad_norm")
        )
        if isinstance(self.noise_multiplier, Mapping):
            object.__setattr__(self, "noise_multiplier", _check_device_noise(self.noise_multiplier))
        elif self.noise_multiplier is not None:
            object.__setattr__(
                self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier")
            )
        if self.method == "classic" and self.epsilon >= 1 and self.noise_multiplier is None:
            raise InvalidInputError(
                "the classic Gaussian bound holds only for epsilon < 1; "
                f"got epsilon={self.epsilon}. "
                "Use method='auto' or 'analytic'."
            )

    @property
    def formal(self) -> bool:
        """True when the reported epsilon is a formal guarantee (clipped sensitivity)."""
        return self.sensitivity == "clipped"

    @property
    def per_device(self) -> bool:
        """True when ``noise_multiplier`` gives each DP device its own z (a mapping)."""
        return isinstance(self.noise_multiplier, Mapping)

    def check_devices(self, dp_devices: Sequence[Hashable], nodes: Sequence[Hashable]) -> None:
        """Raise unless a per-device ``noise_multiplier`` names every DP device and no other.

        ``dp_devices`` are the topology's DP devices, ``nodes`` the network's
        devices.  Nothing to check for a common z.

        Raises
        ------
        InvalidInputError
            The mapping names a device that is not a DP device (or not in the
            network), or has no entry for a DP device.

        Examples
        --------
        A mapping that names exactly the DP devices passes (it returns None):

        >>> config = DPConfig(noise_multiplier={"C": 3.5, "D": 4.0})
        >>> config.check_devices(["C", "D"], ["A", "B", "C", "D"])

        A DP device without its own z, or a z for a device that adds no noise, is refused:

        >>> config.check_devices(["C", "D", "E"], list("ABCDE"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        topokit.errors.InvalidInputError: ... has no entry for DP device 'E'; give every DP ...
        >>> config.check_devices(["C"], list("ABCD"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        topokit.errors.InvalidInputError: ... names device 'D', which is not a DP device of ...

        A common z has nothing to check:

        >>> DPConfig(noise_multiplier=4.0).check_devices(["C"], ["A", "B", "C"])
        """
        if not self.per_device:
            return
        known, dp = set(nodes), set(dp_devices)
        for node in self.noise_multiplier:
            if node not in dp:
                where = "in the network" if node not in known else "a DP device of the topology"
                raise InvalidInputError(
                    f"DPConfig.noise_multiplier names device {node!r}, which is not {where}; "
                    "give a z for the topology's DP devices only (the others add no noise)")
        # Sorted: the device named must not depend on a set's iteration order.
        missing = sorted((node for node in dp_devices if node not in self.noise_multiplier),
                         key=repr)
        if missing:
            raise InvalidInputError(
                f"DPConfig.noise_multiplier has no entry for DP device {missing[0]!r}; give every "
                "DP device its z, or one number for all of them")

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.per_device:  # the read-only mapping as a plain dict
            out["noise_multiplier"] = dict(self.noise_multiplier)
        return out


class DeviceNoiseLevels(Mapping):
    """A read-only mapping device -> z: the per-device noise of a frozen :class:`DPConfig`.

    Changing the caller's dict, or trying to change this one, cannot change a
    config's noise; unlike ``types.MappingProxyType`` it pickles (configs travel
    to worker processes).

    >>> levels = DeviceNoiseLevels({"a": 4.0})
    >>> levels["a"], dict(levels)
    (4.0, {'a': 4.0})
    >>> levels["a"] = 1.0
    Traceback (most recent call last):
    ...
    TypeError: 'DeviceNoiseLevels' object does not support item assignment
    """

    __slots__ = ("_levels",)

    def __init__(self, levels: Mapping[Hashable, float]):
        self._levels = dict(levels)

    def __getitem__(self, node: Hashable) -> float:
        return self._levels[node]

    def __iter__(self):
        return iter(self._levels)

    def __len__(self) -> int:
        return len(self._levels)

    def __repr__(self) -> str:
        return f"DeviceNoiseLevels({self._levels!r})"

    def __hash__(self) -> int:
        return hash(frozenset(self._levels.items()))


def _check_device_noise(noise: Mapping[Hashable, Any]) -> DeviceNoiseLevels:
    """A per-device noise mapping as read-only finite floats >= 0."""
    return DeviceNoiseLevels({node: check_real(value, f"DPConfig.noise_multiplier[{node!r}]",
                                               low=0) for node, value in noise.items()})


def clipped_sensitivity(
    lr: float, max_grad_norm: float, batch_size: NDArray | float, local_steps: int = 1
) -> NDArray | float:
    """l2 sensitivity of one round's message of a clipping DP device: 2 eta C (1/B + K - 1).

    Parameters
    ----------
    lr : float
        The round's step size eta (1.0 gives the sensitivity per unit step).
    max_grad_norm : float
        The clipping norm C.
    batch_size : float or ndarray
        The expected Poisson batch size B = min(batch_size, |D_i|) of the device
        (the first step's divisor).
    local_steps : int, default 1
        K.

    Returns
    -------
    float or ndarray
        Delta = 2 eta C (1/B + K - 1); the usual 2 eta C / B with K = 1.

    Notes
    -----
    **The mechanism**, as :class:`~topokit.training._loop.LocalSGD` runs it for
    a DP device: from the parameters x_0 it holds at the start of the round,
    it takes K steps

    .. math::

        x_k = x_{k-1} - \\eta\\, u_k, \\qquad
        u_k = \\frac{1}{d_k} \\sum_{r \\in b_k} \\mathrm{clip}_C\\big(g_r(x_{k-1})\\big),

    with b_k its k-th Poisson batch (each row drawn independently with
    probability q = min(1, B / |D|)), clip_C(g) = g min(1, C / ||g||), and
    divisors d_1 = B, d_k = max(B, |b_k|) for k >= 2; it sends x_K plus noise.

    **Claim.** Let D and D' differ in one example: row j replaced
    (replace-one), or one row added (add/remove-one), with the same q and B
    on both (parameters of the mechanism, computed from |D_i|, which is
    treated as public, as DP-SGD does).  Couple the two runs: the same x_0 and the
    same draws for the rows they share (the added row's draw is independent of
    the rest, so this coupling has the right law on both sides).  Then, for
    every draw, ||x_K - x'_K|| <= 2 eta C (1/B + K - 1), and with K = 1 the
    add/remove-one difference is at most eta C / B.

    **Proof.** (i) Every later step is short: for k >= 2,
    ||u_k|| <= |b_k| C / max(B, |b_k|) <= C, whatever the batch and wherever
    the trajectory is; likewise ||u'_k|| <= C.
    (ii) The first step: both runs start at x_0 and draw the same shared rows.
    If the changed row is not drawn, u_1 = u'_1.  If it is, the two sums
    differ in that row's term only and have the same divisor d_1 = B, so
    ||x_1 - x'_1|| = eta ||clip_C(g_j) - clip_C(g'_j)|| / B <= 2 eta C / B
    (replace-one), or eta ||clip_C(g_j)|| / B <= eta C / B (add/remove-one).
    (iii) For k >= 2, x_k - x'_k = (x_{k-1} - x'_{k-1}) - eta (u_k - u'_k),
    so by (i) ||x_k - x'_k|| <= ||x_{k-1} - x'_{k-1}|| + 2 eta C.
    Summing, ||x_K - x'_K|| <= 2 eta C / B + 2 eta C (K - 1).  No smoothness
    of the loss is used: the trajectories may move apart arbitrarily within
    these norms.  QED.

    Dividing the later steps by B instead would let a batch of |b_k| > B rows
    move by eta C |b_k| / B > eta C, and the bound fails for non-smooth
    losses (``tests/training/test_dp_sensitivity.py`` builds such a case).  The first
    step keeps d_1 = B: (ii) does not depend on |b_1|, the step stays the
    unbiased estimate of the mean clipped gradient, and runs with K = 1 are
    unchanged by the cap.

    **From sensitivity to privacy.**  Given the draws, the message is a
    Gaussian mechanism of sensitivity at most Delta and noise std z Delta;
    the draws do not depend on the data, so the round is a mixture, with the
    same weights on D and D', of mechanisms each dominated by the pair
    N(0, z^2), N(1, z^2) -- and so is the mixture (joint convexity of the
    hockey-stick divergence).  That pair is what the accountant composes with
    q = 1; earlier rounds enter only through x_0, which depends on the
    device's data through its earlier noisy messages alone (adaptive
    composition).  With K = 1 and q < 1 the accountant composes the
    Poisson-subsampled Gaussian for add/remove-one neighbours, which needs,
    for every draw of the other rows, a message difference of at most Delta
    when the added row is drawn (Zhu, Dong & Wang, AISTATS 2022, Poisson
    subsampling of a dominated mechanism): (ii) gives eta C / B = Delta / 2.

    Examples
    --------
    >>> float(clipped_sensitivity(0.2, 1.0, 64))   # 2 eta C / B
    0.00625
    >>> float(clipped_sensitivity(1.0, 1.0, 64, local_steps=3))   # 2 (1/64 + 2)
    4.03125
    """
    batch = np.asarray(batch_size, dtype=np.float64)
    return 2.0 * lr * max_grad_norm * (1.0 / batch + (local_steps - 1))


def clip_gradients(per_example: NDArray, max_grad_norm: float) -> NDArray:
    """Per-example clipping of an array (..., n_params) to l2 norm ``max_grad_norm``."""
    norms = np.linalg.norm(per_example, axis=-1, keepdims=True)
    return per_example * np.minimum(1.0, max_grad_norm / np.maximum(norms, 1e-12))


def accounting_sampling_rates(
    config: DPConfig, partition_sizes: NDArray, batch_size: int, local_steps: int
) -> NDArray[np.float64]:
    """The Poisson sampling rate q_i of each device that the accountant uses."""
    sizes = np.asarray(partition_sizes, dtype=np.float64)
    if not config.amplification or local_steps > 1:
        return np.ones_like(sizes)
    return np.minimum(1.0, batch_size / sizes)


def resolve_noise_multipliers(
    config: DPConfig, sampling_rates: NDArray, rounds: int, *,
    devices: Sequence[Hashable] | None = None,
) -> NDArray[np.float64]:
    """z_i = sigma_i / Delta_i for every DP device (one entry per sampling rate given).

    ``devices`` are those DP devices' ids, in the order of ``sampling_rates``:
    needed when ``config.noise_multiplier`` is a mapping device -> z.
    """
    rates = np.asarray(sampling_rates, dtype=np.float64)
    if config.per_device:
        if devices is None or len(devices) != rates.size:
            raise InvalidInputError(
                "DPConfig(noise_multiplier=mapping) gives each DP device its own z: pass the "
                "DP devices' ids as devices=, one per sampling rate")
        config.check_devices(devices, devices)
        return np.array([config.noise_multiplier[node] for node in devices], dtype=np.float64)
    if config.noise_multiplier is not None:
        return np.full(rates.shape, config.noise_multiplier)
    # per="run" is calibrated with the accountant that reports the epsilon, so the reported
    # epsilon is the budget (PLD's tighter analysis buys less noise than RDP's).
    return calibrate_noise(
        config.epsilon,
        config.delta,
        steps=rounds if config.per == "run" else None,
        sampling_rate=rates,
        method=config.method,
        accountant=config.accountant,
    )


def epsilon_spent(
    config: DPConfig, noise_multipliers: NDArray, sampling_rates: NDArray, rounds: int
) -> NDArray[np.float64]:
    """Epsilon at ``config.delta`` spent by each DP device over ``rounds`` releases (0 if none).

    A device that adds no noise (z = 0, possible with a per-device mapping) spends inf.
    """
    multipliers, rates = np.broadcast_arrays(np.asarray(noise_multipliers, dtype=np.float64),
                                             np.asarray(sampling_rates, dtype=np.float64))
    noisy = multipliers > 0
    spent = np.where(noisy | (rounds < 1), 0.0, np.inf)
    spent[noisy] = account_epsilon(
        multipliers[noisy],
        rounds,
        config.delta,
        sampling_rate=rates[noisy],
        accountant=config.accountant,
    )
    return spent


class DPAccount(NamedTuple):
    """What a run reports per DP device (keys: device ids in node order)."""

    epsilon: dict[Hashable, float]
    noise_multiplier: dict[Hashable, float]
    sampling_rate: dict[Hashable, float]


@dataclass(frozen=True, eq=False)
class DPPlan:
    """Which devices add noise in a run, how much, and what the accountant is told.

    Built once per run by :func:`plan_dp`; the training loop asks it for the
    noise scale of every round and, at the end, for the epsilon spent.

    Attributes
    ----------
    config : DPConfig or None
        None when DP is off (no device adds noise).
    rows : ndarray of int64, shape (n_dp,)
        Rows (node order) of the devices that add noise, sorted; empty when
        DP is off or the topology has no DP device.
    noise_multiplier : ndarray of shape (n_dp,) or None
        z_i = sigma_i / Delta_i of every noisy device.
    sampling_rate : ndarray of shape (n_dp,) or None
        The Poisson rate q_i the accountant uses.
    clip : ndarray of shape (n_devices,) or None
        Per-example clipping bound of every device (inf: the device does not
        clip); None when no device clips (no noisy device, or
        ``sensitivity="paper"``).
    unit_sensitivity : ndarray of shape (n_dp,) or None
        The clipped sensitivity Delta_i at step size 1 (Delta_i / eta_t); None
        with ``sensitivity="paper"`` (then Delta_t depends on the data).
    """

    config: DPConfig | None
    rows: NDArray[np.int64]
    noise_multiplier: NDArray[np.float64] | None = None
    sampling_rate: NDArray[np.float64] | None = None
    clip: NDArray[np.float64] | None = None
    unit_sensitivity: NDArray[np.float64] | None = None

    @property
    def active(self) -> bool:
        """True when at least one device adds noise."""
        return len(self.rows) > 0

    @property
    def capped(self) -> NDArray[np.bool_] | None:
        """Devices whose later local steps divide by max(B_i, |b|): those that clip.

        Shape (n_devices,); None when nobody clips.  See :func:`clipped_sensitivity`.
        """
        return None if self.clip is None else np.isfinite(self.clip)

    def device_sensitivity(self, n_devices: int) -> NDArray[np.float64]:
        """Delta_i / eta_t of every device in node order: shape (n_devices,).

        The l2 sensitivity at step size 1 that each device's noise is calibrated
        for (sigma_t = z_i eta_t times it): :attr:`unit_sensitivity` on the
        noisy devices, 0 on the others (they add no noise), NaN on the noisy
        devices with ``sensitivity="paper"`` (Delta_t is measured from the
        data every round, so no bound holds).
        """
        out = np.zeros(n_devices)
        if self.active:
            out[self.rows] = np.nan if self.unit_sensitivity is None else self.unit_sensitivity
        return out

    def noise_std(
        self, eta: float, local: NDArray[np.float64], params: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """sigma_t of every noisy device in a round of step size ``eta``: z_i Delta_t.

        ``local`` are the parameters after the local steps, ``params`` those
        before (``sensitivity="paper"`` measures Delta_t = 2 ||local update||).
        """
        if self.unit_sensitivity is not None:
            return self.noise_multiplier * eta * self.unit_sensitivity
        update = local[self.rows] - params[self.rows]
        return self.noise_multiplier * 2.0 * np.linalg.norm(update, axis=1)

    def account(self, rounds: int, nodes: Sequence[Hashable]) -> DPAccount:
        """Epsilon spent by each noisy device over ``rounds`` releases, with its z_i and q_i."""
        if not self.active:
            return DPAccount({}, {}, {})
        spent = epsilon_spent(self.config, self.noise_multiplier, self.sampling_rate, rounds)
        keys = [nodes[row] for row in self.rows]
        return DPAccount(
            epsilon={node: float(e) for node, e in zip(keys, spent, strict=True)},
            noise_multiplier={
                node: float(z) for node, z in zip(keys, self.noise_multiplier, strict=True)
            },
            sampling_rate={
                node: float(q) for node, q in zip(keys, self.sampling_rate, strict=True)
            },
        )


def plan_dp(
    config: DPConfig | None,
    rows: NDArray[np.int64],
    *,
    partition_sizes: NDArray[np.int64],
    expected_batch: NDArray[np.float64],
    batch_size: int,
    local_steps: int,
    rounds: int,
    nodes: Sequence[Hashable] | None = None,
) -> DPPlan:
    """Calibrate the noise of the devices at ``rows`` for a run of ``rounds`` rounds.

    Parameters
    ----------
    config : DPConfig or None
        None: DP is off and nobody adds noise.
    rows : ndarray of int64
        Sorted rows (node order) of the topology's DP devices.
    partition_sizes : ndarray of shape (n_devices,)
        |D_i| of every device.
    expected_batch : ndarray of shape (n_devices,)
        The expected Poisson batch size B_i of every device.
    batch_size, local_steps, rounds : int
        The run's B, K and T.
    nodes : sequence, optional
        The network's device ids in node order; needed when
        ``config.noise_multiplier`` is a mapping device -> z.

    Returns
    -------
    DPPlan
    """
    rows = np.asarray(rows if config is not None else [], dtype=np.int64)
    if not len(rows):
        return DPPlan(config, rows)
    rates = accounting_sampling_rates(config, partition_sizes[rows], batch_size, local_steps)
    devices = None if nodes is None else [nodes[row] for row in rows]
    multipliers = resolve_noise_multipliers(config, rates, rounds, devices=devices)
    if config.sensitivity != "clipped":
        return DPPlan(config, rows, multipliers, rates)
    clip = np.full(len(partition_sizes), np.inf)
    clip[rows] = config.max_grad_norm
    unit = clipped_sensitivity(1.0, config.max_grad_norm, expected_batch[rows], local_steps)
    return DPPlan(config, rows, multipliers, rates, clip, unit)
