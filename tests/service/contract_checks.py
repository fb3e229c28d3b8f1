"""Schemathesis settings of the contract test (loaded by the CLI as ``SCHEMATHESIS_HOOKS``).

A schema-valid body may still be refused where the rule joins two values, which JSON
Schema cannot say: a network's delay matrix must be n x n for its n nodes, a topology's
devices must be the network's, a noise level must name a device of the network, a
workload's target must not pass its ceiling.  The run's configuration (:data:`CONFIG`)
lets the three POST operations answer 422 to a schema-valid body; the check below keeps
that to those rules alone: a 422 about any other field (``method``, ``options.seed``,
...) is a contract failure, so the schema of every option is held exactly to its check.

The stateful phase follows the links of a queued job (GET it, DELETE it): the hook
:func:`map_case` gives its schema-valid POST bodies the toy network (and a topology of
it), so that they queue jobs whose links can be followed; every other phase sends the
networks it generates.
"""

from __future__ import annotations

import json

import networkx as nx

from topokit import load_example
from topokit.network.formats import network_to_graph

try:  # the dev extra's; without it the contract test is skipped, and nothing is registered
    import schemathesis
except ImportError:  # pragma: no cover
    schemathesis = None

#: Fields whose 422 can follow from a rule joining two values; with a word that the
#: message must hold (None: any message).  A design's topology joins the network, as a
#: topology does; its predictor's record is a fitted model, whose numbers JSON Schema
#: cannot check.
CROSS_FIELD = {"network": None, "topology": None, "options.noise_multiplier": None,
               "options.workload": "above the ceiling", "design.topology": None,
               "design.predictor": None}

#: The run's configuration file (``--config-file``).  The run also leaves out the check
#: ``use_after_free`` (``--exclude-checks``): DELETE cancels a queued job, and the job stays
#: readable as "cancelled" (a record its client polls), so a GET after a DELETE answers
#: 200 by design, not the 404 that check expects of a deleted resource.
CONFIG = """
[[operations]]
include-method = "POST"
include-path-regex = "^/v1/(designs|audits|evaluations)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "404", "409", "422"]
"""


def refused_only_for_a_cross_field_rule(ctx, response, case):
    """A schema-valid body refused with 422 is refused for a rule JSON Schema cannot say."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return None
    answer = response.json()
    field = answer.get("field")
    if field in CROSS_FIELD and (CROSS_FIELD[field] is None
                                 or CROSS_FIELD[field] in answer["error"]):
        return None
    raise AssertionError(f"a body the schema allows was refused at {field!r}: "
                         f"{answer.get('error')}")


#: The toy network as a request carries it, and a topology of it (its social links).
TOY = json.loads(json.dumps(nx.node_link_data(network_to_graph(load_example("toy")),
                                              edges="edges")))
TOY_TOPOLOGY = {"edges": [[link["source"], link["target"]] for link in TOY["edges"]],
                "dp_devices": []}


def map_case(context, case):
    """A stateful POST's schema-valid body with the toy network: a job the server queues."""
    meta = case.meta
    if (meta is None or meta.phase.name != "stateful" or not meta.generation.mode.is_positive
            or case.method.upper() != "POST" or not isinstance(case.body, dict)):
        return case
    body = {**case.body, "network": TOY}
    if "topology" in body or case.path.endswith("/evaluations"):
        body["topology"] = TOY_TOPOLOGY
    options = body.get("options")
    if isinstance(options, dict) and isinstance(options.get("noise_multiplier"), dict):
        body["options"] = {**options, "noise_multiplier": None}
    case.body = body
    return case


if schemathesis is not None:
    schemathesis.check(refused_only_for_a_cross_field_rule)
    schemathesis.hook(map_case)
