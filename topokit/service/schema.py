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
from dataclasses import dataclass
from typing import Any

from ..errors import TopokitError

__all__ = ["RequestError", "DesignRequest", "AuditRequest", "parse_json", "parse_design",
           "parse_audit", "parse_evaluation", "parse_topology", "request_digest", "JOB_PARSERS",
           "METHODS", "OPTIONS", "AUDIT_OPTIONS", "PREDICTORS"]

METHODS = ("optimize", "autotag")
#: The options of a design request (``topokit design``'s options of the same names).
OPTIONS = ("predictor", "mixing", "max_stranger_mu", "seed", "workload")
#: The options of an audit request (:func:`topokit.privacy_audit`'s arguments of the same names).
AUDIT_OPTIONS = ("rounds", "noise_multiplier", "model", "delta")
#: The predictors a request may name (a server reads no predictor files).
PREDICTORS = ("default", "mlp", "paper")


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
    """The JSON of a request body; malformed JSON is a 422 naming the place."""
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise RequestError(f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                           field="body") from None
    except UnicodeDecodeError:
        raise RequestError("the body is not UTF-8 text", field="body") from None


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
    try:
        return network_from_node_link(data, source="network")
    except TopokitError as exc:
        raise RequestError(str(exc), field="network") from None


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

    if name is None:
        return "default" if method == "optimize" else None
    _checked("options.predictor", check_choice, name, "options.predictor", PREDICTORS)
    if method == "autotag" and name != "paper":
        raise RequestError(
            "method 'autotag' builds its snapshots with eq. (15)'s scores, so it needs the "
            f"'paper' predictor; {name!r} is a TrainingTimePredictor: use method 'optimize' "
            "with it", field="options.predictor")
    return name


def _options(method: str, options: Any) -> dict[str, Any]:
    """The checked options of a design request, by :data:`OPTIONS` name."""
    from .._checks import check_choice, check_int, check_real
    from ..design import MIXING
    from ..design.workload import Workload

    options = _checked_keys({} if options is None else options, OPTIONS, (), "options")
    _only_for_optimize(method, options, ("max_stranger_mu", "workload"))
    mixing = options.get("mixing")
    if mixing is not None:
        _checked("options.mixing", check_choice, mixing, "options.mixing", MIXING)
        if mixing != "lazy-metropolis":
            _only_for_optimize(method, options, ("mixing",))
    bound = options.get("max_stranger_mu")
    if bound is not None:
        bound = float(_checked("options.max_stranger_mu", check_real, bound,
                               "options.max_stranger_mu", low=0, closed="neither"))
    seed = options.get("seed", 0)
    seed = _checked("options.seed", check_int, seed, "options.seed", low=0)
    workload = options.get("workload")
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
    """The network, topology and predictor of ``POST /v1/evaluations``."""
    from .._checks import check_choice

    data = _checked_keys(data, ("network", "topology", "predictor"), ("network", "topology"),
                         "the body")
    predictor = data.get("predictor")
    if predictor is not None:
        _checked("predictor", check_choice, predictor, "predictor", PREDICTORS)
    net = parse_network(data["network"], max_devices=max_devices)
    return net, parse_topology(data["topology"], net), predictor


def _audit_options(options: Any) -> dict[str, Any]:
    """The options of an audit request that need no network: rounds, model, delta.

    An absent or null option takes :func:`topokit.privacy_audit`'s default
    (rounds: :data:`~topokit.design.metrics.DEFAULT_AUDIT_ROUNDS`, as designs audit).
    """
    from .._checks import check_choice, check_real
    from ..audit.core import AUDIT_MODELS, check_audit_rounds
    from ..design.metrics import DEFAULT_AUDIT_ROUNDS

    options = _checked_keys({} if options is None else options, AUDIT_OPTIONS, (), "options")
    model = _given(options, "model", "gossip")
    _checked("options.model", check_choice, model, "options.model", AUDIT_MODELS)
    # Refused here, before the network is read: a huge audit is refused at once.
    rounds = _checked("options.rounds", check_audit_rounds,
                      _given(options, "rounds", DEFAULT_AUDIT_ROUNDS), model, "options.rounds")
    delta = options.get("delta")
    if delta is not None:
        delta = _checked("options.delta", check_real, delta, "options.delta", low=0, high=1,
                         closed="neither")
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
