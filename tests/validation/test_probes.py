"""probe_topologies: NDLF, optimize's design and topologies spread over the predictor's
features; probe_index tabulates them."""

from __future__ import annotations

import numpy as np
import pytest

from topokit import load_example
from topokit.design.baselines import ndlf, random_topology
from topokit.design.features import FeatureSettings
from topokit.design.time_predictor import FEATURE_TRANSFORMS, load_predictor
from topokit.errors import InvalidInputError
from topokit.validation import probe_topologies
from topokit.validation.probes import _farthest_points, probe_index


@pytest.fixture(scope="module")
def siot16():
    return load_example("siot16")


@pytest.fixture(scope="module")
def probes(siot16):
    return probe_topologies(siot16, k=6, seed=0)


def _standardised(net, topologies) -> np.ndarray:
    """The default predictor's standardised, oriented features of each topology (rows)."""
    model = load_predictor("default")
    X = probe_index(net, topologies)[list(model.features)].to_numpy(float)
    oriented = np.column_stack([FEATURE_TRANSFORMS[name](X[:, j])
                                for j, name in enumerate(model.features)])
    return (oriented - model.mean_) / model.scale_


def _spread(Z: np.ndarray) -> float:
    """The smallest distance from a probe beyond the first two to any other probe."""
    return min(np.linalg.norm(Z[i] - Z[j]) for i in range(2, len(Z)) for j in range(len(Z))
               if i != j)


def test_probes_are_ndlf_optimize_and_more_valid_distinct_topologies(siot16, probes):
    from topokit import optimize

    assert len(probes) == 6 and list(probes)[:2] == ["ndlf", "optimize"]
    assert probes["ndlf"] == ndlf(siot16)
    assert probes["optimize"] == optimize(siot16, seed=probes_seed_of_optimize()).topology
    assert len(set(probes.values())) == 6
    for topology in probes.values():
        assert topology.violations(siot16, require_connected=True) == []


def probes_seed_of_optimize() -> int:
    """The seed probe_topologies(seed=0) gives optimize (its own sub-stream of the seed)."""
    from topokit._random import keyed_seed

    return keyed_seed(0, 1, 0)


def test_the_same_seed_gives_the_same_probes(siot16, probes):
    assert probe_topologies(siot16, k=6, seed=0) == probes


def test_probes_spread_over_the_features_more_than_random_topologies(siot16, probes):
    spread = _spread(_standardised(siot16, probes))
    for start in range(0, 32, 4):
        drawn = {name: probes[name] for name in ("ndlf", "optimize")}
        drawn.update({f"random-{s}": random_topology(siot16, seed=s)
                      for s in range(start, start + 4)})
        assert spread > _spread(_standardised(siot16, drawn))


def test_farthest_points_take_the_farthest_first_and_ties_in_order():
    Z = np.array([[0.0], [1.0], [2.0], [10.0], [2.0]])
    assert _farthest_points(Z, 4, [0]) == [0, 3, 2, 1]  # 2 and 4 tie: the earlier; 4 is
    assert _farthest_points(Z, 5, [1, 0]) == [1, 0, 3, 2, 4]  # then 0 from 2, 1 is 1 away


def test_probe_index_lists_predictions_and_features(siot16, probes):
    index = probe_index(siot16, probes)
    model = load_predictor("default")
    assert list(index["name"]) == list(probes)
    assert list(index.columns[:4]) == ["name", "n_links", "n_dp_devices", "predicted_rounds"]
    assert list(index.columns[4:]) == list(model.features)
    expected = [model.predict_network(siot16, t) for t in probes.values()]
    np.testing.assert_allclose(index["predicted_rounds"], expected)


def test_settings_are_the_workloads(siot16):
    settings = FeatureSettings(noise_multiplier=8.0)
    probes = probe_topologies(siot16, k=3, settings=settings, seed=1)
    noisy = probe_index(siot16, probes, settings=settings)
    default = probe_index(siot16, probes)
    has_dp = noisy["n_dp_devices"] > 0
    assert has_dp.any()
    assert (noisy.loc[has_dp, "noise_felt"] > default.loc[has_dp, "noise_felt"]).all()


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"k": 1}, "k must be"),
    ({"k": 2.5}, "k must be"),
    ({"k": 101}, "k must be"),
    ({"predictor": "paper"}, "TrainingTimePredictor"),
    ({"settings": {"noise_multiplier": 2.0}}, "FeatureSettings"),
])
def test_bad_arguments_are_refused_in_one_line(kwargs, words):
    net = load_example("toy")
    with pytest.raises(InvalidInputError) as caught:
        probe_topologies(net, **{"seed": 0, **kwargs})
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_tiny_network_has_too_few_topologies_for_k(tmp_path):
    import networkx as nx

    from topokit import Network

    net = Network(nx.path_graph(2), [1.0] * 2, np.ones((2, 2)))  # one link, 4 DP sets
    with pytest.raises(InvalidInputError, match=r"only \d distinct valid connected topologies"):
        probe_topologies(net, k=8, seed=0)
    with pytest.raises(InvalidInputError, match="net must be a topokit Network"):
        probe_topologies(nx.path_graph(3), k=2)


def test_probe_topologies_is_public_and_takes_the_workload_by_name():
    import topokit
    from topokit import Workload

    net = topokit.load_example("toy")
    workload = Workload(epsilon=0.5)
    by_name = topokit.probe_topologies(net, k=4, workload=workload, seed=0)
    assert by_name == topokit.probe_topologies(net, k=4, settings=workload, seed=0)
    with pytest.raises(topokit.InvalidInputError, match="not both"):
        topokit.probe_topologies(net, k=4, workload=workload, settings=workload, seed=0)
