"""Marfoq et al.'s underlays: the bundled networks and the GML reader
(topokit.network.underlays)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from topokit.errors import InputFileError, InputFileNotFoundError, InvalidInputError
from topokit.network.examples import data_dir, list_examples, load_example
from topokit.network.underlays import (
    LATENCY_OFFSET_S,
    LATENCY_S_PER_DISTANCE,
    MARFOQ_COMPUTATION_TIME_S,
    MARFOQ_CORE_CAPACITY_BPS,
    MARFOQ_MODEL_SIZE_BITS,
    UNDERLAYS,
    load_underlay,
    underlay_network,
)

ROOT = Path(__file__).resolve().parents[2]
HOP_S = MARFOQ_MODEL_SIZE_BITS / MARFOQ_CORE_CAPACITY_BPS
# Gaia's underlay is complete: every pair is one link; distances from its GML (km).
GAIA_DISTANCES = {("Virginia", "California"): 3560.859824767453}


@pytest.mark.parametrize("name", sorted(UNDERLAYS))
def test_bundled_underlay_sizes_and_times(name):
    net = load_example(name)
    assert name in list_examples()
    assert net.n_devices == UNDERLAYS[name][1]          # silos as in Marfoq et al., Table 3
    n = net.n_devices
    assert net.social.number_of_edges() == n * (n - 1) // 2   # complete social graph
    assert nx.is_connected(net.social)
    np.testing.assert_array_equal(net.compute_time, MARFOQ_COMPUTATION_TIME_S)
    off = net.delay[~np.eye(n, dtype=bool)]
    assert np.isfinite(off).all()
    # Every route has at least one hop and the 4 ms offset; at most n - 1 hops.
    assert off.min() >= LATENCY_OFFSET_S + HOP_S - 1e-6
    hops_floor = np.floor((net.delay - LATENCY_OFFSET_S + 1e-6) / HOP_S)
    assert hops_floor[~np.eye(n, dtype=bool)].max() <= n - 1
    assert (data_dir() / f"{name}.json").stat().st_size < 400_000


def test_gaia_delay_is_the_gml_link_latency():
    net = load_example("gaia")
    for (u, v), km in GAIA_DISTANCES.items():
        expected = LATENCY_S_PER_DISTANCE * km + LATENCY_OFFSET_S + HOP_S
        assert net.delay[net.index[u], net.index[v]] == pytest.approx(expected, abs=1e-6)
    # A complete underlay: every pair is one hop, so d_ij - offset - one hop >= 0 is latency.
    assert ((net.delay - LATENCY_OFFSET_S - HOP_S)[~np.eye(11, dtype=bool)] >= -1e-6).all()


def _reference_delays(graph: nx.Graph) -> np.ndarray:
    """Brute force: over all simple paths, the least distance, then the fewest hops."""
    nodes = list(graph)
    n = len(nodes)
    delay = np.zeros((n, n))
    for (i, u), (j, v) in itertools.permutations(enumerate(nodes), 2):
        best = min(
            (sum(graph.edges[a, b]["distance"] for a, b in itertools.pairwise(p)), len(p) - 1)
            for p in nx.all_simple_paths(graph, u, v))
        delay[i, j] = LATENCY_S_PER_DISTANCE * best[0] + LATENCY_OFFSET_S + HOP_S * best[1]
    return delay


def _write_gml(path: Path, edges, *, key="distance") -> Path:
    graph = nx.Graph()
    for u, v, d in edges:
        graph.add_edge(u, v, **({key: d} if key else {}))
    nx.write_gml(graph, path)
    return path


def test_reader_agrees_with_brute_force_paths(tmp_path):
    rng = np.random.default_rng(42)
    for trial in range(3):
        graph = nx.connected_watts_strogatz_graph(8, 3, 0.5, seed=trial)
        # Integer distances with zeros make equal-length routes with different hop counts.
        edges = [(f"n{u}", f"n{v}", float(rng.integers(0, 4))) for u, v in graph.edges]
        net = load_underlay(_write_gml(tmp_path / f"u{trial}.gml", edges))
        reference = _reference_delays(nx.read_gml(tmp_path / f"u{trial}.gml"))
        np.testing.assert_allclose(net.delay, reference, rtol=0, atol=1e-12)
        assert net.name == f"u{trial}"
    # Equally short routes s-x-y-t (3 hops, found first by Dijkstra) and s-z-t (2 hops).
    edges = [("s", "x", 0.0), ("x", "y", 0.0), ("y", "t", 1.0), ("s", "z", 0.5), ("z", "t", 0.5)]
    net = load_underlay(_write_gml(tmp_path / "tie.gml", edges))
    assert net.delay[net.index["s"], net.index["t"]] == pytest.approx(
        LATENCY_S_PER_DISTANCE + LATENCY_OFFSET_S + 2 * HOP_S)


def test_social_underlay_keeps_only_its_links():
    graph = nx.Graph([("a", "b", {"distance": 10.0}), ("b", "c", {"distance": 10.0})])
    net = underlay_network(graph, social="underlay", local_steps=2)
    assert sorted(map(sorted, net.social.edges)) == [["a", "b"], ["b", "c"]]
    assert net.compute_time[0] == pytest.approx(2 * MARFOQ_COMPUTATION_TIME_S)


@pytest.mark.parametrize("edges, key, match", [
    ([("a", "b", 1.0), ("b", "c", 2.0)], None, "has no 'distance'"),
    ([("a", "b", -1.0)], "distance", "need a finite number >= 0"),
])
def test_bad_underlay_file_is_one_line(tmp_path, edges, key, match):
    path = _write_gml(tmp_path / "bad.gml", edges, key=key)
    with pytest.raises(InputFileError, match=match) as error:
        load_underlay(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_other_bad_inputs(tmp_path):
    with pytest.raises(InputFileNotFoundError):
        load_underlay(tmp_path / "missing.gml")
    (tmp_path / "junk.gml").write_text("not gml at all [")
    with pytest.raises(InputFileError, match="not a readable GML") as error:
        load_underlay(tmp_path / "junk.gml")
    assert "\n" not in str(error.value)
    path = _write_gml(tmp_path / "split.gml", [("a", "b", 1.0), ("c", "d", 1.0)])
    with pytest.raises(InputFileError, match="disconnected"):
        load_underlay(path)
    with pytest.raises(InvalidInputError, match="social must be one of"):
        underlay_network(nx.Graph([(0, 1, {"distance": 1.0})]), social="trust")


@pytest.mark.skipif(not os.environ.get("TOPOKIT_MARFOQ_GML"),
                    reason="set TOPOKIT_MARFOQ_GML to the folder of Marfoq et al.'s GML files")
def test_regeneration_is_byte_identical():
    result = subprocess.run(
        [sys.executable, "-m", "analyses.make_underlay_networks", "--gml",
         os.environ["TOPOKIT_MARFOQ_GML"], "--check"],
        cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip().endswith("identical")
