"""The network model of DeepPrivacy (Ching et al., Sec. IV), shared by every system.

=======================  ===============================================================
module                   what it holds
=======================  ===============================================================
:mod:`.core`             :class:`Network` (social graph, compute and link times) and
                         :class:`Topology` (links, DP devices, mixing weights), the rules
:mod:`.formats`          their files: node-link JSON and GraphML networks, topology and
                         design JSON, per-device noise levels
:mod:`.quantities`       what every system needs of a topology: adjacency, link indices,
                         DP ends, the local iterate L (eq. 8)
:mod:`.schedule`         :class:`TopologySchedule`: a time-varying topology, one topology
                         (mixing matrix) per training round, cyclic or generated; its
                         files (:meth:`TopologySchedule.save`, :func:`load_schedule`)
:mod:`.rounds`           round generators a schedule file can rebuild (epidemic learning)
:mod:`.physical`         link delays and compute times (eq. 10-12)
:mod:`.siot`             the Santander Social-IoT data and its generator
:mod:`.examples`         bundled example networks
=======================  ===============================================================

Everything public is also importable from :mod:`topokit` itself.
"""

from __future__ import annotations

from .core import (
    NETWORK_SUFFIXES,
    Network,
    Topology,
    canonical_pair,
    class_count_matrix,
    network_suffix,
    node_sort_key,
)
from .examples import list_examples, load_example
from .formats import (
    graph_to_network,
    load_network,
    load_noise_multipliers,
    load_topology,
    network_to_graph,
    save_network,
    save_topology,
)
from .quantities import adjacency_matrix, dp_ends, edge_indices, local_iterate
from .schedule import TopologySchedule, load_schedule

__all__ = [
    "Network",
    "Topology",
    "TopologySchedule",
    "canonical_pair",
    "node_sort_key",
    "class_count_matrix",
    "NETWORK_SUFFIXES",
    "network_suffix",
    "load_network",
    "save_network",
    "load_topology",
    "save_topology",
    "load_schedule",
    "load_noise_multipliers",
    "network_to_graph",
    "graph_to_network",
    "load_example",
    "list_examples",
    "adjacency_matrix",
    "edge_indices",
    "dp_ends",
    "local_iterate",
]
