"""One description of a topology: H and the spectral gap computed once per topology.

The random walk's summary is the costly part of judging a topology (a fundamental
matrix and an eigenvalue problem).  ``evaluate``, the features every fitted predictor
sees, ``optimize``'s search, its rescoring of AutoTag's snapshots and its final design
all take it from :func:`topokit.design.features.walk_summary`; these tests count the
computations behind it and pin them.
"""

from __future__ import annotations

import numpy as np
import pytest

import topokit.design.features as features_module
from topokit import evaluate, load_example, load_predictor, optimize
from topokit.design import topology_features
from topokit.design.baselines import dlfdp


@pytest.fixture
def computations(monkeypatch):
    """Every (H, gap) actually computed, as the digest of its matrices, from a cold cache."""
    computed: list[bytes] = []
    compute = features_module._compute_walk

    def counted(adjacency, weights):
        computed.append(features_module._walk_key(adjacency, weights))
        return compute(adjacency, weights)

    monkeypatch.setattr(features_module, "_compute_walk", counted)
    monkeypatch.setattr(features_module, "_walks", type(features_module._walks)())
    return computed


def test_evaluate_with_a_fitted_predictor_computes_h_once(computations):
    net = load_example("toy")
    metrics = evaluate(net, dlfdp(net), load_predictor("default"))
    assert len(computations) == 1
    features = topology_features(net, dlfdp(net))  # the predictor's own description
    assert (metrics.hitting_time, metrics.spectral_gap) == (features.hitting_time,
                                                            features.spectral_gap)
    assert len(computations) == 1  # the same topology again: nothing recomputed


def test_optimize_computes_h_once_per_topology(computations):
    design = optimize(load_example("toy"), seed=0)
    assert len(computations) == len(set(computations))  # never the same topology twice
    # The toy's starts, moves, snapshots and six weighted candidates (stats["mixing"]).
    assert len(computations) == 35
    # The final design's metrics came from the search's own computation.
    assert design.metrics.pseudo_time == pytest.approx(331.273, abs=1e-3)


def test_the_cache_returns_what_a_fresh_computation_gives():
    net = load_example("toy")
    adjacency = net.social_adjacency
    first = features_module.walk_summary(adjacency)
    assert first == features_module._compute_walk(np.array(adjacency), None)
    weights = net.topology.mixing_matrix(net.nodes)
    assert features_module.walk_summary(adjacency, weights) == \
        features_module._compute_walk(adjacency, weights)


def test_validate_computes_h_once_per_topology_over_its_trials(computations):
    from topokit import validate

    net = load_example("toy")
    result = validate(net, ["ndlf", "dlfdp"], trials=3, rounds=5, targets=(0.5,),
                      predictor=load_predictor("default"), audit_rounds=5)
    assert len(result.frame) == 6  # two topologies, three trials
    assert len(computations) == len(set(computations)) == 2


def test_the_walk_is_keyed_by_what_it_depends_on():
    ring = np.roll(np.eye(6), 1, axis=1) + np.roll(np.eye(6), -1, axis=1)
    key = features_module._walk_key
    assert key(ring, None) == key(ring * 1.0, None) == key(ring.astype(bool), None)
    assert key(ring, None) != key(ring + np.eye(6)[::-1], None)  # another link
    weights = features_module.lazy_metropolis(ring)
    assert key(ring, weights) == key(np.ones((6, 6)), weights)  # the weights alone decide
    assert key(ring, weights) != key(ring, None)
    nudged = weights.copy()
    nudged[0, 0] += 1e-16
    assert key(ring, weights) != key(ring, nudged)  # every bit of the weights counts
