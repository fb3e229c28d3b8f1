"""What partial DP does not protect: exposed stranger pairs against a path search."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest

import topokit
from topokit.design.baselines import dlfdp, ndlf, random_topology
from topokit.design.metrics import exposure


def _exposed_by_search(net, topology) -> tuple[int, int]:
    """Independent count: for each stranger pair, search paths whose senders are all non-DP."""
    graph = nx.Graph(topology.edges)
    graph.add_nodes_from(net.nodes)
    dp = set(topology.dp_devices)
    strangers = exposed = 0
    for owner, observer in itertools.permutations(net.nodes, 2):
        if net.social.has_edge(owner, observer):
            continue
        strangers += 1
        if owner in dp:
            continue  # a DP device adds noise to everything it sends
        senders = graph.subgraph([node for node in net.nodes if node not in dp])
        reached = nx.node_connected_component(senders, owner)
        exposed += any(observer in graph[sender] or observer == sender for sender in reached)
    return strangers, exposed


@pytest.mark.parametrize("name", ["toy", "siot16", "siot32"])
def test_exposure_matches_a_path_search_on_designs_and_baselines(name):
    net = topokit.load_example(name)
    topologies = [ndlf(net), dlfdp(net)] + [random_topology(net, seed=s) for s in range(5)]
    if net.topology is not None:
        topologies.append(net.topology)
    for topology in topologies:
        assert tuple(exposure(net, topology)) == _exposed_by_search(net, topology)


def test_ndlf_exposes_every_stranger_pair_and_dlfdp_none():
    net = topokit.load_example("siot16")
    strangers = net.n_devices * (net.n_devices - 1) - 2 * net.social.number_of_edges()
    assert tuple(exposure(net, ndlf(net))) == (strangers, strangers)
    assert tuple(exposure(net, dlfdp(net))) == (strangers, 0)


def test_metrics_report_the_exposure():
    net = topokit.load_example("toy")
    metrics = topokit.evaluate(net, net.topology)
    assert (metrics.stranger_pairs, metrics.exposed_pairs) == (16, 5)
    assert metrics.to_dict()["exposed_pairs"] == 5
