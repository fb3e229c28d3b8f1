"""Marfoq et al.'s Internet underlays as topokit networks.

Marfoq, Xu, Neglia and Vidal, "Throughput-Optimal Topology Design for
Cross-Silo Federated Learning", NeurIPS 2020 [1]_, evaluate overlays on five
real underlays (Gaia, AWS North America, Géant, Exodus, Ebone), published as
GML files with a ``distance`` on every link in their repository
``omarfoq/communication-in-cross-silo-fl`` (Apache-2.0), folder
``graph_utils/data``.  topokit bundles the five as example networks
(``load_example("gaia")`` ...; see ``datasets/README.md``);
:func:`load_underlay` converts any such file with the same model.

The time model is theirs (``graph_utils/utils/utils.py``,
``get_connectivity_graph``, and ``graph_utils/generate_networks.py``), in
seconds:

- Every pair of silos communicates over the underlay's shortest path by
  ``distance`` (their connectivity graph is complete).  Among equally short
  paths topokit takes one with the fewest hops (networkx's Dijkstra with a
  1 mm tie-break per hop; their code took whichever path networkx returned).
  A pair joined by an underlay link is always routed over that link in the
  five files (the link is a shortest path).
- Latency of a path of total distance D: ``0.0085 ms * D + 4 ms``
  (:data:`LATENCY_S_PER_DISTANCE`, :data:`LATENCY_OFFSET_S`).  Their README
  for the GML files says ``distance`` is the latency of the original Rocketfuel
  files for Exodus and Ebone; their code applies the same formula to every
  file, and so does topokit.
- The path's available bandwidth is the core link capacity (1 Gb/s, their
  ``--default_capacity``) divided by its number of hops, so sending a model
  of M bits takes ``M * hops / C``.
- d_ij = latency + transfer time.  Their access-link term (a silo's upload
  and download capacity times its overlay degree) depends on the overlay, which
  topokit's d_ij cannot; it is left out, as with their default access
  capacity of 1e32 b/s.  (Their published runs use 10 Gb/s access links, whose
  term binds only for a silo with more than 10 overlay neighbours per hop.)
- The model is their iNaturalist ResNet: M = 44,961,717 bits
  (:data:`MARFOQ_MODEL_SIZE_BITS`) and r_i = 25.4 ms per local step, one
  local step per round (:data:`MARFOQ_COMPUTATION_TIME_S`), the same at every
  silo.

Social graph: cross-silo networks have no social layer, and Marfoq's overlays
may join any two silos; the networks' social graph is therefore the
**complete graph** by default (every silo trusts every other, so DeepPrivacy's
DP rule never applies and every overlay is valid without DP devices).
``social="underlay"`` keeps only the underlay's links as social links.

References
----------
.. [1] O. Marfoq, C. Xu, G. Neglia, R. Vidal, "Throughput-Optimal Topology
   Design for Cross-Silo Federated Learning", NeurIPS 2020,
   arXiv:2010.12229; code and data:
   https://github.com/omarfoq/communication-in-cross-silo-fl (Apache-2.0).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Hashable
from pathlib import Path

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from .._checks import check_choice, check_int_at_least, check_nonnegative, check_positive
from ..errors import InputFileError, InputFileNotFoundError, InvalidInputError
from .core import Network

__all__ = [
    "load_underlay",
    "underlay_network",
    "underlay_paths",
    "UNDERLAYS",
    "MARFOQ_MODEL_SIZE_BITS",
    "MARFOQ_COMPUTATION_TIME_S",
    "MARFOQ_CORE_CAPACITY_BPS",
    "LATENCY_S_PER_DISTANCE",
    "LATENCY_OFFSET_S",
]

#: The five underlays of Marfoq et al. (Table 3): example name -> (their GML file, silos).
UNDERLAYS: dict[str, tuple[str, int]] = {
    "gaia": ("gaia.gml", 11),
    "aws_na": ("amazon_us.gml", 22),
    "geant": ("geantdistance.gml", 40),
    "exodus": ("exodus.gml", 79),
    "ebone": ("ebone.gml", 87),
}
#: Bits of their iNaturalist model (``MODEL_SIZE_DICT["inaturalist"]``).
MARFOQ_MODEL_SIZE_BITS = 44_961_717
#: Seconds of one local step of their iNaturalist model (``COMPUTATION_TIME_DICT``, 25.4 ms).
MARFOQ_COMPUTATION_TIME_S = 0.0254
#: Core link capacity in bit/s (their ``--default_capacity``).
MARFOQ_CORE_CAPACITY_BPS = 1e9
#: Seconds of latency per unit of ``distance`` (their ``0.0085 * distance`` ms).
LATENCY_S_PER_DISTANCE = 0.0085e-3
#: Seconds of latency of every path (their ``+ 4`` ms).
LATENCY_OFFSET_S = 0.004

# Added per hop when choosing among equally short paths (distance units: 1 mm when km).
_HOP_TIE_BREAK = 1e-6


def underlay_paths(underlay: nx.Graph) -> tuple[list[Hashable], NDArray[np.float64],
                                                NDArray[np.int64]]:
    """Shortest-path distance and hop count of every pair of an underlay.

    Parameters
    ----------
    underlay : networkx.Graph
        Connected, undirected, every link with a ``distance`` >= 0.

    Returns
    -------
    nodes : list
        The node order, ``list(underlay)``.
    distance : ndarray of shape (n, n)
        Total ``distance`` of the shortest path (0 on the diagonal).
    hops : ndarray of shape (n, n)
        Links on that path, the fewest among equally short paths.

    Examples
    --------
    >>> g = nx.Graph([(0, 1, {"distance": 1.0}), (1, 2, {"distance": 1.0}),
    ...               (0, 2, {"distance": 2.0})])
    >>> nodes, distance, hops = underlay_paths(g)
    >>> distance[0, 2], int(hops[0, 2])   # the direct link wins the tie
    (np.float64(2.0), 1)
    """
    _check_underlay(underlay)
    nodes = list(underlay)
    index = {node: i for i, node in enumerate(nodes)}
    n = len(nodes)
    distance = np.zeros((n, n))
    hops = np.zeros((n, n), dtype=np.int64)

    def tie_broken(u: Hashable, v: Hashable, data: dict) -> float:
        return float(data["distance"]) + _HOP_TIE_BREAK

    for source, paths in nx.all_pairs_dijkstra_path(underlay, weight=tie_broken):
        i = index[source]
        for target, path in paths.items():
            j = index[target]
            hops[i, j] = len(path) - 1
            distance[i, j] = math.fsum(float(underlay.edges[a, b]["distance"])
                                       for a, b in itertools.pairwise(path))
    # Each pair as routed from its first node (both directions agree up to round-off).
    distance, hops = np.triu(distance), np.triu(hops)
    return nodes, distance + distance.T, hops + hops.T


def underlay_network(
    underlay: nx.Graph,
    *,
    model_size_bits: float = MARFOQ_MODEL_SIZE_BITS,
    computation_time: float = MARFOQ_COMPUTATION_TIME_S,
    local_steps: int = 1,
    core_capacity_bps: float = MARFOQ_CORE_CAPACITY_BPS,
    social: str = "complete",
    name: str | None = None,
) -> Network:
    """A topokit :class:`~topokit.network.Network` from an underlay, with Marfoq et al.'s times.

    d_ij = ``LATENCY_S_PER_DISTANCE * D_ij + LATENCY_OFFSET_S +
    model_size_bits * hops_ij / core_capacity_bps`` over the shortest path
    (:func:`underlay_paths`), finite for every pair; r_i =
    ``local_steps * computation_time`` at every silo (see the module docstring).

    Parameters
    ----------
    underlay : networkx.Graph
        Connected, every link with a ``distance`` >= 0 (km for the Topology Zoo
        files).
    model_size_bits, computation_time, local_steps, core_capacity_bps
        Marfoq's iNaturalist settings by default.
    social : {"complete", "underlay"}
        The social graph: every pair (default; cross-silo, no DP rule) or the
        underlay's own links.
    name : str, optional

    Examples
    --------
    >>> g = nx.Graph([("a", "b", {"distance": 1000.0}), ("b", "c", {"distance": 500.0})])
    >>> net = underlay_network(g)
    >>> round(float(net.delay[0, 2]), 6)   # 8.5e-6 * 1500 + 0.004 + 2 * 0.044961717
    0.106673
    >>> net.social.number_of_edges(), float(net.compute_time[0])
    (3, 0.0254)
    """
    check_positive(model_size_bits, "model_size_bits")
    check_nonnegative(computation_time, "computation_time")
    local_steps = check_int_at_least(local_steps, "local_steps", 1)
    check_positive(core_capacity_bps, "core_capacity_bps")
    check_choice(social, "social", ("complete", "underlay"))
    nodes, distance, hops = underlay_paths(underlay)
    delay = (LATENCY_S_PER_DISTANCE * distance + LATENCY_OFFSET_S
             + float(model_size_bits) * hops / float(core_capacity_bps))
    np.fill_diagonal(delay, 0.0)
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    if social == "complete":
        graph.add_edges_from((u, v) for i, u in enumerate(nodes) for v in nodes[i + 1:])
    else:
        graph.add_edges_from(underlay.edges)
    r = float(computation_time) * local_steps
    return Network(graph, np.full(len(nodes), r), delay, name=name)


def load_underlay(path: str | os.PathLike, **settings) -> Network:
    """Read a Marfoq-style underlay GML file (links with ``distance``) as a topokit network.

    Node ids are the GML labels.  ``settings`` go to :func:`underlay_network`;
    ``name`` defaults to the file's stem.

    Raises
    ------
    InputFileNotFoundError
        No such file.
    InputFileError
        Not GML, a link without a ``distance``, a negative or non-finite
        distance, a directed or multi-link underlay, or a disconnected one.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> text = ('graph [ node [ id 0 label "Paris" ] node [ id 1 label "Nice" ] '
    ...         'edge [ source 0 target 1 distance 686.0 ] ]')
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.gml"
    >>> _ = path.write_text(text)
    >>> net = load_underlay(path)
    >>> net.nodes, round(float(net.delay[0, 1]) * 1e3, 3)   # ms: 0.0085*686 + 4 + 44.96
    (['Paris', 'Nice'], 54.793)
    """
    path = Path(path)
    if not path.is_file():
        raise InputFileNotFoundError(f"no underlay file {str(path)!r}")
    try:
        underlay = nx.read_gml(path)
    except (nx.NetworkXError, ValueError, UnicodeDecodeError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputFileError(f"{path}: not a readable GML underlay ({first})") from None
    settings.setdefault("name", path.stem)
    try:
        return underlay_network(underlay, **settings)
    except InputFileError as error:
        raise InputFileError(f"{path}: {error}") from None


def _check_underlay(underlay: nx.Graph) -> None:
    if not isinstance(underlay, nx.Graph):
        raise InvalidInputError("the underlay must be a networkx.Graph")
    if underlay.is_directed() or underlay.is_multigraph():
        raise InputFileError("the underlay must be undirected with one link per pair")
    if underlay.number_of_nodes() < 2:
        raise InputFileError("the underlay needs at least 2 nodes")
    for u, v, data in underlay.edges(data=True):
        if u == v:
            raise InputFileError(f"the underlay has a self-loop on {u!r}")
        if "distance" not in data:
            raise InputFileError(f"underlay link {u!r}-{v!r} has no 'distance' (its latency)")
        value = data["distance"]
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value < 0):
            raise InputFileError(f"underlay link {u!r}-{v!r} has distance {value!r}; "
                                 "need a finite number >= 0")
    if not nx.is_connected(underlay):
        parts = nx.number_connected_components(underlay)
        raise InputFileError(f"the underlay is disconnected ({parts} components)")
