"""Shared cases of the privacy-audit tests beside this file (test_audit.py, test_audit_dsgd.py)."""

from __future__ import annotations

import numpy as np

from topokit.design.baselines import random_topology
from topokit.network.siot import siot

#: Agreement asked of the audit against its dense twin (relative, on finite mu).
RTOL = 1e-9


def random_case(seed: int):
    """A random valid topology on a small SIoT network, its rounds and per-device noise."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 15))
    net = siot(n, seed=seed, colocation_range_m=100.0)
    topology = random_topology(net, seed=seed, n_dp=int(rng.integers(0, n + 1)))
    # DP devices draw their z; a few non-DP devices add noise too (the mapping form).
    noise = {node: float(rng.uniform(0.5, 2.0)) if node in topology.dp_devices
             or rng.random() < 0.2 else 0.0 for node in net.nodes}
    return net, topology, int(rng.integers(1, 13)), noise


def assert_same_mu(got, expected):
    """Equal NaN / inf patterns and finite values within RTOL relative."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=RTOL, atol=1e-300)
