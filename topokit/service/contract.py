"""The service's contract: the JSON Schemas of its request bodies, answers and errors.

:func:`components` gives the ``components.schemas`` of the OpenAPI document
that ``GET /openapi.json`` serves; :mod:`.app` names them in every operation's
request body and responses.  Every choice and range that the checks take from
a constant is taken from it here (:mod:`.schema`,
:class:`~topokit.design.workload.Workload`,
:data:`~topokit.audit.MAX_AUDIT_ROUNDS`, ...), never restated, so that a body
the schemas allow is one the server's checks accept and a body the checks
accept is one the schemas allow; the bounds the library writes inline (a
delay >= 0) are held to its checks by ``tests/service/test_service_contract.py``,
which generates bodies from these schemas.  What JSON Schema cannot say (rules that
join two values: a delay matrix of n x n for n nodes, a topology's devices
being the network's, a workload's target at most its ceiling) is said in the
schemas' descriptions, and the server refuses it with a 422 naming the field.

Imports no web framework: the documentation build writes the same schemas.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import MISSING, fields
from typing import Any

__all__ = ["components", "examples", "ref", "error_response", "ERROR_STATUSES", "FLOAT_MAX"]

#: The largest finite float: JSON numbers beyond it are read as infinity, which no check takes.
FLOAT_MAX = sys.float_info.max

#: What each error status means, as every operation that can answer it lists it.
ERROR_STATUSES = {
    401: "The bearer token is missing or wrong (`field`: `Authorization`).",
    404: "No job of this kind with this id (`field`: `id`).",
    409: "A job that runs or has ended cannot be cancelled; or an `Idempotency-Key` was used "
         "before for another body (`field`: `id` or `Idempotency-Key`).",
    413: "The body is larger than the server's `--max-body-mb` (`field`: `body`).",
    415: "The body is not sent as `Content-Type: application/json` (`field`: `Content-Type`).",
    422: "The request cannot be used: malformed JSON, a body nested too deep or with an "
         "integer beyond a float's range, an unknown field, a value out of its range, a network "
         "the file loader refuses, a rule that joins two values. One line, the library's own "
         "message, naming the field.",
    500: "A bug in topokit: one line; the traceback goes to the server's log.",
}


def ref(name: str) -> dict[str, str]:
    """A reference to component schema ``name``."""
    return {"$ref": f"#/components/schemas/{name}"}


def error_response(status: int) -> dict[str, Any]:
    """The OpenAPI response object of error ``status``: an :data:`Error <components>` body."""
    return {"description": ERROR_STATUSES[status],
            "content": {"application/json": {"schema": ref("Error")}}}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _real(low: float | None = None, high: float | None = None, closed: str = "both",
          **extra: Any) -> dict[str, Any]:
    """A finite number in the interval of :func:`topokit._checks.check_real`'s arguments."""
    schema: dict[str, Any] = {"type": "number"}
    left = "minimum" if closed in ("both", "left") else "exclusiveMinimum"
    right = "maximum" if closed in ("both", "right") else "exclusiveMaximum"
    schema[left if low is not None else "minimum"] = low if low is not None else -FLOAT_MAX
    schema[right if high is not None else "maximum"] = high if high is not None else FLOAT_MAX
    return {**schema, **extra}


def _integer(low: int | None = None, high: int | None = None, **extra: Any) -> dict[str, Any]:
    """An integer in [low, high], as :func:`topokit._checks.check_int` takes it (a body's
    integers lie in a float's range: :data:`~topokit.service.schema.MAX_INTEGER`)."""
    schema: dict[str, Any] = {"type": "integer",
                              "minimum": -FLOAT_MAX if low is None else low,
                              "maximum": FLOAT_MAX if high is None else high}
    return {**schema, **extra}


@functools.cache
def _upper_cases() -> dict[str, frozenset[str]]:
    """Every character that ``str.lower()`` turns into one character, by that character.

    The Basic Multilingual Plane only: the cased scripts beyond it (Deseret, Osage, Adlam,
    ...) lower into themselves, never into the Latin letters of a device class.
    """
    found: dict[str, set[str]] = {}
    for char in map(chr, range(0x10000)):
        lower = char.lower()
        if len(lower) == 1:
            found.setdefault(lower, set()).add(char)
    return {lower: frozenset(chars) for lower, chars in found.items()}


def _count() -> dict[str, Any]:
    """A count in an answer."""
    return {"type": "integer", "minimum": 0}


def _any_case(key: str) -> str:
    """A regular expression of the texts that ``text.lower()`` without spaces and hyphens
    turns into ``key`` (how a node's device class is read)."""
    parts = []
    for char in key:
        variants = sorted(_upper_cases().get(char, frozenset()) | {char})
        parts.append("[" + "".join(c if c.isascii() and c.isalnum() else f"\\u{ord(c):04x}"
                                    for c in variants) + "]")
    return "[ -]*" + "[ -]*".join(parts) + "[ -]*"


def _non_blank_pattern() -> str:
    """A regular expression that a text matches when Python's ``str.strip()`` leaves some of it."""
    blanks = "".join(f"\\u{ord(c):04x}" for c in map(chr, range(0x10000)) if c.isspace())
    return f"[^{blanks}]"


def _network_schemas(max_devices: int | None) -> dict[str, Any]:
    from ..network.physical import DEVICE_COMPUTE_SECONDS

    classes = sorted(DEVICE_COMPUTE_SECONDS)
    nodes: dict[str, Any] = {"type": "array", "minItems": 1, "items": ref("NetworkNode"),
                             "description": "The devices."}
    if max_devices is not None:
        nodes["maxItems"] = max_devices
        nodes["description"] += (f" This server takes at most {max_devices} "
                                 "(its `--max-devices`).")
    edges = {"type": "array", "items": ref("NetworkEdge"),
             "description": "The social links (an empty list for none); `links` is the "
                            "other name of `edges`: give one of them."}
    return {
        "NodeId": {
            "description": "A device's id: a string, a number, or a list of ids (a tuple).",
            "anyOf": [{"type": "string"}, _real(),
                      {"type": "array", "items": ref("NodeId")}],
        },
        "Network": {
            "type": "object",
            "title": "Network",
            "description": (
                "A network in topokit's node-link JSON (what `topokit.save_network` writes and "
                "`topokit design NETWORK.json` reads), checked as the file loader checks a "
                "file. Beyond this schema: node ids are unique, every edge joins two listed "
                "devices, `x` and `y` and `class_counts` are on every node or on none, "
                "`graph.delay` is a symmetric n x n matrix for n nodes or a default with the "
                "pairs that differ (or, without it, the nodes have positions), and "
                "`class_counts` rows have one length."),
            "required": ["nodes"],
            "oneOf": [{"title": "with edges", "required": ["edges"]},
                      {"title": "with links", "required": ["links"]}],
            "properties": {
                "directed": {"const": False},
                "multigraph": {"const": False},
                "graph": ref("NetworkGraph"),
                "nodes": nodes,
                "edges": edges,
                "links": edges,
            },
        },
        "NetworkNode": {
            "type": "object",
            "required": ["id", "compute_time"],
            "properties": {
                "id": ref("NodeId"),
                "compute_time": {
                    "description": "Seconds of computation per round, or a device class "
                                   f"({', '.join(classes)}).",
                    "anyOf": [_real(0), {"type": "string",
                                         "pattern": "^(" + "|".join(map(_any_case, classes))
                                                    + ")$"}]},
                "x": _real(description="Position in metres (with `y`)."),
                "y": _real(description="Position in metres (with `x`)."),
                "class_counts": {
                    "type": "array", "minItems": 1, "items": _integer(0),
                    "contains": {"type": "integer", "minimum": 1},
                    "description": "Training rows per class, such as [12, 0, 3]."},
            },
            "dependentRequired": {"x": ["y"], "y": ["x"]},
        },
        "NetworkEdge": {
            "type": "object",
            "required": ["source", "target"],
            "properties": {"source": ref("NodeId"), "target": ref("NodeId")},
        },
        **_graph_schemas(),
    }


def _physical_schema() -> dict[str, Any]:
    """The properties of a network's ``graph.physical_model`` (the radio model of its delays)."""
    from ..network.formats import _PHYSICAL_KEYS
    from ..network.physical import LTE_RATE_MBPS
    from .schema import PHYSICAL_MODEL_RANGES

    lte = sorted(LTE_RATE_MBPS)
    ranges = PHYSICAL_MODEL_RANGES
    physical = {
        "model_size_mb": _real(**ranges["model_size_mb"], description="Megabytes of the model."),
        "lte": {"anyOf": [{"enum": lte}, {"type": "array", "items": {"enum": lte}}],
                "description": "The LTE-M category of all devices, or one per device."},
        "wifi_range_m": _real(**ranges["wifi_range_m"],
                              description="Pairs closer than this use Wi-Fi (metres)."),
        "max_range_m": _nullable(_real(**ranges["max_range_m"],
                                       description="Pairs farther apart cannot connect.")),
    }
    assert set(physical) == set(_PHYSICAL_KEYS)
    return physical


def _graph_schemas() -> dict[str, Any]:
    """The schemas of a network's graph attributes and of a topology."""
    from ..network.core import FORMAT_VERSION

    physical = _physical_schema()
    return {
        "NetworkGraph": {
            "type": "object",
            "description": "The graph attributes.",
            "properties": {
                "topokit_format": _nullable(_integer(
                    1, FORMAT_VERSION, description="The network format version (none: "
                                                   f"{FORMAT_VERSION}).")),
                "name": _nullable({"type": "string"}),
                "delay": _nullable({"oneOf": [
                    {"type": "array", "title": "matrix",
                     "items": {"type": "array", "items": _nullable(_real(0))},
                     "description": "Seconds of communication of every pair (n x n, "
                                    "symmetric), null for a pair that cannot connect."},
                    {"type": "object", "title": "default and pairs",
                     "additionalProperties": False, "required": ["default", "pairs"],
                     "properties": {
                         "default": _nullable(_real(0)),
                         "pairs": {"type": "array", "items": {
                             "type": "array", "minItems": 3, "maxItems": 3,
                             "prefixItems": [{"type": "integer", "minimum": 0},
                                             {"type": "integer", "minimum": 0},
                                             _nullable(_real(0))]}}},
                     "description": "Every pair's delay is `default` (null: the pair cannot "
                                    "connect) but the listed pairs [i, j, seconds], i < j "
                                    "positions in `nodes` (what `save_network` writes for "
                                    "large networks)."}]}),
                "physical_model": _nullable({"type": "object", "additionalProperties": False,
                                             "properties": physical}),
                "topology": _nullable(ref("Topology")),
            },
        },
        "Topology": {
            "type": "object",
            "title": "Topology",
            "description": ("Links and DP devices. Beyond this schema: every device is the "
                            "network's, a link joins two devices, a non-social link has DP "
                            "devices at both ends, and `weights` has one weight per link."),
            "required": ["edges"],
            "properties": {
                "edges": {"type": "array",
                          "items": {"type": "array", "items": ref("NodeId"),
                                    "minItems": 2, "maxItems": 2, "uniqueItems": True}},
                "dp_devices": {"type": "array", "items": ref("NodeId"), "default": []},
                "weights": _nullable({"type": "array", "items": _real(0, closed="neither"),
                                      "description": "A weight per link of `edges`, in its "
                                                     "order; none: Lazy-Metropolis."}),
            },
        },
    }


def _workload_schema() -> dict[str, Any]:
    from ..design.workload import _INT_FIELDS, _OPTIONAL, _REAL_FIELDS, Workload

    properties: dict[str, Any] = {}
    for spec in fields(Workload):
        name = spec.name
        if name in _REAL_FIELDS:
            accepted, interval = _REAL_FIELDS[name]
            schema = _real(**interval, description=f"{accepted[0].upper()}{accepted[1:]}.")
        elif name in _INT_FIELDS:
            schema = _integer(_INT_FIELDS[name])
        elif name == "model":
            schema = {"type": "string", "pattern": _non_blank_pattern(),
                      "description": "The model trained: 'logreg', 'mlp' or your own's name."}
        else:  # a field this contract does not know yet: refused by the test of the contract
            raise AssertionError(f"Workload field {name!r} has no schema")
        if name in _OPTIONAL:
            schema = _nullable(schema)
        if spec.default is not MISSING:
            schema["default"] = spec.default
        properties[name] = schema
    return {"type": "object", "title": "Workload", "additionalProperties": False,
            "properties": properties,
            "description": "What the design is for (`topokit.design.Workload`; missing fields "
                           "take their defaults). Beyond this schema: `target` is at most "
                           "`ceiling`."}


def _design_schemas() -> dict[str, Any]:
    from ..design import MIXING
    from .schema import (
        AUTOTAG_MIXING,
        AUTOTAG_PREDICTOR,
        MAX_STRANGER_MU_RANGE,
        METHODS,
        OPTIMIZE_ONLY_OPTIONS,
        OPTIONS,
        PREDICTORS,
        SEED_RANGE,
    )

    options = {
        "predictor": _nullable({
            "enum": list(PREDICTORS),
            "description": "null (default): the shipped predictor for the request, as "
                           "`topokit design` picks it ('workload' with a workload, else "
                           "'default'); method 'autotag' takes 'paper' only."}),
        "mixing": _nullable({"enum": list(MIXING), "default": MIXING[0]}),
        "max_stranger_mu": _nullable(_real(**MAX_STRANGER_MU_RANGE)),
        "seed": _integer(SEED_RANGE["low"], default=0),
        "workload": _nullable(ref("Workload")),
    }
    assert tuple(options) == OPTIONS
    autotag_options = {name: {"type": "null"} for name in OPTIMIZE_ONLY_OPTIONS}
    autotag_options["predictor"] = {"enum": [AUTOTAG_PREDICTOR, None]}
    autotag_options["mixing"] = {"enum": [AUTOTAG_MIXING, None]}
    return {
        "DesignOptions": {
            "type": "object", "title": "DesignOptions", "additionalProperties": False,
            "properties": options,
            "description": "The options of `topokit design` of the same names.",
        },
        "DesignRequest": {
            "type": "object",
            "title": "DesignRequest",
            "additionalProperties": False,
            "required": ["network"],
            "properties": {
                "network": ref("Network"),
                "method": {"enum": list(METHODS), "default": METHODS[0]},
                "options": _nullable(ref("DesignOptions")),
            },
            "description": (
                f"A design. Method {METHODS[1]!r} takes predictor {AUTOTAG_PREDICTOR!r} "
                f"(or none), mixing {AUTOTAG_MIXING!r} (or none), and none of "
                f"{', '.join(OPTIMIZE_ONLY_OPTIONS)}."),
            "anyOf": [
                {"title": f"method {METHODS[0]}", "properties": {"method": {"const": METHODS[0]}}},
                {"title": f"method {METHODS[1]}",
                 "properties": {"method": {"const": METHODS[1]}, "options": {"anyOf": [
                    {"type": "null"}, {"type": "object", "properties": autotag_options}]}},
                 "required": ["method"]},
            ],
        },
    }


def _audit_schemas() -> dict[str, Any]:
    from ..audit import AUDIT_MODELS, MAX_AUDIT_ROUNDS
    from ..design.metrics import DEFAULT_AUDIT_ROUNDS
    from .schema import AUDIT_DELTA_RANGE, AUDIT_OPTIONS, DEFAULT_AUDIT_MODEL

    def rounds(model: str | None) -> dict[str, Any]:
        most = max(MAX_AUDIT_ROUNDS.values()) if model is None else MAX_AUDIT_ROUNDS[model]
        return _nullable(_integer(1, most))

    options = {
        "rounds": {**rounds(None), "default": DEFAULT_AUDIT_ROUNDS,
                   "description": "Rounds of gossip watched; at most "
                   + ", ".join(f"{MAX_AUDIT_ROUNDS[m]} ({m})" for m in AUDIT_MODELS) + "."},
        "noise_multiplier": {
            "description": "z of every DP device, or an object device -> z (every DP device "
                           "needs an entry); none: the library's default.",
            "anyOf": [_real(0), {"type": "object", "additionalProperties": _real(0)},
                      {"type": "null"}]},
        "model": _nullable({"enum": list(AUDIT_MODELS), "default": DEFAULT_AUDIT_MODEL}),
        "delta": _nullable(_real(**AUDIT_DELTA_RANGE)),
    }
    assert tuple(options) == AUDIT_OPTIONS
    # One branch a model: its rounds limit (the default model's branch takes no model too).
    limits = [{"title": f"model {model}",
               "properties": {"model": {"enum": [model, None]}, "rounds": rounds(model)}}
              if model == DEFAULT_AUDIT_MODEL else
              {"title": f"model {model}",
               "properties": {"model": {"const": model}, "rounds": rounds(model)},
               "required": ["model"]}
              for model in AUDIT_MODELS]
    return {
        "AuditOptions": {"type": "object", "title": "AuditOptions",
                         "additionalProperties": False, "properties": options,
                         "anyOf": limits},
        "AuditRequest": {
            "type": "object",
            "title": "AuditRequest",
            "additionalProperties": False,
            "required": ["network"],
            "properties": {
                "network": ref("Network"),
                "topology": {**_nullable(ref("Topology")),
                             "description": "Default: the network's stored topology."},
                "options": _nullable(ref("AuditOptions")),
            },
            "description": "A privacy audit (`topokit.privacy_audit`).",
        },
    }


def _evaluation_schemas() -> dict[str, Any]:
    from .schema import PREDICTORS

    return {
        "EvaluationRequest": {
            "type": "object",
            "title": "EvaluationRequest",
            "additionalProperties": False,
            "required": ["network"],
            "properties": {
                "network": ref("Network"),
                "topology": ref("Topology"),
                "design": {"type": "object", "required": ["topology"],
                           "properties": {"topology": ref("Topology"),
                                          "predictor": _nullable({"type": "object"})},
                           "description": "A design's record, as GET /v1/designs/{id} "
                                          "returns it (its topology and predictor are "
                                          "read): judged by its own predictor."},
                "predictor": _nullable({
                    "enum": list(PREDICTORS),
                    "description": "null (default): a design's own predictor, else 'paper' "
                                   "(eq. 15)."}),
            },
            "oneOf": [{"required": ["topology"]}, {"required": ["design"]}],
            "description": "A topology or a design to evaluate on a network "
                           "(`topokit analyze`).",
        },
        "Evaluation": {
            "type": "object",
            "title": "Evaluation",
            "required": ["network", "predictor", "metrics"],
            "properties": {
                "network": _nullable({"type": "string"}),
                "predictor": {"type": "string",
                              "description": "The predictor that judged it: a name "
                                             "`topokit.load_predictor` knows, or a design's "
                                             "recorded one."},
                "metrics": {"type": "object",
                            "description": "`topokit.evaluate`'s metrics (`topokit analyze`)."},
            },
        },
    }


def _answer_schemas() -> dict[str, Any]:
    from .store import STATUSES

    return {
        "Error": {
            "type": "object",
            "title": "Error",
            "additionalProperties": False,
            "required": ["error", "field"],
            "properties": {
                "error": {"type": "string", "minLength": 1, "pattern": "^[^\\n]*$",
                          "description": "What is wrong, in one line."},
                "field": {**_nullable({"type": "string"}),
                          "description": "The field, header or part of the request it is "
                                         "about (`options.seed`, `body`, `Authorization`)."},
            },
        },
        "Progress": {
            "type": "object",
            "required": ["done", "total", "phase"],
            "properties": {"done": _count(), "total": _count(),
                           "phase": {"type": "string"}},
        },
        "Job": {
            "type": "object",
            "title": "Job",
            "additionalProperties": False,
            "required": ["id", "status", "links", "attempts", "progress"],
            "properties": {
                "id": {"type": "string"},
                "status": {"enum": list(STATUSES)},
                "links": {"type": "object", "required": ["self"],
                          "properties": {"self": {"type": "string"}}},
                "attempts": _count(),
                "progress": _nullable(ref("Progress")),
                "result": {"type": "object",
                           "description": "When done: what `topokit design -o` writes, or "
                                          "`topokit audit --json` prints."},
                "error": {"type": "string", "description": "When failed: why, in one line."},
            },
        },
        "Health": {
            "type": "object",
            "title": "Health",
            "required": ["status", "workers", "scheduler", "scheduler_connected", "jobs"],
            "properties": {
                "status": {"const": "ok"},
                "workers": _count(),
                "scheduler": _nullable({"type": "string"}),
                "scheduler_connected": _nullable({"type": "boolean"}),
                "jobs": {"type": "object", "required": list(STATUSES),
                         "properties": {status: _count() for status in STATUSES}},
            },
        },
        "Version": {
            "type": "object",
            "title": "Version",
            "required": ["topokit", "api"],
            "properties": {"topokit": {"type": "string"}, "api": {"type": "string"}},
        },
    }


def components(max_devices: int | None = None) -> dict[str, Any]:
    """The component schemas of the OpenAPI document, for a server of ``max_devices``."""
    return {**_network_schemas(max_devices), "Workload": _workload_schema(),
            **_design_schemas(), **_audit_schemas(), **_evaluation_schemas(),
            **_answer_schemas()}


def examples() -> dict[str, dict[str, Any]]:
    """A request body of each kind on the bundled toy network (the request schemas' examples:
    what a client sends, and what Schemathesis's examples phase sends)."""
    import json

    from ..network.examples import data_dir

    toy = json.loads((data_dir() / "toy.json").read_text())
    social = [[link["source"], link["target"]] for link in toy["edges"]]
    return {
        "DesignRequest": {"network": toy, "method": "optimize", "options": {"seed": 1}},
        "AuditRequest": {"network": toy,
                         "options": {"rounds": 50, "noise_multiplier": 1.5, "delta": 1e-5}},
        "EvaluationRequest": {"network": toy, "topology": {"edges": social, "dp_devices": []}},
    }
