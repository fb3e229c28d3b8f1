"""The service's request bodies, checked with the library's own checks.

Every refusal is a :class:`RequestError`: an HTTP status, one line (the
message the library's :class:`~topokit.errors.TopokitError` gives) and the
field it is about.  A network is read exactly as
:func:`topokit.network.formats.load_network` reads a node-link file, so the
server refuses what the file loader refuses, with the same words.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..errors import TopokitError

__all__ = ["RequestError", "DesignRequest", "parse_json", "parse_design", "parse_evaluation",
           "request_digest", "METHODS", "OPTIONS", "PREDICTORS"]

METHODS = ("optimize", "autotag")
#: The options of a design request (``topokit design``'s options of the same names).
OPTIONS = ("predictor", "mixing", "max_stranger_mu", "seed", "workload")
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
    from ..network.formats import _node_link_graph, graph_to_network

    nodes = data.get("nodes") if isinstance(data, dict) else None
    if max_devices is not None and isinstance(nodes, list) and len(nodes) > max_devices:
        raise RequestError(f"the network has {len(nodes)} devices; this server designs networks "
                           f"of at most {max_devices} (its --max-devices)", field="network")
    try:
        return graph_to_network(_node_link_graph(copy.deepcopy(data), "network"),
                                source="network")
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
    from ..design._optimize import MIXING
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


def parse_evaluation(data: Any, *, max_devices: int | None = None):
    """The network, topology and predictor of ``POST /v1/evaluations``."""
    from .._checks import check_choice
    from ..network.core import Topology

    data = _checked_keys(data, ("network", "topology", "predictor"), ("network", "topology"),
                         "the body")
    predictor = data.get("predictor")
    if predictor is not None:
        _checked("predictor", check_choice, predictor, "predictor", PREDICTORS)
    net = parse_network(data["network"], max_devices=max_devices)
    try:
        topology = Topology.from_dict(data["topology"]).validate(net)
    except TopokitError as exc:
        raise RequestError(str(exc), field="topology") from None
    return net, topology, predictor
