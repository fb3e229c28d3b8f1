"""Quantities of a topology on a network that every system needs: the links as
index arrays or an adjacency matrix, the devices at the ends of stranger links,
and the local iterate L of eq. (8)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .core import Network, Topology

__all__ = ["adjacency_matrix", "edge_indices", "dp_ends", "local_iterate"]


def adjacency_matrix(net: Network, topology: Topology) -> NDArray[np.float64]:
    """The symmetric 0/1 adjacency matrix of ``topology`` in node order ``list(net.social)``.

    Examples
    --------
    >>> from topokit import load_example
    >>> from topokit.design.baselines import ndlf
    >>> net = load_example("toy")
    >>> int(adjacency_matrix(net, ndlf(net)).sum()) // 2  # the seven social links
    7
    """
    adjacency = np.zeros((net.n_devices, net.n_devices))
    rows, cols = edge_indices(net, topology)
    adjacency[rows, cols] = adjacency[cols, rows] = 1.0
    return adjacency


def dp_ends(net: Network, topology: Topology) -> set:
    """Devices that are ends of a non-social link of ``topology``."""
    return _ends(topology.non_social_edges(net))


def _ends(edges: list[tuple[Any, Any]]) -> set:
    return {node for edge in edges for node in edge}


def edge_indices(net: Network, topology: Topology) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Row and column indices (node order ``net.nodes``) of the links of ``topology``."""
    return net._link_ends(topology)


def _local_iterate(net: Network, rows: NDArray[np.int64], cols: NDArray[np.int64]) -> float:
    if rows.size == 0:
        return float(net.compute_time.max())
    return float(net.link_times[rows, cols].max())


def local_iterate(net: Network, topology: Topology) -> float:
    """L(G_c) = max over links of d_ij + max(r_i, r_j) (eq. 8); max_i r_i without links."""
    return _local_iterate(net, *edge_indices(net, topology))
