"""Export a design to the runtimes that train with it.

:func:`export_design` writes one design (a :class:`~topokit.design.Design`, or
the JSON file ``topokit design -o`` writes) in one of :data:`EXPORT_FORMATS`:

==================  ===========================================================  ==================
format              what it writes                                               read back with
==================  ===========================================================  ==================
``mixing-csv``      the n x n mixing matrix W, a header row of node ids          numpy, pandas
``mixing-npy``      W as ``.npy``; node ids in ``<name>.nodes.json``             ``numpy.load``
``decentralizepy``  decentralizepy's edge file, 0-based; ``<name>.nodes.json``   decentralizepy's
                    and ``<name>.prediction.json`` (its weights, predicted)      ``Graph``
``networkx-json``   node-link JSON: link weights, self-weights, DP flags and     ``networkx``
                    noise multipliers
``dp-plan``         each device's DP-SGD settings, for an Opacus-style trainer   ``json``
==================  ===========================================================  ==================

Rows and indices follow the network's node order, ``net.nodes``.  Every file of
one export is written atomically, together: an error leaves none of them
written or changed.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import warnings
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from .._checks import brief, check_choice, check_output_path, check_real
from .._io import atomic_paths, dumps_json, jsonable
from ..design.features import FeatureSettings
from ..design.metrics import Metrics, evaluate
from ..design.mixing import metropolis_hastings_topology
from ..design.noise import DEFAULT_DELTA, DesignNoise, dp_in_node_order
from ..design.result import Design, recorded_judge
from ..design.time_predictor import TrainingTimePredictor
from ..errors import InputFileError, InvalidInputError, TopokitError, TopokitWarning
from ..network.core import Network, Topology
from ..network.examples import list_examples, load_example
from ..network.formats import load_noise_multipliers, load_topology

__all__ = ["EXPORT_FORMATS", "export_design", "export_files", "DECENTRALIZEPY_READER"]

#: The formats :func:`export_design` writes, with what each holds.
EXPORT_FORMATS: dict[str, str] = {
    "mixing-csv": "the n x n mixing matrix W as CSV, a header row of node ids",
    "mixing-npy": "W as .npy, node ids in <name>.nodes.json",
    "decentralizepy": "decentralizepy's edge file (0-based indices), node ids in "
                      "<name>.nodes.json, its predicted time in <name>.prediction.json",
    "networkx-json": "node-link JSON with link weights, self-weights, DP flags and noise "
                     "multipliers",
    "dp-plan": "each device's DP-SGD settings (Opacus-style) as JSON",
}

#: The files each format writes beside the one named, by the suffix that replaces its own.
_SIDECARS: dict[str, tuple[str, ...]] = {
    "mixing-csv": (),
    "mixing-npy": (".nodes.json",),
    "decentralizepy": (".nodes.json", ".prediction.json"),
    "networkx-json": (),
    "dp-plan": (),
}

#: Where decentralizepy reads the edge file (commit a5d46be of 20 March 2024).
DECENTRALIZEPY_READER = ("sacs-epfl/decentralizepy", "src/decentralizepy/graphs/Graph.py")


@dataclass(frozen=True)
class _Noise:
    """The noise multiplier of every DP device, and the privacy it was decided for."""

    record: DesignNoise               # DP device -> z, with delta, epsilon and source
    common: float                     # z of the design's DP devices (z* under a bound)
    per_device: bool                  # the design recorded each device's own level
    decided: bool = False             # decided by the design itself (Design.noise)

    @property
    def levels(self) -> dict[Hashable, float]:
        return dict(self.record.noise_multipliers)

    @property
    def source(self) -> str:
        return self.record.source


@dataclass(frozen=True)
class _Source:
    """What an export needs of a design, whether it came as a Design or as a file."""

    topology: Topology
    net: Network
    stats: Mapping[str, Any]          # the design's stats (JSON keys for a file)
    noise: _Noise
    predictor: Any                    # the predictor that judged the design, at its noise
    predictor_name: str
    settings: FeatureSettings         # the training settings it was judged under
    settings_source: str              # where ``settings`` came from, in words


def export_design(design: Design | str | os.PathLike, path: str | os.PathLike,
                  format: str, *, net: Network | None = None) -> list[Path]:
    """Write ``design`` for a training runtime: its mixing matrix, graph or DP plan.

    Parameters
    ----------
    design : Design, str or path
        A design (:func:`topokit.optimize`, :func:`topokit.autotag`), or a
        design JSON file as ``topokit design -o`` writes it (a plain topology
        file, ``{"edges": ..., "dp_devices": ...}``, is accepted too).
    path : str or path
        The file to write.  Its folder must exist.  Formats with sidecars write
        them beside it: ``graph.edges`` gets ``graph.nodes.json`` (and
        ``graph.prediction.json``).
    format : str
        One of :data:`EXPORT_FORMATS` (see Notes).
    net : Network, optional
        The network the design was made for: its node order is the order of
        every row and index, its class counts give the sampling rates.
        Required for a :class:`Design` (which does not record its network).
        For a design file, default: the bundled example the file names (its
        ``"network"`` field); give ``net`` for any other network.

    Returns
    -------
    list of Path
        The files written: ``path`` first, then its sidecars.

    Raises
    ------
    InvalidInputError
        An unknown ``format``; a ``path`` that is a folder, in a folder that
        does not exist or cannot be written, or the design file itself; a
        ``design`` of another type; no ``net`` where one is needed.
    InputFileError
        The design file cannot be read, or its recorded settings are bad.
    InvalidTopologyError, NodeNotFoundError
        The design's topology does not fit ``net`` (another network's design).
    DisconnectedGraphError
        ``format="decentralizepy"`` with a disconnected topology (no weights
        make it mix).

    Notes
    -----
    W is ``topology.mixing_matrix(net.nodes)``: the design's own weights,
    else Lazy-Metropolis (DeepPrivacy eq. 4).  It is symmetric and doubly
    stochastic.  Node ids in JSON are plain values (numpy integers become
    ints; tuples become lists).

    ``mixing-csv``
        A header row of node ids, then the n rows of W (each number in the
        shortest text that reads back exactly).
    ``mixing-npy``
        W (float64) in NumPy's ``.npy`` format; ``<name>.nodes.json`` is the
        list of node ids, position = row.
    ``decentralizepy``
        The ``"edges"`` file read by ``Graph.read_graph_from_file`` of
        decentralizepy [1]_ (repository ``sacs-epfl/decentralizepy``, file
        ``src/decentralizepy/graphs/Graph.py``): the first line the number of
        processes n, then one line ``i j`` per link with 0-based indices
        (i < j; the reader adds both directions).  ``<name>.nodes.json`` maps
        index -> node id (a list, position = index = decentralizepy's uid).
        decentralizepy applies its own Metropolis-Hastings weights
        ``1 / (1 + max(d_i, d_j))`` on every link (``Sharing._averaging`` in
        ``src/decentralizepy/sharing/Sharing.py``), not the design's: the
        links mix more slowly there than with fastest-mixing weights, faster
        than with Lazy-Metropolis ones.  ``<name>.prediction.json`` says what
        topokit predicts for that: under ``"design"`` (the design's weights)
        and ``"decentralizepy"`` (the weights of
        :func:`~topokit.design.mixing.metropolis_hastings_topology`, which
        are decentralizepy's) the ``weights``, ``spectral_gap``,
        ``hitting_time``, ``predicted_global_iterate`` and
        ``predicted_time`` (seconds: the metrics' ``pseudo_time``), both
        from the predictor that judged the design (``"predictor"``) at the
        design's noise levels (``"noise"``); and ``"time_ratio"``,
        decentralizepy's predicted time over the design's (null when either
        never reaches the target).  ``"deploy"`` says which weights to train
        with: ``"decentralizepy"`` (its own, predicted as fast as the
        design's or faster: the edge file is all it needs) or ``"design"``
        (predicted faster than decentralizepy's: export ``mixing-csv`` or
        ``mixing-npy`` and load W into the runtime); a
        :class:`~topokit.errors.TopokitWarning` says so when the two
        predicted times differ by more than 0.1%.  The edge file carries no
        DP: pair it with ``dp-plan``.
    ``networkx-json``
        ``networkx.node_link_data(G, edges="edges")`` of the topology on every
        device: ``weight`` (W_ij) on each link; ``self_weight`` (W_ii), ``dp``
        and ``noise_multiplier`` (null for a non-DP device) on each node.
    ``dp-plan``
        ``{"devices": [...]}`` in node order, each with its ``id``, ``index``,
        ``dp``, ``noise_multiplier`` and ``max_grad_norm`` (both null for a
        non-DP device, which neither clips nor adds noise, as in
        :func:`topokit.training.train`), ``batch_size``, ``rows`` and
        ``sampling_rate`` = min(1, batch_size / rows), the Poisson rate of
        topokit's training (null when ``net`` has no class counts).  The noise
        multipliers are the design's per-device levels when it recorded them
        (:func:`topokit.optimize` under ``max_stranger_mu``), else its z*,
        else the predictor's setting; clipping norm, batch size and local
        steps are the settings of the predictor that judged the design.  A
        design made for a workload (``optimize(..., workload=...)``) plans
        the workload's clipping norm, batch size and local steps, and each DP
        device adds at least the workload's noise multiplier (a stranger
        bound's level stays the floor).  Else
        :class:`~topokit.design.features.FeatureSettings`' defaults (z =
        3.7306: epsilon = 1, delta = 1e-5 per round, as
        :class:`topokit.training.DPConfig` calibrates it).  The plan says
        where each came from.  With Opacus, a DP device's entry gives
        ``PrivacyEngine.make_private``'s ``noise_multiplier`` and
        ``max_grad_norm``, and ``sampling_rate`` the sample rate of its
        Poisson-sampled data loader.

    References
    ----------
    .. [1] A. Dhasade, A.-M. Kermarrec, R. Pires, R. Sharma and M. Vujasinovic,
       "Decentralized learning made easy with DecentralizePy", EuroMLSys 2023;
       https://github.com/sacs-epfl/decentralizepy.

    Examples
    --------
    >>> import tempfile
    >>> from topokit import autotag, load_example
    >>> net = load_example("toy")
    >>> design = autotag(net)
    >>> folder = Path(tempfile.mkdtemp())
    >>> [p.name for p in export_design(design, folder / "toy.edges", "decentralizepy", net=net)]
    ['toy.edges', 'toy.nodes.json', 'toy.prediction.json']
    >>> print((folder / "toy.edges").read_text(), end="")
    6
    0 1
    0 5
    1 2
    1 4
    2 3
    3 5
    >>> W = np.loadtxt(export_design(design, folder / "W.csv", "mixing-csv", net=net)[0],
    ...                delimiter=",", skiprows=1)
    >>> bool(np.allclose(W.sum(axis=0), 1) and np.allclose(W, W.T))
    True
    """
    format = check_choice(format, "format", EXPORT_FORMATS)
    targets = _checked_targets(path, format)
    if isinstance(design, (str, os.PathLike)) and Path(design).resolve() in \
            {target.resolve() for target in targets}:
        raise InvalidInputError(f"{path} would overwrite the design file {design}; write the "
                                "export to another path")
    source = _source(design, net)
    try:
        contents = _BUILDERS[format](source)
    except TopokitError as exc:  # what the design records: name the file it came from
        if not isinstance(design, (str, os.PathLike)):
            raise
        raise type(exc)(f"{design}: {exc}") from None
    _write_together(targets, contents)
    return targets


# ---------------------------------------------------------------------------------------------
# Where to write
# ---------------------------------------------------------------------------------------------

def export_files(path: str | os.PathLike, format: str) -> list[Path]:
    """The files an export in ``format`` to ``path`` writes: ``path``, then its sidecars.

    A sidecar replaces the suffix of ``path`` (``graph.edges`` ->
    ``graph.nodes.json``); nothing is checked or written.

    Examples
    --------
    >>> [str(p) for p in export_files("out/graph.edges", "decentralizepy")]
    ['out/graph.edges', 'out/graph.nodes.json', 'out/graph.prediction.json']
    """
    main = Path(path)
    stem = main.with_suffix("")
    return [main] + [Path(f"{stem}{suffix}")
                     for suffix in _SIDECARS[check_choice(format, "format", EXPORT_FORMATS)]]


def _checked_targets(path: Any, format: str) -> list[Path]:
    """``path`` and its sidecars, each a file that can be written (nothing written yet)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError(f"path must be a file path; got {type(path).__name__}")
    targets = export_files(check_output_path(path, "path"), format)
    for target in targets:
        check_output_path(target, "path")
        folder = target.parent
        if not folder.is_dir():
            raise InvalidInputError(f"cannot write {target}: the folder {folder} does not "
                                    "exist; create it first or choose another path")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InvalidInputError(f"cannot write {target}: no permission to write in "
                                    f"{folder}; choose another folder")
    return targets


def _write_together(targets: list[Path], contents: list[str | bytes]) -> None:
    """Write every file through a temporary one; they replace the targets only together."""
    with atomic_paths(*targets) as temps:
        for temp, content in zip(temps, contents, strict=True):
            with open(temp, "wb") as handle:
                handle.write(content.encode("utf-8") if isinstance(content, str) else content)
                handle.flush()
                os.fsync(handle.fileno())


# ---------------------------------------------------------------------------------------------
# What to write: the design, its network and its settings
# ---------------------------------------------------------------------------------------------

def _source(design: Any, net: Network | None) -> _Source:
    """The design as an export sees it, checked against its network."""
    if net is not None and not isinstance(net, Network):
        raise InvalidInputError(f"net must be a topokit Network; got {type(net).__name__}")
    if isinstance(design, Design):
        if net is None:
            raise InvalidInputError("net is required to export a Design (it does not record "
                                    "its network); pass net=the Network it was designed for")
        design.topology.validate(net)
        bound = design.stats.get("stranger_bound") or {}
        return _judged(design.topology, net, design.stats, bound.get("noise_multipliers"),
                       design.predictor, design.noise)
    if isinstance(design, (str, os.PathLike)):
        return _file_source(Path(design), net)
    raise InvalidInputError("design must be a topokit Design or the path of a design file "
                            f"(topokit design -o); got {type(design).__name__}")


def _file_source(path: Path, net: Network | None) -> _Source:
    """A design file (``topokit design -o``) or plain topology file, with its network.

    Every error names the file.
    """
    topology = load_topology(path)  # a missing, malformed or foreign file fails here
    data = json.loads(path.read_text(encoding="utf-8"))
    record = data if "topology" in data else {}
    net = net if net is not None else _named_network(record, path)
    try:
        topology.validate(net)
    except TopokitError as exc:
        raise type(exc)(f"{path}: {exc}") from None
    levels = load_noise_multipliers(path, net)  # its errors name the file
    stats = record.get("stats") if isinstance(record.get("stats"), dict) else {}
    try:
        decided = (None if record.get("noise") is None else
                   DesignNoise.from_dict(record["noise"], dp_in_node_order(topology, net)))
        return _judged(topology, net, stats, levels, record.get("predictor"), decided)
    except TopokitError as exc:
        raise type(exc)(f"{path}: {exc}") from None


def _named_network(record: Mapping[str, Any], path: Path) -> Network:
    """The bundled example a design file names (its ``"network"``); else the user must say."""
    name = record.get("network")
    if isinstance(name, str) and name in list_examples():
        return load_example(name)
    if name is None:
        raise InvalidInputError(f"{path} does not name the network it was made for; give it "
                                "(net=, or --network FILE / --example NAME)")
    raise InvalidInputError(f"{path} was made for network {name!r}, which is not a bundled "
                            "example; give that network (net=, or --network FILE)")


def _judged(topology: Topology, net: Network, stats: Mapping[str, Any],
            levels: Mapping[Hashable, Any] | None, description: Any,
            decided: DesignNoise | None = None) -> _Source:
    """The source with the predictor that judged the design, its settings and its noise.

    A design that decided its noise (``decided``, :mod:`topokit.design.noise`) records the
    predictor as it judged it, so its own predicted time is the design's; an older one is
    predicted at the noise it records.
    """
    predictor = recorded_judge(description)
    name = "paper" if description is None else str(description.get("name", "recorded"))
    if isinstance(predictor, TrainingTimePredictor):
        settings, settings_source = predictor.feature_settings, f"the design's predictor ({name})"
    else:
        settings, settings_source = FeatureSettings(), "topokit's defaults (FeatureSettings)"
    if decided is not None:
        common = max(decided.noise_multipliers.values(), default=settings.noise_multiplier)
        noise = _Noise(decided, common, True, decided=True)
    else:
        noise = _noise(topology, net, stats, levels, settings, settings_source)
        predictor = _at_noise(predictor, noise, net)
    return _Source(topology, net, stats, noise, predictor, name, settings, settings_source)


def _noise(topology: Topology, net: Network, stats: Mapping[str, Any],
           levels: Mapping[Hashable, Any] | None, settings: FeatureSettings,
           settings_source: str) -> _Noise:
    """Each DP device's noise multiplier in a design file written before designs decided
    their noise: recorded levels, else z*, else the settings' z."""
    dp = dp_in_node_order(topology, net)
    bound = stats.get("stranger_bound")
    bound = bound if isinstance(bound, Mapping) else {}
    common = bound.get("noise_multiplier")
    if common is not None:
        common = check_real(common, "the design's stranger_bound.noise_multiplier", low=0)
    if levels is not None:
        missing = [device for device in dp if device not in levels]
        if missing:
            raise InvalidInputError(f"the design records no noise level for its DP device "
                                    f"{missing[0]!r}; export the design optimize returned")
        return _Noise(_undecided({device: check_real(levels[device],
                                                     f"noise level of {device!r}", low=0)
                                  for device in dp},
                                 "the design's per-device levels (stranger bound)"),
                      settings.noise_multiplier if common is None else common, True)
    if common is not None:
        return _Noise(_undecided(dict.fromkeys(dp, common), "the design's z* (stranger bound)"),
                      common, False)
    z = settings.noise_multiplier
    return _Noise(_undecided(dict.fromkeys(dp, z), settings_source), z, False)


def _undecided(levels: dict[Hashable, float], source: str) -> DesignNoise:
    """The noise record of an older design file: its levels at training's default delta."""
    return DesignNoise(levels, DEFAULT_DELTA, None, source)


# ---------------------------------------------------------------------------------------------
# The formats
# ---------------------------------------------------------------------------------------------

def _mixing(source: _Source) -> np.ndarray:
    return source.topology.mixing_matrix(source.net.nodes)


def _node_ids(source: _Source) -> str:
    return dumps_json(list(source.net.nodes))


def _mixing_csv(source: _Source) -> list[str | bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(jsonable(list(source.net.nodes)))
    writer.writerows([repr(x) for x in row] for row in _mixing(source).tolist())
    return [buffer.getvalue()]


def _mixing_npy(source: _Source) -> list[str | bytes]:
    buffer = io.BytesIO()
    np.save(buffer, _mixing(source), allow_pickle=False)
    return [buffer.getvalue(), _node_ids(source)]


def _decentralizepy(source: _Source) -> list[str | bytes]:
    index = source.net.index
    pairs = sorted(tuple(sorted((index[u], index[v]))) for u, v in source.topology.edges)
    lines = [str(source.net.n_devices)] + [f"{i} {j}" for i, j in pairs]
    return ["\n".join(lines) + "\n", _node_ids(source), dumps_json(_prediction(source))]


def _prediction(source: _Source) -> dict[str, Any]:
    """The design's predicted time with its weights and with decentralizepy's."""
    noise, predictor = source.noise, source.predictor
    runtime = metropolis_hastings_topology(source.topology, source.net)
    designed = evaluate(source.net, source.topology, predictor)
    metropolis = evaluate(source.net, runtime, predictor)
    ratio = metropolis.pseudo_time / designed.pseudo_time
    deploy = _deploy(designed.pseudo_time, metropolis.pseudo_time, _design_weights(source))
    return {
        "runtime": "decentralizepy",
        "reader": f"{DECENTRALIZEPY_READER[0]}: {DECENTRALIZEPY_READER[1]} "
                  "(Graph.read_graph_from_file, type='edges')",
        "runtime_weights": "Metropolis-Hastings, 1 / (1 + max(d_i, d_j)) on every link",
        "predictor": source.predictor_name,
        "noise": noise.source,
        "design": _predicted(designed, _design_weights(source)),
        "decentralizepy": _predicted(metropolis, "metropolis-hastings"),
        "time_ratio": ratio if math.isfinite(ratio) else None,
        "deploy": deploy,
    }


#: Predicted times within this relative margin are the same time: nothing to choose.
_SAME_TIME = 1e-3


def _deploy(designed: float, runtime: float, weights: str) -> str:
    """Which weights to train with: ``"decentralizepy"`` (its own Metropolis-Hastings, the
    edge file is all it needs) or ``"design"`` (load the design's W into the runtime).

    Warns when the two are predicted to differ by more than :data:`_SAME_TIME`: the runtime
    then trains at another speed than the design's predicted time says.
    """
    faster = runtime < designed * (1 - _SAME_TIME)
    if not faster and not runtime > designed * (1 + _SAME_TIME):
        return "decentralizepy"  # the same predicted time (or neither reaches the target)
    named = {"fastest": "fastest-mixing"}.get(weights, weights)  # optimize's short name
    own = "the design's weights" if named == "the design's weights" else \
        f"the design's {named} weights"
    ratio = runtime / designed
    times = (f"{_seconds(runtime)} against {_seconds(designed)}"
             + (f", {ratio:.3g}x" if math.isfinite(ratio) else ""))
    advice = ("deploy them as decentralizepy does; the edge file is all it needs" if faster
              else "export mixing-csv or mixing-npy and load the design's weights into your "
                   "runtime to keep them")
    # stacklevel 5: _deploy, _prediction, _decentralizepy, export_design, the user's call
    warnings.warn(f"decentralizepy's Metropolis-Hastings weights are predicted "
                  f"{'faster' if faster else 'slower'} than {own} ({times}): {advice}",
                  TopokitWarning, stacklevel=5)
    return "decentralizepy" if faster else "design"


def _seconds(time: float) -> str:
    return f"{time:.4g} s" if math.isfinite(time) else "never reaching the target"


def _at_noise(predictor: Any, noise: _Noise, net: Network) -> Any:
    """An older design's predictor with the noise its DP devices add (eq. 15 ignores it)."""
    if not isinstance(predictor, TrainingTimePredictor) or not noise.levels:
        return predictor
    levels = noise.levels
    device = (tuple(levels.get(node, 0.0) for node in net.nodes)
              if noise.per_device else None)
    settings = replace(predictor.feature_settings, noise_multiplier=noise.common,
                       device_noise_multipliers=device)
    return predictor.set_params(settings=settings)  # a fresh object, read for this export


def _design_weights(source: _Source) -> str:
    if source.topology.weights is None:
        return "lazy-metropolis"
    mixing = source.stats.get("mixing")
    named = mixing.get("weights") if isinstance(mixing, Mapping) else None
    return str(named) if named else "the design's weights"


def _predicted(metrics: Metrics, weights: str) -> dict[str, Any]:
    return {"weights": weights, "spectral_gap": metrics.spectral_gap,
            "hitting_time": metrics.hitting_time,
            "predicted_global_iterate": metrics.predicted_global_iterate,
            "predicted_time": metrics.pseudo_time}


def _networkx_json(source: _Source) -> list[str | bytes]:
    net, W = source.net, _mixing(source)
    levels = source.noise.levels
    graph = nx.Graph(name=net.name)
    for i, node in enumerate(net.nodes):
        graph.add_node(node, self_weight=float(W[i, i]), dp=node in levels,
                       noise_multiplier=levels.get(node))
    for u, v in source.topology.edges:
        graph.add_edge(u, v, weight=float(W[net.index[u], net.index[v]]))
    return [dumps_json(nx.node_link_data(graph, edges="edges"))]


def _workload_plan(source: _Source) -> tuple[FeatureSettings, _Noise, str]:
    """The settings and noise a DP plan gives: the workload's where the design records one
    (``optimize(..., workload=...)``), each DP device's level raised to at least the
    workload's noise multiplier (a recorded stranger-bound level stays the floor: less
    noise would break the bound); else the judging predictor's."""
    if "workload" not in source.stats:
        return source.settings, source.noise, source.settings_source
    record = source.stats["workload"]
    if not isinstance(record, Mapping) or not isinstance(record.get("workload"), Mapping):
        raise InputFileError("the design's recorded workload (stats.workload) must be "
                             "{'workload': its fields, ...} as topokit design writes it; "
                             f"got {brief(record)}")
    from ..design.workload import Workload

    try:
        workload = Workload.from_dict(record["workload"])
        settings = workload.feature_settings()
        z = workload.resolved_noise_multiplier
    except TopokitError as exc:
        raise type(exc)(f"the design's recorded workload (stats.workload): {exc}") from None
    if source.noise.decided:  # the design decided its noise from the workload already
        return settings, source.noise, "the design's workload"
    levels = {device: max(level, z) for device, level in source.noise.levels.items()}
    noise = _Noise(DesignNoise(levels, workload.delta,
                               workload.epsilon if workload.noise_multiplier is None else None,
                               f"the design's workload (at least {source.noise.source})"),
                   max(source.noise.common, z), source.noise.per_device)
    return settings, noise, "the design's workload"


def _dp_plan(source: _Source) -> list[str | bytes]:
    net = source.net
    if not source.topology.dp_devices:  # a plan of no noise would read as a plan of privacy
        raise InvalidInputError(
            "the design has no DP device, so there is no DP-SGD to plan: every device trains "
            "without clipping or noise; design with max_stranger_mu (topokit design "
            "--max-stranger-mu) for DP devices, or export the topology alone (mixing-csv)")
    settings, noise, settings_source = _workload_plan(source)
    rows = None if net.class_counts is None else net.class_counts.sum(axis=1)
    levels, epsilons = noise.levels, noise.record.epsilons
    devices = []
    for i, node in enumerate(net.nodes):
        dp = node in levels
        size = None if rows is None else int(rows[i])
        devices.append({
            "id": node, "index": i, "dp": dp,
            "noise_multiplier": levels[node] if dp else None,
            "epsilon": epsilons[node] if dp else None,
            "delta": noise.record.delta if dp else None,
            "max_grad_norm": settings.max_grad_norm if dp else None,
            "batch_size": settings.batch_size, "rows": size,
            "sampling_rate": None if size is None else min(1.0, settings.batch_size / size),
        })
    accounting = noise.record.to_dict()
    plan = {
        "format": "topokit.dp-plan", "version": 1, "network": net.name,
        "settings": {"max_grad_norm": settings.max_grad_norm, "batch_size": settings.batch_size,
                     "local_steps": settings.local_steps, "source": settings_source},
        "noise_source": noise.source,
        "accounting": {key: accounting[key] for key in
                       ("unit", "delta", "sampling_rate", "mechanism", "workload_epsilon")},
        "devices": devices,
    }
    return [dumps_json(plan)]


_BUILDERS: dict[str, Callable[[_Source], list[str | bytes]]] = {
    "mixing-csv": _mixing_csv,
    "mixing-npy": _mixing_npy,
    "decentralizepy": _decentralizepy,
    "networkx-json": _networkx_json,
    "dp-plan": _dp_plan,
}
