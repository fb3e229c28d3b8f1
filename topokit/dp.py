"""Differential-privacy calibration and accounting shared by every part of topokit.

Noise is always calibrated from a bounded sensitivity (the caller clips), and
privacy spent is accounted with Google's ``dp-accounting`` rather than by hand.
The DP devices of DeepPrivacy's training (Proposition 1 of Ching et al. [3]_,
per round) and the clients of PPGL (Corollary 1 of Zhang [4]_) are calibrated
and accounted here; privatized GFL's Laplace perturbations use
:func:`laplace_scale`.

- :func:`gaussian_sigma`: the noise standard deviation of one Gaussian release
  with l2 sensitivity Delta at (epsilon, delta).  By default the analytic
  Gaussian mechanism (Balle & Wang [2]_, the smallest valid sigma for every
  epsilon, via ``dp_accounting.get_sigma_gaussian``), which never needs more
  noise than the classic bound sqrt(2 ln(1.25/delta)) Delta / epsilon (valid
  for epsilon < 1 only, Dwork & Roth [1]_, Thm. A.1); the classic bound on
  request (``method="classic"``).
- :func:`gaussian_epsilon`: epsilon spent by a run of (optionally Poisson
  subsampled) Gaussian releases, from the RDP or PLD accountant.
- :func:`noise_multiplier_for_run`: the noise multiplier that makes a whole
  run spend (epsilon, delta).
- :func:`calibrate_noise` and :func:`account_epsilon`: the two above for many
  parties at once (one sensitivity or sampling rate each), as the federated
  learner and the training core use them.
- :func:`laplace_scale`: numpy's Laplace ``scale`` for a given variance.

References
----------
.. [1] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
   Privacy", Foundations and Trends in Theoretical Computer Science 9(3-4),
   pp. 211-407, 2014.
.. [2] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for
   Differential Privacy: Analytical Calibration and Optimal Denoising",
   International Conference on Machine Learning (ICML), 2018;
   arXiv:1805.06530.
.. [3] C.-W. Ching, H.-S. Huang, C.-A. Yang, Y.-C. Liu and J.-J. Kuo,
   "Efficient Communication Topology via Partially Differential Privacy for
   Decentralized Learning", National Chung Cheng University, Taiwan.
.. [4] X. Zhang, "Graph Topology Learning Under Privacy Constraints",
   arXiv:2301.06662, 2023.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator
from typing import Literal, get_args

import dp_accounting
import numpy as np
from dp_accounting import pld, rdp
from numpy.typing import ArrayLike, NDArray

from ._checks import (
    check_choice,
    check_in_open_unit_interval,
    check_int,
    check_positive,
    check_probability,
)
from .errors import InvalidInputError

__all__ = [
    "classic_gaussian_factor",
    "gaussian_sigma",
    "per_release_epsilon",
    "gaussian_epsilon",
    "basic_composition",
    "noise_multiplier_for_run",
    "calibrate_noise",
    "account_epsilon",
    "laplace_scale",
]

GaussianMethod = Literal["auto", "classic", "analytic"]
Accountant = Literal["rdp", "pld"]

PLD_MIN_MULTIPLIER = 0.3
"""The smallest noise multiplier the PLD calibration tries (:func:`noise_multiplier_for_run`)."""
_PLD_MAX_GROWTH = 20  # doublings of the RDP answer tried before PLD calibration gives up


def classic_gaussian_factor(delta: float) -> float:
    """sqrt(2 ln(1.25 / delta)): sigma / (Delta / epsilon) of the classic Gaussian mechanism."""
    delta = check_in_open_unit_interval(delta, "delta")
    return math.sqrt(2.0 * math.log(1.25 / delta))


def gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float, *, method: GaussianMethod = "auto"
) -> float:
    """Noise std of one Gaussian release with l2 ``sensitivity`` at (epsilon, delta).

    Parameters
    ----------
    epsilon, delta : float
        Privacy budget of this one release; delta in (0, 1).
    sensitivity : float
        l2 sensitivity Delta of the released quantity (bounded by clipping).
    method : {"auto", "classic", "analytic"}
        ``"analytic"``: the smallest sigma for which the Gaussian mechanism is
        (epsilon, delta)-DP (Balle & Wang 2018, Thm. 8), valid for every
        epsilon > 0.  ``"classic"``: sigma = sqrt(2 ln(1.25/delta)) Delta /
        epsilon (Dwork & Roth, Thm. A.1), a valid guarantee only for epsilon <
        1.  ``"auto"`` (default): the smaller of the valid ones, which is the
        analytic sigma (the exact minimum can only be below a sufficient
        bound; at delta = 1e-5 it is 0.63-0.77 of the classic sigma for
        epsilon in [0.1, 1)), so the noise is continuous in epsilon.

    Returns
    -------
    float
        The standard deviation of the Gaussian noise to add per coordinate.

    Notes
    -----
    The analytic sigma solves delta(epsilon) = delta for the privacy profile of
    a Gaussian of sensitivity Delta and std sigma (Balle & Wang 2018, Thm. 8):

    .. math::

        \\delta(\\varepsilon) = \\Phi\\left(\\frac{\\Delta}{2\\sigma}
        - \\frac{\\varepsilon\\sigma}{\\Delta}\\right) - e^{\\varepsilon}
        \\Phi\\left(-\\frac{\\Delta}{2\\sigma}
        - \\frac{\\varepsilon\\sigma}{\\Delta}\\right).

    Up to topokit 0.1, ``"auto"`` took the classic bound below epsilon = 1
    and the analytic one from 1 on, so the noise jumped at epsilon = 1 (sigma
    4.89 at 0.99, 3.73 at 1.0, delta = 1e-5); ``method="classic"`` still
    gives those classic numbers below epsilon = 1.

    Examples
    --------
    >>> round(gaussian_sigma(0.5, 1e-5, 1.0), 4)   # analytic
    7.0318
    >>> round(gaussian_sigma(0.5, 1e-5, 1.0, method="classic"), 4)
    9.6896
    >>> round(gaussian_sigma(0.99, 1e-5, 1.0), 4), round(gaussian_sigma(1.0, 1e-5, 1.0), 4)
    (3.7649, 3.7306)
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_in_open_unit_interval(delta, "delta")
    sensitivity = check_positive(sensitivity, "sensitivity")
    check_choice(method, "method", get_args(GaussianMethod))
    if method == "classic":
        if epsilon >= 1.0:
            raise InvalidInputError(
                f"the classic Gaussian bound holds only for epsilon < 1; got epsilon={epsilon}. "
                "Use method='analytic' (or the default 'auto')."
            )
        return classic_gaussian_factor(delta) * sensitivity / epsilon
    analytic = float(dp_accounting.get_sigma_gaussian(epsilon, delta)) * sensitivity
    if method == "auto" and epsilon < 1.0:
        # Both are valid here; the analytic sigma is the exact minimum, so this only guards
        # against a root-finder answer above the closed-form bound.
        return min(analytic, classic_gaussian_factor(delta) * sensitivity / epsilon)
    return analytic


def per_release_epsilon(noise_multiplier: float, delta: float) -> float:
    """The epsilon at ``delta`` of one Gaussian release of noise multiplier z = sigma / Delta.

    The inverse of :func:`gaussian_sigma` (``method="auto"``) at unit
    sensitivity: the smallest epsilon for which the Gaussian mechanism is
    (epsilon, delta)-DP (Balle & Wang 2018, Thm. 8), solved by
    ``dp_accounting.get_epsilon_gaussian``.  It is what a noise multiplier
    calibrated per round (``DPConfig(per="round")``) guarantees each round.

    Parameters
    ----------
    noise_multiplier : float > 0
    delta : float in (0, 1)

    Returns
    -------
    float

    Examples
    --------
    >>> round(per_release_epsilon(gaussian_sigma(0.5, 1e-5, 1.0), 1e-5), 6)
    0.5
    >>> per_release_epsilon(10.0, 1e-5) < per_release_epsilon(5.0, 1e-5)
    True
    """
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    delta = check_in_open_unit_interval(delta, "delta")
    return float(dp_accounting.get_epsilon_gaussian(noise_multiplier, delta))


def _run_event(noise_multiplier: float, steps: int, sampling_rate: float) -> dp_accounting.DpEvent:
    release = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sampling_rate < 1.0:
        release = dp_accounting.PoissonSampledDpEvent(sampling_rate, release)
    return dp_accounting.SelfComposedDpEvent(release, steps)


def _make_accountant(accountant: Accountant, *, epsilon_scale: float = 0.0):
    """A fresh dp-accounting accountant; PLD's grid is sized for epsilons near ``epsilon_scale``."""
    # Sensitivity is measured by the caller (Delta), and noise_multiplier = sigma / Delta,
    # so the accountant's unit-sensitivity relation is the one that matches: dp-accounting's
    # REPLACE_ONE would double Delta a second time.
    check_choice(accountant, "accountant", get_args(Accountant))
    relation = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    if accountant == "rdp":
        return rdp.RdpAccountant(neighboring_relation=relation)
    return pld.PLDAccountant(
        neighboring_relation=relation,
        value_discretization_interval=_pld_interval(epsilon_scale),
    )


def gaussian_epsilon(
    noise_multiplier: float,
    steps: int,
    delta: float,
    *,
    sampling_rate: float = 1.0,
    accountant: Accountant = "rdp",
) -> float:
    """Epsilon spent by ``steps`` Gaussian releases of noise multiplier sigma / Delta.

    Each release adds N(0, (noise_multiplier * Delta)^2) per coordinate to a
    quantity whose l2 sensitivity is Delta for the neighbouring relation the
    caller chose (e.g. Delta = 2 eta C / B for replace-one of a clipped
    averaged minibatch step).  With ``sampling_rate < 1`` each release sees a
    Poisson sample of the data and gains amplification by subsampling, whose
    analysis in ``dp-accounting`` is for add/remove neighbours.

    Returns
    -------
    float
        The epsilon of the whole run at ``delta``, from the chosen accountant.
    """
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    delta = check_in_open_unit_interval(delta, "delta")
    sampling_rate = check_probability(sampling_rate, "sampling_rate")
    steps = check_int(steps, "steps", low=1)
    event = _run_event(noise_multiplier, steps, sampling_rate)
    scale = _epsilon(_make_accountant("rdp"), event, delta) if accountant == "pld" else 0.0
    return _epsilon(_make_accountant(accountant, epsilon_scale=scale), event, delta)


def _epsilon(engine, event: dp_accounting.DpEvent, delta: float) -> float:
    engine.compose(event)
    return float(engine.get_epsilon(delta))


#: PLD grid: dp-accounting's default interval, coarsened for large epsilon (see _pld_interval).
PLD_INTERVAL, PLD_POINTS_PER_EPSILON = 1e-4, 1e5


def _pld_interval(epsilon_scale: float) -> float:
    """The PLD accountant's value discretization interval for epsilons near ``epsilon_scale``.

    The privacy-loss grid spans a range that grows with epsilon, so a fixed
    1e-4 interval needs gigabytes once epsilon is in the hundreds (a noise
    multiplier of 0.2 over 100 steps asked for 24 GB).  The interval is
    max(1e-4, epsilon_scale / 1e5): relative resolution 1e-5 of the answer
    (dp-accounting's default below epsilon 10).  The PLD accountant's
    (pessimistic) estimate is an upper bound at any interval.
    """
    return max(PLD_INTERVAL, epsilon_scale / PLD_POINTS_PER_EPSILON)


def noise_multiplier_for_run(
    epsilon: float,
    delta: float,
    steps: int,
    *,
    sampling_rate: float = 1.0,
    accountant: Accountant = "rdp",
) -> float:
    """The smallest noise multiplier whose ``steps`` releases spend at most (epsilon, delta).

    Parameters
    ----------
    epsilon, delta : float
        Budget of the whole run; delta in (0, 1).
    steps : int
        Number of Gaussian releases.
    sampling_rate : float, default 1.0
        Poisson sampling rate of each release (1: no amplification).
    accountant : {"rdp", "pld"}, default "rdp"
        The accountant whose epsilon must stay within the budget.

    Returns
    -------
    float
        The noise multiplier sigma / Delta.

    Raises
    ------
    InvalidInputError
        An argument out of range, or (PLD) no multiplier up to
        ``2**20`` times the RDP answer meets the budget.

    Notes
    -----
    The RDP answer is found first (RDP is cheap at any multiplier).  PLD's
    epsilon is at most RDP's, so with ``accountant="pld"`` the answer lies
    below it: the search brackets it between the RDP answer and a lower end
    that shrinks geometrically (by 0.75), never below ``PLD_MIN_MULTIPLIER`` (0.3):
    PLD's memory grows like 1 / multiplier^2 (1.7 GB at 0.1, ~38 GB at 1e-3).
    Where the RDP answer is already below that minimum it is returned as is,
    and where the minimum itself meets the budget the minimum is returned:
    both spend at most (epsilon, delta), if a little more noise than needed.

    Examples
    --------
    >>> z = noise_multiplier_for_run(1.0, 1e-5, 100, sampling_rate=0.05, accountant="pld")
    >>> gaussian_epsilon(z, 100, 1e-5, sampling_rate=0.05, accountant="pld") <= 1.0
    True
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_in_open_unit_interval(delta, "delta")
    sampling_rate = check_probability(sampling_rate, "sampling_rate")
    steps = check_int(steps, "steps", low=1)
    check_choice(accountant, "accountant", get_args(Accountant))

    def event(multiplier: float) -> dp_accounting.DpEvent:
        return _run_event(multiplier, steps, sampling_rate)

    rdp_multiplier = float(
        dp_accounting.calibrate_dp_mechanism(
            lambda: _make_accountant("rdp"),
            event,
            epsilon,
            delta,
            bracket_interval=dp_accounting.LowerEndpointAndGuess(1e-3, 1.0),
        )
    )
    if accountant == "rdp" or rdp_multiplier <= PLD_MIN_MULTIPLIER:
        return rdp_multiplier
    return _pld_multiplier(event, epsilon, delta, rdp_multiplier)


def _pld_multiplier(event, epsilon: float, delta: float, start: float) -> float:
    """Calibrate with PLD in an explicit bracket around ``start`` (the RDP answer)."""

    def accountant() -> dp_accounting.PrivacyAccountant:
        return _make_accountant("pld", epsilon_scale=epsilon)

    def gap(multiplier: float) -> float:
        return _epsilon(accountant(), event(multiplier), delta) - epsilon

    upper = start
    for _ in range(_PLD_MAX_GROWTH):
        if gap(upper) <= 0.0:
            break
        upper *= 2.0
    else:
        raise InvalidInputError(
            f"no noise multiplier up to {upper:.3g} spends at most epsilon={epsilon} at "
            f"delta={delta} by the PLD accountant; check the budget or use accountant='rdp'"
        )
    # PLD's answer is typically 5-10% below RDP's, and each step down costs more than the last.
    lower = max(0.75 * upper, PLD_MIN_MULTIPLIER)
    while gap(lower) <= 0.0:
        if lower == PLD_MIN_MULTIPLIER:
            return lower
        upper, lower = lower, max(0.75 * lower, PLD_MIN_MULTIPLIER)
    return float(
        dp_accounting.calibrate_dp_mechanism(
            accountant,
            event,
            epsilon,
            delta,
            bracket_interval=dp_accounting.ExplicitBracketInterval(lower, upper),
            tol=1e-4 * upper,
        )
    )


def calibrate_noise(
    epsilon: float,
    delta: float,
    *,
    sensitivity: ArrayLike = 1.0,
    steps: int | None = None,
    sampling_rate: ArrayLike = 1.0,
    method: GaussianMethod = "auto",
    accountant: Accountant = "rdp",
) -> NDArray[np.float64]:
    """Gaussian noise std for every party, calibrated per release or per run.

    Parameters
    ----------
    epsilon, delta : float
        The budget: of each release (``steps=None``) or of the whole run.
    sensitivity : float or array-like, default 1.0
        l2 sensitivity Delta of each party's release; 1.0 gives the noise
        multiplier sigma / Delta itself.
    steps : int, optional
        None: every release on its own is (epsilon, delta)-DP,
        sigma = :func:`gaussian_sigma` (epsilon, delta, Delta, method).  An
        integer: the ``steps`` releases together spend (epsilon, delta),
        sigma = :func:`noise_multiplier_for_run` (..., sampling_rate,
        accountant) x Delta, computed once per distinct sampling rate.
    sampling_rate : float or array-like, default 1.0
        Poisson sampling rate of each party (used with ``steps`` only).
    method : {"auto", "classic", "analytic"}
        Per-release calibration (see :func:`gaussian_sigma`).
    accountant : {"rdp", "pld"}
        Per-run calibration (see :func:`noise_multiplier_for_run`).

    Returns
    -------
    ndarray
        sigma for each party, of the broadcast shape of ``sensitivity`` and
        ``sampling_rate``.

    Examples
    --------
    >>> calibrate_noise(1.0, 1e-5, sensitivity=[1.0, 2.0]).round(4)
    array([3.7306, 7.4613])
    """
    sensitivities, rates = np.broadcast_arrays(
        np.asarray(sensitivity, dtype=np.float64), np.asarray(sampling_rate, dtype=np.float64)
    )
    out = np.empty(sensitivities.shape)
    cache: dict[float, float] = {}
    for index, (s, q) in enumerate(zip(sensitivities.flat, rates.flat, strict=True)):
        if steps is None:
            out.flat[index] = gaussian_sigma(epsilon, delta, float(s), method=method)
            continue
        q = float(q)
        if q not in cache:
            with _quiet_absl():
                cache[q] = noise_multiplier_for_run(
                    epsilon, delta, steps, sampling_rate=q, accountant=accountant
                )
        out.flat[index] = cache[q] * float(s)
    return out


def account_epsilon(
    noise_multiplier: ArrayLike,
    steps: int,
    delta: float,
    *,
    sampling_rate: ArrayLike = 1.0,
    accountant: Accountant = "rdp",
) -> NDArray[np.float64]:
    """Epsilon at ``delta`` spent by every party over ``steps`` Gaussian releases.

    :func:`gaussian_epsilon` for each (noise multiplier, sampling rate) pair,
    computed once per distinct pair.

    Parameters
    ----------
    noise_multiplier, sampling_rate : float or array-like
        sigma / Delta and the Poisson sampling rate of each party (broadcast).
    steps : int
        Releases made so far (0 gives epsilon 0).
    delta : float
    accountant : {"rdp", "pld"}

    Returns
    -------
    ndarray
        Epsilon of each party, of the broadcast shape of the inputs.

    Examples
    --------
    >>> account_epsilon([3.7306, 3.7306], 1, 1e-5).shape
    (2,)
    """
    multipliers, rates = np.broadcast_arrays(
        np.asarray(noise_multiplier, dtype=np.float64), np.asarray(sampling_rate, dtype=np.float64)
    )
    out = np.zeros(multipliers.shape)
    if steps < 1:
        return out
    cache: dict[tuple[float, float], float] = {}
    for index, key in enumerate(zip(multipliers.flat, rates.flat, strict=True)):
        key = (float(key[0]), float(key[1]))
        if key not in cache:
            with _quiet_absl():
                cache[key] = gaussian_epsilon(
                    key[0], steps, delta, sampling_rate=key[1], accountant=accountant
                )
        out.flat[index] = cache[key]
    return out


@contextlib.contextmanager
def _quiet_absl() -> Iterator[None]:
    # dp-accounting's RDP accountant logs a warning for every Renyi order it has to drop
    # (harmless: the order is excluded from the minimum); keep the user's log readable.
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def basic_composition(epsilon: float, delta: float, steps: int) -> tuple[float, float]:
    """(steps * epsilon, steps * delta): the basic composition theorem, for comparison."""
    return steps * float(epsilon), steps * float(delta)


def laplace_scale(variance: float) -> float:
    """numpy's Laplace ``scale`` b for noise of the given variance (variance = 2 b^2)."""
    variance = check_positive(variance, "variance")
    return math.sqrt(variance / 2.0)
