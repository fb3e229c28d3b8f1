"""The Gaussian calibration of topokit.dp: analytic wherever it gives less noise (issue 18).

The classic-to-analytic switch at epsilon = 1 made the noise jump (sigma 4.89 at 0.99,
3.73 at 1.0, delta = 1e-5).  The analytic sigma is checked here against the definition
of the mechanism: the privacy profile of a Gaussian of sensitivity 1 and std sigma,

    delta(eps) = Phi(1/(2 sigma) - eps sigma) - e^eps Phi(-1/(2 sigma) - eps sigma)

(Balle & Wang 2018, Thm. 8), written here with scipy, and against dp-accounting's PLD.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld
from scipy.stats import norm

from topokit.dp import calibrate_noise, gaussian_sigma
from topokit.errors import InvalidInputError
from topokit.training import DPConfig

EPSILONS = (0.05, 0.3, 0.5, 0.8, 0.99, 1.0, 1.01, 2.0, 8.0)
DELTAS = (1e-3, 1e-5, 1e-9)


def profile(sigma: float, epsilon: float) -> float:
    """delta(epsilon) of the Gaussian mechanism with sensitivity 1 and std sigma."""
    a, b = 1 / (2 * sigma) - epsilon * sigma, -1 / (2 * sigma) - epsilon * sigma
    # e^eps Phi(b) in logs: Phi(b) underflows long before the product does
    return float(norm.cdf(a) - math.exp(epsilon + norm.logcdf(b)))


def classic(epsilon: float, delta: float) -> float:
    return math.sqrt(2 * math.log(1.25 / delta)) / epsilon


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_default_sigma_is_the_smallest_that_meets_the_privacy_profile(epsilon, delta):
    sigma = gaussian_sigma(epsilon, delta, 1.0)
    assert profile(sigma, epsilon) == pytest.approx(delta, rel=1e-6)
    # smallest: one part in 10^6 less noise already leaks more than delta
    assert profile(sigma * (1 - 1e-6), epsilon) > delta


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_default_sigma_agrees_with_dp_accounting_pld(epsilon):
    sigma = gaussian_sigma(epsilon, 1e-5, 1.0)
    accountant = pld.PLDAccountant(value_discretization_interval=1e-5)
    accountant.compose(dp_accounting.GaussianDpEvent(sigma))
    # PLD discretises pessimistically: its delta is at least the exact one and close to it
    assert accountant.get_delta(epsilon) == pytest.approx(1e-5, rel=2e-3)


@pytest.mark.parametrize("delta", DELTAS)
def test_noise_is_continuous_at_epsilon_one(delta):
    below, at = gaussian_sigma(1 - 1e-9, delta, 1.0), gaussian_sigma(1.0, delta, 1.0)
    assert below >= at
    assert below - at < 1e-6 * at
    # and monotone across it: no jump anywhere on a fine grid
    grid = np.linspace(0.9, 1.1, 41)
    sigmas = np.array([gaussian_sigma(float(e), delta, 1.0) for e in grid])
    assert np.all(np.diff(sigmas) < 0)
    assert np.max(np.abs(np.diff(np.log(sigmas)))) < 0.01


def test_the_jump_of_the_issue_is_gone():
    assert gaussian_sigma(0.99, 1e-5, 1.0) == pytest.approx(3.7649, abs=1e-4)
    assert gaussian_sigma(1.0, 1e-5, 1.0) == pytest.approx(3.7306, abs=1e-4)
    # what the old default gave at 0.99, still available
    assert gaussian_sigma(0.99, 1e-5, 1.0, method="classic") == pytest.approx(4.8937, abs=1e-4)


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("epsilon", [e for e in EPSILONS if e < 1])
def test_analytic_never_needs_more_noise_than_classic(epsilon, delta):
    analytic = gaussian_sigma(epsilon, delta, 2.5, method="analytic")
    assert gaussian_sigma(epsilon, delta, 2.5) == analytic
    assert gaussian_sigma(epsilon, delta, 2.5, method="classic") == pytest.approx(
        2.5 * classic(epsilon, delta), rel=1e-12
    )
    assert analytic <= 2.5 * classic(epsilon, delta)
    # the classic bound is valid too: its profile stays within delta
    assert profile(classic(epsilon, delta), epsilon) <= delta


def test_classic_is_refused_from_epsilon_one():
    with pytest.raises(InvalidInputError, match="epsilon < 1"):
        gaussian_sigma(1.0, 1e-5, 1.0, method="classic")


def test_many_parties_and_training_use_the_same_default():
    sigmas = calibrate_noise(0.5, 1e-5, sensitivity=[1.0, 2.0])
    np.testing.assert_allclose(sigmas, np.array([1.0, 2.0]) * gaussian_sigma(0.5, 1e-5, 1.0))
    assert DPConfig(epsilon=0.5).method == "auto"
    classic_sigmas = calibrate_noise(0.5, 1e-5, method="classic")
    assert classic_sigmas == pytest.approx(classic(0.5, 1e-5))
