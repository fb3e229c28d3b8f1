"""Tests of topokit.dp (old path topokit.privacy)."""

import time

import numpy as np
import pytest

from topokit.dp import PLD_MIN_MULTIPLIER, gaussian_epsilon, noise_multiplier_for_run
from topokit.errors import InvalidInputError


def test_noise_multiplier_for_run_pld_bracket_regression():
    # Bug: the PLD calibration started its bracket at multiplier 1e-3, whose PLD
    # dp-accounting tried to allocate ~38 GB.  It must now finish in seconds.
    epsilon, delta, q, steps = 1.0, 1e-5, 0.05, 100
    started = time.perf_counter()
    z = noise_multiplier_for_run(epsilon, delta, steps, sampling_rate=q, accountant="pld")
    assert time.perf_counter() - started < 20.0
    spent = gaussian_epsilon(z, steps, delta, sampling_rate=q, accountant="pld")
    assert spent <= epsilon
    assert spent >= 0.95 * epsilon
    # PLD is the tighter accountant: it needs no more noise than RDP.
    assert z <= noise_multiplier_for_run(epsilon, delta, steps, sampling_rate=q)


def test_noise_multiplier_for_run_rdp_meets_budget():
    z = noise_multiplier_for_run(1.0, 1e-5, 100, sampling_rate=0.05)
    spent = gaussian_epsilon(z, 100, 1e-5, sampling_rate=0.05)
    assert spent == pytest.approx(1.0, rel=1e-3)
    assert spent <= 1.0 + 1e-9


def test_noise_multiplier_for_run_pld_below_minimum_returns_rdp_answer():
    # A loose budget whose RDP answer lies below the PLD search's minimum: the RDP
    # answer is returned, and it stays within the budget by PLD as well.
    args = (50.0, 1e-5, 10)
    z_rdp = noise_multiplier_for_run(*args, sampling_rate=0.01)
    assert z_rdp < PLD_MIN_MULTIPLIER
    assert noise_multiplier_for_run(*args, sampling_rate=0.01, accountant="pld") == z_rdp


def test_noise_multiplier_for_run_rejects_bad_input():
    with pytest.raises(InvalidInputError, match="accountant"):
        noise_multiplier_for_run(1.0, 1e-5, 10, accountant="moments")
    with pytest.raises(InvalidInputError, match="steps"):
        noise_multiplier_for_run(1.0, 1e-5, 0)


def _gdp_epsilon(mu: float, delta: float) -> float:
    """Exact epsilon of mu-GDP at delta (Dong, Roth & Su, Cor. 2.13)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    def excess(eps):
        # e^eps Phi(.) in log space: e^eps overflows for the large epsilons tested
        tail = np.exp(eps + norm.logcdf(-eps / mu - mu / 2))
        return norm.cdf(-eps / mu + mu / 2) - tail - delta
    return brentq(excess, 0.0, mu * mu + 10 * mu + 10)


@pytest.mark.parametrize("multiplier", [2.0, 0.5, 0.1])
def test_pld_epsilon_of_composed_gaussians_is_exact_gdp(multiplier):
    """T Gaussian releases of multiplier m compose to exactly sqrt(T)/m-GDP; PLD is a tight
    upper bound, also for small multipliers whose epsilon is in the thousands (coarser grid)."""
    steps, delta = 100, 1e-3
    exact = _gdp_epsilon(np.sqrt(steps) / multiplier, delta)
    got = gaussian_epsilon(multiplier, steps, delta, accountant="pld")
    assert exact <= got <= exact * (1 + 1e-3) + 1e-3
