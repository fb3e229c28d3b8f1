"""AutoTag on small networks: the plain loops take the compiled kernel's decisions.

Up to ``PLAIN_MAX_DEVICES`` devices :func:`topokit.autotag` runs each budget as plain
Python loops rather than compiling its kernel (about 25 s of CPU the first time); the
design, every budget's candidate and their metrics must be the kernel's, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from topokit import autotag, load_example
from topokit.design import _autotag
from topokit.network.siot import siot
from topokit.testing.naive_autotag import random_network

NETWORKS = {
    "toy": lambda: load_example("toy"),
    **{f"random{V}-{seed}": (lambda V=V, seed=seed: random_network(V, seed, p=0.2 + 0.1 * seed))
       for V in (4, 7, 10, 12) for seed in range(3)},
    "siot10": lambda: siot(10, seed=1),
    "siot12-colocation": lambda: siot(12, seed=2, colocation_range_m=100),
}


def _kernel(net, monkeypatch, **options):
    with monkeypatch.context() as patched:
        patched.setattr(_autotag, "PLAIN_MAX_DEVICES", 0)
        return autotag(net, **options)


@pytest.mark.parametrize("name", NETWORKS)
def test_plain_loops_take_the_kernels_decisions(name, monkeypatch):
    net = NETWORKS[name]()
    assert 1 < net.n_devices <= _autotag.PLAIN_MAX_DEVICES
    for options in ({}, {"nep_patience": 2}):
        plain, kernel = autotag(net, **options), _kernel(net, monkeypatch, **options)
        assert plain.n == kernel.n and plain.topology == kernel.topology
        assert plain.metrics == kernel.metrics
        for ours, theirs in zip(plain.candidates, kernel.candidates, strict=True):
            assert (ours.n, ours.step, ours.phase) == (theirs.n, theirs.step, theirs.phase)
            assert ours.topology == theirs.topology and ours.metrics == theirs.metrics


def test_the_plain_loops_run_below_the_limit_and_the_kernel_above(monkeypatch):
    small = autotag(load_example("toy"))
    # A fresh inverse for every snapshot, no Woodbury update, no shared trajectory.
    assert small.stats["woodbury_updates"] == 0
    assert small.stats["fresh_inverses"] == small.stats["snapshots"]
    assert small.stats["repeated_budgets"] == 0
    large = autotag(load_example("siot16"))
    assert large.stats["n_devices"] > _autotag.PLAIN_MAX_DEVICES
    assert large.stats["repeated_budgets"] > 0 or large.stats["woodbury_updates"] > 0


def test_a_traced_plain_design_has_every_snapshot_of_every_budget(monkeypatch):
    net = load_example("toy")
    plain = autotag(net, trace=True)
    trace = plain.trace
    assert len(trace.n) == plain.stats["snapshots"]
    kernel = _kernel(net, monkeypatch, prune=False, trace=True)
    # Unpruned, the kernel's trace lists the same snapshots (its budgets may share one).
    for n in range(net.n_devices + 1):
        ours = np.flatnonzero(trace.n == n)
        theirs = np.flatnonzero(kernel.trace.n == n)
        np.testing.assert_array_equal(trace.u[ours], kernel.trace.u[theirs])
        np.testing.assert_allclose(trace.pseudo_time[ours], kernel.trace.pseudo_time[theirs],
                                   rtol=1e-9)
