"""System 1: topology design for DeepPrivacy (Ching, Huang, Yang, Liu and Kuo [1]_).

Devices that trust only their social neighbours train together with
decentralized SGD; a link to a stranger is allowed only if both ends add DP
noise.  The paper's model of such a network, its CoTOPO problem (the topology
and DP devices with the smallest predicted training time) and its AutoTag
algorithm are implemented here, with the rules its pseudocode leaves open
stated in the docstrings that make them.  This subpackage judges and searches
such topologies:

=======================  ===============================================================
module                   what it holds
=======================  ===============================================================
:mod:`.metrics`          :func:`evaluate`: H, phi, U, L, predicted time of one topology
:mod:`.predictor`        :class:`GlobalIteratePredictor` (eq. 15 and calibrated fits)
:mod:`.features`         what a topology does to training: mixing, DP noise, heterogeneity
:mod:`.time_predictor`   :class:`TrainingTimePredictor`, :func:`load_predictor`
:mod:`._autotag`         :func:`autotag` (Algorithm 2)
:mod:`.result`           :class:`Design`, what every design method returns; :func:`load_design`
:mod:`.noise`            :class:`~.noise.DesignNoise`: the noise a design's DP devices add
:mod:`._optimize`        :func:`optimize`: the design a training-time predictor judges fastest
:mod:`.baselines`        NDLF, DLFDP, ERG, random topologies, the exhaustive optimum
:mod:`.peers`            peers of the field: one-peer exponential, Base-(k+1), epidemic, EquiStatic
:mod:`.mixing`           topologies with fastest-mixing or Metropolis-Hastings weights
:mod:`.batch`            metrics of many networks, resumable, local or on Dask
:mod:`.workload`         :class:`Workload`: what the user trains
:mod:`.overlays`         Marfoq et al.'s ring, MST and delta-MBST overlays, max-plus cycle time
=======================  ===============================================================

The network model it designs for is :mod:`topokit.network`; what strangers learn
from a design is :mod:`topokit.audit`; training over a design and checking the
prediction is :mod:`topokit.validation`; writing a design in a runtime's format is
:mod:`topokit.export`.

Everything public is also importable from :mod:`topokit` itself.

References
----------
.. [1] C.-W. Ching, H.-S. Huang, C.-A. Yang, Y.-C. Liu and J.-J. Kuo,
   "Efficient Communication Topology via Partially Differential Privacy for
   Decentralized Learning", National Chung Cheng University, Taiwan.  The
   DeepPrivacy framework, CoTOPO and AutoTag (Algorithm 2); full entry in
   ``docs/references.rst``.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._defaults import DEFAULT_AUDIT_ROUNDS
from .workload import Workload, load_workload

# Everything that judges or searches loads on first use: the predictors are
# scikit-learn estimators and the kernels compile with Numba, which ``import
# topokit`` (every CLI command, ``topokit --help`` too) should not pay for.  The
# training-backed and parallel parts (the training core, joblib, dask) likewise;
# validate, calibrate and the audit live in their own rooms (topokit.validation,
# topokit.audit) and stay reachable here for code written before they moved.
_SEARCH_AND_JUDGE = {
    "autotag": "_autotag", "autotag_memory": "_autotag",
    "optimize": "_optimize", "check_ndlf_margin": "_optimize", "default_mixing": "_optimize",
    "optimize_with_references": "_optimize", "MIXING": "_optimize",
    "pruned_social": "_optimize", "MAX_AUTOTAG_DEVICES": "_optimize",
    "FeatureSettings": "features", "TopologyFeatures": "features",
    "topology_features": "features",
    "Metrics": "metrics", "evaluate": "metrics",
    "GlobalIteratePredictor": "predictor",
    "PHASES": "result", "Candidate": "result", "Design": "result", "Trace": "result",
    "load_design": "result", "DESIGN_FORMAT": "result",
    "TrainingTimePredictor": "time_predictor", "load_predictor": "time_predictor",
    "predict_topology": "time_predictor", "predictor_at_workload": "time_predictor",
    "shipped_predictor_for": "time_predictor", "workload_ceiling": "time_predictor",
    "workload_probe_rounds": "time_predictor",
    "workload_outside": "time_predictor", "workload_clamps": "time_predictor",
    "predictor_within_fit": "time_predictor",
    "measured_probe_rounds": "trust", "mixing_for_trait": "trust",
    "ring_overlay": "overlays", "mst_overlay": "overlays", "mbst_overlay": "overlays",
    "cycle_time": "overlays",
    "consider_schedules": "schedules", "ScheduleComparison": "schedules",
}
# The network model loads on first use too: networkx and the file readers are not needed
# to print ``topokit --help``.
_NETWORK_MODEL = {
    **{name: ("topokit.network.core", name) for name in ("Network", "Topology")},
    **{name: ("topokit.network.schedule", name) for name in ("TopologySchedule",
                                                             "load_schedule")},
    **{name: ("topokit.network.examples", name) for name in ("list_examples", "load_example")},
    **{name: ("topokit.network.formats", name) for name in (
        "load_network", "load_noise_multipliers", "load_topology", "save_network",
        "save_topology")},
}
_LAZY_ATTRIBUTES = {
    **_NETWORK_MODEL,
    **{name: (f"topokit.design.{module}", name) for name, module in _SEARCH_AND_JUDGE.items()},
    "batch_analyze": ("topokit.design.batch", "batch_analyze"),
    "validate": ("topokit.validation.core", "validate"),
    "calibrate": ("topokit.validation.calibration", "calibrate"),
    "privacy_audit": ("topokit.audit.core", "privacy_audit"),
    "PrivacyAudit": ("topokit.audit.core", "PrivacyAudit"),
    "fastest_mixing_topology": ("topokit.design.mixing", "fastest_mixing_topology"),
    "metropolis_hastings_topology": ("topokit.design.mixing", "metropolis_hastings_topology"),
    "export_design": ("topokit.export.core", "export_design"),
    "probe_topologies": ("topokit.validation.probes", "probe_topologies"),
}

__all__ = [
    "Network",
    "Topology",
    "load_network",
    "save_network",
    "load_topology",
    "load_noise_multipliers",
    "save_topology",
    "load_example",
    "list_examples",
    "Metrics",
    "evaluate",
    "GlobalIteratePredictor",
    "TrainingTimePredictor",
    "load_predictor",
    "predict_topology",
    "topology_features",
    "TopologyFeatures",
    "FeatureSettings",
    "Workload",
    "load_workload",
    "DEFAULT_AUDIT_ROUNDS",
    "workload_outside",
    "predictor_at_workload",
    "workload_ceiling",
    "workload_probe_rounds",
    "workload_clamps",
    "predictor_within_fit",
    "shipped_predictor_for",
    "measured_probe_rounds",
    "mixing_for_trait",
    "autotag",
    "optimize",
    "default_mixing",
    "check_ndlf_margin",
    "Design",
    "load_design",
    "Candidate",
    "Trace",
    "PHASES",
]
__all__ += [name for name in _LAZY_ATTRIBUTES if name not in __all__]


def __getattr__(name: str) -> Any:
    if name in _LAZY_ATTRIBUTES:
        module_name, attribute = _LAZY_ATTRIBUTES[name]
        return getattr(importlib.import_module(module_name), attribute)
    from .._compat import MOVED_MODULES

    if f"topokit.design.{name}" in MOVED_MODULES:  # e.g. topokit.design.examples, .audit
        return importlib.import_module(f"topokit.design.{name}")
    raise AttributeError(f"module 'topokit.design' has no attribute {name!r}")
