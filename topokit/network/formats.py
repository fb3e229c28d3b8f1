"""The file formats of networks and topologies.

- :func:`load_network` / :func:`save_network`: networkx node-link JSON (and
  GraphML), either gzip-compressed when the name ends in ``.gz``, with node
  attributes ``compute_time`` and optional ``x``, ``y`` (metres) and
  ``class_counts``; the delays are the graph attribute ``delay`` (an n x n
  matrix, or a default and the pairs that differ) or, without it, what the
  positions and the graph attribute ``physical_model`` give; an edge record
  holds a social link.
- :func:`load_topology` / :func:`save_topology`: a topology's links, DP devices
  and optional mixing weights as JSON (what ``topokit design -o`` writes).
- :func:`load_noise_multipliers`: the per-device noise levels a design file records.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import json
import os
import xml.etree.ElementTree as ElementTree
import zlib
from collections.abc import Hashable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, NamedTuple

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from .._checks import brief
from .._io import atomic_path, atomic_write_text, jsonable
from .._version import __version__
from ..errors import InputFileError, InputFileNotFoundError, InvalidInputError
from . import physical
from .core import (
    _COUNT_EXAMPLE,
    FORMAT_VERSION,
    NETWORK_SUFFIXES,
    Network,
    Topology,
    _hashable,
    _node_id,
    _plain_node,
    class_count_matrix,
    network_suffix,
)

__all__ = ["load_network", "save_network", "load_topology", "save_topology",
           "load_noise_multipliers", "network_to_graph", "graph_to_network",
           "network_from_node_link", "delay_form", "DelayForm"]


def _delay_to_json(delay: NDArray[np.float64]) -> list[list[float | None]]:
    # JSON has no inf: null marks a pair the physical network cannot connect.
    return jsonable(delay)


def _number(value: Any, what: str) -> float:
    """``value`` as a float; a bool, null or text is refused, naming ``what``."""
    if isinstance(value, bool) or value is None:
        raise InputFileError(f"{what} must be a number; got {brief(value)}")
    try:
        return float(value)
    except OverflowError:  # an integer beyond the float range
        raise InputFileError(f"{what} is too large for a float (above 1.8e308)") from None
    except (TypeError, ValueError):
        raise InputFileError(f"{what} must be a number; got {brief(value)}") from None


def _finite(value: float, what: str, unit: str) -> float:
    """``value`` if finite; JSON has no infinity, so an inf was a number too large for a float."""
    if not np.isfinite(value):
        raise InputFileError(
            f"{what} is {value}: too large or not a number; give a finite number of {unit}"
        )
    return value


def _delay_from_json(rows: Any, n: int) -> NDArray[np.float64]:
    shape_ok = isinstance(rows, list) and len(rows) == n and all(
        isinstance(row, list) and len(row) == n for row in rows
    )
    if not shape_ok:
        raise InputFileError(
            f"graph attribute 'delay' must be an {n} x {n} matrix (a list of {n} lists) of "
            f"seconds, null for no link; got {brief(rows)}"
        )
    flat = [x for row in rows for x in row]
    # null is the one spelling of "no link"; anything else must be a finite number of
    # seconds (JSON has no infinity: an inf here was a number too large for a float).
    values = [np.inf if x is None else x if type(x) in (int, float)
              else _number(x, f"delay[{k // n}][{k % n}]") for k, x in enumerate(flat)]
    try:
        matrix = np.array(values, dtype=np.float64).reshape(n, n)
    except OverflowError:
        matrix = np.array([_number(x, f"delay[{k // n}][{k % n}]") for k, x in enumerate(values)])
    overflowed = ~np.isfinite(matrix) & np.array([x is not None for x in flat]).reshape(n, n)
    if overflowed.any():
        i, j = np.argwhere(overflowed)[0]
        _finite(matrix[i, j], f"delay[{i}][{j}]", "seconds (null for a pair that cannot connect)")
    return matrix


#: The keys of the sparse form of the graph attribute ``delay``.
_SPARSE_KEYS = ("default", "pairs")
_SPARSE_EXAMPLE = '{"default": 37.6, "pairs": [[0, 1, 0.44], [2, 5, null]]}'


def _delay_record(record: Any, n: int) -> NDArray[np.float64]:
    """The graph attribute ``delay``: an n x n matrix, or (an object) a default and the
    pairs that differ from it."""
    if isinstance(record, Mapping):
        return _delay_from_pairs(record, n)
    return _delay_from_json(record, n)


def _delay_from_pairs(record: Mapping, n: int) -> NDArray[np.float64]:
    """The n x n delays of the sparse form ``{"default": d, "pairs": [[i, j, d_ij], ...]}``.

    ``i`` and ``j`` are positions in the file's node list; every pair not
    listed has the default delay; ``null`` is a pair that cannot connect.  A
    pair is listed once (either way round): d_ij is the time of the link i-j.

    Examples
    --------
    >>> _delay_from_pairs({"default": 2.0, "pairs": [[0, 2, None]]}, 3)
    array([[ 0.,  2., inf],
           [ 2.,  0.,  2.],
           [inf,  2.,  0.]])
    """
    keys = [key for key in record if key not in _SPARSE_KEYS] or \
        [key for key in _SPARSE_KEYS if key not in record]
    if keys:
        raise InputFileError(
            f"graph attribute 'delay' as an object needs the keys 'default' (seconds, null for "
            f"no link) and 'pairs' (the pairs [i, j, seconds] that differ), such as "
            f"{_SPARSE_EXAMPLE}; got the key set {sorted(map(str, record))}"
        )
    default = _delay_value(record["default"], "delay.default")
    pairs = record["pairs"]
    if not isinstance(pairs, list):
        raise InputFileError(f"delay.pairs must be a list of [i, j, seconds]; got {brief(pairs)}")
    listed = [_listed_pair(pair, k, n) for k, pair in enumerate(pairs)]
    first, second, values = (np.array([entry[m] for entry in listed],
                                      dtype=np.int64 if m < 2 else np.float64)
                             for m in range(3))
    _check_listed_once(first, second, n)
    matrix = np.full((n, n), default)
    matrix[first, second] = values
    matrix[second, first] = values
    np.fill_diagonal(matrix, 0.0)
    return matrix


def _check_listed_once(first: NDArray[np.int64], second: NDArray[np.int64], n: int) -> None:
    """Refuse a pair listed twice (either way round): which delay would it have?"""
    key = np.minimum(first, second) * n + np.maximum(first, second)
    order = np.argsort(key, kind="stable")
    again = order[1:][key[order][1:] == key[order][:-1]]
    if again.size:
        k = int(again.min())
        raise InputFileError(
            f"delay.pairs[{k}]: the pair {first[k]}-{second[k]} is listed twice; list each "
            "pair once (d_ij is the time of the link i-j both ways)"
        )


def _listed_pair(pair: Any, k: int, n: int) -> tuple[int, int, float]:
    """The two devices and the delay of ``delay.pairs[k]``, checked."""
    if not (isinstance(pair, list) and len(pair) == 3):
        raise InputFileError(f"delay.pairs[{k}] must be [i, j, seconds] (seconds null for no "
                             f"link); got {brief(pair)}")
    i, j, value = pair
    for end in (i, j):
        if type(end) is not int or not 0 <= end < n:
            raise InputFileError(
                f"delay.pairs[{k}]: {brief(end)} is not a device: give the position of a node "
                f"in 'nodes', a whole number from 0 to {n - 1}"
            )
    if i == j:
        raise InputFileError(f"delay.pairs[{k}] joins device {i} to itself; its delay is 0")
    return i, j, _delay_value(value, f"delay.pairs[{k}]")


def _delay_value(value: Any, what: str) -> float:
    """A delay of the file: a finite number of seconds, or null (inf: no link)."""
    if value is None:
        return np.inf
    number = value if type(value) is float else _number(value, what)
    # JSON has no infinity: an inf here was a number too large for a float.
    return _finite(number, what, "seconds (null for a pair that cannot connect)")


def network_to_graph(net: Network) -> nx.Graph:
    """The social graph annotated with everything :func:`save_network` stores, the delays
    as the n x n matrix (the form of the files of small networks).

    Node ids and attributes are plain Python values (a numpy integer id
    becomes the ``int`` it equals), so networkx's node-link data of the graph
    is JSON.

    Examples
    --------
    >>> import json
    >>> social = nx.relabel_nodes(nx.path_graph(2), {0: np.int64(0), 1: np.int64(1)})
    >>> graph = network_to_graph(Network(social, [1.0, 2.0], [[0, 1], [1, 0]]))
    >>> [type(node).__name__ for node in graph]
    ['int', 'int']
    >>> _ = json.dumps(nx.node_link_data(graph, edges="edges"))
    """
    return _annotated_graph(net, _delay_to_json(net.delay))


def _annotated_graph(net: Network, delay: Any, *, links: bool = True) -> nx.Graph:
    """:func:`network_to_graph` with ``delay`` as the graph's delay attribute (None: none,
    the positions and physical model give the delays); without the social links for
    ``links=False``."""
    graph = nx.Graph()
    graph.graph.update({"topokit_format": FORMAT_VERSION, "name": net.name})
    if delay is not None:
        graph.graph["delay"] = delay
    if net.physical_model is not None:
        graph.graph["physical_model"] = _model_record(net.physical_model)
    if net.topology is not None:
        graph.graph["topology"] = net.topology.to_dict()
    for i, node in enumerate(net.nodes):
        attrs = {"compute_time": float(net.compute_time[i])}
        if net.positions is not None:
            attrs["x"], attrs["y"] = (float(c) for c in net.positions[i])
        if net.class_counts is not None:
            # Whole numbers (checked when the network was built): written as JSON integers.
            attrs["class_counts"] = [int(c) for c in net.class_counts[i]]
        graph.add_node(_plain_node(node), **attrs)
    if links:
        graph.add_edges_from((_plain_node(u), _plain_node(v)) for u, v in net.social.edges)
    return graph


def _model_record(model: Mapping[str, Any]) -> dict[str, Any]:
    """The graph attribute ``physical_model`` of a network's physical model."""
    return {key: _plain_value(value) for key, value in model.items()}


def _plain_value(value: Any) -> Any:
    """``value`` with numpy scalars made Python scalars (in lists too); ``inf`` kept."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain_value(item) for item in value]
    return value


def _positions(graph: nx.Graph, nodes: list) -> list[list[float]] | None:
    """Node attributes ``x``, ``y`` in metres: on every node, or on none (then None)."""
    if not any("x" in graph.nodes[v] or "y" in graph.nodes[v] for v in nodes):
        return None
    positions = []
    for node in nodes:
        attributes = graph.nodes[node]
        missing = [key for key in ("x", "y") if key not in attributes]
        if missing:
            raise InputFileError(
                f"node {node!r} has no {missing[0]!r} while other nodes have positions; give "
                "'x' and 'y' (metres) for every node or for none"
            )
        positions.append([
            _finite(_number(attributes[key], f"node {node!r}: {key!r}"), f"node {node!r}: {key!r}",
                    "metres")
            for key in ("x", "y")
        ])
    return positions


def _class_counts(graph: nx.Graph, nodes: list) -> NDArray[np.float64] | None:
    """Node attribute ``class_counts``: on every node, or on none (then None).

    The values are checked here, so that a file's error is an
    :class:`InputFileError` naming the node.
    """
    present = [node for node in nodes if "class_counts" in graph.nodes[node]]
    if not present:
        return None
    if len(present) < len(nodes):
        missing = next(node for node in nodes if "class_counts" not in graph.nodes[node])
        raise InputFileError(
            f"node {missing!r} has no 'class_counts' while other nodes have them; give "
            f"'class_counts' ({_COUNT_EXAMPLE}) for every node or for none"
        )
    rows = [graph.nodes[node]["class_counts"] for node in nodes]
    try:
        return class_count_matrix(rows, len(nodes), nodes=nodes, integral=True)
    except InvalidInputError as exc:
        raise InputFileError(str(exc)) from None


_PHYSICAL_KEYS = ("model_size_mb", "lte", "wifi_range_m", "max_range_m")


def _physical_model(model: Any) -> dict[str, Any]:
    """The graph attribute ``physical_model``: a mapping of :data:`_PHYSICAL_KEYS`."""
    if model is None:
        return {}
    if not isinstance(model, Mapping):
        raise InputFileError(
            f"graph attribute 'physical_model' must be an object with keys "
            f"{', '.join(_PHYSICAL_KEYS)}; got {brief(model)}"
        )
    unknown = [key for key in model if key not in _PHYSICAL_KEYS]
    if unknown:
        raise InputFileError(
            f"physical_model has an unknown key {unknown[0]!r}; known keys: "
            f"{', '.join(_PHYSICAL_KEYS)}"
        )
    return dict(model)


def _model_settings(model: Any) -> dict[str, Any]:
    """The keyword arguments of :func:`physical.pairwise_delays` that the graph attribute
    ``physical_model`` gives (its defaults for absent keys)."""
    settings = _physical_model(model)
    max_range = settings.get("max_range_m")
    return {
        "model_size_mb": _number(settings.get("model_size_mb", physical.REFERENCE_MODEL_MB),
                                 "physical_model.model_size_mb"),
        "lte": settings.get("lte", "cat-m1"),
        "wifi_range_m": _number(settings.get("wifi_range_m", physical.WIFI_RANGE_M),
                                "physical_model.wifi_range_m"),
        "max_range_m": None if max_range is None else _number(max_range,
                                                              "physical_model.max_range_m"),
    }


def _delays_from_positions(positions: list[list[float]], model: Any) -> physical._ModelDelays:
    """The delays of the paper's physical model at ``positions`` (no delays in the file),
    settings checked now, computed when the network's delays are first read."""
    try:
        return physical._ModelDelays(np.array(positions), **_model_settings(model))
    except InputFileError:
        raise
    except InvalidInputError as exc:
        raise InputFileError(f"physical_model: {exc}") from None


def _social_graph(graph: nx.Graph, nodes: list) -> nx.Graph:
    social = nx.Graph()
    social.add_nodes_from(nodes)
    social.add_edges_from(graph.edges)
    return social


def _network_of(graph: nx.Graph) -> Network:
    """The Network a graph annotated by :func:`network_to_graph` describes."""
    _check_format_version(graph.graph.get("topokit_format"))
    nodes = list(graph)
    if not nodes:
        raise InputFileError("the social graph has no nodes")
    missing = [node for node in nodes if "compute_time" not in graph.nodes[node]]
    if missing:
        raise InputFileError(
            f"node {missing[0]!r} has no 'compute_time' attribute "
            "(seconds per training round, or a device class such as 'rpi3')"
        )
    compute = {node: graph.nodes[node]["compute_time"] for node in nodes}
    positions = _positions(graph, nodes)
    class_counts = _class_counts(graph, nodes)
    meta = graph.graph
    topology = Topology.from_dict(meta["topology"]) if meta.get("topology") else None
    model = meta.get("physical_model")
    if meta.get("delay") is not None:
        delay = _delay_record(meta["delay"], len(nodes))
        _physical_model(model)
    elif positions is not None:
        delay = _delays_from_positions(positions, model)
    else:
        raise InputFileError(
            "no delays: give node attributes 'x', 'y' (metres) or a graph attribute "
            "'delay' (n x n seconds)"
        )
    return Network(
        _social_graph(graph, nodes), compute, delay, positions=positions, topology=topology,
        name=meta.get("name"), physical_model=model, class_counts=class_counts,
    )


def _check_format_version(version: Any) -> None:
    """The graph attribute ``topokit_format``: absent, or a format this topokit reads.

    A file of a later format may store what this version would misread or drop.
    """
    if version is None:
        return
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InputFileError(
            f"graph attribute 'topokit_format' must be a whole number >= 1 (the network "
            f"format version; this topokit writes {FORMAT_VERSION}); got {brief(version)}"
        )
    if version > FORMAT_VERSION:
        raise InputFileError(
            f"this file is in network format {version}, but topokit {__version__} reads formats "
            f"up to {FORMAT_VERSION}; upgrade topokit (pip install -U topokit)"
        )


def graph_to_network(graph: nx.Graph, *, source: str = "graph") -> Network:
    """Inverse of :func:`network_to_graph`: read the annotations back.

    Every error names ``source`` (the file) first.
    """
    try:
        return _network_of(graph)
    except InvalidInputError as exc:
        raise type(exc)(f"{source}: {exc}") from None


#: What a damaged gzip stream raises: a bad header or checksum, a cut-off end, bad data.
_GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)
#: gzip's compression level: zlib's default.  On the 5,000-device SIoT file (49.3 MB) it
#: writes 4.8 MB in 0.9 s; level 9 (gzip.open's default) 4.2 MB in 5.7 s.
_GZIP_LEVEL = 6


def _compressed(path: Path) -> bool:
    """Whether the file at ``path`` is read and written through gzip: its name ends in .gz."""
    return path.suffix.lower() == ".gz"


def _graphml(path: Path) -> bool:
    """Whether ``path`` names a GraphML file (``.graphml``, or ``.graphml.gz``)."""
    return network_suffix(path) in (".graphml", ".graphml.gz")


@contextlib.contextmanager
def _unzipped(path: Path) -> Iterator[IO[bytes]]:
    """The bytes of the file at ``path``, decompressed as they are read when its name ends
    in .gz; a damaged gzip stream is an :class:`InputFileError` naming the file."""
    if not _compressed(path):
        with open(path, "rb") as handle:
            yield handle
        return
    try:
        with gzip.open(path, "rb") as handle:
            yield handle
    except _GZIP_ERRORS as exc:
        raise InputFileError(
            f"{path}: not a readable gzip file ({exc}); a name ending in .gz is read as "
            "gzip-compressed: give the whole file, or rename an uncompressed one without .gz"
        ) from None


def _file_text(path: Path) -> str:
    """The UTF-8 text of the file at ``path`` (decompressed when its name ends in .gz)."""
    if not _compressed(path):
        return path.read_text(encoding="utf-8")
    with _unzipped(path) as raw, io.TextIOWrapper(raw, encoding="utf-8") as text:
        return text.read()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_file_text(path))
    except json.JSONDecodeError as exc:
        raise InputFileError(
            f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except UnicodeDecodeError:
        raise InputFileError(f"{path}: not a UTF-8 text file") from None


def _existing(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise InputFileNotFoundError(f"no such file: {path}")
    if path.is_dir():
        raise InputFileError(
            f"{path} is a directory; expected a network file ({_accepted_suffixes()})"
        )
    return path


def _accepted_suffixes() -> str:
    """The network suffixes in words: ".json, .graphml, .json.gz or .graphml.gz"."""
    return f"{', '.join(NETWORK_SUFFIXES[:-1])} or {NETWORK_SUFFIXES[-1]}"


def load_network(path: str | Path) -> Network:
    """Read a network from node-link JSON (``.json``) or GraphML (``.graphml``), either
    gzip-compressed (``.json.gz``, ``.graphml.gz``).

    The JSON is networkx's node-link format (``networkx.node_link_data``) with
    node attributes ``compute_time`` and optionally ``x``, ``y`` (metres) and
    ``class_counts`` (the device's training rows per class, e.g.
    ``[12, 0, 3]``: on every node or on none, one count per class on each);
    the graph attribute ``delay`` (an n x n matrix, ``null`` for no link, or
    the object ``{"default": d, "pairs": [[i, j, d_ij], ...]}``: every pair
    has delay ``d`` but the listed ones, ``i`` and ``j`` positions in the node
    list) or, when it is absent, the positions and ``physical_model`` give the
    delays.  An edge record is a social link ``{"source": u, "target": v}``.
    An optional graph attribute ``topology`` stores a topology.  GraphML keeps
    the structured graph attributes and ``class_counts`` as JSON strings.

    A name ending in ``.gz`` is read through gzip (the format is the suffix
    before it): the network is the one its uncompressed file holds, its
    delays bit for bit.  A file that is not gzip data, or is cut short, is
    refused in one line (:class:`~topokit.errors.InputFileError`).
    """
    path = _existing(path)
    if _graphml(path):
        return graph_to_network(_graphml_graph(path), source=str(path))
    return graph_to_network(_node_link_graph(_read_json(path), path), source=str(path))


def _graphml_graph(path: Path) -> nx.Graph:
    """The undirected simple graph of a GraphML file, its JSON-string attributes decoded."""
    _check_graphml_elements(path)
    try:
        with _unzipped(path) as handle:
            graph = nx.read_graphml(handle)
    except InputFileError:  # a damaged gzip stream, named as such
        raise
    except Exception as exc:  # networkx raises several parser errors
        raise InputFileError(f"{path}: not a readable GraphML file: {exc}") from None
    if graph.is_directed():
        raise InputFileError(
            f'{path}: the graph is directed (edgedefault="directed"); a social link joins two '
            'devices both ways: write <graph edgedefault="undirected">'
        )
    if graph.is_multigraph():  # networkx reads a file with a repeated edge as a multigraph
        u, v = next((u, v) for u, v in graph.edges() if graph.number_of_edges(u, v) > 1)
        raise InputFileError(
            f"{path}: the link {u!r}-{v!r} is listed {graph.number_of_edges(u, v)} times; two "
            "devices have at most one social link: remove the repeated <edge>"
        )
    for key in ("delay", "topology", "physical_model"):
        if isinstance(graph.graph.get(key), str):
            try:
                graph.graph[key] = json.loads(graph.graph[key])
            except json.JSONDecodeError:
                raise InputFileError(f"{path}: graph attribute {key!r} is not JSON") from None
    _decode_graphml_counts(graph, path)
    return graph


_GRAPHML = "{http://graphml.graphdrawing.org/xmlns}"
#: The GraphML attribute types networkx converts, and what their values must be.
_GRAPHML_TYPES = {"int": (int, "a whole number"), "integer": (int, "a whole number"),
                  "long": (int, "a whole number"), "float": (float, "a number"),
                  "double": (float, "a number"), "boolean": (bool, "true or false")}


def _check_graphml_elements(path: Path) -> None:
    """What networkx reads without a word or with a message naming nothing, checked first.

    A node listed twice (networkx keeps the later one's attributes), and a
    value its ``<key>`` declares a number or boolean but that is not one
    (networkx says only "could not convert"): both named by node and
    attribute.  A file that is not XML is left to networkx to report.
    """
    try:
        with _unzipped(path) as handle:
            root = ElementTree.parse(handle).getroot()
    except (ElementTree.ParseError, OSError):
        return
    keys = {key.get("id"): (key.get("attr.name"), key.get("attr.type"))
            for key in root.iter(f"{_GRAPHML}key")}
    seen: set = set()
    for node in root.iter(f"{_GRAPHML}node"):
        node_id = node.get("id")
        if node_id in seen:
            raise InputFileError(
                f"{path}: node id {node_id!r} appears twice; every device needs its own "
                "<node> (networkx would keep the later one's attributes and drop the first's)"
            )
        seen.add(node_id)
        _check_graphml_data(node, keys, f"{path}: node {node_id!r}: attribute")
    for edge in root.iter(f"{_GRAPHML}edge"):
        _check_graphml_data(edge, keys,
                            f"{path}: edge {edge.get('source')!r}-{edge.get('target')!r}: "
                            "attribute")
    for graph in root.iter(f"{_GRAPHML}graph"):
        _check_graphml_data(graph, keys, f"{path}: graph attribute")


def _check_graphml_data(element: ElementTree.Element, keys: dict, where: str) -> None:
    """Every ``<data>`` of ``element`` holds a value of its key's declared type."""
    for data in element.findall(f"{_GRAPHML}data"):
        name, declared = keys.get(data.get("key"), (None, None))
        if declared not in _GRAPHML_TYPES or data.text is None or len(data):
            continue  # unknown keys and structured (yfiles) data: networkx's to report
        convert, expected = _GRAPHML_TYPES[declared]
        text = data.text
        try:
            if convert is bool:
                valid = text.lower() in ("true", "false", "0", "1")
            else:
                convert(text)
                valid = True
        except ValueError:
            valid = False
        if not valid:
            raise InputFileError(
                f"{where} {name!r} must be {expected} (its <key> declares "
                f'attr.type="{declared}"); got {brief(text)}'
            )


def _decode_graphml_counts(graph: nx.Graph, path: Path) -> None:
    """GraphML has no list attributes: ``class_counts`` is a JSON string there."""
    for node, attributes in graph.nodes(data=True):
        if isinstance(attributes.get("class_counts"), str):
            try:
                attributes["class_counts"] = json.loads(attributes["class_counts"])
            except json.JSONDecodeError:
                raise InputFileError(
                    f"{path}: node {node!r}: 'class_counts' is not JSON; expected "
                    f"{_COUNT_EXAMPLE}"
                ) from None


def _node_link_records(data: Any, path: Path) -> str:
    """Check the structure of node-link data before networkx reads it; return the edges key.

    networkx assumes well-formed records; a list where an object belongs would
    end in a TypeError deep inside it.  Node ids written as lists are turned
    back into tuples (JSON has no tuples).
    """
    if not isinstance(data, dict) or "nodes" not in data:
        raise InputFileError(
            f"{path}: expected networkx node-link JSON (an object with 'nodes' and 'edges')"
        )
    edges_key = "edges" if "edges" in data else "links"
    nodes, edges = data["nodes"], data.get(edges_key, [])
    if not isinstance(nodes, list) or not all(isinstance(r, dict) for r in nodes):
        raise InputFileError(
            f"{path}: 'nodes' must be a list of objects such as "
            f'{{"id": "A", "compute_time": 312}}; got {brief(nodes)}'
        )
    if not nodes:
        raise InputFileError(f"{path}: 'nodes' is empty; the social graph has no nodes")
    if not isinstance(edges, list) or not all(isinstance(r, dict) for r in edges):
        raise InputFileError(
            f"{path}: '{edges_key}' must be a list of objects such as "
            f'{{"source": "A", "target": "B"}} ([u, v] pairs are the format of topology files); '
            f"got {brief(edges)}"
        )
    ids = _node_ids(nodes, path)
    for k, record in enumerate(edges):
        for end in ("source", "target"):
            if end not in record:
                raise InputFileError(
                    f"{path}: edge {k} {brief(record)} has no {end!r}; every edge needs "
                    "'source' and 'target'"
                )
            record[end] = _edge_end(record[end], k, ids, path, record)
    return edges_key


def _edge_end(end: Any, k: int, ids: set, path: Path, record: dict) -> Hashable:
    """An end of edge record ``k``: a node id of 'nodes' (a list made a tuple)."""
    end = _hashable(end)
    try:
        _node_id(end, f"edge {k}")
    except InvalidInputError as exc:
        raise InputFileError(f"{path}: {exc}") from None
    if end not in ids:
        raise InputFileError(f"{path}: edge {k} joins {record.get('source')!r} and "
                             f"{brief(record.get('target'))}, but {end!r} is not in 'nodes'")
    return end


def _node_ids(nodes: list[dict], path: Path) -> set:
    """The ids of the node records (made hashable in place); missing or repeated ids refused."""
    ids: set = set()
    for k, record in enumerate(nodes):
        if record.get("id") is None:
            raise InputFileError(f"{path}: node {k} {brief(record)} has no 'id'")
        record["id"] = _hashable(record["id"])
        try:
            node = _node_id(record["id"], f"node {k}")
        except InvalidInputError as exc:
            raise InputFileError(f"{path}: {exc}") from None
        if node in ids:
            raise InputFileError(
                f"{path}: node id {node!r} appears twice in 'nodes'; every device needs its "
                "own id (the later record would silently replace the first)"
            )
        ids.add(node)
    return ids


def _node_link_graph(data: Any, path: Path) -> nx.Graph:
    """The undirected simple graph of node-link ``data`` (structure checked first)."""
    edges_key = _node_link_records(data, path)
    # networkx would read a file without these keys as a multigraph.
    data.setdefault("directed", False)
    data.setdefault("multigraph", False)
    try:
        graph = nx.node_link_graph(data, edges=edges_key)
    except (KeyError, TypeError, ValueError, nx.NetworkXError) as exc:
        raise InputFileError(f"{path}: not valid node-link data: {exc}") from None
    if graph.is_directed() or graph.is_multigraph():
        raise InputFileError(f"{path}: the social graph must be undirected and simple")
    return graph


def network_from_node_link(data: Any, *, source: str = "network") -> Network:
    """The Network of node-link ``data`` (a parsed network file), checked as
    :func:`load_network` checks a file; errors name ``source``.

    ``data`` is left as it is (its missing graph flags are filled in on a copy).

    Examples
    --------
    >>> import json, networkx as nx
    >>> from topokit import load_example
    >>> data = json.loads(json.dumps(nx.node_link_data(network_to_graph(load_example("toy")),
    ...                                                edges="edges")))
    >>> network_from_node_link(data).n_devices
    6
    """
    import copy

    graph = _node_link_graph(copy.deepcopy(data), Path(source))
    return graph_to_network(graph, source=source)


#: From this many devices on, :func:`save_network` stores the delays in the smallest of
#: its forms (:func:`delay_form`) and writes a JSON file a record a line (a delay row, the
#: listed pairs of a row, a social link); smaller networks, the bundled examples among
#: them, keep the n x n matrix and one value a line.  A 2,000-device SIoT network's file
#: shrinks from 40.1 MB (60.1 MB one value a line) to 14.5 MB, nearly all of it its
#: 406,846 social links; 5,000 devices: from 202 to 49.3 MB (see topokit.cli._sizes), 4.8 MB
#: as .json.gz.
COMPACT_FROM_DEVICES = 200


class DelayForm(NamedTuple):
    """How a network file stores the delays (:func:`delay_form`).

    ``kind`` is ``"model"`` (no delays: the positions and the physical model
    give them), ``"sparse"`` (the graph attribute ``delay`` is ``{"default":
    default, "pairs": [[i, j, d_ij], ...]}``, the pairs i < j whose delay is not
    ``default``) or ``"dense"`` (the n x n matrix).
    """

    kind: str
    default: float = 0.0


def delay_form(net: Network) -> DelayForm:
    """The form :func:`save_network` stores ``net``'s delays in, from
    :data:`COMPACT_FROM_DEVICES` devices on: the smallest that loads them back bit for bit.

    ``"model"`` when the positions and the physical model give every delay
    exactly as :func:`load_network` computes them; else ``"sparse"`` when more
    than half the pairs share one delay (``inf`` included: a listed pair costs
    about as much as its two entries of the matrix, so the sparse form is then
    the smaller); else ``"dense"``.  Compared a block of rows at a time: no
    second n x n array.

    Examples
    --------
    >>> from topokit import load_example
    >>> from topokit.network.siot import siot
    >>> delay_form(siot(30, seed=1)).kind, delay_form(load_example("toy")).kind
    ('model', 'dense')
    >>> net = siot(30, seed=1)
    >>> delay = np.full((30, 30), 37.6)
    >>> delay[0, 1] = delay[1, 0] = 0.44
    >>> delay_form(Network(net.social, net.compute_time, delay))
    DelayForm(kind='sparse', default=37.6)
    """
    if _model_gives(net):
        return DelayForm("model")
    shared = _shared_delay(net.delay)
    return DelayForm("dense") if shared is None else DelayForm("sparse", shared)


def _bits(delay: NDArray[np.float64]) -> NDArray[np.uint64]:
    """The bit patterns of ``delay``: equal exactly when the floats are the same (0.0 and
    -0.0 differ, as they would after a round trip)."""
    return np.ascontiguousarray(delay, dtype=np.float64).view(np.uint64)


def _model_gives(net: Network) -> bool:
    """Whether the positions and physical model a file of ``net`` records give its delays
    bit for bit as :func:`load_network` computes them from them."""
    if net.positions is None:
        return False
    record = None if net.physical_model is None else _model_record(net.physical_model)
    try:
        # The model as the loader reads it back: JSON's values, the model's defaults.
        model = json.loads(json.dumps(record))
        loaded = physical._ModelDelays(np.array(net.positions), **_model_settings(model))
    except (TypeError, ValueError):  # not JSON, or settings the loader refuses
        return False
    if net._delay_model is not None and loaded.same(net._delay_model):
        return True  # the network's delays are this model's, not computed yet (or ever)
    blocks = loaded.blocks()
    bits = _bits(net.delay)
    return all(np.array_equal(_bits(block), bits[start:start + block.shape[0]])
               for start, block in blocks)


#: Upper-triangle delays examined at once by :func:`_shared_delay` (32 MB of them).
_BLOCK_PAIRS = 1 << 22


def _upper_blocks(bits: NDArray[np.uint64]) -> Iterator[NDArray[np.uint64]]:
    """The pairs i < j of the matrix ``bits``, row by row, in blocks of about
    :data:`_BLOCK_PAIRS`."""
    n, start = bits.shape[0], 0
    while start < n - 1:
        stop, size = start, 0
        while stop < n - 1 and size < _BLOCK_PAIRS:
            size, stop = size + n - 1 - stop, stop + 1
        yield np.concatenate([bits[i, i + 1:] for i in range(start, stop)])
        start = stop


def _shared_delay(delay: NDArray[np.float64]) -> float | None:
    """The delay more than half the pairs share, bit for bit (``inf`` counts); else None.

    A value more than half the pairs share holds more than half of some block
    of them, and is then that block's median: each block's median is a
    candidate when it holds half its block, and the candidates are counted.
    """
    bits = _bits(delay)
    candidates = set()
    for block in _upper_blocks(bits):
        block.partition(block.size // 2)  # in place: the block is a copy already
        middle = block[block.size // 2]
        if 2 * np.count_nonzero(block == middle) > block.size:
            candidates.add(middle)
    counts = dict.fromkeys(candidates, 0)
    for block in _upper_blocks(bits):
        for candidate in counts:
            counts[candidate] += int(np.count_nonzero(block == candidate))
    n = delay.shape[0]
    best = max(counts, key=counts.__getitem__, default=None)
    if best is None or 2 * counts[best] <= n * (n - 1) // 2:
        return None
    return float(np.array(best, dtype=np.uint64).view(np.float64))


def save_network(net: Network, path: str | Path) -> Path:
    """Write ``net`` atomically as node-link JSON or (``.graphml``) GraphML; loading the
    file gives ``net`` back, its delays bit for bit.

    A name ending in ``.gz`` (``.json.gz``, ``.graphml.gz``) writes the same
    file gzip-compressed, as it is encoded: about a tenth of the size for a
    generated network (4.8 MB instead of 49.3 MB at 5,000 SIoT devices).  Its
    gzip header records no time and no file name, so the same network gives
    the same bytes every time.

    A network of :data:`COMPACT_FROM_DEVICES` devices or more stores its
    delays in the form :func:`delay_form` picks: none when its positions and
    physical model give them (the file then grows with the devices and links,
    not the pairs), a default delay and the pairs that differ, or the n x n
    matrix.  Its JSON has a record a line: a delay row, the listed pairs of a
    row, a social link (``{"source":u,"target":v}``, networkx's node-link
    record, so that ``nx.node_link_graph`` reads the file); it is written as it
    is encoded.  GraphML keeps an ``<edge>`` a link.  Smaller networks keep
    the matrix and a record a link, one value a line.
    """
    path = Path(path)
    graphml = _graphml(path)
    if net.n_devices < COMPACT_FROM_DEVICES:
        if graphml:
            matrix = json.dumps(_delay_to_json(net.delay))
            return _write_text(path, _graphml_text(net, matrix))
        data = nx.node_link_data(network_to_graph(net), edges="edges")
        return _write_text(path, json.dumps(data, indent=1) + "\n")
    form = delay_form(net)
    if graphml:
        delay = None if form.kind == "model" else "".join(_delay_lines(net.delay, form, 0))
        return _write_text(path, _graphml_text(net, delay))
    return _write_compact_json(net, path, form)


@contextlib.contextmanager
def _text_output(path: Path) -> Iterator[IO[str]]:
    """A UTF-8 text handle whose writes replace ``path`` atomically when the block ends,
    gzip-compressed as they are written when the name ends in .gz.

    The gzip header records neither the time (``mtime=0``) nor the temporary
    file's name, so the same text gives the same bytes every time.  The file
    is on disk (``fsync``) before it is renamed over ``path``.
    """
    with atomic_path(path) as temp, open(temp, "wb") as raw:
        with contextlib.ExitStack() as stack:
            stream: IO[bytes] = raw
            if _compressed(path):  # closing it writes gzip's end; raw, its fileobj, stays open
                stream = stack.enter_context(gzip.GzipFile(
                    filename="", mode="wb", fileobj=raw, compresslevel=_GZIP_LEVEL, mtime=0))
            handle = io.TextIOWrapper(stream, encoding="utf-8")
            stack.callback(handle.detach)  # the last text into the stream, left open
            yield handle
        raw.flush()
        os.fsync(raw.fileno())


def _write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`_text_output`)."""
    with _text_output(path) as handle:
        handle.write(text)
    return path


def _graphml_text(net: Network, delay: str | None) -> str:
    """The GraphML of ``net`` with the JSON text ``delay`` as its delay attribute (None:
    none).  GraphML has no structured attributes: they are JSON strings."""
    graph = _annotated_graph(net, delay)
    for key in ("topology", "physical_model"):
        if key in graph.graph:
            graph.graph[key] = json.dumps(graph.graph[key])
    for _, attributes in graph.nodes(data=True):
        if "class_counts" in attributes:
            attributes["class_counts"] = json.dumps(attributes["class_counts"])
    graph.graph = {key: value for key, value in graph.graph.items() if value is not None}
    return "\n".join(nx.generate_graphml(graph)) + "\n"


def _write_compact_json(net: Network, path: Path, form: DelayForm) -> Path:
    """Write the node-link JSON of ``net`` laid out as ``json.dumps(..., indent=1)`` would,
    but with a record a line, its delays in ``form``.

    The delays are encoded a row at a time from the array by json's C encoder
    and written as they are (never all n^2 delays as Python objects or text at
    once); unique placeholders mark where they and the social links go in the
    indented rest.
    """
    import uuid

    marks = {name: f"topokit-{uuid.uuid4().hex}" for name in ("delay", "edges")}
    delay = None if form.kind == "model" else marks["delay"]
    data = nx.node_link_data(_annotated_graph(net, delay, links=False), edges="edges")
    data["edges"] = marks["edges"]
    text = json.dumps(data, indent=1)
    compact = functools.partial(json.dumps, separators=(",", ":"))
    fills = {marks["edges"]: _json_lines(map(compact, _link_records(net)), 2)}
    if form.kind != "model":
        fills[marks["delay"]] = _delay_lines(net.delay, form, 2)
    with _text_output(path) as handle:
        for piece in _filled(text, fills):
            handle.write(piece)
        handle.write("\n")
    return path


def _link_records(net: Network) -> Iterator[dict]:
    """The social links of ``net`` as node-link records, in the order of networkx's
    node-link data of the graph (its edge order), which the loaded graph adds them in:
    each device's links to the devices after it in the node order.

    >>> import networkx as nx
    >>> net = Network(nx.Graph([(0, 1), (2, 0), (1, 2)]), [1.0] * 3, np.ones((3, 3)))
    >>> list(_link_records(net))
    [{'source': 0, 'target': 1}, {'source': 0, 'target': 2}, {'source': 1, 'target': 2}]
    """
    for i, node in enumerate(net.nodes):
        for other in net.social.adj[node]:
            if net.index[other] > i:
                yield {"source": _plain_node(node), "target": _plain_node(other)}


def _filled(text: str, fills: Mapping[str, Iterable[str]]) -> Iterator[str]:
    """``text`` with each placeholder of ``fills`` (a JSON string in it) replaced by its
    pieces, in order."""
    at = 0
    for mark in sorted(fills, key=lambda mark: text.index(json.dumps(mark))):
        where = text.index(json.dumps(mark), at)
        yield text[at:where]
        yield from fills[mark]
        at = where + len(json.dumps(mark))
    yield text[at:]


def _delay_lines(delay: NDArray[np.float64], form: DelayForm, depth: int) -> Iterator[str]:
    """The JSON of the graph attribute ``delay`` in ``form`` ("dense" or "sparse"), a row a
    line, indented as ``indent=1`` does for a value at ``depth``."""
    if form.kind == "dense":
        yield from _json_lines((json.dumps(_delay_to_json(row)) for row in delay), depth + 1)
        return
    inner = " " * (depth + 1)
    yield (f'{{\n{inner}"default": {json.dumps(jsonable(form.default))},\n'
           f'{inner}"pairs": ')
    yield from _json_lines(_listed_rows(delay, form.default), depth + 2)
    yield f"\n{' ' * depth}}}"


def _listed_rows(delay: NDArray[np.float64], default: float) -> Iterator[str]:
    """Row by row, the pairs [i, j, d_ij] with i < j whose delay is not ``default`` (bit for
    bit), a row's JSON-encoded on one line (rows without any: none)."""
    bits, target = _bits(delay), _bits(np.array([default]))[0]
    for i in range(delay.shape[0] - 1):
        others = np.flatnonzero(bits[i, i + 1:] != target) + (i + 1)
        if others.size:
            pairs = [[i, j, d] for j, d in zip(others.tolist(), _delay_to_json(delay[i, others]),
                                                strict=True)]
            yield json.dumps(pairs)[1:-1]


def _json_lines(items: Iterable[str], depth: int) -> Iterator[str]:
    """A JSON list of the encoded ``items``, one a line, indented as ``indent=1`` does at
    ``depth``, in pieces."""
    items = iter(items)
    first = next(items, None)
    if first is None:
        yield "[]"
        return
    yield f"[\n{' ' * depth}{first}"
    for item in items:
        yield f",\n{' ' * depth}{item}"
    yield f"\n{' ' * (depth - 1)}]"


def load_topology(path: str | Path) -> Topology:
    """Read a topology: a JSON object ``{"edges": [[u, v], ...], "dp_devices": [...]}``.

    A design file written by ``topokit design -o`` (with a ``"topology"`` key)
    is accepted too; a network file is refused as one.
    """
    path = _existing(path)
    data = _topology_file_data(path)
    if isinstance(data, dict) and "topology" in data and "edges" not in data:
        data = data["topology"]
    try:
        return Topology.from_dict(data)
    except InvalidInputError as exc:
        raise InputFileError(f"{path}: {exc}") from None


def _topology_file_data(path: Path) -> Any:
    """The JSON of a topology or design file; a network file is refused as such.

    A node-link network has an ``"edges"`` list too, which would otherwise be
    read (and refused) as a topology's ``[u, v]`` pairs.
    """
    if _graphml(path):
        raise InputFileError(f"{path}: this is a GraphML network file, not a design or "
                             "topology file; give one that topokit design -o wrote")
    data = _read_json(path)
    if isinstance(data, dict):
        graph = data.get("graph")
        network_keys = ("nodes" in data or "links" in data or "topokit_format" in data
                        or (isinstance(graph, dict) and "topokit_format" in graph))
        if network_keys:
            raise InputFileError(f"{path}: this is a network file (node-link JSON with "
                                 "'nodes'), not a design or topology file; give one that "
                                 "topokit design -o wrote")
    return data


def load_noise_multipliers(path: str | Path, net: Network) -> dict[Hashable, float] | None:
    """The per-device noise multipliers a design file records, keyed by ``net``'s devices.

    A design decides each DP device's noise multiplier once, from the user's
    epsilon and delta and any stranger bound (``Design.noise``,
    :mod:`topokit.design.noise`); a design file written by ``topokit design
    -o`` or ``Design.save`` stores them with JSON's string keys.  This maps
    them back to the network's node ids, for ``DPConfig(noise_multiplier=...)``
    and ``privacy_audit(noise_multiplier=...)``.

    Parameters
    ----------
    path : str or Path
        A design JSON (``topokit design -o``).
    net : Network
        The network it was designed for.

    Returns
    -------
    dict or None
        device -> z: the noise every DP device of the design trains with, as
        the design decided it (its ``"noise"``; in files written before that
        record, the stranger bound's levels).  None when the file records no
        levels (a plain topology file, or an older design made without a
        stranger bound).

    Raises
    ------
    InputFileError
        The file is neither a design nor a topology (a network file is named
        as one), its ``noise`` (or ``stats``, ``stranger_bound``) or ``noise_multipliers``
        is not a JSON object, a level is not a finite number >= 0, or a
        recorded device is not in ``net`` (or two of ``net``'s devices print
        the same, so a key is ambiguous).

    Examples
    --------
    >>> import json, tempfile
    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> design = {"topology": {"edges": [["A", "B"]], "dp_devices": ["A", "B"]},
    ...           "noise": {"noise_multipliers": {"A": 4.0, "B": 3.5}}}
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "design.json"
    ...     _ = path.write_text(json.dumps(design))
    ...     load_noise_multipliers(path, net)
    {'A': 4.0, 'B': 3.5}
    """
    path = _existing(path)
    data = _topology_file_data(path)
    if isinstance(data, dict) and "edges" in data and "topology" not in data:
        return None  # a plain topology file: no levels recorded
    if not (isinstance(data, dict) and "topology" in data):
        raise InputFileError(f"{path}: not a design or topology file (no \"topology\" or "
                             "\"edges\" key); write one with topokit design -o")
    levels = _recorded_levels(data, path)
    if levels is None:
        return None
    by_text: dict[str, Hashable] = {}
    for node in net.nodes:
        if str(node) in by_text:
            raise InputFileError(f"{path}: devices {by_text[str(node)]!r} and {node!r} of "
                                 "the network print the same; the design's keys are ambiguous")
        by_text[str(node)] = node
    out = {}
    for key, value in levels.items():
        if key not in by_text:
            raise InputFileError(f"{path}: the design's noise levels name device {key!r}, "
                                 "which is not in the network; give the network it was "
                                 "designed for")
        level = _finite_non_negative(value)
        if level is None:
            shown = f"{value!r}" if len(repr(value)) <= 40 else f"{repr(value)[:37]}..."
            raise InputFileError(f"{path}: noise level of {key!r} must be a finite number >= 0; "
                                 f"got {shown}")
        out[by_text[key]] = level
    return out


#: Where a design file records its DP devices' noise multipliers: the design's decided noise
#: (``Design.noise``), else, in files written before it, the stranger bound's levels.
_LEVEL_RECORDS = (("noise", "noise_multipliers"),
                  ("stats", "stranger_bound", "noise_multipliers"))


def _recorded_levels(design: dict, path: Path) -> Mapping | None:
    """The noise levels a design file records (:data:`_LEVEL_RECORDS`, the first found);
    None where it records none."""
    for keys in _LEVEL_RECORDS:
        levels = _record_at(design, keys, path)
        if levels is not None:
            return levels
    return None


def _record_at(design: dict, keys: tuple[str, ...], path: Path) -> Mapping | None:
    """The object at ``keys`` of a design file; None where absent (null).

    Each level of the path must be a JSON object: a list or text in its place
    would otherwise drop the levels without a word.
    """
    record: Any = design
    where = []
    for key in keys:
        record = record.get(key)
        where.append(key)
        if record is None:
            return None
        if not isinstance(record, Mapping):
            example = ('an object device -> noise multiplier such as {"A": 4.0, "B": 3.5}'
                       if key == "noise_multipliers" else "an object, as topokit design -o writes")
            raise InputFileError(f"{path}: the design's {'.'.join(where)!r} must be {example}; "
                                 f"got {brief(record)}")
    return record


def _finite_non_negative(value: Any) -> float | None:
    """``value`` as a float when it is a finite number >= 0 (a JSON int or float), else None.

    >>> _finite_non_negative(2), _finite_non_negative(10**400), _finite_non_negative(True)
    (2.0, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        level = float(value)
    except OverflowError:  # an integer beyond a float's range
        return None
    return level if np.isfinite(level) and level >= 0 else None


def save_topology(topology: Topology, path: str | Path) -> Path:
    """Write ``topology`` atomically as JSON."""
    return atomic_write_text(path, json.dumps(topology.to_dict(), indent=1) + "\n")
