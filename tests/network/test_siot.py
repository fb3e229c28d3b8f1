"""Tests of topokit.network.siot (old path topokit.datasets): the Santander SIoT loader,
OOR networks, the generator."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from topokit.errors import (
    DisconnectedGraphError,
    InvalidInputError,
    NetworkFileError,
    NetworkFileNotFoundError,
)
from topokit.network import physical
from topokit.network.examples import data_dir, load_example
from topokit.network.siot import (
    DEFAULT_METRES_PER_UNIT,
    DEFAULT_PUBLIC_RANGE_M,
    OWNER_TYPE_SETS,
    PUBLIC_TYPE_COUNTS,
    PUBLIC_TYPE_LAYOUT,
    SIOT_COLUMNS,
    from_networkx,
    load_siot_devices,
    siot,
    siot_oor_graph,
    siot_oor_network,
    siot_statistics,
    siot_synthetic_devices,
)

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = {"siot16": 16, "siot32": 32, "siot100": 100}
FULL_DATA = Path(os.environ.get("TOPOKIT_SIOT_DATA", "/work/shared/siot/static_devices.csv"))


@pytest.fixture(scope="module")
def extract() -> pd.DataFrame:
    return load_siot_devices()


def _network_key(net) -> tuple:
    return (
        net.nodes,
        sorted(tuple(sorted(edge)) for edge in net.social.edges),
        net.compute_time.tolist(),
        net.delay.tolist(),
        net.positions.tolist(),
    )


# ---------------------------------------------------------------------------------------------
# Loader
# ---------------------------------------------------------------------------------------------

def test_extract_loads_with_the_data_set_columns(extract):
    assert tuple(extract.columns) == SIOT_COLUMNS
    assert 100 <= len(extract) <= 1000
    assert extract["id_device"].is_unique and extract["id_device"].is_monotonic_increasing
    assert set(extract["public"]) == {0, 1}
    assert (extract.loc[extract["public"] == 1, "id_user"] == 0).all()
    assert extract[["x", "y"]].to_numpy().min() >= 0 and extract[["x", "y"]].to_numpy().max() <= 1
    # Private owners: at most 3 static devices, all at the owner's home.
    owners = extract[extract["public"] == 0].groupby("id_user")
    assert owners.size().max() <= 3
    assert (owners[["x", "y"]].nunique().max(axis=1) == 1).all()


def test_extract_is_attributed():
    head = (data_dir() / "siot_extract.csv").read_text(encoding="utf-8").splitlines()[:4]
    text = " ".join(head)
    assert "Marche" in text and "Computer Networks 174 (2020) 107248" in text
    assert "Net4uCA/SIoT-IoT-Dataset" in text


def test_missing_file_is_a_topokit_error(tmp_path):
    with pytest.raises(NetworkFileNotFoundError, match="no such file"):
        load_siot_devices(tmp_path / "nope.csv")
    with pytest.raises(NetworkFileNotFoundError, match="objects_description.csv"):
        load_siot_devices(tmp_path)  # an empty folder


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("id_device,id_user,public,x,y\n1,0,1,0.1,0.2\n", "missing column.*device_type"),
        ("id_device,id_user,public,device_type,device_brand,device_model,x,y\n"
         "1,0,1,14,1,1,abc,0.2\n", "'x' must be numeric"),
        ("id_device,id_user,public,device_type,device_brand,device_model,x,y\n"
         "1,0,1,14,1,1,0.1,0.2\n1,0,1,14,1,1,0.3,0.2\n", "appears more than once"),
        ("id_device,id_user,public,device_type,device_brand,device_model,x,y\n"
         "1,5,1,14,1,1,0.1,0.2\n", "belong to id_user 0"),
        ("", "not a readable CSV"),
    ],
)
def test_bad_files_raise_clear_errors(tmp_path, text, match):
    path = tmp_path / "devices.csv"
    path.write_text(text)
    with pytest.raises(NetworkFileError, match=match):
        load_siot_devices(path)


@pytest.mark.parametrize("style", ["space_no_header", "comma_header"])
def test_original_repository_files_are_joined(tmp_path, extract, style):
    sample = extract.groupby("public").head(5)
    sep = " " if style == "space_no_header" else ","
    header = style == "comma_header"
    sample[["id_device", "id_user", "device_type", "device_brand", "device_model"]].to_csv(
        tmp_path / "objects_description.csv", sep=sep, index=False, header=header)
    for public, name in ((0, "private_static_devices.csv"), (1, "public_static_devices.csv")):
        sample.loc[sample["public"] == public, ["id_device", "x", "y"]].to_csv(
            tmp_path / name, sep=sep, index=False, header=header)
    loaded = load_siot_devices(tmp_path)
    pd.testing.assert_frame_equal(loaded, sample.sort_values("id_device").reset_index(drop=True))


# ---------------------------------------------------------------------------------------------
# Bundled networks
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "size"), BUNDLED.items())
def test_bundled_networks_load_connected_with_their_size(name, size):
    net = load_example(name)
    assert net.n_devices == size
    assert nx.is_connected(net.social)
    assert set(net.compute_time) <= set(physical.DEVICE_COMPUTE_SECONDS.values())
    assert set(net.physical_model["lte"]) <= {"cat-m1", "cat-m2"}


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_links_follow_the_oor_rules(name, extract):
    """Every link joins same-owner devices or public devices in range; every such pair is linked."""
    net = load_example(name)
    rows = extract.set_index("id_device").loc[net.nodes]
    assert np.allclose(net.positions, rows[["x", "y"]].to_numpy() * DEFAULT_METRES_PER_UNIT)
    owner = rows["id_user"].to_numpy()
    public = rows["public"].to_numpy() == 1
    distance = np.linalg.norm(net.positions[:, None] - net.positions[None], axis=-1)
    allowed = ((owner[:, None] == owner[None]) & ~public[:, None] & ~public[None]) | (
        public[:, None] & public[None] & (distance <= DEFAULT_PUBLIC_RANGE_M)
    )
    np.fill_diagonal(allowed, False)
    assert np.array_equal(net.social_adjacency.astype(bool), allowed)
    # Under OOR alone, a connected network of 4+ devices holds public devices only.
    assert public.all()


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_delays_follow_the_physical_model(name):
    net = load_example(name)
    expected = physical.pairwise_delays(net.positions, lte=net.physical_model["lte"])
    assert np.allclose(net.delay, expected)
    pairs = np.triu_indices(net.n_devices, 1)
    wifi = np.mean(net.delay[pairs] < 1.0)
    assert 0 < wifi < 0.5  # some pairs within Wi-Fi range, most not


@pytest.mark.skipif(not FULL_DATA.is_file(), reason="the full Santander file is not available")
def test_regeneration_is_byte_identical(tmp_path):
    script = ROOT / "analyses" / "make_siot_networks.py"
    spec = importlib.util.spec_from_file_location("make_siot", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(load_siot_devices(FULL_DATA), tmp_path)
    for name in module.FILES:
        assert (tmp_path / name).read_bytes() == (data_dir() / name).read_bytes(), name


@pytest.mark.skipif(not FULL_DATA.is_file(), reason="the full Santander file is not available")
def test_generator_constants_match_the_full_file():
    stats = siot_statistics(load_siot_devices(FULL_DATA))
    assert stats["owners_by_size"] == {1: 1695, 2: 1813, 3: 253}
    assert stats["owner_type_sets"] == OWNER_TYPE_SETS
    assert stats["public_type_counts"] == PUBLIC_TYPE_COUNTS
    for device_type, (*_, nn) in PUBLIC_TYPE_LAYOUT.items():
        assert stats["public_nn_median"][device_type] == pytest.approx(nn, rel=1e-3)
    assert stats["public_oor_component_sizes"][0] == 1430


# ---------------------------------------------------------------------------------------------
# siot_oor_network / siot_oor_graph
# ---------------------------------------------------------------------------------------------

def test_same_seed_same_network_different_seed_different(extract):
    a = siot_oor_network(extract, 16, seed=3)
    b = siot_oor_network(extract, 16, seed=3)
    c = siot_oor_network(extract, 16, seed=4)
    assert _network_key(a) == _network_key(b)
    assert _network_key(a) != _network_key(c)
    assert nx.is_connected(a.social) and a.n_devices == 16


def test_generator_seed_is_accepted(extract):
    net = siot_oor_network(extract, 8, seed=np.random.default_rng(0))
    assert net.n_devices == 8 and nx.is_connected(net.social)


def test_oor_graph_rules_on_the_extract(extract):
    graph = siot_oor_graph(extract, colocation_range_m=50.0)
    xy = {
        n: np.array([d["x"], d["y"]]) * DEFAULT_METRES_PER_UNIT
        for n, d in graph.nodes(data=True)
    }
    kinds = set()
    for u, v, relation in graph.edges(data="relation"):
        a, b = graph.nodes[u], graph.nodes[v]
        distance = np.linalg.norm(xy[u] - xy[v])
        kinds.add(relation)
        if relation == "oor":
            same_owner = a["id_user"] == b["id_user"] != 0
            in_range = a["public"] == b["public"] == 1 and distance <= DEFAULT_PUBLIC_RANGE_M
            assert same_owner or in_range
        else:
            assert a["id_user"] != b["id_user"] and distance <= 50.0
    assert kinds == {"oor", "clor"}
    # Every private owner of the extract is a clique.
    for _, group in extract[extract["public"] == 0].groupby("id_user"):
        ids = group["id_device"].tolist()
        assert all(graph.has_edge(u, v) for i, u in enumerate(ids) for v in ids[i + 1:])


def test_colocation_lets_private_owners_join(extract):
    net = siot_oor_network(extract, 40, seed=1, colocation_range_m=300.0)
    private = extract.set_index("id_device").loc[net.nodes, "public"].eq(0)
    assert nx.is_connected(net.social) and private.any()


def test_class_and_lte_rules(extract):
    net = siot_oor_network(extract, 30, seed=0, class_probabilities={"rpi4": 1.0},
                           cat_m2_probability=1.0)
    assert (net.compute_time == 114.0).all()
    assert net.physical_model["lte"] == ["cat-m2"] * 30


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_devices": 0}, "n_devices must be an integer >= 1"),
        ({"n_devices": 2.5}, "n_devices must be an integer >= 1"),
        ({"n_devices": True}, "n_devices must be an integer >= 1"),
        ({"n_devices": 400}, "no connected component holds 400 devices; the largest holds"),
        ({"n_devices": 10_000}, "exceeds"),
        ({"n_devices": 8, "metres_per_unit": -1.0}, "metres_per_unit must be > 0"),
        ({"n_devices": 8, "public_range_m": 0.0}, "public_range_m must be > 0"),
        ({"n_devices": 8, "class_probabilities": {"rpi5": 1.0}}, "unknown device class 'rpi5'"),
        ({"n_devices": 8, "class_probabilities": {"rpi2": 0.5}}, "sum to 1"),
        ({"n_devices": 8, "cat_m2_probability": 1.5}, r"\[0, 1\]"),
    ],
)
def test_bad_arguments_raise(extract, kwargs, match):
    with pytest.raises(InvalidInputError, match=match):
        siot_oor_network(extract, **kwargs)


def test_devices_must_be_a_table():
    with pytest.raises(InvalidInputError, match="pandas.DataFrame"):
        siot_oor_network([[1, 2]], 4)
    with pytest.raises(NetworkFileError, match="missing column"):
        siot_oor_network(pd.DataFrame({"id_device": [1]}), 1)


# ---------------------------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def city() -> pd.DataFrame:
    return siot_synthetic_devices(4.0, seed=0)


def test_synthetic_city_matches_the_owner_statistics(city):
    stats = siot_statistics(city)
    total = sum(OWNER_TYPE_SETS.values())
    assert stats["n_owners"] == round(total * 4.0)
    measured = {1: 1695, 2: 1813, 3: 253}
    for size, count in measured.items():
        share = stats["owners_by_size"][size] / stats["n_owners"]
        assert share == pytest.approx(count / total, abs=0.015)
    for type_set, count in OWNER_TYPE_SETS.items():
        assert stats["owner_type_sets"][type_set] / stats["n_owners"] == pytest.approx(
            count / total, abs=0.015)
    assert stats["colocated_owners"] == stats["n_owners"]  # an owner's devices share the home
    assert tuple(city.columns) == SIOT_COLUMNS


def test_synthetic_city_matches_the_public_statistics(city):
    stats = siot_statistics(city)
    assert stats["public_type_counts"] == {t: round(c * 4.0) for t, c in PUBLIC_TYPE_COUNTS.items()}
    for device_type, (*_, nn) in PUBLIC_TYPE_LAYOUT.items():
        assert 0.5 * nn <= stats["public_nn_median"][device_type] <= 2.0 * nn, device_type
    # The real file: 1,430 of 1,466 public devices (97.5%) in one OOR component.
    for seed in range(3):
        sizes = siot_statistics(siot_synthetic_devices(seed=seed))["public_oor_component_sizes"]
        assert sizes[0] / 1466 >= 0.85


@pytest.mark.parametrize("size", [16, 64, 300])
def test_siot_generator_is_connected_and_reproducible(size):
    a = siot(size, seed=5)
    assert a.n_devices == size and nx.is_connected(a.social)
    assert _network_key(a) == _network_key(siot(size, seed=5))
    assert _network_key(a) != _network_key(siot(size, seed=6))


def test_siot_generator_with_colocation_has_owners():
    net = siot(64, seed=2, colocation_range_m=200.0)
    assert nx.is_connected(net.social) and net.n_devices == 64


# ---------------------------------------------------------------------------------------------
# from_networkx
# ---------------------------------------------------------------------------------------------

def test_karate_club_as_a_network():
    graph = nx.karate_club_graph()
    net = from_networkx(graph, seed=0, area_m=500.0)
    assert net.nodes == list(graph)
    assert set(map(frozenset, net.social.edges)) == set(map(frozenset, graph.edges))
    assert net.positions.min() >= 0 and net.positions.max() <= 500.0
    assert set(net.compute_time) <= {770.0, 312.0, 114.0}
    assert _network_key(net) == _network_key(from_networkx(graph, seed=0, area_m=500.0))
    assert _network_key(net) != _network_key(from_networkx(graph, seed=1, area_m=500.0))


@pytest.mark.parametrize(
    ("graph", "error", "match"),
    [
        (nx.DiGraph([(0, 1)]), InvalidInputError, "undirected simple graph"),
        (nx.MultiGraph([(0, 1)]), InvalidInputError, "undirected simple graph"),
        (nx.Graph([(0, 0), (0, 1)]), InvalidInputError, "self-loop"),
        (nx.Graph([(0, 1), (2, 3)]), DisconnectedGraphError, "must be connected"),
        (nx.Graph(), InvalidInputError, "no nodes"),
        ([(0, 1)], InvalidInputError, "networkx.Graph"),
    ],
)
def test_from_networkx_rejects_bad_graphs(graph, error, match):
    with pytest.raises(error, match=match):
        from_networkx(graph, seed=0)


def test_from_networkx_can_accept_a_disconnected_graph():
    net = from_networkx(nx.Graph([(0, 1), (2, 3)]), seed=0, require_connected=False)
    assert net.n_devices == 4
