"""The DeepPrivacy network model (Ching et al., Sec. IV): social graph, physical
times and communication topologies.

- :class:`Network`: the social graph G_s, computation time r_i of every device
  and communication time d_ij of every pair (``inf`` where the physical network
  cannot connect them), and optionally each device's training rows per class.
  Arrays use the node order ``list(net.social)``.
- :class:`Topology`: a communication topology G_c = (V, E_c) plus the devices
  that add DP noise.  A link outside G_s may be used only between two DP
  devices and only with a finite delay.

Their files are read and written by :mod:`topokit.network.formats`.
"""

from __future__ import annotations

import itertools
import os
import sys
import warnings
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import brief, check_collection, check_connected, check_finite_array
from ..errors import (
    InputFileError,
    InvalidInputError,
    InvalidTopologyError,
    NodeNotFoundError,
    UnusableSocialLinksWarning,
)
from . import physical

__all__ = ["Network", "Topology", "canonical_pair", "node_sort_key", "class_count_matrix",
           "NETWORK_SUFFIXES", "network_suffix"]

FORMAT_VERSION = 1
#: File suffixes of networks: node-link JSON and GraphML, each also gzip-compressed.
NETWORK_SUFFIXES = (".json", ".graphml", ".json.gz", ".graphml.gz")


def network_suffix(path: str | os.PathLike) -> str | None:
    """The entry of :data:`NETWORK_SUFFIXES` the name of ``path`` ends in (any case), else
    None.

    ``Path.suffix`` sees only the last one (``.gz``), so a compressed file's
    two suffixes are matched here.

    Examples
    --------
    >>> network_suffix("runs/City.JSON.gz"), network_suffix("net.graphml"), network_suffix("a.gz")
    ('.json.gz', '.graphml', None)
    """
    name = os.fspath(path).lower()
    return next((suffix for suffix in sorted(NETWORK_SUFFIXES, key=len, reverse=True)
                 if name.endswith(suffix)), None)


def node_sort_key(node: Hashable) -> tuple[str, Any]:
    """The key topokit orders node ids by (the DP devices of a file, a pair's ends).

    Mixed node types (ints and strings) do not compare, so the type's name comes
    first; a numpy scalar orders as its Python value (``np.int64(10)`` after
    ``np.int64(2)``), as :meth:`Topology.to_dict` writes it.

    >>> sorted([10, "b", 2, "a"], key=node_sort_key)
    [2, 10, 'a', 'b']
    """
    if isinstance(node, np.generic):
        node = node.item()
    return (type(node).__name__, node if isinstance(node, (int, float, str)) else repr(node))


def canonical_pair(u: Hashable, v: Hashable) -> tuple[Hashable, Hashable]:
    """The pair (u, v) in a fixed order, so that an undirected link has one spelling."""
    return (u, v) if node_sort_key(u) <= node_sort_key(v) else (v, u)


@dataclass(frozen=True, repr=False)
class Topology:
    """A communication topology G_c = (V, E_c), its DP devices and, optionally, link weights.

    Parameters
    ----------
    edges : iterable of pairs of node ids
        The links E_c.  Stored sorted, each pair in a canonical order, without
        duplicates.
    dp_devices : iterable of node ids
        The devices that add differential-privacy noise to what they send.
    weights : mapping (u, v) -> float or sequence of float, optional
        Symmetric mixing weights w_l of the links: device i averages
        ``W_ii x_i + sum_j w_ij x_j`` with self-weight
        ``W_ii = 1 - sum_j w_ij``.  A mapping names each link once (either
        orientation); a sequence holds one weight per pair of ``edges`` in the
        order given (for ``t.edges``, the stored order, so
        ``Topology(t.edges, t.dp_devices, t.weights)`` is ``t``).  Every weight
        must be finite and > 0, and each device's link weights must sum to at
        most 1 (to round-off, 1e-12), so that its self-weight is >= 0.  Stored
        as a tuple aligned with :attr:`edges`.  None (default): the
        Lazy-Metropolis weights of DeepPrivacy eq. (4).

    Attributes
    ----------
    edges : tuple of (u, v)
        The links, sorted, each pair in the order of :func:`canonical_pair`.
    dp_devices : frozenset
    weights : tuple of float or None
        One weight per link, **aligned with** :attr:`edges` (``weights[k]`` is
        the weight of ``edges[k]``), not a mapping: look a link up with
        :attr:`weights_by_edge`.  None: Lazy-Metropolis.

    Raises
    ------
    InvalidTopologyError
        A self-loop, a link that is not a pair, a weight on a pair that is not
        a link, or a device whose link weights sum to more than 1.
    InvalidInputError
        Unhashable or missing node ids; weights that are not numbers, not
        finite or not > 0, or a sequence of the wrong length.

    Notes
    -----
    A topology is valid for a network (DeepPrivacy Sec. IV) when every link
    that is not a social link joins two DP devices and every link has a finite
    delay.  :meth:`validate` raises on the first broken rule;
    :meth:`violations` lists them all.

    :meth:`mixing_matrix` is the one source of the matrix W that training
    mixes with and the features are computed from:
    :math:`W = I - \\sum_l w_l (e_i - e_j)(e_i - e_j)^T` with the given
    weights (symmetric and doubly stochastic by construction, non-negative by
    the checks above), else Lazy-Metropolis.  Equality and the hash include
    the weights: a topology with weights equal to the Lazy-Metropolis ones is
    not equal to the same topology without weights, though both mix alike.
    A topology is immutable; nothing derives a new one from it but
    :meth:`with_weights`.  ``Topology(t.edges, t.dp_devices)`` (for instance
    with links added or removed) and ``dataclasses.replace(t, ...)`` start
    without weights, so stale weights are never carried to other links.

    Examples
    --------
    >>> path = Topology([(0, 1), (1, 2)], dp_devices=[2], weights=[0.5, 0.25])
    >>> path.weights
    (0.5, 0.25)
    >>> path.mixing_matrix([0, 1, 2]).tolist()
    [[0.5, 0.5, 0.0], [0.5, 0.25, 0.25], [0.0, 0.25, 0.75]]
    >>> Topology([(0, 1), (1, 2)], weights={(1, 0): 0.5, (1, 2): 0.6})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidTopologyError: the link weights of device 1 sum to 1.1 > 1, so ...
    """

    edges: tuple[tuple[Hashable, Hashable], ...]
    dp_devices: frozenset = field(default_factory=frozenset)
    # Not an init field of the dataclass: dataclasses.replace(t, edges=...) starts without
    # weights rather than carry them to other links.
    weights: tuple[float, ...] | None = field(default=None, init=False)

    def __init__(
        self,
        edges: Iterable[Sequence[Hashable]] = (),
        dp_devices: Iterable[Hashable] = (),
        weights: Mapping[Any, float] | Iterable[float] | None = None,
    ):
        edges = check_collection(edges, "edges", "an iterable of node pairs (u, v)")
        integer = _integer_pairs(edges)
        if integer is not None:  # a million links: sorted by numpy, not by Python keys
            ordered, given, stored = integer
            object.__setattr__(self, "_edge_array", stored)
            object.__setattr__(self, "edges", ordered)
            object.__setattr__(self, "dp_devices", _device_set(dp_devices))
            object.__setattr__(self, "weights", None if weights is None
                               else _link_weights(weights, given(), ordered))
            return
        given = []  # canonical pairs in the order given (weights of a sequence follow it)
        for edge in edges:
            u, v = _pair(edge)
            if u == v:
                raise InvalidTopologyError(f"self-loop on node {u!r}: a link must join two devices")
            try:
                given.append(canonical_pair(u, v))
                hash(given[-1])
            except TypeError:  # unhashable
                raise InvalidInputError(
                    f"edges: node ids must be strings, numbers or tuples; got {brief(edge)}"
                ) from None
        ordered = sorted(set(given), key=lambda p: (node_sort_key(p[0]), node_sort_key(p[1])))
        devices = _device_set(dp_devices)
        object.__setattr__(self, "edges", tuple(ordered))
        object.__setattr__(self, "dp_devices", devices)
        object.__setattr__(self, "weights",
                           None if weights is None else _link_weights(weights, given, ordered))

    def __repr__(self) -> str:
        text = f"Topology(edges={self.edges!r}, dp_devices={self.dp_devices!r}"
        if self.weights is not None:  # 6 significant digits keep it readable
            shown = ", ".join(f"{w:.6g}" for w in self.weights)
            text += f", weights=({shown}{',' if len(self.weights) == 1 else ''})"
        return text + ")"

    def with_weights(self, weights: Mapping[Any, float] | Iterable[float] | None) -> Topology:
        """The same links and DP devices with ``weights`` (None: Lazy-Metropolis).

        ``weights`` is a mapping (u, v) -> w or a sequence aligned with
        :attr:`edges`, checked as in :class:`Topology`.

        Examples
        --------
        >>> star = Topology([("hub", "a"), ("hub", "b")])
        >>> star.with_weights({("a", "hub"): 0.5, ("b", "hub"): 0.5}).weights
        (0.5, 0.5)
        >>> star.with_weights([0.5, 0.5]).with_weights(None) == star
        True
        """
        return Topology(self.edges, self.dp_devices, weights)

    @property
    def weights_by_edge(self) -> dict[tuple[Hashable, Hashable], float] | None:
        """The link weights as a dict {(u, v): w} over :attr:`edges`; None without weights.

        Keys are the pairs of :attr:`edges`, in the order of
        :func:`canonical_pair` (look up ``canonical_pair(u, v)`` for a link
        named either way).  The dict is the mapping form :class:`Topology`
        accepts, so ``Topology(t.edges, t.dp_devices, t.weights_by_edge)`` is
        ``t``; :attr:`weights` is the same numbers as a tuple aligned with
        :attr:`edges`.

        Examples
        --------
        >>> path = Topology([(1, 0), (1, 2)], weights={(0, 1): 0.5, (2, 1): 0.25})
        >>> path.weights_by_edge
        {(0, 1): 0.5, (1, 2): 0.25}
        >>> path.weights_by_edge[canonical_pair(2, 1)]
        0.25
        >>> Topology([(0, 1)]).weights_by_edge is None  # Lazy-Metropolis
        True
        """
        if self.weights is None:
            return None
        return dict(zip(self.edges, self.weights, strict=True))

    @property
    def n_links(self) -> int:
        return len(self.edges)

    def graph(self, nodes: Iterable[Hashable]) -> nx.Graph:
        """G_c as a networkx graph on ``nodes`` (every device, linked or not)."""
        graph = nx.Graph()
        graph.add_nodes_from(nodes)
        graph.add_edges_from(self.edges)
        return graph

    def mixing_matrix(self, nodes: Iterable[Hashable]) -> NDArray[np.float64]:
        """The mixing matrix W of this topology on ``nodes``, in that order.

        With :attr:`weights`, :math:`W = I - \\sum_l w_l (e_i - e_j)(e_i - e_j)^T`:
        w_l at (i, j) and (j, i) of every link l = {i, j}, self-weights
        :math:`W_{ii} = 1 - \\sum_{j \\ne i} w_{ij}` (Boyd, Diaconis and Xiao,
        SIAM Review 2004, Sec. 5).  Without, the Lazy-Metropolis matrix of
        DeepPrivacy eq. (4), exactly :func:`topokit.lazy_metropolis` of
        :meth:`graph`.  Training mixes with this matrix and the features are
        computed from it.

        Parameters
        ----------
        nodes : iterable of node ids
            Every device (``net.nodes``), linked or not; the row order.

        Returns
        -------
        ndarray of shape (n, n)
            Symmetric, doubly stochastic, non-negative, zero off the links.

        Examples
        --------
        >>> Topology([("a", "b")], weights=[0.5]).mixing_matrix(["a", "b", "c"]).tolist()
        [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
        >>> Topology([("a", "b")]).mixing_matrix(["a", "b"]).tolist()  # Lazy-Metropolis
        [[0.5, 0.5], [0.5, 0.5]]
        """
        from ..kernels import lazy_metropolis  # the kernels compile on first use

        nodes = list(nodes)
        ends = self._ends_among(nodes)
        if ends is not None:  # integer ids: the matrices from index arrays, no graph built
            rows, cols = ends
            if self.weights is None:
                adjacency = np.zeros((len(nodes), len(nodes)))
                adjacency[rows, cols] = adjacency[cols, rows] = 1.0
                return lazy_metropolis(adjacency)
            return _weighted_mixing(len(nodes), rows, cols, self.weights)
        graph = self.graph(nodes)
        if graph.number_of_nodes() != len(nodes):
            # graph() adds the ends of links missing from ``nodes``: the rows would not be
            # the devices asked for.
            missing = sorted(set(graph) - set(nodes), key=node_sort_key)
            raise NodeNotFoundError(
                f"the topology links device {missing[0]!r}, which is not among the nodes given; "
                "pass every device (net.nodes)" if missing else
                "nodes names a device twice; give every device once")
        if self.weights is None:
            return lazy_metropolis(graph)
        index = {node: k for k, node in enumerate(graph)}
        rows = np.array([index[u] for u, _ in self.edges], dtype=np.intp)
        cols = np.array([index[v] for _, v in self.edges], dtype=np.intp)
        return _weighted_mixing(len(index), rows, cols, self.weights)

    def _ends_among(self, nodes: list[Hashable]
                    ) -> tuple[NDArray[np.int64], NDArray[np.int64]] | None:
        """Positions in ``nodes`` of every link's ends when all ids are integers, each
        node given once and every end among them (else None: the general path names
        what is wrong)."""
        pairs = self._integer_edges()
        table = _id_table(nodes) if pairs is not None else None
        return None if table is None else _looked_up(pairs, table)

    def _integer_edges(self) -> NDArray[np.int64] | None:
        """The links as an (m, 2) int64 array when every node id is an integer (else None),
        computed once (a topology never changes)."""
        if not hasattr(self, "_edge_array"):
            object.__setattr__(self, "_edge_array",
                               _integer_array(self.edges) if self.edges else None)
        return self._edge_array

    def non_social_edges(self, net: Network) -> list[tuple[Hashable, Hashable]]:
        """The links of E_c that are not links of the social graph."""
        try:
            rows, cols = net._link_ends(self)
        except KeyError:  # a node not in the network: no social link of it
            return [(u, v) for u, v in self.edges if not net.social.has_edge(u, v)]
        social = net._is_social(rows, cols)
        return [self.edges[k] for k in np.flatnonzero(~social).tolist()]

    def violations(self, net: Network, *, require_connected: bool = False) -> list[str]:
        """Every rule of DeepPrivacy this topology breaks on ``net`` (empty if valid)."""
        problems = []
        try:
            rows, cols = net._link_ends(self)
            unknown = sorted({node for node in self.dp_devices if node not in net.index},
                             key=node_sort_key)
        except KeyError:
            unknown = sorted(
                {node for edge in self.edges for node in edge if node not in net.index}
                | {node for node in self.dp_devices if node not in net.index},
                key=node_sort_key,
            )
        if unknown:
            problems.append(
                f"node {unknown[0]!r} is not in the network ({len(unknown)} unknown node(s))"
            )
            return problems
        for k in np.flatnonzero(~net._is_social(rows, cols)).tolist():
            u, v = self.edges[k]  # the links' ends are looked up once, above
            missing = [node for node in (u, v) if node not in self.dp_devices]
            if missing:
                problems.append(
                    f"link {u!r}-{v!r} is not a social link, so both ends must add DP noise; "
                    f"{', '.join(repr(m) for m in missing)} is not a DP device"
                )
        for k in np.flatnonzero(~np.isfinite(net._delays_at(rows, cols))).tolist():
            u, v = self.edges[k]
            problems.append(
                f"link {u!r}-{v!r} has infinite delay: the physical network cannot connect it"
            )
        if require_connected and net.n_devices > 1:
            graph = self.graph(net.nodes)
            if not nx.is_connected(graph):
                problems.append(
                    f"the topology is disconnected ({nx.number_connected_components(graph)} "
                    "components): every device must be reachable"
                )
        return problems

    def validate(self, net: Network, *, require_connected: bool = False) -> Topology:
        """Raise :class:`InvalidTopologyError` naming the first broken rule.

        Returns self if valid.
        """
        problems = self.violations(net, require_connected=require_connected)
        if problems:
            missing_node = "is not in the network" in problems[0]
            error = NodeNotFoundError if missing_node else InvalidTopologyError
            extra = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
            raise error(f"invalid topology: {problems[0]}{extra}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """``{"edges": [[u, v], ...], "dp_devices": [...]}``, and ``"weights"`` if it has any.

        The weights are a list aligned with ``"edges"``; a topology without
        weights writes no ``"weights"`` key (its file is that of topokit
        before weights).  Node ids and weights are plain Python values (a
        numpy integer id becomes the ``int`` it equals), so
        :func:`json.dumps` accepts the result.

        Examples
        --------
        >>> import json
        >>> t = Topology([(np.int64(0), np.int64(1))], dp_devices=[np.int64(1)])
        >>> t.to_dict()
        {'edges': [[0, 1]], 'dp_devices': [1]}
        >>> Topology.from_dict(json.loads(json.dumps(t.to_dict()))) == t
        True
        """
        data: dict[str, Any] = {
            "edges": [[_plain_node(u), _plain_node(v)] for u, v in self.edges],
            "dp_devices": [_plain_node(n) for n in sorted(self.dp_devices, key=node_sort_key)],
        }
        if self.weights is not None:
            data["weights"] = [float(w) for w in self.weights]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Topology:
        """The topology of a JSON object ``{"edges": [[u, v], ...], "dp_devices": [...]}``.

        An optional ``"weights"`` list (numbers, one per pair of ``"edges"``,
        in the same order) gives link weights; absent or null: Lazy-Metropolis.
        """
        if not isinstance(data, Mapping) or "edges" not in data:
            raise InputFileError(
                "a topology must be a JSON object with 'edges' (list of [u, v]) and 'dp_devices'"
            )
        edges, dp_devices = data["edges"], data.get("dp_devices", [])
        if not isinstance(edges, list):
            raise InputFileError(
                f"the topology's 'edges' must be a list of [u, v] pairs; got {brief(edges)}"
            )
        for k, edge in enumerate(edges):
            if not isinstance(edge, list) or len(edge) != 2:
                raise InputFileError(
                    f"edge {k} of the topology's 'edges' must be a pair [u, v]; got {brief(edge)}"
                )
        if not isinstance(dp_devices, list):
            raise InputFileError(
                f"the topology's 'dp_devices' must be a list of node ids; got {brief(dp_devices)}"
            )
        weights = data.get("weights")
        if weights is not None and not isinstance(weights, list):
            raise InputFileError(
                "the topology's 'weights' must be a list of numbers, one per pair of 'edges'; "
                f"got {brief(weights)}"
            )
        return cls(
            [tuple(_hashable(n) for n in edge) for edge in edges],
            (_hashable(n) for n in dp_devices),
            weights,
        )


def _plain_node(node: Hashable) -> Hashable:
    """``node`` as a plain Python value: numpy scalars made Python scalars, tuples kept.

    A numpy id (``numpy.int64(3)``) equals and hashes as its plain value
    (``3``), so the plain id names the same device; unlike the numpy one,
    :func:`json.dumps` accepts it.  Other ids are returned unchanged.

    Examples
    --------
    >>> _plain_node(np.int64(3)), _plain_node(("a", np.int32(1))), _plain_node("A")
    (3, ('a', 1), 'A')
    """
    if isinstance(node, np.generic):
        return node.item()
    if isinstance(node, tuple):
        return tuple(_plain_node(part) for part in node)
    return node


def _hashable(value: Any) -> Hashable:
    """JSON turns tuple node ids into lists; turn them back."""
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


def _node_id(node: Any, where: str) -> Hashable:
    """``node`` if it can be a node id (hashable, not None); else a clear error."""
    try:
        hash(node)
    except TypeError:
        raise InvalidInputError(
            f"{where}: node ids must be strings, numbers or tuples; got {brief(node)}"
        ) from None
    if node is None:
        raise InvalidInputError(f"{where}: a node id is missing (null)")
    return node


def _device_set(dp_devices: Any) -> frozenset:
    """The DP devices as a frozenset of node ids."""
    try:
        devices = frozenset(check_collection(dp_devices, "dp_devices", "an iterable of node ids"))
    except TypeError:  # an unhashable item
        raise InvalidInputError(
            f"dp_devices: node ids must be strings, numbers or tuples; got {brief(dp_devices)}"
        ) from None
    if None in devices:
        raise InvalidInputError("dp_devices: a node id is missing (null)")
    return devices


def _integer_pairs(edges: Iterable) -> tuple[tuple[tuple[int, int], ...],
                                             Callable[[], list[tuple[int, int]]],
                                             NDArray[np.int64]] | None:
    """``edges`` as :class:`Topology` stores them, when every node id is an integer (Python's
    or numpy's, not bool): the canonical pairs sorted without duplicates, a function
    giving them in the order given and the stored pairs as an (m, 2) array; None otherwise
    (and for any malformed edge, which the general path then names).

    For integers :func:`node_sort_key`'s order is the numbers' order, so numpy's sort of
    the pairs is the same order, found without a Python key per pair.

    >>> ordered, given, _ = _integer_pairs([(3, 1), (0, 2), (1, 3)])
    >>> ordered, given()
    (((0, 2), (1, 3)), [(1, 3), (0, 2), (1, 3)])
    >>> _integer_pairs([(True, 2)]) is None, _integer_pairs([("a", "b")]) is None
    (True, True)
    """
    pairs = _integer_array(edges)
    if pairs is None:
        return None
    loops = pairs[:, 0] == pairs[:, 1]
    if loops.any():
        node = int(pairs[np.argmax(loops), 0])
        raise InvalidTopologyError(f"self-loop on node {node!r}: a link must join two devices")
    low, high = pairs.min(axis=1), pairs.max(axis=1)
    unique = _unique_pairs(low, high)
    ordered = tuple(zip(unique[0].tolist(), unique[1].tolist(), strict=True))
    return (ordered, lambda: list(zip(low.tolist(), high.tolist(), strict=True)),
            np.column_stack(unique))


def _sorted_unique(values: NDArray[np.int64]) -> NDArray[np.int64]:
    """``np.unique(values)`` by one sort (numpy's unique hashes first, which is slower
    for the sorted result wanted here)."""
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) \
        else ordered


def _integer_array(edges: Any) -> NDArray[np.int64] | None:
    """``edges`` as an (m, 2) int64 array when every node id is an integer (Python's or
    numpy's, not bool) and every edge a pair; None otherwise, and for an iterator (read
    once: the general path takes it as it comes).  A collection is read as it iterates
    (a networkx EdgeView, its pairs), as the general path reads it.

    >>> _integer_array([(3, 1), (0, 2)]).tolist(), _integer_array([("3", "1")])
    ([[3, 1], [0, 2]], None)
    """
    if isinstance(edges, np.ndarray):
        if edges.dtype.kind not in "iu" or edges.ndim != 2 or edges.shape[1] != 2:
            return None
        pairs = edges.astype(np.int64)
        # uint64 beyond int64 wraps to negative numbers: not these ids
        return None if edges.dtype.kind == "u" and (pairs < 0).any() else pairs
    if isinstance(edges, (str, bytes)) or not isinstance(edges, Collection):
        return None
    if not isinstance(edges, (list, tuple)):  # a set or a graph's EdgeView: read again later
        edges = list(edges)
    try:
        kinds = set(map(type, itertools.chain.from_iterable(edges)))
    except TypeError:  # an edge that is not a pair
        return None
    if not kinds or not all(kind is int or issubclass(kind, np.integer) for kind in kinds):
        return None
    try:
        pairs = np.array(edges, dtype=np.int64)
    except (ValueError, OverflowError, TypeError):  # ragged, or beyond 64 bits
        return None
    return pairs if pairs.ndim == 2 and pairs.shape[1] == 2 else None


def _unique_pairs(low: NDArray[np.int64], high: NDArray[np.int64]
                  ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The distinct pairs (low, high), sorted by low then high: one key per pair where the
    ids span less than 2^31 (a one-dimensional sort), else numpy's sort of rows."""
    if len(low) == 0:
        return low, high
    base = int(min(low.min(), high.min()))
    span = int(max(low.max(), high.max())) - base + 1
    if span < 2**31:
        keys = _sorted_unique((low - base) * span + (high - base))
        return keys // span + base, keys % span + base
    rows = np.unique(np.column_stack([low, high]), axis=0)
    return rows[:, 0], rows[:, 1]


def _id_table(nodes: Sequence[Hashable]) -> tuple[int, NDArray[np.int64]] | None:
    """(smallest id, position of each id - smallest id, -1 where no node) when every node
    id is an integer, none twice, and they span at most max(2^20, 8 n) values; else None.

    >>> base, positions = _id_table([12, 10, 15])
    >>> base, positions.tolist()
    (10, [1, -1, 0, -1, -1, 2])
    """
    ids = _integer_array([(node, node) for node in nodes]) if len(nodes) else None
    if ids is None:
        return None
    base = int(ids[:, 0].min())
    span = int(ids[:, 0].max()) - base + 1
    if span > max(2**20, 8 * len(nodes)):
        return None
    positions = np.full(span, -1, dtype=np.int64)
    positions[ids[:, 0] - base] = np.arange(len(nodes))
    if np.count_nonzero(positions >= 0) != len(nodes):
        return None  # an id given twice
    return base, positions


def _looked_up(pairs: NDArray[np.int64], table: tuple[int, NDArray[np.int64]]
               ) -> tuple[NDArray[np.int64], NDArray[np.int64]] | None:
    """Rows and columns of ``pairs`` through an :func:`_id_table`; None if an id is
    not in it."""
    base, positions = table
    offsets = pairs - base
    if not ((offsets >= 0) & (offsets < len(positions))).all():
        return None
    ends = positions[offsets]
    if (ends < 0).any():
        return None
    return ends[:, 0].copy(), ends[:, 1].copy()


def _weighted_mixing(n: int, rows: NDArray[np.intp], cols: NDArray[np.intp],
                     weights: Sequence[float]) -> NDArray[np.float64]:
    """W with ``weights`` at the links (rows[k], cols[k]) and self-weights 1 - row sums."""
    matrix = np.zeros((n, n))
    if n == 0:
        return matrix
    values = np.array(weights, dtype=np.float64)
    matrix[rows, cols] = values
    matrix[cols, rows] = values
    # Row sums accumulated in column order, as lazy_metropolis adds them: weights equal
    # to the Lazy-Metropolis ones give its matrix to the bit.  The clip removes a negative
    # round-off (node sums may exceed 1 by 1e-12).
    sums = np.cumsum(matrix, axis=1)[:, -1]
    matrix[np.diag_indices_from(matrix)] = np.maximum(1.0 - sums, 0.0)
    return matrix


def _pair_keys(rows: NDArray[np.int64], cols: NDArray[np.int64], n: int) -> NDArray[np.int64]:
    """One int64 key per unordered pair of positions among ``n`` (n^2 < 2^63)."""
    return np.minimum(rows, cols) * n + np.maximum(rows, cols)


def _pair(edge: Any) -> tuple[Hashable, Hashable]:
    """A link as a pair of node ids (not None)."""
    if isinstance(edge, (str, bytes)):
        raise InvalidTopologyError(f"a link must be a pair of nodes (u, v); got {brief(edge)}")
    try:
        u, v = edge
    except TypeError:
        raise InvalidTopologyError(
            f"a link must be a pair of nodes (u, v); got {brief(edge)}"
        ) from None
    except ValueError:
        raise InvalidTopologyError(
            f"a link must join two nodes; got {brief(tuple(edge))}"
        ) from None
    if u is None or v is None:
        raise InvalidInputError(f"edges: a node id is missing (null) in {brief(edge)}")
    return u, v


#: Link weights of a device may sum to 1 + this (round-off of a solver's weights).
_WEIGHT_SUM_SLACK = 1e-12
_WEIGHTS_EXPECTED = "a mapping (u, v) -> weight or a sequence with one weight per link"


def _weight_value(value: Any, link: tuple[Hashable, Hashable]) -> float:
    """One link weight as a float: a finite number > 0 (booleans and text refused)."""
    number = (int, float, np.integer, np.floating)
    where = f"the weight of link {link[0]!r}-{link[1]!r}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, number):
        raise InvalidInputError(f"{where} must be a number > 0; got {brief(value)}")
    try:
        weight = float(value)
    except OverflowError:  # an integer beyond the float range
        raise InvalidInputError(f"{where} is too large for a float; weights are <= 1") from None
    if not np.isfinite(weight) or weight <= 0.0:
        hint = " (leave the link out rather than give it weight 0)" if weight == 0.0 else ""
        raise InvalidInputError(f"{where} must be a finite number > 0; got {weight!r}{hint}")
    return weight


def _weights_by_link(weights: Any, given: list[tuple[Hashable, Hashable]]) -> dict:
    """``weights`` (mapping or sequence aligned with ``given``) as {canonical pair: value}."""
    if isinstance(weights, Mapping):
        items = []
        for key, value in weights.items():
            items.append((canonical_pair(*_pair(key)), value))
        links = set(given)
        stray = next((pair for pair, _ in items if pair not in links), None)
        if stray is not None:
            raise InvalidTopologyError(
                f"weights names {stray[0]!r}-{stray[1]!r}, which is not a link of the "
                "topology; give weights only to its links"
            )
    else:
        if isinstance(weights, np.ndarray) and weights.ndim != 1:
            raise InvalidInputError(
                f"weights must be one number per link, not an array of shape {weights.shape}; "
                "give a mapping (u, v) -> weight or a sequence aligned with the edges"
            )
        values = list(check_collection(weights, "weights", _WEIGHTS_EXPECTED))
        if len(values) != len(given):
            raise InvalidInputError(
                f"weights must have one entry per edge given ({len(given)}, in the same "
                f"order); got {len(values)}"
            )
        items = list(zip(given, values, strict=True))
    by_link: dict = {}
    for pair, value in items:
        weight = _weight_value(value, pair)
        if by_link.setdefault(pair, weight) != weight:
            raise InvalidTopologyError(
                f"link {pair[0]!r}-{pair[1]!r} is given two weights, {by_link[pair]!r} and "
                f"{weight!r}; give each link one weight"
            )
    return by_link


def _link_weights(weights: Any, given: list[tuple[Hashable, Hashable]],
                  ordered: list[tuple[Hashable, Hashable]]) -> tuple[float, ...]:
    """Checked link weights aligned with ``ordered`` (the stored edges)."""
    by_link = _weights_by_link(weights, given)
    missing = next((pair for pair in ordered if pair not in by_link), None)
    if missing is not None:
        raise InvalidInputError(
            f"weights has no entry for link {missing[0]!r}-{missing[1]!r}; give every link a "
            "weight (or weights=None for Lazy-Metropolis)"
        )
    sums: dict = {}
    for (u, v), weight in by_link.items():
        sums[u] = sums.get(u, 0.0) + weight
        sums[v] = sums.get(v, 0.0) + weight
    heavy = next((node for node, total in sums.items() if total > 1.0 + _WEIGHT_SUM_SLACK), None)
    if heavy is not None:
        raise InvalidTopologyError(
            f"the link weights of device {heavy!r} sum to {sums[heavy]:.10g} > 1, so its "
            "self-weight 1 - sum would be negative; give its links smaller weights"
        )
    return tuple(by_link[pair] for pair in ordered)


# ---------------------------------------------------------------------------------------------
# Class counts: each device's training rows per class
# ---------------------------------------------------------------------------------------------

_COUNT_EXAMPLE = "a list of training rows per class such as [12, 0, 3]"


def _count_row(row: Any, node: Hashable) -> list[float]:
    """One device's class counts as floats; text, booleans and nulls are refused by name."""
    if isinstance(row, (str, bytes, Mapping)) or not isinstance(row, Iterable):
        raise InvalidInputError(
            f"class_counts of node {node!r} must be {_COUNT_EXAMPLE}; got {brief(row)}"
        )
    values = []
    for column, value in enumerate(row):
        number = (int, float, np.integer, np.floating)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, number):
            raise InvalidInputError(
                f"class_counts of node {node!r}: class {column} must be a number of training "
                f"rows; got {brief(value)}"
            )
        try:
            values.append(float(value))
        except OverflowError:  # an integer beyond the float range
            raise InvalidInputError(
                f"class_counts of node {node!r}: class {column} is too large for a float"
            ) from None
    return values


def _count_matrix(class_counts: Any, nodes: Sequence[Hashable]) -> NDArray[np.float64]:
    """``class_counts`` (array-like or mapping node -> row) as an (n, C) float array.

    Every problem is named by the node whose row has it.
    """
    if isinstance(class_counts, Mapping):
        # An unknown node first: a misspelt id is also a missing one, and its name is the clue.
        known = set(nodes)
        unknown = [node for node in class_counts if node not in known]
        if unknown:
            raise NodeNotFoundError(
                f"class_counts names node {unknown[0]!r}, which is not in the network"
            )
        missing = [node for node in nodes if node not in class_counts]
        if missing:
            raise InvalidInputError(
                f"class_counts has no entry for node {missing[0]!r}; give every device's "
                "counts (a mapping node -> counts or an (n_devices, n_classes) array)"
            )
        class_counts = [class_counts[node] for node in nodes]
    if hasattr(class_counts, "to_numpy"):  # a pandas DataFrame iterates over its columns
        class_counts = class_counts.to_numpy()
    if isinstance(class_counts, np.ndarray) and class_counts.dtype.kind in "iuf":
        if class_counts.ndim != 2:
            raise InvalidInputError(
                "class_counts must be 2-dimensional (one row per device in node order, one "
                f"column per class); got shape {class_counts.shape}"
            )
        return np.array(class_counts, dtype=np.float64)
    rows = list(check_collection(class_counts, "class_counts",
                            "an (n_devices, n_classes) array of training rows per class"))
    if len(rows) != len(nodes):
        raise InvalidInputError(
            f"class_counts must have one row per device ({len(nodes)}, in node order); "
            f"got {len(rows)} rows"
        )
    matrix = [_count_row(row, node) for row, node in zip(rows, nodes, strict=True)]
    ragged = [k for k, row in enumerate(matrix) if len(row) != len(matrix[0])]
    if ragged:
        k = ragged[0]
        raise InvalidInputError(
            f"class_counts of node {nodes[k]!r} has {len(matrix[k])} classes but node "
            f"{nodes[0]!r} has {len(matrix[0])}; give every device one count per class "
            "(0 for a class it lacks)"
        )
    return np.array(matrix, dtype=np.float64).reshape(len(nodes), -1)


def class_count_matrix(
    class_counts: Any,
    n_devices: int,
    *,
    nodes: Sequence[Hashable] | None = None,
    integral: bool = False,
) -> NDArray[np.float64]:
    """Class counts of shape (n_devices, n_classes): finite, >= 0, no device without data.

    Rows are devices in node order.  With ``nodes`` (a network's node ids)
    a mapping node -> row is accepted too and every message names the node;
    ``integral`` also requires whole numbers.  Without them this is
    :func:`topokit.design.features.check_class_counts`.  What
    :meth:`Network.with_class_counts` and the network files' ``class_counts``
    are checked by.

    Examples
    --------
    >>> class_count_matrix({"b": [0, 2], "a": [3, 1]}, 2, nodes=["a", "b"])
    array([[3., 1.],
           [0., 2.]])
    >>> class_count_matrix([[1, 0], [0, 0]], 2)
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: class_counts row 1 is all zero: every device needs some data
    """
    if nodes is None:
        if isinstance(class_counts, Mapping):  # no node ids here to check its keys against
            raise InvalidInputError(
                "class_counts must be an (n_devices, n_classes) array, rows in node order "
                "(net.nodes); got a mapping node -> counts: set it on the network with "
                "net.with_class_counts(mapping), which names any unknown node, and leave "
                "class_counts out"
            )
        counts = check_finite_array(class_counts, "class_counts", ndim=2)
    else:
        counts = _count_matrix(class_counts, nodes)
    if counts.shape[0] != n_devices or counts.shape[1] < 1:
        raise InvalidInputError(
            f"class_counts must have shape (n_devices, n_classes) = ({n_devices}, C) with one "
            f"row per device in node order; got shape {counts.shape}"
        )

    def where(row: int) -> str:
        return f"device row {row}" if nodes is None else f"node {nodes[row]!r}"

    if nodes is not None and not np.all(np.isfinite(counts)):
        row, column = np.argwhere(~np.isfinite(counts))[0]
        raise InvalidInputError(
            f"class_counts of {where(row)} has {counts[row, column]} in class {column}; give "
            "finite numbers of training rows"
        )
    if (counts < 0).any():
        row, column = np.argwhere(counts < 0)[0]
        raise InvalidInputError(
            f"class_counts must be >= 0; {where(row)} has {counts[row, column]:g} "
            f"in class {column}"
        )
    if integral and (counts != np.floor(counts)).any():
        row, column = np.argwhere(counts != np.floor(counts))[0]
        raise InvalidInputError(
            f"class_counts must be whole numbers of training rows; {where(row)} has "
            f"{counts[row, column]:g} in class {column}"
        )
    empty = np.flatnonzero(counts.sum(axis=1) == 0)
    if empty.size:
        label = f"row {empty[0]}" if nodes is None else f"of node {nodes[empty[0]]!r}"
        raise InvalidInputError(
            f"class_counts {label} is all zero: every device needs some data"
        )
    return counts


class Network:
    """A DeepPrivacy network: social graph, computation and communication times.

    Parameters
    ----------
    social : networkx.Graph
        The social graph G_s; node ids are any hashables.  Its node order,
        ``list(social)``, is the order of every array.
    compute_time : mapping or array-like of shape (n,)
        Computation time r_i of each device in seconds per training round;
        numbers or device classes ("rpi2", "rpi3", "rpi4").
    delay : array-like of shape (n, n)
        Communication time d_ij in seconds per round; symmetric, ``inf`` where
        the physical network cannot connect the pair.
    positions : array-like of shape (n, 2), optional
        Device positions in metres (kept for plots and the file format).
    topology : Topology, optional
        A topology stored with the network (the toy example keeps Fig. 2(b)).
    name : str, optional
    physical_model : mapping, optional
        The settings of the physical model the delays came from (kept for the
        file format).
    class_counts : array-like of shape (n, n_classes) or mapping node -> counts, optional
        Training rows of each class on each device (whole numbers >= 0, at
        least one row per device), rows in node order.  The predictor's
        heterogeneity features use them
        (:func:`topokit.design.topology_features`);
        None (default): the data distribution is unknown and IID is assumed.
        Stored as a read-only float array, ``class_counts``.

    Raises
    ------
    InvalidInputError
        Naming the problem: a delay matrix of the wrong shape, NaN, negative
        or asymmetric; class counts with a row per device missing, rows of
        different lengths, NaN / inf, negative or fractional counts, or a
        device with no data (the message names the node).

    Warns
    -----
    UnusableSocialLinksWarning
        Once per network (not again for its copies :meth:`with_topology` and
        :meth:`with_class_counts`): social links with infinite delay, which
        no topology can use; :attr:`unusable_social_links` lists them.

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> net = Network(nx.path_graph(3), [10, 10, 10], np.full((3, 3), 5.0))
    >>> float(net.link_times[0, 1])
    15.0
    >>> net.with_class_counts([[5, 0], [2, 3], [0, 5]]).class_counts.sum(axis=1)
    array([5., 5., 5.])
    """

    def __init__(
        self,
        social: nx.Graph,
        compute_time: Mapping | ArrayLike,
        delay: ArrayLike,
        *,
        positions: ArrayLike | None = None,
        topology: Topology | None = None,
        name: str | None = None,
        physical_model: Mapping[str, Any] | None = None,
        class_counts: ArrayLike | Mapping | None = None,
    ):
        if not isinstance(social, nx.Graph) or social.is_directed() or social.is_multigraph():
            raise InvalidInputError("social must be an undirected networkx.Graph")
        if social.number_of_nodes() == 0:
            raise InvalidInputError("the social graph has no nodes")
        loops = list(nx.selfloop_edges(social))
        if loops:
            raise InvalidInputError(f"the social graph has a self-loop on {loops[0][0]!r}")
        self.social = social
        self.nodes: list[Hashable] = list(social)
        self.index: dict[Hashable, int] = {node: i for i, node in enumerate(self.nodes)}
        n = len(self.nodes)
        self.compute_time = physical.compute_seconds(compute_time, self.nodes)
        # Delays of the physical model stay its settings until read (:attr:`delay`): a
        # network file of them stores none, and n^2 of them may not fit in memory.
        self._delay_model = delay if isinstance(delay, physical._ModelDelays) else None
        self._delay_matrix = (None if self._delay_model is not None
                              else self._check_delay(delay, n))
        if self._delay_model is not None and self._delay_model.n != n:
            raise InvalidInputError(
                f"delay must have shape ({n}, {n}); got {(self._delay_model.n,) * 2}")
        self._check_link_times()
        self.positions = None if positions is None else self._check_positions(positions, n)
        self.name = name
        self.physical_model = dict(physical_model) if physical_model else None
        self.class_counts = None if class_counts is None else self._check_counts(class_counts)
        self.topology = None if topology is None else topology.validate(self)
        if not getattr(self, "_announced", False):  # a copy's links were announced already
            self._warn_unusable_social_links()

    @property
    def delay(self) -> NDArray[np.float64]:
        """Communication time d_ij of every pair (read-only, node order, ``inf``: no link).

        A network built from positions (:meth:`from_positions`, a network
        file that stores no delays) computes them from its physical model when
        first read, then keeps them: the same floats, bit for bit.

        Examples
        --------
        >>> import networkx as nx
        >>> net = Network.from_positions(nx.path_graph(3), [[0, 0], [50, 0], [500, 0]])
        >>> net.delay.round(3).tolist()
        [[0.0, 0.443, 37.6], [0.443, 0.0, 37.6], [37.6, 37.6, 0.0]]
        """
        if self._delay_matrix is None:
            matrix = self._delay_model.matrix()
            matrix.flags.writeable = False
            self._delay_matrix = matrix
        return self._delay_matrix

    def _delays_at(self, rows: NDArray[np.int64], cols: NDArray[np.int64]
                   ) -> NDArray[np.float64]:
        """``delay[rows, cols]``, without computing the matrix when it is not yet."""
        if self._delay_matrix is None:
            return self._delay_model.at(rows, cols)
        return self._delay_matrix[rows, cols]

    @property
    def unusable_social_links(self) -> list[tuple[Hashable, Hashable]]:
        """The social links with infinite delay, which the physical network cannot carry.

        No topology may use them (NDLF and every design leave them out).  Each
        pair in a canonical order, sorted as :attr:`Topology.edges`.

        Examples
        --------
        >>> import networkx as nx, numpy as np
        >>> delay = np.full((3, 3), 5.0)
        >>> delay[0, 2] = delay[2, 0] = np.inf
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     net = Network(nx.complete_graph(3), [10, 10, 10], delay)
        >>> net.unusable_social_links
        [(0, 2)]
        """
        rows, cols = self._social_ends()
        unusable = np.flatnonzero(~np.isfinite(self._delays_at(rows, cols))).tolist()
        pairs = {canonical_pair(self.nodes[rows[k]], self.nodes[cols[k]]) for k in unusable}
        return sorted(pairs, key=lambda p: (node_sort_key(p[0]), node_sort_key(p[1])))

    def _warn_unusable_social_links(self) -> None:
        """Say once, as the network is built, that its infinite-delay social links are dropped."""
        links = self.unusable_social_links
        if not links:
            return
        shown = ", ".join(f"{u}-{v}" for u, v in links[:_SHOWN_LINKS])
        more = f", and {len(links) - _SHOWN_LINKS} more" if len(links) > _SHOWN_LINKS else ""
        warnings.warn(
            f"{len(links)} social link{'s' if len(links) > 1 else ''} "
            f"{'have' if len(links) > 1 else 'has'} infinite delay and cannot be used "
            f"({shown}{more}); NDLF and every design leave them out; give them a finite delay "
            "if the devices can talk",
            UnusableSocialLinksWarning, stacklevel=_caller_stacklevel())

    def _check_counts(self, class_counts: ArrayLike | Mapping) -> NDArray[np.float64]:
        counts = class_count_matrix(class_counts, self.n_devices, nodes=self.nodes,
                                     integral=True)
        counts.flags.writeable = False
        return counts

    @staticmethod
    def _check_delay(delay: ArrayLike, n: int) -> NDArray[np.float64]:
        try:
            matrix = np.array(delay, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidInputError("delay must be a numeric (n, n) array") from None
        if matrix.shape != (n, n):
            raise InvalidInputError(f"delay must have shape ({n}, {n}); got {matrix.shape}")
        if np.isnan(matrix).any():
            raise InvalidInputError("delay contains NaN; use inf for pairs that cannot connect")
        if (matrix < 0).any():
            raise InvalidInputError("delay has negative entries; times must be >= 0")
        if not np.array_equal(matrix, matrix.T):
            raise InvalidInputError("delay must be symmetric: d_ij is the time of the link i-j")
        np.fill_diagonal(matrix, 0.0)
        matrix.flags.writeable = False
        return matrix

    def _check_link_times(self) -> None:
        """Refuse times so large that d_ij + max(r_i, r_j) overflows (it would read as no link)."""
        with np.errstate(over="ignore"):
            slowest = self.compute_time.max(initial=0.0)
            # The model's bound on its delays settles it without them, unless it overflows.
            if (self._delay_matrix is None
                    and np.isfinite(self._delay_model.largest() + slowest)):
                return
            finite = self.delay[np.isfinite(self.delay)]
            largest = finite.max(initial=0.0) + slowest
        if not np.isfinite(largest):
            raise InvalidInputError(
                "delay and compute_time are too large: d_ij + max(r_i, r_j) overflows to "
                "infinity; give times in seconds (null or inf only for pairs that cannot connect)"
            )

    @staticmethod
    def _check_positions(positions: ArrayLike, n: int) -> NDArray[np.float64]:
        try:
            array = np.array(positions, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"positions must be a numeric ({n}, 2) array of metres; got {brief(positions)}"
            ) from None
        if array.shape != (n, 2) or not np.all(np.isfinite(array)):
            raise InvalidInputError(f"positions must be a finite ({n}, 2) array; got {array.shape}")
        array.flags.writeable = False
        return array

    @classmethod
    def from_positions(
        cls,
        social: nx.Graph,
        positions: Mapping | ArrayLike,
        compute_time: Mapping | ArrayLike | str = "rpi3",
        *,
        model_size_mb: float = physical.REFERENCE_MODEL_MB,
        lte: str | Sequence[str] | Mapping = "cat-m1",
        wifi_range_m: float = physical.WIFI_RANGE_M,
        max_range_m: float | None = None,
        name: str | None = None,
        topology: Topology | None = None,
        class_counts: ArrayLike | Mapping | None = None,
    ) -> Network:
        """Build a network whose delays follow the paper's physical model (Sec. VI-A).

        Pairs closer than ``wifi_range_m`` use Wi-Fi at 72.2 Mb/s; others use
        LTE-M at the slower end's category (Cat-M1 0.851 Mb/s, Cat-M2 3.404 Mb/s,
        our reading of Table I; see :mod:`topokit.physical`).  The network keeps
        the positions and these settings and computes its n x n delays when
        :attr:`delay` is first read (bit for bit
        :func:`~topokit.network.physical.pairwise_delays`); its checks, and
        writing its file, read the delays of its social links alone.

        Parameters
        ----------
        positions : mapping node -> (x, y) or array-like of shape (n, 2)
            Positions in metres.
        lte : str, sequence or mapping node -> str
            LTE-M category of every device ("cat-m1" or "cat-m2").
        class_counts : array-like or mapping, optional
            Each device's training rows per class (see :class:`Network`).
        """
        nodes = list(social)
        if isinstance(positions, Mapping):
            missing = [node for node in nodes if node not in positions]
            if missing:
                raise InvalidInputError(f"positions has no entry for node {missing[0]!r}")
            positions = [positions[node] for node in nodes]
        coords = cls._check_positions(positions, len(nodes))
        categories = [lte[node] for node in nodes] if isinstance(lte, Mapping) else lte
        delay = physical._ModelDelays(  # computed when first read (:attr:`delay`)
            coords,
            model_size_mb=model_size_mb,
            lte=categories,
            wifi_range_m=wifi_range_m,
            max_range_m=max_range_m,
        )
        model = {
            "model_size_mb": model_size_mb,
            "lte": categories if isinstance(categories, str) else list(categories),
            "wifi_range_m": wifi_range_m,
            "max_range_m": max_range_m,
        }
        return cls(
            social, compute_time, delay, positions=coords, name=name, topology=topology,
            physical_model=model, class_counts=class_counts,
        )

    @property
    def n_devices(self) -> int:
        return len(self.nodes)

    @property
    def link_times(self) -> NDArray[np.float64]:
        """d_ij + max(r_i, r_j) for every pair (the terms of eq. 8)."""
        r = self.compute_time
        return self.delay + np.maximum(r[:, None], r[None, :])

    @property
    def social_adjacency(self) -> NDArray[np.float64]:
        """0/1 adjacency of G_s in node order."""
        adjacency = np.zeros((self.n_devices, self.n_devices))
        rows, cols = self._social_ends()
        adjacency[rows, cols] = adjacency[cols, rows] = 1.0
        return adjacency

    def _link_ends(self, links: Topology | Sequence[Sequence[Hashable]]
                   ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Row and column (positions in :attr:`nodes`) of each link of a topology, or pair
        of a sequence; KeyError for a node not in the network.  Integer ids are looked up
        by numpy (a million links in a fraction of a second), others through
        :attr:`index`."""
        if isinstance(links, Topology):
            edges, pairs = links.edges, links._integer_edges()
        else:
            edges = links
            pairs = _integer_array(edges) if len(edges) else None
        table = self._integer_id_table() if pairs is not None else None
        ends = None if table is None else _looked_up(pairs, table)
        if ends is not None:
            return ends
        index, count = self.index, len(edges)
        rows = np.fromiter((index[u] for u, _ in edges), dtype=np.int64, count=count)
        cols = np.fromiter((index[v] for _, v in edges), dtype=np.int64, count=count)
        return rows, cols

    def _integer_id_table(self) -> tuple[int, NDArray[np.int64]] | None:
        """(smallest id, position of id - smallest id, -1 where no node) when every node id
        is an integer and they span at most max(2^20, 8 n) values, else None; once."""
        if not hasattr(self, "_node_id_table"):
            self._node_id_table = _id_table(self.nodes)
        return self._node_id_table

    def _social_cache(self) -> dict[str, Any]:
        """The social links as index arrays and sorted pair keys, computed once per state
        of :attr:`social` (a graph changed in place, by its link count, is read again)."""
        state = (id(self.social), self.social.number_of_edges())
        cache = getattr(self, "_social_arrays", None)
        if cache is None or cache["state"] != state:
            rows, cols = self._link_ends(list(self.social.edges))
            cache = {"state": state, "ends": (rows, cols),
                     "keys": _sorted_unique(_pair_keys(rows, cols, self.n_devices))}
            self._social_arrays = cache
        return cache

    def _social_ends(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Row and column of every social link (each once)."""
        return self._social_cache()["ends"]

    def _is_social(self, rows: NDArray[np.int64], cols: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether each pair (rows[k], cols[k]) is a social link."""
        social = self._social_cache()["keys"]
        keys = _pair_keys(rows, cols, self.n_devices)
        if len(social) == 0:
            return np.zeros(len(keys), dtype=bool)
        at = np.minimum(np.searchsorted(social, keys), len(social) - 1)
        return social[at] == keys

    def require_connected(self) -> Network:
        """Raise :class:`~topokit.errors.DisconnectedGraphError` if G_s is disconnected."""
        check_connected(self.social, "the social graph")
        return self

    @property
    def n_classes(self) -> int | None:
        """Columns of :attr:`class_counts`; None when the class counts are unknown."""
        return None if self.class_counts is None else int(self.class_counts.shape[1])

    def with_topology(self, topology: Topology | None) -> Network:
        """A copy of this network storing ``topology`` (class counts carried)."""
        return self._copy(topology=topology, class_counts=self.class_counts)

    def with_class_counts(self, class_counts: ArrayLike | Mapping | None) -> Network:
        """A copy of this network with each device's class counts (None: unknown, IID).

        Parameters
        ----------
        class_counts : array-like of shape (n_devices, n_classes), mapping or None
            Training rows per class of every device, rows in node order (or
            a mapping node -> counts); validated as in :class:`Network`.

        Examples
        --------
        >>> from topokit import load_example
        >>> net = load_example("toy").with_class_counts([[3, 1]] * 6)
        >>> net.n_classes, net.with_class_counts(None).class_counts is None
        (2, True)
        """
        return self._copy(topology=self.topology, class_counts=class_counts)

    def _copy(self, *, topology: Topology | None, class_counts: Any) -> Network:
        copy = Network.__new__(Network)
        # The same social links and delays: their warning was given when this one was built.
        copy._announced = True
        copy.__init__(
            self.social, self.compute_time,
            self._delay_matrix if self._delay_model is None else self._delay_model,
            positions=self.positions, topology=topology, name=self.name,
            physical_model=self.physical_model, class_counts=class_counts,
        )
        if copy._delay_matrix is None:  # the same model: its delays once computed, shared
            copy._delay_matrix = self._delay_matrix
        return copy

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        classes = "" if self.class_counts is None else f", {self.n_classes} classes"
        return (
            f"Network({label}{self.n_devices} devices, "
            f"{self.social.number_of_edges()} social links{classes})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Network):
            return NotImplemented
        return (
            self.nodes == other.nodes
            and set(map(frozenset, self.social.edges)) == set(map(frozenset, other.social.edges))
            and np.array_equal(self.compute_time, other.compute_time)
            and self._same_delays(other)
            and _optional_equal(self.positions, other.positions)
            and _optional_equal(self.class_counts, other.class_counts)
            and self.topology == other.topology
        )

    def _same_delays(self, other: Network) -> bool:
        """Whether the delays are equal; the same model's without computing them."""
        mine, theirs = self._delay_model, other._delay_model
        if mine is not None and theirs is not None and mine.same(theirs):
            return True
        return np.array_equal(self.delay, other.delay)

    __hash__ = None  # mutable graph inside

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A network pickled before its delays could wait until first read kept them as
        # "delay": it unpickles as a network of given delays.
        if "delay" in state:
            state = dict(state)
            state["_delay_matrix"] = state.pop("delay")
            state.setdefault("_delay_model", None)
        self.__dict__.update(state)


#: Infinite-delay social links a warning names before it says "and N more".
_SHOWN_LINKS = 3
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _caller_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` in the caller of this function that points
    at the user's line: the first frame outside topokit (a network is built through
    several layers: the constructor, :meth:`Network.from_positions`, the file readers)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def _optional_equal(a: NDArray | None, b: NDArray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


# ---------------------------------------------------------------------------------------------
# File format
# ---------------------------------------------------------------------------------------------
