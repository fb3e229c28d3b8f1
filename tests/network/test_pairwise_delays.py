"""pairwise_delays in row blocks gives the bytes of the whole-matrix formula it replaced."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from topokit.network.physical import (
    LTE_RATE_MBPS,
    WIFI_RATE_MBPS,
    pairwise_delays,
    transfer_seconds,
)


def whole_matrix(positions, *, model_size_mb=4.0, lte="cat-m1", wifi_range_m=100.0,
                 max_range_m=None):
    """The formula as it was: scipy's distances, the pair rate, then the ranges."""
    n = len(positions)
    distance = squareform(pdist(positions)) if n > 1 else np.zeros((n, n))
    rates = np.array([LTE_RATE_MBPS[c] for c in ([lte] * n if isinstance(lte, str) else lte)])
    delay = model_size_mb * 8.0 / np.minimum(rates[:, None], rates[None, :])
    delay = np.where(distance < wifi_range_m,
                     transfer_seconds(model_size_mb, WIFI_RATE_MBPS), delay)
    if max_range_m is not None:
        delay = np.where(distance > max_range_m, np.inf, delay)
    np.fill_diagonal(delay, 0.0)
    return delay


@pytest.mark.parametrize("n", [0, 1, 2, 7, 511, 512, 513, 1300])
@pytest.mark.parametrize("grid", [False, True])
def test_the_same_floats_as_the_whole_matrix_formula(n, grid):
    rng = np.random.default_rng(n + grid)
    positions = rng.uniform(0, 600, (n, 2))
    if grid:  # integer metres: many pairs exactly at 100 m, the Wi-Fi boundary
        positions = np.round(positions / 20) * 20
    lte = list(rng.choice(["cat-m1", "cat-m2"], n))
    for max_range in (None, 250.0, 100.0):
        mine = pairwise_delays(positions, lte=lte, max_range_m=max_range, model_size_mb=3.3)
        theirs = whole_matrix(positions, lte=lte, max_range_m=max_range, model_size_mb=3.3)
        assert mine.tobytes() == theirs.tobytes()


def test_integer_positions_are_read_as_floats():
    positions = np.array([[0, 0], [60, 80], [300, 400]])
    np.testing.assert_array_equal(pairwise_delays(positions),
                                  whole_matrix(positions.astype(float)))
