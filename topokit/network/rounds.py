"""Round generators that a schedule file can rebuild: the rounds of epidemic learning.

A generated :class:`~topokit.network.TopologySchedule` calls a function
``(t, rng) -> Topology`` once per round.  An arbitrary Python function cannot
be written to a file, but the generators here are data (the devices, their
usable peers and a few parameters): :meth:`TopologySchedule.save
<topokit.network.TopologySchedule.save>` writes their
:meth:`~EpidemicRounds.spec`, and :func:`~topokit.network.load_schedule`
rebuilds them over the network they were made for
(:meth:`~EpidemicRounds.from_spec`).  :func:`topokit.design.peers.epidemic`
builds the schedule of :class:`EpidemicRounds` over a network.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_int
from .._io import jsonable
from ..errors import InvalidInputError
from .core import Network, Topology, canonical_pair

__all__ = ["EpidemicRounds"]


@dataclass(frozen=True, repr=False)
class EpidemicRounds:
    """The rounds of :func:`~topokit.design.peers.epidemic`: ``rounds(t, rng)`` draws round t.

    Every device draws ``s`` distinct peers uniformly among its usable peers
    (finite delay) and the round links it to them, with Metropolis-Hastings
    weights 1 / (1 + max(d_u, d_v)).

    Attributes
    ----------
    nodes : tuple
        The devices, in node order.
    peers : tuple of tuple of int
        Each device's usable peers (indices into ``nodes``).
    s : int
        Peers each device sends to per round.

    Examples
    --------
    >>> import networkx as nx
    >>> net = Network(nx.path_graph(4), [1.0] * 4, np.ones((4, 4)))
    >>> rounds = EpidemicRounds.over(net, 1)
    >>> rounds.spec()["kind"], EpidemicRounds.from_spec(rounds.spec(), net) == rounds
    ('epidemic', True)
    """

    nodes: tuple
    peers: tuple[tuple[int, ...], ...]
    s: int

    #: The generator's kind in a schedule file (the ``"kind"`` of :meth:`spec`).
    kind = "epidemic"

    @classmethod
    def over(cls, net: Network, s: int) -> EpidemicRounds:
        """The rounds over ``net``'s usable pairs; refuses an ``s`` a device cannot reach."""
        s = check_int(s, "s", low=1)
        usable = np.isfinite(net.delay)
        np.fill_diagonal(usable, False)
        peers = tuple(tuple(int(j) for j in np.flatnonzero(row)) for row in usable)
        fewest = min(range(net.n_devices), key=lambda i: len(peers[i]))
        if len(peers[fewest]) < s:
            raise InvalidInputError(
                f"epidemic learning with s={s} sends to {s} peers a round, but device "
                f"{net.nodes[fewest]!r} can reach only {len(peers[fewest])} (finite delay); use "
                f"s <= {len(peers[fewest])}"
            )
        return cls(tuple(net.nodes), peers, s)

    def spec(self) -> dict[str, Any]:
        """What a schedule file stores of the rounds: the kind, ``s``, the number of devices
        and a digest of the devices and their usable peers (so that the file is rebuilt
        over the network it was made for, and refused over another)."""
        return {"kind": self.kind, "s": self.s, "devices": len(self.nodes),
                "usable_links": self._digest()}

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], net: Network) -> EpidemicRounds:
        """The rounds a :meth:`spec` describes, rebuilt over ``net``.

        Raises
        ------
        InvalidInputError
            ``s`` is not a positive integer, or ``net``'s devices or usable links are not
            those the rounds were made over.
        """
        if type(spec.get("s")) is not int or spec["s"] < 1:
            raise InvalidInputError(f"the epidemic generator's 's' must be a positive integer; "
                                    f"got {spec.get('s')!r}")
        rounds = cls.over(net, spec["s"])
        if rounds._digest() != spec.get("usable_links"):
            raise InvalidInputError(
                f"the epidemic schedule was made over another network (its "
                f"{spec.get('devices')!r} devices and their usable links are not those of this "
                f"one, of {net.n_devices}): load it with the network it was made for"
            )
        return rounds

    def __call__(self, t: int, rng: np.random.Generator) -> Topology:
        pairs = set()
        for i, candidates in enumerate(self.peers):  # node order: one draw sequence per seed
            for k in rng.choice(len(candidates), size=self.s, replace=False):
                pairs.add(canonical_pair(self.nodes[i], self.nodes[candidates[k]]))
        return Topology(pairs, (), _metropolis_weights(pairs))

    def __repr__(self) -> str:
        return f"epidemic(s={self.s})"

    def _digest(self) -> str:
        """The first 16 hex digits of the SHA-256 of the devices and their usable peers."""
        text = json.dumps(jsonable([list(self.nodes), self.peers]), separators=(",", ":"),
                          default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _metropolis_weights(pairs: set) -> dict:
    """Metropolis-Hastings weights 1 / (1 + max(d_u, d_v)) of the links ``pairs``."""
    degree: dict[Hashable, int] = {}
    for u, v in pairs:
        degree[u] = degree.get(u, 0) + 1
        degree[v] = degree.get(v, 0) + 1
    return {(u, v): 1.0 / (1 + max(degree[u], degree[v])) for u, v in pairs}
