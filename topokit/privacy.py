"""Differential-privacy calibration and accounting shared by every part of topokit.

Noise is always calibrated from a bounded sensitivity (the caller clips), and
privacy spent is accounted with Google's ``dp-accounting`` rather than by hand.

- :func:`gaussian_sigma`: the noise standard deviation of one Gaussian release
  with l2 sensitivity Delta at (epsilon, delta): the classic bound
  sqrt(2 ln(1.25/delta)) Delta / epsilon (valid for epsilon < 1, Dwork & Roth
  Thm. A.1) or the analytic Gaussian mechanism (Balle & Wang 2018, exact for
  every epsilon, via ``dp_accounting.get_sigma_gaussian``).
- :func:`gaussian_epsilon`: epsilon spent by a run of (optionally Poisson
  subsampled) Gaussian releases, from the RDP or PLD accountant.
- :func:`noise_multiplier_for_run`: the noise multiplier that makes a whole
  run spend (epsilon, delta).
- :func:`laplace_scale`: numpy's Laplace ``scale`` for a given variance.
"""

from __future__ import annotations

import math
from typing import Literal

import dp_accounting
from dp_accounting import pld, rdp

from ._validation import check_in_open_unit_interval, check_positive, check_probability
from .errors import InvalidInputError

__all__ = [
    "classic_gaussian_factor",
    "gaussian_sigma",
    "gaussian_epsilon",
    "basic_composition",
    "noise_multiplier_for_run",
    "laplace_scale",
]

GaussianMethod = Literal["auto", "classic", "analytic"]
Accountant = Literal["rdp", "pld"]


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
        ``"classic"``: sigma = sqrt(2 ln(1.25/delta)) Delta / epsilon, a valid
        guarantee only for epsilon < 1.  ``"analytic"``: the smallest sigma
        for which the Gaussian mechanism is (epsilon, delta)-DP (Balle & Wang
        2018), valid for every epsilon.  ``"auto"`` (default): classic below
        epsilon = 1, as the papers do, analytic from epsilon = 1 on.

    Returns
    -------
    float
        The standard deviation of the Gaussian noise to add per coordinate.

    Examples
    --------
    >>> round(gaussian_sigma(0.5, 1e-5, 1.0), 4)
    9.6896
    >>> round(gaussian_sigma(1.0, 1e-5, 1.0), 4)   # analytic at epsilon = 1
    3.7306
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_in_open_unit_interval(delta, "delta")
    sensitivity = check_positive(sensitivity, "sensitivity")
    if method not in ("auto", "classic", "analytic"):
        raise InvalidInputError(
            f"method must be one of 'auto', 'classic', 'analytic'; got {method!r}"
        )
    if method == "classic" or (method == "auto" and epsilon < 1.0):
        if epsilon >= 1.0:
            raise InvalidInputError(
                f"the classic Gaussian bound holds only for epsilon < 1; got epsilon={epsilon}. "
                "Use method='analytic'."
            )
        return classic_gaussian_factor(delta) * sensitivity / epsilon
    return float(dp_accounting.get_sigma_gaussian(epsilon, delta)) * sensitivity


def _run_event(noise_multiplier: float, steps: int, sampling_rate: float) -> dp_accounting.DpEvent:
    release = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sampling_rate < 1.0:
        release = dp_accounting.PoissonSampledDpEvent(sampling_rate, release)
    return dp_accounting.SelfComposedDpEvent(release, steps)


def _make_accountant(accountant: Accountant):
    # Sensitivity is measured by the caller (Delta), and noise_multiplier = sigma / Delta,
    # so the accountant's unit-sensitivity relation is the one that matches: dp-accounting's
    # REPLACE_ONE would double Delta a second time.
    relation = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    if accountant == "rdp":
        return rdp.RdpAccountant(neighboring_relation=relation)
    if accountant == "pld":
        return pld.PLDAccountant(neighboring_relation=relation)
    raise InvalidInputError(f"accountant must be 'rdp' or 'pld'; got {accountant!r}")


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
    if int(steps) != steps or steps < 1:
        raise InvalidInputError(f"steps must be a positive integer; got {steps}")
    engine = _make_accountant(accountant)
    engine.compose(_run_event(noise_multiplier, int(steps), sampling_rate))
    return float(engine.get_epsilon(delta))


def noise_multiplier_for_run(
    epsilon: float,
    delta: float,
    steps: int,
    *,
    sampling_rate: float = 1.0,
    accountant: Accountant = "rdp",
) -> float:
    """The smallest noise multiplier whose ``steps`` releases spend at most (epsilon, delta)."""
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_in_open_unit_interval(delta, "delta")
    sampling_rate = check_probability(sampling_rate, "sampling_rate")
    if int(steps) != steps or steps < 1:
        raise InvalidInputError(f"steps must be a positive integer; got {steps}")
    return float(
        dp_accounting.calibrate_dp_mechanism(
            lambda: _make_accountant(accountant),
            lambda multiplier: _run_event(multiplier, int(steps), sampling_rate),
            epsilon,
            delta,
            bracket_interval=dp_accounting.LowerEndpointAndGuess(1e-3, 1.0),
        )
    )


def basic_composition(epsilon: float, delta: float, steps: int) -> tuple[float, float]:
    """(steps * epsilon, steps * delta): the basic composition theorem, for comparison."""
    return steps * float(epsilon), steps * float(delta)


def laplace_scale(variance: float) -> float:
    """numpy's Laplace ``scale`` b for noise of the given variance (variance = 2 b^2)."""
    variance = check_positive(variance, "variance")
    return math.sqrt(variance / 2.0)
