"""The service's request bodies, checked with the library's own checks.

Every refusal is a :class:`RequestError`: an HTTP status, one line (the
message the library's :class:`~topokit.errors.TopokitError` gives) and the
field it is about.  A network is read exactly as
:func:`topokit.network.formats.load_network` reads a node-link file, so the
server refuses what the file loader refuses, with the same words.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .._checks import brief
from ..design._defaults import PREDICTOR_NAMES
from ..errors import TopokitError

__all__ = ["RequestError", "DesignRequest", "AuditRequest", "parse_json", "parse_design",
           "parse_audit", "parse_evaluation", "parse_topology", "request_digest", "JOB_PARSERS",
           "METHODS", "OPTIONS", "AUDIT_OPTIONS", "PREDICTORS", "MAX_BODY_DEPTH",
           "MAX_INTEGER"]

METHODS = ("optimize", "autotag")
#: The options of a design request (``topokit design``'s options of the same names).
OPTIONS = ("predictor", "mixing", "max_stranger_mu", "seed", "workload")
#: The options of an audit request (:func:`topokit.privacy_audit`'s arguments of the same names).
AUDIT_OPTIONS = ("rounds", "noise_multiplier", "model", "delta")
#: The predictors a request may name: those :func:`topokit.load_predictor` knows by name (a
#: server reads no predictor files).
PREDICTORS = PREDICTOR_NAMES
#: The design options that method ``autotag`` does not take.
OPTIMIZE_ONLY_OPTIONS = ("max_stranger_mu", "workload")
#: The one predictor and the one mixing that method ``autotag`` takes (when given).
AUTOTAG_PREDICTOR = "paper"
AUTOTAG_MIXING = "lazy-metropolis"
#: The intervals of the numeric options (:func:`topokit._checks.check_real`'s arguments).
MAX_STRANGER_MU_RANGE = {"low": 0, "closed": "neither"}
SEED_RANGE = {"low": 0}
AUDIT_DELTA_RANGE = {"low": 0, "high": 1, "closed": "neither"}
#: The intervals of a network's ``physical_model`` numbers (:func:`topokit.network.physical.
#: pairwise_delays` checks them so; the service checks them even when a delay matrix is given).
PHYSICAL_MODEL_RANGES = {"model_size_mb": {"low": 0, "closed": "neither"},
                         "wifi_range_m": {"low": 0}, "max_range_m": {"low": 0}}
#: The audit model of a request that names none (:func:`topokit.privacy_audit`'s default).
DEFAULT_AUDIT_MODEL = "gossip"
#: The deepest nesting of arrays and objects a body may have (a node-link network needs 5,
#: a tuple node id in a stored topology a few more); checked before the JSON is parsed.
MAX_BODY_DEPTH = 32
#: The largest integer (in size) a body may hold: a float's largest as JSON writes it
#: (1.7976931348623157e+308, read exactly), so that every number in a body lies in the
#: range of a float, as the schemas bound every number, and no integer is long enough to
#: make reading it slow.
MAX_INTEGER = int(Decimal(repr(sys.float_info.max)))
_MAX_INTEGER_DIGITS = len(str(MAX_INTEGER))


class RequestError(Exception):
    """A refused request: ``status`` (an HTTP code), one line, and the field it is about."""

    def __init__(self, message: str, *, field: str | None = None, status: int = 422):
        super().__init__(message)
        self.field = field
        self.status = status

    def to_dict(self) -> dict[str, Any]:
        """The JSON body of the error response."""
        return {"error": _one_line(str(self)), "field": self.field}


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class DesignRequest:
    """A checked design request: what :func:`topokit.optimize` or ``autotag`` runs on."""

    net: Any
    method: str
    predictor: str | None
    mixing: str | None
    max_stranger_mu: float | None
    seed: int
    workload: Any


@dataclass(frozen=True)
class AuditRequest:
    """A checked audit request: the arguments of :func:`topokit.privacy_audit`.

    ``topology_source`` says where the topology came from (``"given topology"``
    or ``"stored topology"``), as ``topokit audit --json`` does.
    """

    net: Any
    topology: Any
    topology_source: str
    rounds: int
    noise_multiplier: Any  # None: privacy_audit's default
    model: str
    delta: float | None


def parse_json(body: bytes) -> Any:
    """The JSON of a request body; malformed JSON is a 422 naming the place.

    Refused with a 422 too, before anything is built from them: a body nested
    deeper than :data:`MAX_BODY_DEPTH` (checked before parsing, which
    recurses), an integer larger in size than :data:`MAX_INTEGER` (a float's range), and
    ``NaN``, ``Infinity`` and ``-Infinity``, which are not JSON.
    """
    depth = _nesting_depth(body)
    if depth > MAX_BODY_DEPTH:
        raise RequestError(f"the body nests arrays and objects {depth} levels deep; this server "
                           f"reads at most {MAX_BODY_DEPTH}", field="body")
    try:
        return json.loads(body, parse_int=_integer, parse_constant=_not_json)
    except json.JSONDecodeError as exc:
        raise RequestError(f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                           field="body") from None
    except UnicodeDecodeError:
        raise RequestError("the body is not UTF-8 text", field="body") from None
    except RecursionError:  # a nesting the depth check missed: never a 500
        raise RequestError(f"the body nests arrays and objects more than {MAX_BODY_DEPTH} "
                           "levels deep", field="body") from None


#: A JSON string (its escapes included), removed before the brackets are counted.
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
#: Every byte but the four brackets (deleted by bytes.translate).
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))


def _nesting_depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON ``body``, counted without parsing it
    (strings, and the brackets in them, left out): numpy's speed on a body of megabytes."""
    import numpy as np

    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def _integer(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > _MAX_INTEGER_DIGITS or (digits == _MAX_INTEGER_DIGITS
                                        and abs(int(text)) > MAX_INTEGER):
        raise RequestError(f"the body has an integer of {digits} digits, beyond the range of "
                           f"a float ({sys.float_info.max:.2g}): this server reads none larger",
                           field="body")
    return int(text)


def _not_json(name: str) -> Any:
    raise RequestError(f"the body has {name}, which is not JSON: numbers are finite",
                       field="body")


def request_digest(data: Any) -> str:
    """A digest of a request's JSON, the same for the same content whatever its key order."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _checked_keys(data: Any, known: tuple[str, ...], required: tuple[str, ...],
                  what: str) -> dict[str, Any]:
    """``data`` as an object with only ``known`` keys and every ``required`` one."""
    if not isinstance(data, dict):
        raise RequestError(f"{what} must be a JSON object; got {type(data).__name__}",
                           field=None if what == "the body" else what)
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise RequestError(f"unknown field {key!r} in {what}{hint}; the fields are "
                               f"{', '.join(known)}",
                               field=str(key) if what == "the body" else f"{what}.{key}")
    for key in required:
        if key not in data:
            raise RequestError(f"{what} has no {key!r}", field=key)
    return data


def parse_network(data: Any, *, max_devices: int | None):
    """The Network of node-link ``data``, refused as the file loader refuses a file."""
    from ..network.formats import network_from_node_link

    nodes = data.get("nodes") if isinstance(data, dict) else None
    if max_devices is not None and isinstance(nodes, list) and len(nodes) > max_devices:
        raise RequestError(f"the network has {len(nodes)} devices; this server takes networks "
                           f"of at most {max_devices} (its --max-devices)", field="network")
    _check_node_link(data)
    graph = data.get("graph") if isinstance(data, dict) else None
    if isinstance(graph, dict) and "topokit_format" in graph:
        data = {**data, "graph": {**graph, "topokit_format": _whole(graph["topokit_format"])}}
    try:
        return network_from_node_link(data, source="network")
    except TopokitError as exc:
        raise RequestError(str(exc), field="network") from None


def _network_error(message: str) -> RequestError:
    return RequestError(f"network: {message}", field="network")


def _check_node_link(data: Any) -> None:
    """What the file loader reads leniently, refused as the service's contract says.

    A file's loader takes numbers written as text (GraphML has no others), a
    ``directed`` or ``multigraph`` that is any false value, ``graph`` as a list
    of pairs, and a true or false node id; a request's network is JSON, so the
    service takes only what its schema (:mod:`.contract`) describes.  The rest
    is left to the loader and its messages.
    """
    if not isinstance(data, dict) or "nodes" not in data:
        return  # the loader's message
    for flag in ("directed", "multigraph"):
        if flag in data and data[flag] is not False:
            raise _network_error(f"{flag!r} must be false (the social graph is undirected and "
                                 f"simple); got {brief(data[flag])}")
    if ("edges" in data) == ("links" in data):
        raise _network_error(
            ("it has both 'edges' and 'links'; give the social links once, as 'edges'")
            if "edges" in data else
            ("it has no 'edges': give the social links as a list of {\"source\": u, "
             "\"target\": v} (an empty list for none)"))
    graph = data.get("graph", {})
    if not isinstance(graph, dict):
        raise _network_error("'graph' must be an object of graph attributes (delay, topology, "
                             f"...); got {brief(graph)}")
    _check_graph_attributes(graph)
    nodes = data.get("nodes")
    for k, record in enumerate(nodes if isinstance(nodes, list) else ()):
        if isinstance(record, dict):
            _check_node_id(record.get("id"), f"node {k}")
            for key in ("x", "y"):
                if key in record and not _is_number(record[key]):
                    raise _network_error(f"node {k}: {key!r} must be a number of metres; got "
                                         f"{brief(record[key])}")
    edges = data.get("edges", data.get("links"))
    for k, record in enumerate(edges if isinstance(edges, list) else ()):
        if isinstance(record, dict):
            for end in ("source", "target"):
                _check_node_id(record.get(end), f"edge {k}")


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _check_node_id(node: Any, where: str, *, part: bool = False) -> None:
    """A node id that is true or false, or a list (a tuple id) holding a null, refused (the
    loader would take them); lists checked item by item (the body's depth bounds the
    recursion).  A null id itself is the loader's to refuse."""
    if isinstance(node, bool) or (part and node is None):
        raise _network_error(f"{where}: node ids must be strings, numbers or lists of them; "
                             f"got {node!r}")
    if isinstance(node, list):
        for item in node:
            _check_node_id(item, where, part=True)


def _check_graph_attributes(graph: dict[str, Any]) -> None:
    """The graph attributes ``name``, ``topology``, ``delay`` and ``physical_model``."""
    from .._checks import check_choice, check_real
    from ..network.physical import LTE_RATE_MBPS

    name = graph.get("name")
    if name is not None and not isinstance(name, str):
        raise _network_error(f"graph attribute 'name' must be a string; got {brief(name)}")
    topology = graph.get("topology")
    if topology is not None and not (isinstance(topology, dict) and "edges" in topology):
        raise _network_error("graph attribute 'topology' must be null or an object with "
                             f"'edges' (list of [u, v]) and 'dp_devices'; got {brief(topology)}")
    delay = graph.get("delay")
    for i, row in enumerate(delay if isinstance(delay, list) else ()):
        if isinstance(row, list) and not set(map(type, row)) <= {int, float, type(None)}:
            j = next(j for j, x in enumerate(row) if type(x) not in (int, float, type(None)))
            raise _network_error(f"delay[{i}][{j}] must be a number of seconds or null (no "
                                 f"link); got {brief(row[j])}")
    model = graph.get("physical_model")
    if not isinstance(model, dict):
        return  # absent, null, or the loader's message
    for key, interval in PHYSICAL_MODEL_RANGES.items():
        value = model.get(key)
        if key in model and not (value is None and key == "max_range_m"):
            if not _is_number(value):
                raise _network_error(f"physical_model.{key} must be a number; got "
                                     f"{brief(value)}")
            _checked("network", check_real, value, f"network: physical_model.{key}",
                     **interval)
    if "lte" in model:
        categories = model["lte"] if isinstance(model["lte"], list) else [model["lte"]]
        for category in categories:
            _checked("network", check_choice, category, "network: physical_model.lte",
                     sorted(LTE_RATE_MBPS))


def _whole(value: Any) -> Any:
    """A whole-number float as the int it is, anything else as it is.

    JSON has one kind of number, and its schemas read ``46.0`` as the integer 46:
    so does the service, where a check takes integers only (``options.seed``,
    ``options.rounds``, a workload's counts, ``topokit_format``).  ``46.5`` is
    left for the check to refuse.
    """
    return int(value) if type(value) is float and value.is_integer() else value


def _checked(field: str, check, *args, **kwargs):
    """``check(*args, **kwargs)``, its TopokitError a 422 about ``field``."""
    try:
        return check(*args, **kwargs)
    except TopokitError as exc:
        raise RequestError(str(exc), field=field) from None


def _only_for_optimize(method: str, options: dict[str, Any], names: tuple[str, ...]) -> None:
    for name in names:
        if options.get(name) is not None and method != "optimize":
            raise RequestError(f"options.{name} applies to method 'optimize' only; drop it",
                               field=f"options.{name}")


def _predictor(method: str, name: Any) -> str | None:
    """The predictor name of a design (None: autotag's eq. 15, as ``topokit design``)."""
    from .._checks import check_choice

    if name is None:  # optimize picks the shipped predictor for the workload, as the CLI
        return None
    _checked("options.predictor", check_choice, name, "options.predictor", PREDICTORS)
    if method == "autotag" and name != AUTOTAG_PREDICTOR:
        raise RequestError(
            "method 'autotag' builds its snapshots with eq. (15)'s scores, so it needs the "
            f"'paper' predictor; {name!r} is a TrainingTimePredictor: use method 'optimize' "
            "with it", field="options.predictor")
    return name


def _options(method: str, options: Any) -> dict[str, Any]:
    """The checked options of a design request, by :data:`OPTIONS` name."""
    from .._checks import check_choice, check_int, check_real
    from ..design import MIXING
    from ..design.workload import _INT_FIELDS, Workload

    options = _checked_keys({} if options is None else options, OPTIONS, (), "options")
    _only_for_optimize(method, options, OPTIMIZE_ONLY_OPTIONS)
    mixing = options.get("mixing")
    if mixing is not None:
        _checked("options.mixing", check_choice, mixing, "options.mixing", MIXING)
        if mixing != AUTOTAG_MIXING:
            _only_for_optimize(method, options, ("mixing",))
    bound = options.get("max_stranger_mu")
    if bound is not None:
        bound = float(_checked("options.max_stranger_mu", check_real, bound,
                               "options.max_stranger_mu", **MAX_STRANGER_MU_RANGE))
    seed = _whole(options.get("seed", 0))
    seed = _checked("options.seed", check_int, seed, "options.seed", **SEED_RANGE)
    workload = options.get("workload")
    if isinstance(workload, dict):
        workload = {key: _whole(value) if key in _INT_FIELDS else value
                    for key, value in workload.items()}
    if workload is not None:
        workload = _checked("options.workload", Workload.from_dict, workload)
    return {"predictor": _predictor(method, options.get("predictor")), "mixing": mixing,
            "max_stranger_mu": bound, "seed": seed, "workload": workload}


def parse_design(data: Any, *, max_devices: int | None = None) -> DesignRequest:
    """The checked request of ``POST /v1/designs`` (the network last: the costliest check)."""
    from .._checks import check_choice

    data = _checked_keys(data, ("network", "method", "options"), ("network",), "the body")
    method = data.get("method", "optimize")
    _checked("method", check_choice, method, "method", METHODS)
    options = _options(method, data.get("options"))
    net = parse_network(data["network"], max_devices=max_devices)
    return DesignRequest(net=net, method=method, **options)


def parse_topology(data: Any, net):
    """The Topology of JSON ``data`` ``{"edges", "dp_devices"}``, validated on ``net``."""
    from ..network.core import Topology

    try:
        return Topology.from_dict(data).validate(net)
    except TopokitError as exc:
        raise RequestError(str(exc), field="topology") from None


def parse_evaluation(data: Any, *, max_devices: int | None = None):
    """The network, topology, predictor and a design's judge of ``POST /v1/evaluations``.

    The body gives a ``"topology"``, or a ``"design"`` (a design's record, as
    ``GET /v1/designs/{id}`` returns it), whose own predictor judges it unless
    ``"predictor"`` names another: the last item is ``(its predictor, its name)``, None
    for a topology.
    """
    from .._checks import check_choice

    data = _checked_keys(data, ("network", "topology", "design", "predictor"), ("network",),
                         "the body")
    if ("topology" in data) == ("design" in data):
        raise RequestError("give the body a \"topology\" or a \"design\" (one of them) to "
                           "evaluate", field="topology")
    predictor = data.get("predictor")
    if predictor is not None:
        _checked("predictor", check_choice, predictor, "predictor", PREDICTORS)
    net = parse_network(data["network"], max_devices=max_devices)
    if "topology" in data:
        return net, parse_topology(data["topology"], net), predictor, None
    design = data["design"]
    if not isinstance(design, dict) or "topology" not in design:
        raise RequestError(f"design must be a design's record (an object with its "
                           f"\"topology\" and \"predictor\"); got {brief(design)}",
                           field="design")
    try:
        topology = parse_topology(design["topology"], net)
    except RequestError as exc:
        raise RequestError(str(exc), field="design.topology") from None
    return net, topology, predictor, _recorded_judge(design.get("predictor"))


def _recorded_judge(description: Any):
    """The predictor a design's record names, at the settings it judged at."""
    from ..design.result import recorded_judge

    if description is not None and not isinstance(description, dict):
        raise RequestError(f"design.predictor must be an object or null; got "
                           f"{brief(description)}", field="design.predictor")
    try:
        return recorded_judge(description), (
            "paper" if description is None else str(description.get("name", "recorded")))
    except (TopokitError, KeyError, TypeError, ValueError) as exc:
        raise RequestError(f"design.predictor is not a predictor's record as topokit writes "
                           f"it ({' '.join(str(exc).split())})", field="design.predictor"
                           ) from None


def _audit_options(options: Any) -> dict[str, Any]:
    """The options of an audit request that need no network: rounds, model, delta.

    An absent or null option takes :func:`topokit.privacy_audit`'s default
    (rounds: :data:`~topokit.design.metrics.DEFAULT_AUDIT_ROUNDS`, as designs audit).
    """
    from .._checks import check_choice, check_real
    from ..audit.core import AUDIT_MODELS, check_audit_rounds
    from ..design.metrics import DEFAULT_AUDIT_ROUNDS

    options = _checked_keys({} if options is None else options, AUDIT_OPTIONS, (), "options")
    model = _given(options, "model", DEFAULT_AUDIT_MODEL)
    _checked("options.model", check_choice, model, "options.model", AUDIT_MODELS)
    # Refused here, before the network is read: a huge audit is refused at once.
    rounds = _checked("options.rounds", check_audit_rounds,
                      _whole(_given(options, "rounds", DEFAULT_AUDIT_ROUNDS)), model,
                      "options.rounds")
    delta = options.get("delta")
    if delta is not None:
        delta = _checked("options.delta", check_real, delta, "options.delta",
                         **AUDIT_DELTA_RANGE)
    return {"rounds": rounds, "model": model, "delta": delta}


def _given(options: dict[str, Any], name: str, default: Any) -> Any:
    """Option ``name``, or ``default`` when it is absent or null."""
    value = options.get(name)
    return default if value is None else value


def _audit_topology(data: dict[str, Any], net) -> tuple[Any, str]:
    """The topology to audit and where it came from: the body's, else the network's own."""
    if data.get("topology") is not None:
        return parse_topology(data["topology"], net), "given topology"
    if net.topology is not None:
        return net.topology, "stored topology"
    raise RequestError("no topology to audit: the body has no 'topology' and the network "
                       "stores none; give one as {\"edges\": [[u, v], ...], \"dp_devices\": "
                       "[...]}", field="topology")


def _noise_multiplier(value: Any, net, topology) -> Any:
    """``options.noise_multiplier`` checked as :func:`topokit.privacy_audit` checks it.

    None (absent or null) stays None: the library's default.  A JSON object's
    keys are text: each is read as the device it names, or the device that
    prints as it (a network of integer ids), so that the library names a key
    that is neither.
    """
    from ..audit.core import device_noise

    if value is None:
        return None
    if isinstance(value, dict):
        by_text = {str(node): node for node in net.nodes}
        value = {key if key in net.index else by_text.get(key, key): level
                 for key, level in value.items()}
    _checked("options.noise_multiplier", device_noise, net, topology, value)
    return value


def parse_audit(data: Any, *, max_devices: int | None = None) -> AuditRequest:
    """The checked request of ``POST /v1/audits``.

    The options that need no network come first, so that a refused one costs
    no network read; the noise multipliers last, as they need the topology.
    """
    data = _checked_keys(data, ("network", "topology", "options"), ("network",), "the body")
    options = _audit_options(data.get("options"))
    net = parse_network(data["network"], max_devices=max_devices)
    topology, source = _audit_topology(data, net)
    noise = _noise_multiplier((data.get("options") or {}).get("noise_multiplier"), net, topology)
    return AuditRequest(net=net, topology=topology, topology_source=source,
                        noise_multiplier=noise, **options)


#: The parser of each kind of job's request (the kind is the store's ``kind`` column).
JOB_PARSERS = {"design": parse_design, "audit": parse_audit}
