"""topokit: design and check communication topologies for private decentralized learning.

The top level re-exports the network model, the graph kernels and the design
API; the subpackages :mod:`topokit.gfl` (privatized graph federated learning),
:mod:`topokit.learn` (graph learning under privacy), :mod:`topokit.training`
(D-PSGD with partial DP) and the modules :mod:`topokit.baselines` and
:mod:`topokit.datasets` are imported on first use, as are :func:`validate` and
:func:`calibrate` (which train models).
"""

from __future__ import annotations

import importlib
from typing import Any

# ``topokit.autotag`` names the function; the module stays reachable as
# ``sys.modules["topokit.autotag"]`` and through ``from topokit.autotag import ...``.
from .autotag import Design, autotag
from .errors import (
    DisconnectedGraphError,
    InvalidInputError,
    InvalidTopologyError,
    TopokitError,
)
from .examples import list_examples, load_example
from .kernels import (
    hitting_time_and_gap,
    hitting_times,
    lazy_metropolis,
    max_hitting_time,
    metropolis,
    spectral_gap,
)
from .metrics import Metrics, evaluate
from .network import Network, Topology, load_network, load_topology, save_network, save_topology
from .predictor import GlobalIteratePredictor

__version__ = "0.1.0"

_LAZY_SUBMODULES = {"gfl", "learn", "training", "baselines", "datasets", "batch", "plotting",
                    "privacy", "physical"}
_LAZY_ATTRIBUTES = {
    "batch_analyze": ("topokit.batch", "batch_analyze"),
    "validate": ("topokit.validation", "validate"),
    "calibrate": ("topokit.validation", "calibrate"),
}

__all__ = [
    "TopokitError",
    "InvalidInputError",
    "InvalidTopologyError",
    "DisconnectedGraphError",
    "Network",
    "Topology",
    "load_network",
    "save_network",
    "load_topology",
    "save_topology",
    "load_example",
    "list_examples",
    "Metrics",
    "evaluate",
    "GlobalIteratePredictor",
    "autotag",
    "Design",
    "lazy_metropolis",
    "metropolis",
    "hitting_times",
    "hitting_time_and_gap",
    "max_hitting_time",
    "spectral_gap",
    *_LAZY_ATTRIBUTES,
]


def __getattr__(name: str) -> Any:
    # Heavy parts (cvxpy, dask, cryptography) load only when used.
    if name in _LAZY_ATTRIBUTES:
        module_name, attribute = _LAZY_ATTRIBUTES[name]
        return getattr(importlib.import_module(module_name), attribute)
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"topokit.{name}")
    raise AttributeError(f"module 'topokit' has no attribute {name!r}")
