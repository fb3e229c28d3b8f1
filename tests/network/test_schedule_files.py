"""Schedule files: TopologySchedule.save and load_schedule round-trip cyclic schedules (with
their weights and DP devices) and the peers of the field, write the same bytes for the same
schedule, and refuse a bad file in one line naming it."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

import topokit
from topokit import Network, Topology, TopologySchedule, load_schedule
from topokit.design.peers import EpidemicRounds, base_graph, epidemic, one_peer_exponential
from topokit.errors import InputFileError, InputFileNotFoundError, InvalidInputError
from topokit.network.rounds import EpidemicRounds as RoundsOfTheNetworkModule


def path_network(n: int) -> Network:
    """n devices on a social path, every pair usable (so most peer links are not social)."""
    return Network(nx.path_graph(n), [1.0] * n, np.full((n, n), 1.0))


def weighted_schedule() -> TopologySchedule:
    """Two rounds over tuple and string ids, with uneven weights and DP devices."""
    a, b, c, d = ("x", 1), ("x", 2), "c", "d"
    first = Topology([(a, b), (c, d)], dp_devices=[a], weights=[0.3, 1 / 3])
    second = Topology([(a, c), (b, d)], weights=[0.1, 0.45])
    return TopologySchedule([first, second], dp_devices=[d], name="weighted")


def save_and_load(schedule, folder, network=None, name="schedule.json"):
    return load_schedule(schedule.save(folder / name), network=network)


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------


def test_a_cyclic_schedule_loads_back_equal_with_its_weights_and_dp_devices(tmp_path):
    schedule = weighted_schedule()
    loaded = save_and_load(schedule, tmp_path)
    assert loaded == schedule and loaded.name == "weighted" and loaded.period == 2
    assert loaded.dp_devices == {("x", 1), "d"}
    for t in range(2):
        assert loaded.topology_at(t).edges == schedule.topology_at(t).edges
        assert loaded.topology_at(t).weights == schedule.topology_at(t).weights  # exact
    assert sorted(loaded.topology_at(0).weights) == [0.3, 1 / 3]
    nodes = [("x", 1), ("x", 2), "c", "d"]
    assert np.array_equal(loaded.mixing_at(1, nodes), schedule.mixing_at(1, nodes))


def test_the_file_is_the_documented_json(tmp_path):
    path = weighted_schedule().save(tmp_path / "weighted.json")
    data = json.loads(path.read_text())
    assert list(data) == ["topokit_schedule", "name", "dp_devices", "topologies"]
    assert data["topokit_schedule"] == 1 and data["name"] == "weighted"
    assert data["dp_devices"] == ["d", ["x", 1]]
    assert [Topology.from_dict(item) for item in data["topologies"]] == [
        weighted_schedule().topology_at(t) for t in range(2)]


@pytest.mark.parametrize("build", [one_peer_exponential, lambda net: base_graph(net, 2),
                                   lambda net: base_graph(net, 3)],
                         ids=["one-peer-exponential", "base:2", "base:3"])
def test_the_cyclic_peers_load_back_equal(build, tmp_path):
    net = path_network(8)  # 2^3: the one-peer exponential graph averages exactly too
    schedule = build(net)
    loaded = save_and_load(schedule, tmp_path)
    assert loaded == schedule and loaded.name == schedule.name
    assert loaded.dp_devices == schedule.dp_devices != frozenset()
    product = np.eye(net.n_devices)
    for t in range(loaded.period):  # still exact averaging over one period
        assert np.array_equal(loaded.mixing_at(t, net.nodes), schedule.mixing_at(t, net.nodes))
        product = loaded.mixing_at(t, net.nodes) @ product
    assert np.allclose(product, 1 / net.n_devices)
    assert loaded.validate(net) is loaded


def test_an_epidemic_schedule_is_rebuilt_over_its_network_round_for_round(tmp_path):
    net = path_network(9)
    schedule = epidemic(net, 2, seed=41, window=20)
    loaded = save_and_load(schedule, tmp_path, network=net)
    assert loaded == schedule and loaded.is_generated
    assert (loaded.seed, loaded.window, loaded.name) == (41, 20, "epidemic:2")
    assert loaded.dp_devices == schedule.dp_devices
    assert all(loaded.topology_at(t) == schedule.topology_at(t) for t in range(101))
    # The rounds are the seed's draws, not a fixed list: another seed draws others.
    other = epidemic(net, 2, seed=42, window=20)
    assert [other.topology_at(t) for t in range(10)] != [loaded.topology_at(t) for t in range(10)]


def test_an_epidemic_file_names_its_generator_seed_and_window(tmp_path):
    net = path_network(6)
    data = json.loads(epidemic(net, 1, seed=5).save(tmp_path / "e.json").read_text())
    assert list(data) == ["topokit_schedule", "name", "dp_devices", "generator", "seed",
                          "window"]
    assert data["generator"]["kind"] == "epidemic" and data["generator"]["s"] == 1
    assert data["generator"]["devices"] == 6 and (data["seed"], data["window"]) == (5, 32)


def test_the_rounds_class_lives_in_the_network_model_and_peers_reexports_it():
    assert EpidemicRounds is RoundsOfTheNetworkModule
    assert topokit.load_schedule is load_schedule is topokit.network.load_schedule


# ---------------------------------------------------------------------------------------------
# Same bytes, atomic writes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", [lambda net: weighted_schedule(), one_peer_exponential,
                                   lambda net: epidemic(net, 2, seed=3)],
                         ids=["weighted", "one-peer-exponential", "epidemic"])
def test_the_same_schedule_gives_the_same_bytes(build, tmp_path):
    net = path_network(7)
    first = build(net).save(tmp_path / "a.json").read_bytes()
    second = build(net).save(tmp_path / "b.json").read_bytes()
    again = load_schedule(tmp_path / "a.json", network=net).save(tmp_path / "c.json")
    assert first == second == again.read_bytes()
    assert first.endswith(b"\n")


def test_a_refused_save_leaves_the_old_file_and_no_temporary_file(tmp_path):
    def one_link(t, rng):
        return Topology([(0, 1)])

    path = weighted_schedule().save(tmp_path / "kept.json")
    before = path.read_bytes()
    with pytest.raises(InvalidInputError) as caught:
        TopologySchedule(one_link, seed=1).save(path)
    message = str(caught.value)
    assert "\n" not in message and "one_link" in message and "first_rounds(k)" in message
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json"]


def test_first_rounds_saves_a_function_generated_schedule_as_a_cyclic_one(tmp_path):
    def two_links(t, rng):
        u, v, w = (int(x) for x in rng.choice(5, size=3, replace=False))
        return Topology([(u, v), (v, w)], weights=[0.25, 0.25])

    drawn = TopologySchedule(two_links, seed=9, window=30, name="mine")
    kept = drawn.first_rounds(40)
    loaded = save_and_load(kept, tmp_path)
    assert loaded == kept and loaded.period == 40 and loaded.name == "mine"
    assert all(loaded.topology_at(t) == drawn.topology_at(t) for t in range(40))
    assert loaded.topology_at(40) == drawn.topology_at(0)  # then it repeats


# ---------------------------------------------------------------------------------------------
# Bad files: one line naming the file
# ---------------------------------------------------------------------------------------------


def _disconnected() -> dict:
    return {"topokit_schedule": 1, "name": "apart", "dp_devices": [],
            "topologies": [{"edges": [[0, 1]], "dp_devices": []},
                           {"edges": [[2, 3]], "dp_devices": []}]}


def _generated(**changes) -> dict:
    net = path_network(6)
    data = json.loads(json.dumps(epidemic(net, 1, seed=5)._file_data()))
    data.update(changes)
    return data


BAD_FILES = {
    "not JSON": ("{ not json", "malformed JSON"),
    "a list": ([1, 2], "not a schedule file"),
    "a topology file": ({"edges": [[0, 1]], "dp_devices": []}, "a topology file"),
    "no format key": ({"name": "x", "topologies": []}, "topokit_schedule"),
    "another format": ({"topokit_schedule": "1", "topologies": []}, "must be 1; got '1'"),
    "a newer format": ({"topokit_schedule": 2, "topologies": []}, "newer topokit"),
    "no topologies": ({"topokit_schedule": 1, "topologies": []}, "non-empty list"),
    "neither": ({"topokit_schedule": 1, "name": "x"}, "exactly one"),
    "a bad topology": ({"topokit_schedule": 1, "topologies": [{"edges": [[0]]}]},
                       "topologies[0]"),
    "disconnected": (_disconnected(), "disconnected"),
    "unknown generator": (_generated(generator={"kind": "gossip-of-mine"}),
                          "unknown generator kind 'gossip-of-mine'"),
    "a bad seed": (_generated(seed=-1), "'seed' must be an integer >= 0"),
}


@pytest.mark.parametrize("content, message", BAD_FILES.values(), ids=list(BAD_FILES))
def test_a_bad_file_is_refused_in_one_line_naming_it(content, message, tmp_path):
    path = tmp_path / "bad schedule.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(InputFileError) as caught:
        load_schedule(path, network=path_network(6))
    text = str(caught.value)
    assert "\n" not in text and str(path) in text and message in text, text


def test_a_generated_schedule_needs_its_network(tmp_path):
    path = epidemic(path_network(6), 1, seed=5).save(tmp_path / "e.json")
    with pytest.raises(InputFileError, match=r"e\.json: a generated schedule \(epidemic\) is "
                                             r"rebuilt over .* network=net"):
        load_schedule(path)


def test_a_generated_schedule_is_refused_over_another_network(tmp_path):
    net = path_network(6)
    path = epidemic(net, 1, seed=5).save(tmp_path / "e.json")
    cut = net.delay.copy()
    cut[0, 5] = cut[5, 0] = np.inf  # same devices, one usable link fewer
    for other in (path_network(7), Network(nx.path_graph(6), [1.0] * 6, cut)):
        with pytest.raises(InputFileError, match="made over another network"):
            load_schedule(path, network=other)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(InputFileNotFoundError, match="nowhere.json"):
        load_schedule(tmp_path / "nowhere.json")
