"""Network files that grow with the devices and links, not the pairs.

From ``COMPACT_FROM_DEVICES`` devices on, :func:`save_network` stores no delay
matrix when the positions and the radio model give every delay, a default and
the pairs that differ when most pairs share one, else the n x n matrix; a
social link is a networkx node-link record on one line.  Every form loads back the saved
network, its delays bit for bit; the dense files of before load as they did.
``generate siot`` refuses, before generating, a size that it or loading its file
could not hold here, in one line naming the largest that fits.
"""

from __future__ import annotations

import json
import warnings

import networkx as nx
import numpy as np
import pytest

from topokit.cli import _sizes
from topokit.errors import InputFileError
from topokit.network import formats
from topokit.network.core import Network
from topokit.network.examples import load_example
from topokit.network.formats import (
    COMPACT_FROM_DEVICES,
    DelayForm,
    delay_form,
    load_network,
    network_to_graph,
    save_network,
)
from topokit.network.physical import pairwise_delay_blocks, pairwise_delays
from topokit.network.siot import siot

from cli_errors import check_one_line

GIB = 2.0**30


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """The same floats bit for bit (0.0 and -0.0 differ)."""
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


def rebuilt(net: Network, delay: np.ndarray) -> Network:
    """``net`` with ``delay``, its positions and physical model kept."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # social links made unreachable
        return Network(net.social, net.compute_time, delay, positions=net.positions,
                       physical_model=net.physical_model, name=net.name)


def round_trip(net: Network, path) -> Network:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_network(save_network(net, path))


@pytest.fixture
def compact_from_one(monkeypatch):
    """Small networks written in the forms of large ones."""
    monkeypatch.setattr(formats, "COMPACT_FROM_DEVICES", 1)


@pytest.fixture(scope="module")
def siot60():
    return siot(60, seed=1)


# ---------------------------------------------------------------------------------------------
# Round trips, bit for bit
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".json", ".graphml"])
def test_a_generated_network_stores_no_delays_and_loads_them_back(tmp_path, siot60, suffix,
                                                                  compact_from_one):
    assert delay_form(siot60) == DelayForm("model")
    path = save_network(siot60, tmp_path / f"n{suffix}")
    if suffix == ".json":
        assert "delay" not in json.loads(path.read_text())["graph"]
    again = load_network(path)
    assert same_bits(again.delay, siot60.delay)
    assert np.array_equal(again.positions, siot60.positions)
    assert again.physical_model == siot60.physical_model
    if suffix == ".json":
        assert again == siot60


@pytest.mark.parametrize("suffix", [".json", ".graphml"])
def test_edited_delays_are_stored_as_the_pairs_that_differ(tmp_path, siot60, suffix,
                                                           compact_from_one):
    """One delay no longer the model's: a default and the listed pairs, still bit for bit."""
    delay = siot60.delay.copy()
    delay[3, 7] = delay[7, 3] = 1.5
    delay[0, 59] = delay[59, 0] = np.inf
    delay[1, 2] = delay[2, 1] = -0.0  # equal to 0.0, not the same bits: listed
    net = rebuilt(siot60, delay)
    form = delay_form(net)
    assert form.kind == "sparse"
    path = tmp_path / f"n{suffix}"
    again = round_trip(net, path)
    assert same_bits(again.delay, net.delay)
    assert np.signbit(again.delay[1, 2]) and np.signbit(again.delay[2, 1])
    if suffix == ".json":
        stored = json.loads(path.read_text())["graph"]["delay"]
        assert stored["default"] == form.default
        listed = {(i, j): d for i, j, d in stored["pairs"]}
        assert listed[(3, 7)] == 1.5 and listed[(0, 59)] is None
        assert all(i < j for i, j in listed)
        upper = np.triu_indices(60, 1)
        differ = delay[upper].view(np.uint64) != np.float64(form.default).view(np.uint64)
        assert len(listed) == int(differ.sum())


def test_delays_with_no_shared_value_keep_the_matrix(tmp_path, siot60, compact_from_one):
    rng = np.random.default_rng(0)
    delay = rng.random((60, 60))
    net = rebuilt(siot60, delay + delay.T)
    assert delay_form(net) == DelayForm("dense")
    path = save_network(net, tmp_path / "n.json")
    assert isinstance(json.loads(path.read_text())["graph"]["delay"], list)
    assert same_bits(load_network(path).delay, net.delay)


def test_mostly_unreachable_pairs_default_to_no_link(tmp_path, compact_from_one):
    n = 40
    delay = np.full((n, n), np.inf)
    for i in range(n - 1):  # a chain of links, every other pair unreachable
        delay[i, i + 1] = delay[i + 1, i] = 0.25 * (i + 1)
    net = Network(nx.path_graph(n), [312.0] * n, delay)
    assert delay_form(net).kind == "sparse" and np.isinf(delay_form(net).default)
    path = save_network(net, tmp_path / "n.json")
    assert json.loads(path.read_text())["graph"]["delay"]["default"] is None
    assert same_bits(load_network(path).delay, net.delay)
    size = _sizes.network_file_size(path)
    assert size.sparse and size.listed == n - 1 and size.min_pairs == 0


@pytest.mark.parametrize("compact", [False, True])
def test_the_toy_example_round_trips(tmp_path, monkeypatch, compact):
    """The paper's toy: distinct delays and an unreachable pair, the matrix either way."""
    if compact:
        monkeypatch.setattr(formats, "COMPACT_FROM_DEVICES", 1)
    toy = load_example("toy")
    assert delay_form(toy).kind == "dense"
    again = round_trip(toy, tmp_path / "toy.json")
    assert again == toy and same_bits(again.delay, toy.delay)


def test_a_small_network_keeps_the_matrix_a_value_a_line(tmp_path, siot60):
    """Below COMPACT_FROM_DEVICES the file is as before, whatever the delays' form."""
    assert siot60.n_devices < COMPACT_FROM_DEVICES
    path = save_network(siot60, tmp_path / "n.json")
    data = nx.node_link_data(network_to_graph(siot60), edges="edges")
    assert path.read_text() == json.dumps(data, indent=1) + "\n"


def test_a_dense_file_of_before_loads_the_same_network(tmp_path):
    """A large network's file of before (the matrix, a record a link) and the new one load
    the same network: delays bit for bit, the links in the same order."""
    net = siot(COMPACT_FROM_DEVICES + 10, seed=2)
    before = tmp_path / "before.json"
    before.write_text(json.dumps(nx.node_link_data(network_to_graph(net), edges="edges")))
    old, new = load_network(before), load_network(save_network(net, tmp_path / "new.json"))
    assert old == new and same_bits(old.delay, new.delay) and same_bits(new.delay, net.delay)
    assert list(old.social.edges) == list(new.social.edges)
    assert all(list(old.social.adj[u]) == list(new.social.adj[u]) for u in old.nodes)


def test_the_blocks_of_the_model_are_its_matrix():
    rng = np.random.default_rng(3)
    positions = rng.random((1100, 2)) * 3000
    lte = list(rng.choice(["cat-m1", "cat-m2"], 1100))
    whole = pairwise_delays(positions, lte=lte, max_range_m=900.0)
    rows = np.vstack([block for _, block in
                      pairwise_delay_blocks(positions, lte=lte, max_range_m=900.0)])
    assert same_bits(rows, whole)


# ---------------------------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------------------------

def test_a_generated_files_size_follows_its_links(tmp_path):
    net = siot(400, seed=1)
    n, links = net.n_devices, net.social.number_of_edges()
    path = save_network(net, tmp_path / "n.json")
    size = path.stat().st_size
    # A device's record (~110 bytes with its LTE-M category) and a link's record
    # ({"source":u,"target":v}, ~30 bytes).
    assert size <= 200 * n + 34 * links
    assert size < n * n * 10  # the matrix alone took about 10 bytes a pair
    read = _sizes.network_file_size(path)
    assert (read.n_devices, read.links, read.delays, read.min_pairs) == \
        (n, links, False, n * (n - 1) // 2)
    assert size <= _sizes.siot_file_bytes(n)
    assert load_network(path) == load_network(save_network(net, tmp_path / "again.json"))


def test_a_sparse_files_size_counts_its_listed_pairs(tmp_path, siot60, compact_from_one):
    delay = siot60.delay.copy()
    delay[3, 7] = delay[7, 3] = 1.5
    net = rebuilt(siot60, delay)
    path = save_network(net, tmp_path / "n.json")
    stored = json.loads(path.read_text())["graph"]["delay"]
    size = _sizes.network_file_size(path)
    assert size.delays and size.sparse and size.listed == len(stored["pairs"])
    assert size.links == net.social.number_of_edges()
    assert size.loading_bytes == pytest.approx(26 * 60**2 + 350 * size.links
                                               + 200 * size.listed)


def test_writing_holds_no_delay_as_a_python_object(tmp_path, compact_from_one):
    """The matrix is encoded a row at a time: the writer's peak is far below the n^2
    Python floats (32 bytes a pair) or the whole text (about 20 bytes a pair)."""
    import tracemalloc

    n = 600
    delay = np.random.default_rng(1).random((n, n))
    net = Network(nx.cycle_graph(n), [312.0] * n, delay + delay.T)
    tracemalloc.start()
    try:
        save_network(net, tmp_path / "n.json")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 * n * n  # the form's check: a block of the pairs' bits (at most 32 MB)
    assert same_bits(load_network(tmp_path / "n.json").delay, net.delay)


# ---------------------------------------------------------------------------------------------
# Reading the new forms: one clear line for a broken file
# ---------------------------------------------------------------------------------------------

def toy_data() -> dict:
    return json.loads(json.dumps(nx.node_link_data(network_to_graph(load_example("toy")),
                                                   edges="edges")))


@pytest.mark.parametrize(("delay", "keywords"), [
    ({"default": 10.0}, ("'default'", "'pairs'", "got the key set ['default']")),
    ({"default": 10.0, "pairs": [], "extra": 1}, ("'extra'",)),
    ({"default": "slow", "pairs": []}, ("delay.default", "number")),
    ({"default": 1e400, "pairs": []}, ("delay.default", "too large")),
    ({"default": 10.0, "pairs": {"0": 1}}, ("delay.pairs", "list of [i, j, seconds]")),
    ({"default": 10.0, "pairs": [[0, 1]]}, ("delay.pairs[0]", "[i, j, seconds]")),
    ({"default": 10.0, "pairs": [[0, 6, 1.0]]}, ("delay.pairs[0]", "0 to 5")),
    ({"default": 10.0, "pairs": [[True, 1, 1.0]]}, ("delay.pairs[0]", "not a device")),
    ({"default": 10.0, "pairs": [[2, 2, 1.0]]}, ("delay.pairs[0]", "itself")),
    ({"default": 10.0, "pairs": [[0, 1, 1.0], [1, 2, 3.0], [1, 0, 2.0]]},
     ("delay.pairs[2]", "1-0", "listed twice")),
    ({"default": 10.0, "pairs": [[0, 1, True]]}, ("delay.pairs[0]", "number")),
    ({"default": 10.0, "pairs": [[0, 1, 1e400]]}, ("delay.pairs[0]", "too large")),
])
def test_a_broken_sparse_delay_is_refused_in_one_line(tmp_path, delay, keywords):
    data = toy_data()
    data["graph"]["delay"] = delay
    path = tmp_path / "n.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputFileError) as refusal:
        load_network(path)
    message = str(refusal.value)
    assert "\n" not in message and message.startswith(str(path))
    for keyword in keywords:
        assert keyword in message, message


def test_a_sparse_delay_of_the_toy_loads_as_its_matrix(tmp_path):
    toy = load_example("toy")
    data = toy_data()
    upper = np.triu_indices(6, 1)
    data["graph"]["delay"] = {"default": 30.0, "pairs": [
        [int(i), int(j), None if np.isinf(toy.delay[i, j]) else float(toy.delay[i, j])]
        for i, j in zip(*upper, strict=True) if toy.delay[i, j] != 30.0][::-1]}
    path = tmp_path / "n.json"
    path.write_text(json.dumps(data))
    assert load_network(path) == toy


def test_a_large_file_is_networkx_node_link_json(tmp_path):
    """The compact layout keeps networkx's node-link records: networkx reads the file and
    gets the social graph, a link an edge record."""
    net = siot(COMPACT_FROM_DEVICES + 10, seed=4)
    path = save_network(net, tmp_path / "large.json")
    graph = nx.node_link_graph(json.loads(path.read_text()), edges="edges")
    assert nx.utils.graphs_equal(nx.Graph(graph.edges), nx.Graph(net.social.edges))
    assert sorted(graph.nodes) == sorted(net.nodes)


# ---------------------------------------------------------------------------------------------
# generate siot: refused up front
# ---------------------------------------------------------------------------------------------

def test_generate_refuses_at_once_a_size_that_does_not_fit(tmp_path, monkeypatch,
                                                          never_generated):
    """20,000 devices in 4 GiB: refused in one line naming the largest count that fits,
    for generating it and for loading its file; nothing written."""
    monkeypatch.setattr(_sizes, "available_memory", lambda: 4 * GIB)
    line = check_one_line(["generate", "siot", "--devices", "20000", "-o",
                           str(tmp_path / "big.json")],
                          "--devices 20000", "of memory", "4 GiB available", "or fewer")
    fits = int(line.split("use --devices ")[-1].split()[0])

    def need(n: int) -> float:  # generating it, or loading its file and reading the delays
        loading = _sizes.NetworkFileSize(n, 0, False, links=int(_sizes.siot_links(n)))
        return max(_sizes.siot_memory(n), loading.loading_bytes)

    assert need(fits) <= 4 * GIB < need(fits + 200)
    assert list(tmp_path.iterdir()) == []


def test_generate_refuses_a_file_its_loading_could_not_hold(tmp_path, monkeypatch,
                                                           never_generated):
    """GraphML: generating fits, loading the file (an XML element a link) does not."""
    n = 9000
    links = int(_sizes.siot_links(n))
    loading = _sizes.NetworkFileSize(n, 0, False, links=links, graphml=True).loading_bytes
    generating = _sizes.siot_memory(n, graphml=True)
    assert generating < loading
    monkeypatch.setattr(_sizes, "available_memory", lambda: (generating + loading) / 2)
    check_one_line(["generate", "siot", "-n", str(n), "-o", str(tmp_path / "n.graphml")],
                   "loading its file (analyze, design)", "or fewer")
    assert list(tmp_path.iterdir()) == []


def test_closer_devices_are_sized_with_more_links():
    assert _sizes.siot_links(2000, closer=2.0) == 2 * _sizes.siot_links(2000)
    assert _sizes.siot_links(2000, closer=0.5) == _sizes.siot_links(2000)
    assert _sizes.siot_links(50, closer=1e9) == 50 * 49 / 2


def test_the_sizes_know_where_files_turn_compact():
    """The size checks run before numpy is imported: they keep their own copy."""
    assert _sizes._COMPACT_FROM_DEVICES == COMPACT_FROM_DEVICES
