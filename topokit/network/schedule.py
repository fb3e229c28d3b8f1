"""Time-varying communication topologies: which links every training round uses.

A :class:`TopologySchedule` gives round t of decentralized training its own
topology, and so its own mixing matrix W_t: the time-varying graphs of the
field (Ying et al.'s one-peer exponential graph, NeurIPS 2021; Takezawa et
al.'s Base-(k+1) graphs, NeurIPS 2023; de Vos et al.'s epidemic learning,
NeurIPS 2023) are schedules, built over a network by
:mod:`topokit.design.peers`.  A schedule is either

- **cyclic**: a finite list of topologies used in turn, round t training over
  ``topologies[t % period]``; or
- **generated**: a function ``generator(t, rng) -> Topology`` and a seed, round
  t drawing from its own generator ``keyed_rng(seed, t)``, so that the same
  seed gives the same sequence whatever rounds are asked for and in which
  order.

DeepPrivacy's rules (Ching et al., Sec. IV) hold in every round: a link that
is not a social link joins two DP devices, and every link has a finite delay.
The DP devices are **one set for the whole schedule**, and each of them adds
noise in every round: a device that ever talks to a stranger protects every
message it sends, which is the safe reading (a per-round set would let a
device's clear messages of one round meet the same stranger's neighbours of
another).  The training core, :func:`topokit.training.train`, accepts a
schedule wherever it accepts a :class:`~topokit.network.Topology`.

The time of a round is the paper's local iterate L (eq. 8) of that round's
topology, the slowest of the links it uses; the time of T rounds is the sum of
their times (:meth:`TopologySchedule.physical_time`).

A schedule is saved to a JSON file by :meth:`TopologySchedule.save` and read
back by :func:`load_schedule`: a cyclic one whole (its topologies, weights and
DP devices), a generated one as its generator's spec, seed and window, rebuilt
over its network; only generators that are data can be
(:mod:`topokit.network.rounds`).  The command line's validate trains a
schedule file given to its ``-t`` as ``NAME=FILE``.
"""

from __future__ import annotations

import json
import os
import types
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from .._checks import check_int
from .._io import atomic_write_text, read_json_file
from .._random import SeedLike, int_seed, keyed_rng
from ..errors import InputFileError, InvalidInputError, InvalidTopologyError, NodeNotFoundError
from .core import Network, Topology, _device_set, node_sort_key
from .quantities import local_iterate
from .rounds import EpidemicRounds

__all__ = ["TopologySchedule", "load_schedule", "DEFAULT_WINDOW", "RoundGenerator",
           "SCHEDULE_FORMAT"]

#: Rounds of a generated schedule that its checks cover when no ``window`` is given: the
#: union of their links must connect the devices, and their DP devices are the schedule's.
DEFAULT_WINDOW = 32

#: A generated schedule's function: round index and that round's generator -> its topology.
RoundGenerator = Callable[[int, np.random.Generator], Topology]

#: The version of the schedule files :meth:`TopologySchedule.save` writes (their
#: ``"topokit_schedule"`` key) and :func:`load_schedule` reads.
SCHEDULE_FORMAT = 1

#: The generators a schedule file can rebuild, by the ``"kind"`` of their spec.
_REBUILDABLE: dict[str, type] = {EpidemicRounds.kind: EpidemicRounds}


class TopologySchedule:
    """A time-varying topology: the links, weights and DP devices of every training round.

    Parameters
    ----------
    topologies : sequence of Topology, or callable ``(t, rng) -> Topology``
        A non-empty list used cyclically (round t uses ``topologies[t %
        period]``), or a generator called once per round with the round index
        t = 0, 1, ... and a :class:`numpy.random.Generator` of its own.
    seed : int >= 0, Generator or None
        Seeds a generated schedule: round t draws from
        ``keyed_rng(seed, t)``, so one seed gives one sequence.  None draws a
        seed once (kept, so the schedule's rounds stay fixed).  Not for a list
        of topologies.
    dp_devices : iterable of node ids, optional
        Devices that add DP noise in every round, besides those the rounds'
        topologies name.  A generated schedule's DP devices are fixed by its
        first ``window`` rounds and this argument, so give here every device a
        later round may link to a stranger.
    window : int >= 1, optional
        The rounds of a generated schedule its checks cover (default
        :data:`DEFAULT_WINDOW`): the union of their links must connect the
        devices they link.  A cyclic schedule's window is its period.
    name : str, optional
        What the schedule is called in reports (``"one-peer-exponential"``).

    Raises
    ------
    InvalidInputError
        An empty list, an item or a generated round that is not a Topology,
        a seed or window given where they mean nothing, a bad seed or window.
    InvalidTopologyError
        The union of the window's links leaves the devices they link apart.

    Notes
    -----
    :meth:`topology_at` returns a round's topology as trained: its own links
    and weights, and the schedule's DP devices (:attr:`dp_devices`, the union
    of those the rounds name and ``dp_devices``; see the module notes).
    :meth:`validate` checks every round of the window, and as many more as
    asked, against a network with :meth:`Topology.violations`; the training
    core checks every round it trains over.  :meth:`save` writes the schedule
    to a JSON file and :func:`load_schedule` reads it back.

    Examples
    --------
    Two matchings of four devices, used in turn: each round averages pairs,
    and two rounds give every device the exact average (a hypercube).

    >>> first = Topology([(0, 1), (2, 3)], weights=[0.5, 0.5])
    >>> second = Topology([(0, 2), (1, 3)], weights=[0.5, 0.5])
    >>> schedule = TopologySchedule([first, second], name="hypercube")
    >>> schedule.period, schedule.topology_at(5) == second
    (2, True)
    >>> product = schedule.mixing_at(1, range(4)) @ schedule.mixing_at(0, range(4))
    >>> bool(np.allclose(product, 0.25))
    True

    A generated schedule draws every round from its seed:

    >>> def one_random_link(t, rng):
    ...     u, v = rng.choice(4, size=2, replace=False)
    ...     return Topology([(int(u), int(v))])
    >>> drawn = TopologySchedule(one_random_link, seed=7, window=40)
    >>> drawn.topology_at(3) == TopologySchedule(one_random_link, seed=7, window=40).topology_at(3)
    True
    """

    def __init__(
        self,
        topologies: Sequence[Topology] | RoundGenerator,
        *,
        seed: SeedLike = None,
        dp_devices: Iterable[Hashable] = (),
        window: int | None = None,
        name: str | None = None,
    ):
        if name is not None and not isinstance(name, str):
            raise InvalidInputError(f"name must be a string; got {type(name).__name__}")
        self._name = name
        if callable(topologies):
            self._generator: RoundGenerator | None = topologies
            self._seed: int | None = int_seed(seed)
            self._window = DEFAULT_WINDOW if window is None else check_int(window, "window",
                                                                           low=1)
            drawn = [self._draw(t) for t in range(self._window)]
        else:
            self._generator, self._seed = None, None
            _refuse_for_a_list(seed=seed, window=window)
            drawn = _checked_list(topologies)
            self._window = len(drawn)
        given = _device_set(dp_devices)
        self._dp = frozenset(given.union(*(t.dp_devices for t in drawn)))
        # A cyclic schedule's rounds are kept as trained (with the schedule's DP devices).
        self._rounds = None if self._generator else tuple(self._as_trained(t) for t in drawn)
        _check_union_connected(drawn, self._window)

    # -- what the schedule is ----------------------------------------------------------------

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def dp_devices(self) -> frozenset:
        """The devices that add DP noise in every round."""
        return self._dp

    @property
    def period(self) -> int | None:
        """The number of topologies a cyclic schedule repeats; None for a generated one."""
        return None if self._generator else self._window

    @property
    def window(self) -> int:
        """The rounds the schedule's checks cover: its period, or a generated one's window."""
        return self._window

    @property
    def seed(self) -> int | None:
        """A generated schedule's seed; None for a cyclic one."""
        return self._seed

    @property
    def generator(self) -> RoundGenerator | None:
        return self._generator

    @property
    def is_generated(self) -> bool:
        return self._generator is not None

    # -- the rounds ---------------------------------------------------------------------------

    def topology_at(self, t: int) -> Topology:
        """The topology of round ``t`` (0, 1, ...) as trained: its links and weights, and the
        schedule's DP devices."""
        t = check_int(t, "round", low=0)
        if self._rounds is not None:
            return self._rounds[t % len(self._rounds)]
        return self._as_trained(self._draw(t))

    def mixing_at(self, t: int, nodes: Iterable[Hashable]) -> NDArray[np.float64]:
        """The mixing matrix W_t of round ``t`` on ``nodes`` (:meth:`Topology.mixing_matrix`)."""
        return self.topology_at(t).mixing_matrix(nodes)

    def union(self, n_rounds: int | None = None) -> Topology:
        """Every link used in rounds 0 to ``n_rounds - 1`` (default: the window), without
        weights, with the schedule's DP devices.

        >>> schedule = TopologySchedule([Topology([(0, 1)]), Topology([(1, 2)])])
        >>> schedule.union().edges, schedule.union(1).edges
        (((0, 1), (1, 2)), ((0, 1),))
        """
        if n_rounds is None:
            n_rounds = self._window
        n_rounds = check_int(n_rounds, "n_rounds", low=0)
        if self._rounds is not None:  # later rounds repeat the period
            n_rounds = min(n_rounds, len(self._rounds))
        edges = {edge for t in range(n_rounds) for edge in self.topology_at(t).edges}
        return Topology(edges, self._dp)

    def round_times(self, net: Network, n_rounds: int) -> NDArray[np.float64]:
        """The time of each of rounds 0 to ``n_rounds - 1`` on ``net``, in seconds: the local
        iterate L (DeepPrivacy eq. 8) of the round's topology, the slowest link it uses."""
        n_rounds = check_int(n_rounds, "n_rounds", low=0)
        if self._rounds is not None:  # the period's times, repeated
            period = [local_iterate(net, topology) for topology in self._rounds]
            return np.resize(np.array(period, dtype=np.float64), n_rounds)
        return np.array([local_iterate(net, self.topology_at(t)) for t in range(n_rounds)],
                        dtype=np.float64)

    def physical_time(self, net: Network, n_rounds: int) -> float:
        """Seconds that rounds 0 to ``n_rounds - 1`` take on ``net``: the sum of their times.

        >>> import networkx as nx
        >>> net = Network(nx.path_graph(3), [1.0, 1.0, 1.0], [[0, 2, 9], [2, 0, 4], [9, 4, 0]])
        >>> schedule = TopologySchedule([Topology([(0, 1)]), Topology([(1, 2)])])
        >>> schedule.physical_time(net, 3)   # (2 + 1) + (4 + 1) + (2 + 1)
        11.0
        """
        return float(self.round_times(net, n_rounds).sum())

    # -- the rules on a network -------------------------------------------------------------

    def round_on(self, net: Network, t: int) -> Topology:
        """Round ``t``'s topology, checked against ``net``: InvalidTopologyError naming the
        round on the first DeepPrivacy rule it breaks."""
        topology = self.topology_at(t)
        problems = topology.violations(net)
        if problems:
            raise _error(problems[0])(f"invalid schedule: round {t}: {problems[0]}"
                                      + _more(len(problems)))
        return topology

    def violations(self, net: Network, n_rounds: int | None = None) -> list[str]:
        """Every rule the schedule breaks on ``net`` (empty if valid), each naming its round.

        Checked: every round of the window and of rounds 0 to ``n_rounds - 1``
        (a cyclic schedule's rounds repeat, so its period is enough), with
        :meth:`Topology.violations`; and that the union of the window's links
        connects every device of ``net``.
        """
        problems = []
        for t in self._rounds_to_check(n_rounds):
            problems += [f"round {t}: {problem}" for problem in
                         self.topology_at(t).violations(net)]
        if problems:
            return problems
        union = self.union().graph(net.nodes)
        if net.n_devices > 1 and not nx.is_connected(union):
            problems.append(_disconnected_text(union, self._window))
        return problems

    def validate(self, net: Network, n_rounds: int | None = None) -> TopologySchedule:
        """Raise naming the first rule broken (see :meth:`violations`); return self if valid.

        Raises
        ------
        NodeNotFoundError
            A round links a device that is not in ``net``.
        InvalidTopologyError
            A round breaks a DeepPrivacy rule, or the window's links do not
            connect the devices.
        """
        problems = self.violations(net, n_rounds)
        if problems:
            raise _error(problems[0])(f"invalid schedule: {problems[0]}"
                                      + _more(len(problems)))
        return self

    # -- files and comparison ----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: a cyclic schedule's topologies, a generated one's generator and seed.

        >>> TopologySchedule([Topology([(0, 1)])], name="pair").to_dict()
        {'name': 'pair', 'dp_devices': [], 'topologies': [{'edges': [[0, 1]], 'dp_devices': []}]}
        """
        data: dict[str, Any] = {"name": self._name,
                                "dp_devices": Topology((), self._dp).to_dict()["dp_devices"]}
        if self._rounds is not None:
            data["topologies"] = [topology.to_dict() for topology in self._rounds]
        else:
            data.update(generator=_generator_name(self._generator), seed=self._seed,
                        window=self._window)
        return data

    def save(self, path: str | os.PathLike) -> Path:
        """Write the schedule to ``path`` as JSON, atomically; :func:`load_schedule` reads it.

        A cyclic schedule's file holds its name, DP devices and topologies
        (links, mixing weights, DP devices, as :meth:`Topology.to_dict` writes
        them), so it loads back equal.  A generated schedule's file holds its
        generator's spec, seed and window, and is rebuilt over its network:
        only generators that are data can be, those of
        :mod:`topokit.network.rounds` (the rounds of
        :func:`topokit.design.peers.epidemic`).  A function of your own cannot
        be rebuilt from a file: save a cyclic schedule of its first rounds,
        ``schedule.first_rounds(k).save(path)`` (:meth:`first_rounds`).  The
        same schedule always gives the same bytes.

        Parameters
        ----------
        path : str or path-like
            The file to write (replaced whole, never left half-written).

        Returns
        -------
        Path
            ``path``.

        Raises
        ------
        InvalidInputError
            The schedule is generated by a function topokit cannot rebuild.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "hypercube.json"
        >>> first = Topology([(0, 1), (2, 3)], weights=[0.5, 0.5])
        >>> second = Topology([(0, 2), (1, 3)], weights=[0.5, 0.5])
        >>> schedule = TopologySchedule([first, second], name="hypercube")
        >>> load_schedule(schedule.save(path)) == schedule
        True
        >>> for line in path.read_text().splitlines()[:5]:
        ...     print(line)
        {
         "topokit_schedule": 1,
         "name": "hypercube",
         "dp_devices": [],
         "topologies": [
        """
        text = json.dumps(self._file_data(), indent=1, allow_nan=False) + "\n"
        return atomic_write_text(path, text)

    def first_rounds(self, k: int) -> TopologySchedule:
        """A cyclic schedule of rounds 0 to ``k - 1`` as trained (this schedule's name and DP
        devices): what a schedule generated by a function of your own can be saved as.

        It repeats those k rounds, so it trains as this schedule does for the
        first k rounds only; choose k at least the rounds you train.

        Raises
        ------
        InvalidTopologyError
            The links of the k rounds leave the devices they link apart.

        Examples
        --------
        >>> def one_random_link(t, rng):
        ...     u, v = rng.choice(4, size=2, replace=False)
        ...     return Topology([(int(u), int(v))])
        >>> drawn = TopologySchedule(one_random_link, seed=7, window=40)
        >>> kept = drawn.first_rounds(50)
        >>> kept.period, all(kept.topology_at(t) == drawn.topology_at(t) for t in range(50))
        (50, True)
        """
        k = check_int(k, "k", low=1)
        return TopologySchedule([self.topology_at(t) for t in range(k)], dp_devices=self._dp,
                                name=self._name)

    def _file_data(self) -> dict[str, Any]:
        """What :meth:`save` writes: the format's key, then :meth:`to_dict` (a generated
        schedule's generator as its spec)."""
        data: dict[str, Any] = {"topokit_schedule": SCHEDULE_FORMAT, **self.to_dict()}
        if self._generator is not None:
            if not isinstance(self._generator, tuple(_REBUILDABLE.values())):
                raise InvalidInputError(
                    f"cannot save a schedule generated by {_generator_name(self._generator)}: "
                    "a file can rebuild only topokit's own generators "
                    f"({', '.join(_REBUILDABLE)}); save a cyclic schedule of its first rounds "
                    "instead, schedule.first_rounds(k).save(path)"
                )
            data["generator"] = self._generator.spec()
        return data

    def _key(self) -> tuple:
        if self._rounds is not None:
            return (self._rounds, self._dp)
        return (_generator_name(self._generator), self._seed, self._window, self._dp)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopologySchedule):
            return NotImplemented
        return (self._name == other._name and self._key() == other._key()
                and (self._generator is None or self._generator == other._generator))

    def __hash__(self) -> int:
        return hash((self._name, self._key()))

    def __repr__(self) -> str:
        label = f"{self._name!r}, " if self._name else ""
        if self._rounds is not None:
            how = f"period {len(self._rounds)}"
        else:
            how = f"generated by {_generator_name(self._generator)}, seed {self._seed}"
        return f"TopologySchedule({label}{how}, {len(self._dp)} DP devices)"

    # -- helpers ------------------------------------------------------------------------------

    def _draw(self, t: int) -> Topology:
        """Round ``t`` of a generated schedule, from its own generator."""
        topology = self._generator(t, keyed_rng(self._seed, t))
        if not isinstance(topology, Topology):
            raise InvalidInputError(
                f"the schedule's generator returned a {type(topology).__name__} for round {t}; "
                "return a topokit Topology"
            )
        return topology

    def _as_trained(self, topology: Topology) -> Topology:
        """``topology`` with the schedule's DP devices (its own must be among them)."""
        if topology.dp_devices == self._dp:
            return topology
        extra = sorted(topology.dp_devices - self._dp, key=node_sort_key)
        if extra:  # only a generated round after the window can get here
            raise InvalidTopologyError(
                f"a round of the schedule names {extra[0]!r} a DP device, but the schedule's "
                f"DP devices (fixed by its first {self._window} rounds) leave it out; pass "
                "dp_devices= with every device a round may link to a stranger"
            )
        return Topology(topology.edges, self._dp, topology.weights)

    def _rounds_to_check(self, n_rounds: int | None) -> range:
        """The window, and rounds up to ``n_rounds`` of a generated schedule."""
        if n_rounds is not None:
            n_rounds = check_int(n_rounds, "n_rounds", low=0)
        if self._rounds is not None or n_rounds is None:
            return range(self._window)
        return range(max(self._window, n_rounds))


def _refuse_for_a_list(*, seed: Any, window: Any) -> None:
    """A list of topologies repeats as given: a seed or window would be ignored, so refuse."""
    for name, value in (("seed", seed), ("window", window)):
        if value is not None:
            raise InvalidInputError(
                f"{name} is for a generated schedule (a function (t, rng) -> Topology); a list "
                "of topologies repeats as given"
            )


def _checked_list(topologies: Any) -> list[Topology]:
    """The topologies of a cyclic schedule: a non-empty sequence of Topology objects."""
    if isinstance(topologies, (str, bytes, Topology)) or not isinstance(topologies, Sequence):
        raise InvalidInputError(
            "topologies must be a list of Topology objects or a function (t, rng) -> "
            f"Topology; got {type(topologies).__name__}"
        )
    if not topologies:
        raise InvalidInputError("a schedule needs at least one topology")
    for k, topology in enumerate(topologies):
        if not isinstance(topology, Topology):
            raise InvalidInputError(
                f"topologies[{k}] must be a topokit Topology; got {type(topology).__name__}"
            )
    return list(topologies)


def _check_union_connected(rounds: list[Topology], window: int) -> None:
    """The links of ``rounds`` must connect every device they link (the network's other
    devices are checked by :meth:`TopologySchedule.validate`)."""
    union = nx.Graph()
    for topology in rounds:
        union.add_edges_from(topology.edges)
    union.add_nodes_from(node for topology in rounds for node in topology.dp_devices)
    if union.number_of_nodes() > 1 and not nx.is_connected(union):
        raise InvalidTopologyError(f"invalid schedule: {_disconnected_text(union, window)}")


def _disconnected_text(union: nx.Graph, window: int) -> str:
    rounds = "round 0" if window == 1 else f"rounds 0-{window - 1}"
    return (f"the union of its links over {rounds} is disconnected "
            f"({nx.number_connected_components(union)} components): no round sequence of it "
            "reaches consensus; every device must be reachable")


def _error(problem: str) -> type[InvalidInputError]:
    return NodeNotFoundError if "is not in the network" in problem else InvalidTopologyError


def _more(count: int) -> str:
    return f" (and {count - 1} more problem(s))" if count > 1 else ""


def _generator_name(generator: Any) -> str:
    """How a generator is named in files and reprs: a callable object's own repr when its
    class defines one (the peers of :mod:`topokit.design.peers` do), else
    ``module.qualname`` of the function (a repr of a function holds its address)."""
    function = getattr(generator, "func", generator)  # functools.partial
    if not isinstance(function, (types.FunctionType, types.MethodType,
                                 types.BuiltinFunctionType)) \
            and type(function).__repr__ is not object.__repr__:
        return repr(generator)
    module = getattr(function, "__module__", None) or type(function).__module__
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}.{name}"


# ---------------------------------------------------------------------------------------------
# Schedule files
# ---------------------------------------------------------------------------------------------


def load_schedule(path: str | os.PathLike, network: Network | None = None) -> TopologySchedule:
    """Read a schedule file written by :meth:`TopologySchedule.save`.

    Parameters
    ----------
    path : str or path-like
        A JSON file ``{"topokit_schedule": 1, "name": ..., "dp_devices": [...],
        "topologies": [...]}`` (cyclic), or with ``"generator"``, ``"seed"`` and
        ``"window"`` instead of ``"topologies"`` (generated).
    network : Network, optional
        The network a generated schedule is rebuilt over (the one it was made
        for: another is refused).  A cyclic schedule does not need it and is
        not checked against it (:meth:`TopologySchedule.validate` does that).

    Returns
    -------
    TopologySchedule
        Equal to the schedule saved (a generated one: the same rounds from the
        same seed).

    Raises
    ------
    InputFileNotFoundError
        No file at ``path``.
    InputFileError
        Naming the file: not JSON, no or another ``"topokit_schedule"``, no
        topologies, a generator kind topokit cannot rebuild, a generated
        schedule without ``network`` or over another network, links whose
        union leaves the devices apart.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import networkx as nx
    >>> from topokit.design.peers import epidemic
    >>> net = Network(nx.cycle_graph(6), [1.0] * 6, np.ones((6, 6)))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "epidemic.json"
    >>> schedule = epidemic(net, 2, seed=3)
    >>> load_schedule(schedule.save(path), network=net) == schedule
    True
    >>> load_schedule(path)
    Traceback (most recent call last):
    ...
    topokit.errors.InputFileError: ...: a generated schedule (epidemic) is rebuilt over ...
    """
    path = Path(path)
    data = read_json_file(path, "schedule")
    try:
        _check_schedule_header(data)
        if "generator" in data:
            return _generated_schedule(data, network)
        return _cyclic_schedule(data)
    except InvalidInputError as exc:
        raise InputFileError(f"{path}: {exc}") from None


def _check_schedule_header(data: Any) -> None:
    """A schedule file's object: its format version, name, DP devices, and one of
    ``"topologies"`` and ``"generator"``."""
    if not isinstance(data, Mapping) or "topokit_schedule" not in data:
        what = ("a topology file (read it with load_topology)"
                if isinstance(data, Mapping) and "edges" in data else "not a schedule file")
        raise InvalidInputError(f"{what}: a schedule file has the key 'topokit_schedule'; give "
                                "one that TopologySchedule.save wrote")
    version = data["topokit_schedule"]
    if version != SCHEDULE_FORMAT or type(version) is not int:
        newer = type(version) is int and version > SCHEDULE_FORMAT
        raise InvalidInputError(
            f"schedule format {version!r} was written by a newer topokit; upgrade topokit"
            if newer else f"'topokit_schedule' must be {SCHEDULE_FORMAT}; got {version!r}"
        )
    if not isinstance(data.get("name"), (str, type(None))):
        raise InvalidInputError(f"'name' must be a string or null; got {data['name']!r}")
    if not isinstance(data.get("dp_devices", []), list):
        raise InvalidInputError(f"'dp_devices' must be a list of node ids; got "
                                f"{type(data['dp_devices']).__name__}")
    if ("topologies" in data) == ("generator" in data):
        raise InvalidInputError("a schedule file holds 'topologies' (a cyclic schedule) or "
                                "'generator' (a generated one), exactly one of them")


def _file_dp_devices(data: Mapping) -> frozenset:
    """The ``"dp_devices"`` of a schedule file, read as a topology's are (lists as tuples)."""
    return Topology.from_dict({"edges": [], "dp_devices": data.get("dp_devices", [])}).dp_devices


def _cyclic_schedule(data: Mapping) -> TopologySchedule:
    topologies = data["topologies"]
    if not isinstance(topologies, list) or not topologies:
        raise InvalidInputError(
            "'topologies' must be a non-empty list of topologies ({\"edges\": [[u, v], ...], "
            f"\"dp_devices\": [...]}}); got {json.dumps(topologies)[:40]}"
        )
    rounds = []
    for k, item in enumerate(topologies):
        try:
            rounds.append(Topology.from_dict(item))
        except InvalidInputError as exc:
            raise InvalidInputError(f"topologies[{k}]: {exc}") from None
    return TopologySchedule(rounds, dp_devices=_file_dp_devices(data), name=data.get("name"))


def _generated_schedule(data: Mapping, network: Network | None) -> TopologySchedule:
    spec = data["generator"]
    kind = spec.get("kind") if isinstance(spec, Mapping) else spec
    if not isinstance(kind, str) or kind not in _REBUILDABLE:
        raise InvalidInputError(f"unknown generator kind {kind!r}; a schedule file can rebuild "
                                f"{', '.join(_REBUILDABLE)}")
    if network is None:
        raise InvalidInputError(f"a generated schedule ({kind}) is rebuilt over the network it "
                                "was made for; pass it: load_schedule(path, network=net)")
    if not isinstance(network, Network):
        raise InvalidInputError(f"network must be a topokit Network; got "
                                f"{type(network).__name__}")
    for key, low in (("seed", 0), ("window", 1)):
        if type(data.get(key)) is not int or data[key] < low:
            raise InvalidInputError(f"'{key}' must be an integer >= {low}; got "
                                    f"{data.get(key)!r}")
    rounds = _REBUILDABLE[kind].from_spec(spec, network)
    return TopologySchedule(rounds, seed=data["seed"], dp_devices=_file_dp_devices(data),
                            window=data["window"], name=data.get("name"))
