"""topokit: design and check communication topologies for private decentralized learning.

The package has one room per system of the papers it builds on, and shared
infrastructure beneath them:

- :mod:`topokit.design`: System 1, DeepPrivacy topology design (Ching et al.);
- :mod:`topokit.training`: the training core, D-PSGD with partial DP;
- :mod:`topokit.gfl`: System 2, privatized graph federated learning
  (Rizk, Vlaski and Sayed);
- :mod:`topokit.learn`: System 3, graph topology learning under privacy
  (Zhang et al.);
- :mod:`topokit.kernels` (random-walk quantities), :mod:`topokit.dp`
  (DP calibration and accounting), :mod:`topokit.plotting`, :mod:`topokit.cli`.

The top level re-exports the network model, the graph kernels and the design
API.  The subpackages and the training-backed functions :func:`validate` and
:func:`calibrate` are imported on first use.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from . import _compat
from . import design as _design_package
from ._version import __version__
from .design.workload import Workload, load_workload
from .errors import (
    DisconnectedGraphError,
    InvalidInputError,
    InvalidTopologyError,
    TopokitError,
)

_compat.install()
# ``topokit.autotag`` names the function (loaded on first use, below).  The module
# lives in ``topokit.design._autotag``; a stand-in registered under its old path keeps
# ``from topokit.autotag import Design`` working without an import ever rebinding the
# ``topokit.autotag`` attribute to the module.
sys.modules.setdefault("topokit.autotag", _compat.LazyModule("topokit.autotag",
                                                             "topokit.design._autotag"))

_LAZY_SUBMODULES = {"gfl", "learn", "training", "design", "dp", "plotting", "cli", "testing",
                    "export"}
# What judges, searches or computes loads on first use: the predictors are scikit-learn
# estimators and the kernels compile with Numba (one list, in topokit.design, for the
# design API; the kernels' names here).
_LAZY_ATTRIBUTES = {
    **_design_package._LAZY_ATTRIBUTES,  # the network model's names among them
    **{name: ("topokit.kernels", name) for name in (
        "hitting_time_and_gap", "hitting_times", "lazy_metropolis", "max_hitting_time",
        "metropolis", "spectral_gap")},
}

__all__ = [
    "__version__",
    "TopokitError",
    "InvalidInputError",
    "InvalidTopologyError",
    "DisconnectedGraphError",
    "Network",
    "Topology",
    "TopologySchedule",
    "load_network",
    "save_network",
    "load_topology",
    "save_topology",
    "load_schedule",
    "load_example",
    "list_examples",
    "Metrics",
    "evaluate",
    "GlobalIteratePredictor",
    "TrainingTimePredictor",
    "load_predictor",
    "predict_topology",
    "Workload",
    "load_workload",
    "autotag",
    "optimize",
    "Design",
    "load_design",
    "lazy_metropolis",
    "metropolis",
    "hitting_times",
    "hitting_time_and_gap",
    "max_hitting_time",
    "spectral_gap",
    "batch_analyze",
    "validate",
    "calibrate",
    "privacy_audit",
    "PrivacyAudit",
    "fastest_mixing_topology",
    "metropolis_hastings_topology",
    "export_design",
    "probe_topologies",
]


def __getattr__(name: str) -> Any:
    # Heavy parts (cvxpy, dask, cryptography, the training core) load only when used.
    if name in _LAZY_ATTRIBUTES:
        module_name, attribute = _LAZY_ATTRIBUTES[name]
        return getattr(importlib.import_module(module_name), attribute)
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"topokit.{name}")
    old_path = f"topokit.{name}"
    if old_path in _compat.MOVED_MODULES:  # e.g. topokit.baselines, topokit.datasets
        return importlib.import_module(old_path)
    raise AttributeError(f"module 'topokit' has no attribute {name!r}")
