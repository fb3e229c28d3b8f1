"""System 1: topology design for DeepPrivacy (Ching, Huang, Yang, Liu and Kuo [1]_).

Devices that trust only their social neighbours train together with
decentralized SGD; a link to a stranger is allowed only if both ends add DP
noise.  The paper's model of such a network, its CoTOPO problem (the topology
and DP devices with the smallest predicted training time) and its AutoTag
algorithm are implemented here, with the rules its pseudocode leaves open
stated in the docstrings that make them.  This subpackage holds everything
that chooses and judges such topologies:

=======================  ===============================================================
module                   what it holds
=======================  ===============================================================
:mod:`.network`          :class:`Network`, :class:`Topology`, their files, the rules
:mod:`.physical`         link delays and local iterate L (eq. 10-12)
:mod:`.metrics`          :func:`evaluate`: H, phi, U, L, predicted time of one topology
:mod:`.predictor`        :class:`GlobalIteratePredictor` (eq. 15 and calibrated fits)
:mod:`.features`         what a topology does to training: mixing, DP noise, heterogeneity
:mod:`.time_predictor`   :class:`TrainingTimePredictor`, :func:`load_predictor`
:mod:`._autotag`         :func:`autotag` (Algorithm 2) and :class:`Design`
:mod:`._optimize`        :func:`optimize`: the design a training-time predictor judges fastest
:mod:`.baselines`        NDLF, DLFDP, ERG, random topologies, the exhaustive optimum
:mod:`.siot`             the Santander Social-IoT data and its generator
:mod:`.examples`         bundled example networks
:mod:`.batch`            metrics of many networks, resumable, local or on Dask
:mod:`.validation`       predicted against measured training time (:func:`validate`)
:mod:`.calibration`      :func:`calibrate`: the predictor refitted on measured runs
:mod:`.audit`            :func:`privacy_audit`: what strangers learn through partial-DP gossip
:mod:`.mixing`           topologies with fastest-mixing or Metropolis-Hastings weights
=======================  ===============================================================

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

from ._autotag import PHASES, Candidate, Design, Trace, autotag
from ._optimize import default_mixing, optimize
from .examples import list_examples, load_example
from .features import FeatureSettings, TopologyFeatures, topology_features
from .metrics import Metrics, evaluate
from .network import (
    Network,
    Topology,
    load_network,
    load_noise_multipliers,
    load_topology,
    save_network,
    save_topology,
)
from .predictor import GlobalIteratePredictor
from .time_predictor import TrainingTimePredictor, load_predictor, predict_topology

# Training-backed and parallel parts load on first use (they import the training
# core, joblib and dask).
_LAZY_ATTRIBUTES = {
    "batch_analyze": ("topokit.design.batch", "batch_analyze"),
    "validate": ("topokit.design.validation", "validate"),
    "calibrate": ("topokit.design.validation", "calibrate"),
    "privacy_audit": ("topokit.design.audit", "privacy_audit"),
    "PrivacyAudit": ("topokit.design.audit", "PrivacyAudit"),
    "fastest_mixing_topology": ("topokit.design.mixing", "fastest_mixing_topology"),
    "metropolis_hastings_topology": ("topokit.design.mixing", "metropolis_hastings_topology"),
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
    "autotag",
    "optimize",
    "default_mixing",
    "Design",
    "Candidate",
    "Trace",
    "PHASES",
    *_LAZY_ATTRIBUTES,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY_ATTRIBUTES:
        module_name, attribute = _LAZY_ATTRIBUTES[name]
        return getattr(importlib.import_module(module_name), attribute)
    raise AttributeError(f"module 'topokit.design' has no attribute {name!r}")
