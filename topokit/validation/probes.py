"""Probe topologies: the few topologies whose runs teach a calibration most.

To fit topokit's :class:`~topokit.design.TrainingTimePredictor` to a workload
of one's own (another model, data set or training stack), one trains over a
few topologies of one's network and refits the predictor on those runs
(:func:`topokit.calibrate` with ``predictor=``, which takes a plain table of
one's own runs).  Runs teach a refit most when their topologies differ in
what the predictor looks at, so :func:`probe_topologies` spreads its choice
over the predictor's features: greedy farthest-point selection, in the
predictor's standardised feature space, over a pool of valid topologies
(the baselines, AutoTag's snapshots, random valid topologies).  NDLF (what one
deploys without topokit) and :func:`topokit.optimize`'s design (what topokit
would deploy) are always among the probes: those are the two a calibrated
predictor must rank right.  :func:`probe_index` tabulates the probes.

>>> from topokit import load_example
>>> probes = probe_topologies(load_example("toy"), k=4, seed=0)
>>> list(probes)[:2]
['ndlf', 'optimize']
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._checks import check_int
from .._random import SeedLike, int_seed, keyed_seed
from ..design.features import FeatureSettings, TopologyFeatures, topology_features
from ..design.time_predictor import (
    TrainingTimePredictor,
    load_predictor,
)
from ..design.workload import check_workload
from ..errors import InvalidInputError
from ..network.core import Network, Topology
from .calibration import feature_settings_for

__all__ = ["probe_topologies", "probe_index", "RANDOM_PER_PROBE", "MAX_PROBES"]

#: The most probes :func:`probe_topologies` chooses (each is a training run to make).
MAX_PROBES = 100
#: Random valid topologies drawn into the pool per probe asked for (at least 24 in all).
RANDOM_PER_PROBE = 6
_MIN_RANDOM = 24
#: Draws allowed per random topology wanted: a draw fails when its DP set cannot connect
#: every device.
_DRAWS_PER_RANDOM = 2
# Sub-streams of the seed (keyed_seed(seed, role, index)).
_RANDOM, _OPTIMIZE = 0, 1
#: The probes that are always chosen, in this order.
FIXED_PROBES = ("ndlf", "optimize")


def _check_arguments(net: Any, settings: Any) -> None:
    if not isinstance(net, Network):
        raise InvalidInputError(f"net must be a topokit Network; got {type(net).__name__}")
    from ..design.workload import Workload

    if settings is not None and not isinstance(settings, (FeatureSettings, Workload)):
        raise InvalidInputError(
            "settings must be a topokit FeatureSettings, a Workload or None; got "
            f"{type(settings).__name__}")


def _probe_predictor(predictor: Any, settings: FeatureSettings | None) -> TrainingTimePredictor:
    """The fitted TrainingTimePredictor whose features the probes spread over, with
    ``settings`` (a copy) when given."""
    model = load_predictor(predictor)
    settings = feature_settings_for(settings, model)
    if not isinstance(model, TrainingTimePredictor) or not hasattr(model, "mean_"):
        raise InvalidInputError(
            "probes are spread over a fitted TrainingTimePredictor's features ('default', "
            f"'mlp' or a predictor file); got {type(model).__name__}, which eq. (15)'s H and "
            "phi describe: use predictor='default'")
    if settings is None:
        return model
    return copy.deepcopy(model).set_params(settings=settings)


def _random_pool(net: Network, count: int, seed: int) -> dict[str, Topology]:
    """Up to ``count`` random valid connected topologies (draws that cannot connect skipped)."""
    from ..design.baselines import random_topology

    pool: dict[str, Topology] = {}
    for draw in range(count * _DRAWS_PER_RANDOM):
        if len(pool) == count:
            break
        try:
            pool[f"random-{draw}"] = random_topology(net, seed=keyed_seed(seed, _RANDOM, draw))
        except InvalidInputError:
            continue  # this DP set cannot connect every device
    return pool


def _candidate_pool(net: Network, model: TrainingTimePredictor, k: int,
                    seed: int) -> dict[str, Topology]:
    """Named candidates, the fixed probes first; a topology met twice keeps its first name."""
    from ..design import optimize_with_references
    from ..design.baselines import exponential_graph

    design, references = optimize_with_references(
        net, predictor=model, seed=keyed_seed(seed, _OPTIMIZE, 0))
    named = {"ndlf": references["ndlf"], "optimize": design.topology, **references,
             **{f"autotag-n{c.n}": c.topology for c in design.candidates
                if c.metrics.connected},
             "exponential": exponential_graph(net),
             **_random_pool(net, max(_MIN_RANDOM, RANDOM_PER_PROBE * k), seed)}
    pool: dict[str, Topology] = {}
    seen: set[Topology] = set()
    for name, topology in named.items():
        if topology not in seen:
            seen.add(topology)
            pool[name] = topology
    return pool


def _features(net: Network, topologies: dict[str, Topology],
              model: TrainingTimePredictor) -> list[TopologyFeatures]:
    settings = model.feature_settings.to_dict()
    return [topology_features(net, topology, **settings) for topology in topologies.values()]


def _farthest_points(Z: NDArray[np.float64], k: int, fixed: list[int]) -> list[int]:
    """``fixed`` (the first row if none), then greedily the row farthest (Euclidean) from
    every row chosen so far; ties go to the earlier row."""
    chosen = list(fixed) or [0]
    distance = np.min([np.linalg.norm(Z - Z[i], axis=1) for i in chosen], axis=0)
    distance[chosen] = -np.inf
    while len(chosen) < k:
        nearest = int(np.argmax(distance))
        chosen.append(nearest)
        distance = np.minimum(distance, np.linalg.norm(Z - Z[nearest], axis=1))
        distance[chosen] = -np.inf
    return chosen


def probe_topologies(
    net: Network,
    k: int = 8,
    *,
    predictor: str | Path | TrainingTimePredictor = "default",
    settings: FeatureSettings | None = None,
    seed: SeedLike = None,
    workload: Any = None,
) -> dict[str, Topology]:
    """k valid topologies of ``net`` whose runs teach a calibration of ``predictor`` most.

    The pool: NDLF, :func:`topokit.optimize`'s design (under ``predictor``),
    DLFDP, ERG, AutoTag's design and its connected snapshot of every DP
    budget, the exponential graph and ``max(24, 6 k)`` random valid connected
    topologies (:func:`topokit.baselines.random_topology`), each topology
    once.  NDLF and optimize's design are chosen first; then, k - 2 times,
    the candidate farthest from every probe chosen so far in the predictor's
    standardised feature space (its features oriented so that larger is
    worse and standardised by its fit's mean and scale: the space its
    coefficients act in).  Disconnected candidates are left out.

    Parameters
    ----------
    net : Network
        Its ``class_counts`` (if any) are the data the features describe.
    k : int in [2, 100], default 8
        How many probes (each is a training run, or one per trial, to make).
    predictor : "default", "mlp", path or TrainingTimePredictor, default "default"
        The fitted predictor to be calibrated.
    settings : FeatureSettings or Workload, optional
        The training settings of the workload the probes will be run with
        (noise multiplier, clipping norm, batch size, ...; a
        :class:`~topokit.design.workload.Workload` stands for its settings);
        default the predictor's.  The features and optimize's design use them.
    seed : int, Generator or None
        Seeds optimize, ERG and the random topologies; the same int gives
        the same probes.
    workload : Workload, optional
        The workload the probes will be trained with: the same as
        ``settings=workload`` (give one of the two).

    Returns
    -------
    dict
        Name -> Topology, in the order chosen: ``"ndlf"``, ``"optimize"``
        (absent when optimize chose NDLF itself), then names such as
        ``"dlfdp"``, ``"erg"``, ``"autotag"``, ``"autotag-n3"`` (AutoTag's
        snapshot of DP budget 3), ``"exponential"`` and ``"random-7"``.

    Raises
    ------
    InvalidInputError
        k outside [2, 100] or beyond the distinct valid connected topologies
        found (a network of few devices has few), settings that
        are not a FeatureSettings, or a predictor that is not a fitted
        TrainingTimePredictor (eq. 15).
    DisconnectedGraphError
        If the social graph is not connected.

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> probes = probe_topologies(net, k=5, seed=0)
    >>> len(probes), all(not t.violations(net, require_connected=True)
    ...                  for t in probes.values())
    (5, True)
    >>> probes == probe_topologies(net, k=5, seed=0)
    True
    """
    if workload is not None:
        if settings is not None:
            raise InvalidInputError("give the probes' workload or their settings, not both")
        settings = check_workload(workload)
    _check_arguments(net, settings)
    k = check_int(k, "k", low=2, high=MAX_PROBES)
    model = _probe_predictor(predictor, settings)
    pool = _candidate_pool(net, model, k, int_seed(seed))
    Z = model.standardised_rows(_features(net, pool, model))
    connected = np.all(np.isfinite(Z), axis=1)
    names = [name for name, keep in zip(pool, connected, strict=True) if keep]
    if len(names) < k:
        raise InvalidInputError(
            f"only {len(names)} distinct valid connected topologies were found on this network "
            f"of {net.n_devices} devices; ask for k <= {len(names)}")
    fixed = [names.index(name) for name in FIXED_PROBES if name in names]
    chosen = _farthest_points(Z[connected], k, fixed)
    return {names[i]: pool[names[i]] for i in chosen}


def probe_index(
    net: Network,
    probes: dict[str, Topology],
    *,
    predictor: str | Path | TrainingTimePredictor = "default",
    settings: FeatureSettings | None = None,
) -> pd.DataFrame:
    """One row per probe: its name, links, DP devices, predicted rounds and features.

    Parameters
    ----------
    net : Network
    probes : dict
        Name -> Topology (:func:`probe_topologies`).
    predictor, settings
        As for :func:`probe_topologies`.

    Returns
    -------
    DataFrame
        Columns ``name``, ``n_links``, ``n_dp_devices``, ``predicted_rounds``
        (``inf``: the predictor says the target is never reached) and the
        predictor's features, in the order of ``probes``.

    Examples
    --------
    >>> from topokit import load_example
    >>> from topokit.design.baselines import ndlf
    >>> net = load_example("toy")
    >>> probe_index(net, {"ndlf": ndlf(net)})[["name", "n_links", "n_dp_devices"]]
       name  n_links  n_dp_devices
    0  ndlf        7             0
    """
    _check_arguments(net, settings)
    if not isinstance(probes, dict) or not all(isinstance(t, Topology) for t in probes.values()):
        raise InvalidInputError("probes must be a dict name -> Topology (probe_topologies')")
    model = _probe_predictor(predictor, settings)
    for topology in probes.values():
        topology.validate(net)
    features = _features(net, probes, model)
    table = pd.DataFrame({
        "name": list(probes),
        "n_links": [t.n_links for t in probes.values()],
        "n_dp_devices": [len(t.dp_devices) for t in probes.values()],
        "predicted_rounds": model.predict_features(features) if features else [],
    })
    values = model.feature_rows(features) if features else \
        np.empty((0, len(model.features)))
    return pd.concat([table, pd.DataFrame(values, columns=list(model.features))], axis=1)
