"""Metrics of a topology on a network: :func:`evaluate` -> :class:`Metrics`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from numbers import Real
from os import PathLike
from typing import Any, NamedTuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from ..errors import InvalidInputError
from ..network.core import Network, Topology
from ..network.quantities import adjacency_matrix, dp_ends, edge_indices, local_iterate
from ..network.schedule import TopologySchedule
from ._defaults import DEFAULT_AUDIT_ROUNDS  # noqa: F401 (its public home)
from .features import features_of_schedule, features_of_topology, walk_summary
from .predictor import GlobalIteratePredictor

__all__ = ["Metrics", "Exposure", "evaluate", "exposure", "dp_ends", "local_iterate"]


@dataclass(frozen=True)
class Metrics:
    """What DeepPrivacy's model says of one topology.

    Attributes
    ----------
    hitting_time : float
        H = max_ij m_ij of the random walk of the topology's mixing matrix
        (Lazy-Metropolis unless it carries weights; Definition 6); ``inf`` if
        the topology is disconnected.
    spectral_gap : float
        1 - max(|lambda_2|, |lambda_n|) of that matrix; 0 if disconnected.
    phi : float
        DP ratio |N| / |V|, N the devices that are ends of non-social links
        (what actually adds noise to a used stranger link).
    local_iterate : float
        L = max over links of d_ij + max(r_i, r_j), eq. (8), in seconds.
    predicted_global_iterate : float
        G' from the predictor (eq. 15 unless calibrated).
    pseudo_time : float
        G' x L, the predicted physical training time in seconds.
    n_devices, n_links, n_non_social_links, n_dp_devices : int
    connected : bool
    stranger_pairs : int
        Ordered pairs (i, k), i != k, with k not a social neighbour of i.
    exposed_pairs : int
        Stranger pairs (i, k) with a path from i to k in the topology whose
        senders are all non-DP devices (see :func:`exposure`): k receives
        messages carrying i's data that no device protected with DP noise.
        Partial DP protects a device only against the neighbours it talks to
        directly; this counts what it does not protect.
    """

    hitting_time: float
    spectral_gap: float
    phi: float
    local_iterate: float
    predicted_global_iterate: float
    pseudo_time: float
    n_devices: int
    n_links: int
    n_non_social_links: int
    n_dp_devices: int
    connected: bool
    stranger_pairs: int = 0
    exposed_pairs: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready Python scalars (``inf`` stays a float)."""
        return {key: (value.item() if isinstance(value, np.generic) else value)
                for key, value in asdict(self).items()}


class Exposure(NamedTuple):
    """Stranger pairs of a topology and those that partial DP leaves exposed."""

    stranger_pairs: int
    exposed_pairs: int


def exposure(net: Network, topology: Topology) -> Exposure:
    """Count the stranger pairs whose data travels to the stranger with no DP noise on the way.

    Under DeepPrivacy's partial DP a non-DP device sends its model in the
    clear to its neighbours, and a non-DP neighbour forwards a model that
    contains it, in the clear, to its own neighbours.  The ordered pair
    (i, k), with k not a social neighbour of i, is *exposed* when the
    topology has a path i = v_0, v_1, ..., v_m = k whose senders v_0 ..
    v_{m-1} are all non-DP: k then receives messages carrying i's data that
    no device protected with noise calibrated for it.  A DP device adds noise
    to everything it sends, so its own pairs are never exposed.  Noise that
    other devices mix in on the way is incidental and backs no guarantee;
    see the privacy audit for how much it protects.

    Equivalently, k is exposed to i when k is in, or next to, i's connected
    component of the topology restricted to non-DP devices.

    Examples
    --------
    >>> from topokit import load_example
    >>> toy = load_example("toy")
    >>> exposure(toy, toy.topology)
    Exposure(stranger_pairs=16, exposed_pairs=5)
    """
    n = net.n_devices
    index = net.index
    social = net.social_adjacency.astype(bool)
    stranger = ~social
    np.fill_diagonal(stranger, False)
    clear = np.ones(n, dtype=bool)
    clear[[index[node] for node in topology.dp_devices]] = False
    rows, cols = edge_indices(net, topology)
    inside = clear[rows] & clear[cols]
    graph = csr_matrix((np.ones(int(inside.sum())), (rows[inside], cols[inside])), shape=(n, n))
    _, component = connected_components(graph, directed=False)
    # reach[c, k]: device k is in clear component c or a topology neighbour of it.
    n_components = component.max() + 1
    reach = np.zeros((n_components, n), dtype=bool)
    reach[component, np.arange(n)] = True
    reach[component[rows], cols] = True
    reach[component[cols], rows] = True
    exposed = reach[component] & clear[:, None] & stranger
    return Exposure(int(stranger.sum()), int(exposed.sum()))


def _check_arguments(net: Any, topology: Any, predictor: Any, noise_variance: Any) -> None:
    """Refuse arguments of the wrong type before they fail somewhere inside."""
    if not isinstance(net, Network):
        raise InvalidInputError(
            f"net must be a topokit Network; got {type(net).__name__}. "
            "Read one with topokit.load_network(path) or topokit.load_example(name)"
        )
    if topology is not None and not isinstance(topology, (Topology, TopologySchedule)):
        raise InvalidInputError(
            "topology must be a topokit Topology, TopologySchedule or None; got "
            f"{type(topology).__name__}. Build one with topokit.Topology(edges, dp_devices)"
        )
    if predictor is not None and not (isinstance(predictor, GlobalIteratePredictor)
                                      or hasattr(predictor, "predict_network")):
        raise InvalidInputError(
            f"predictor must be a topokit GlobalIteratePredictor, a TrainingTimePredictor or "
            f"None; got {type(predictor).__name__}. Read one with "
            "topokit.load_predictor('default' | 'paper' | 'mlp' | path)"
        )
    if noise_variance is not None and (
        isinstance(noise_variance, bool) or not isinstance(noise_variance, Real)
    ):
        raise InvalidInputError(f"noise_variance must be a number; got {noise_variance!r}")


def evaluate(
    net: Network,
    topology: Topology | None = None,
    predictor: GlobalIteratePredictor | Any | None = None,
    *,
    noise_variance: float | None = None,
    workload: Any = None,
) -> Metrics:
    """Hitting time, spectral gap, DP ratio, local iterate and predicted time of a topology.

    Parameters
    ----------
    net : Network
    topology : Topology or TopologySchedule, optional
        Defaults to the social graph itself with no DP device (NDLF).  A
        time-varying topology is judged by its features over its rounds
        (:func:`schedule_metrics`).
    predictor : GlobalIteratePredictor, TrainingTimePredictor, str or path, optional
        Defaults to the paper's eq. (15).  A name or file is read by
        :func:`~topokit.design.time_predictor.load_predictor` (``"paper"``,
        ``"default"``, ``"mlp"``, ``"workload"`` or a predictor JSON file).
        A :class:`TrainingTimePredictor`
        (``topokit.load_predictor("default")``) predicts from the topology's
        features, with the data heterogeneity of ``net.class_counts`` when
        the network carries them (IID otherwise), and may predict ``inf``:
        the target is never reached.
    noise_variance : float, optional
        The feature U, for predictors fitted with it.
    workload : Workload, optional
        Predict at this workload's settings
        (:func:`~topokit.design.time_predictor.predict_topology` explains how,
        and warns where that is an extrapolation).  Eq. (15) sees none of them.

    Returns
    -------
    Metrics

    Raises
    ------
    InvalidTopologyError
        If the topology breaks a DeepPrivacy rule on ``net`` (see
        :meth:`Topology.validate`).

    Examples
    --------
    >>> from topokit import load_example
    >>> metrics = evaluate(load_example("toy"), load_example("toy").topology)
    >>> round(metrics.hitting_time, 3), metrics.phi, metrics.local_iterate
    (25.967, 0.5, 52.0)
    >>> evaluate(load_example("toy"), predictor="paper") == evaluate(load_example("toy"))
    True
    """
    if isinstance(predictor, (str, PathLike)):
        from .time_predictor import load_predictor  # scikit-learn: only when asked

        predictor = load_predictor(predictor)
    _check_arguments(net, topology, predictor, noise_variance)
    if workload is not None:
        from .time_predictor import _at_workload  # scikit-learn: only when asked

        predictor = _at_workload(predictor if predictor is not None else GlobalIteratePredictor(),
                                 workload,
                                 "predicted by extrapolation")
    if topology is None:
        topology = Topology(net.social.edges)
    topology.validate(net)
    predictor = predictor if predictor is not None else GlobalIteratePredictor()
    if isinstance(topology, TopologySchedule):
        return schedule_metrics(net, topology, predictor, noise_variance)
    non_social = topology.non_social_edges(net)
    phi = len(dp_ends(net, topology)) / net.n_devices
    iterate = local_iterate(net, topology)
    if isinstance(predictor, GlobalIteratePredictor):
        weights = None if topology.weights is None else topology.mixing_matrix(net.nodes)
        hitting, gap = walk_summary(adjacency_matrix(net, topology), weights)
        predicted = predictor.predict_one(hitting, phi, noise_variance)
    else:  # a TrainingTimePredictor, found by its method so that this module need not import it
        # One description of the topology: H and the gap are the features' own, computed
        # once with the predictor's settings (and net.class_counts; IID when None).
        features = features_of_topology(net, topology, net.class_counts,
                                        predictor.feature_settings)
        hitting, gap = features.hitting_time, features.spectral_gap
        predicted = predictor.predict_features(features)
    return Metrics(
        hitting_time=float(hitting),
        spectral_gap=float(gap),
        phi=phi,
        local_iterate=iterate,
        predicted_global_iterate=predicted,
        pseudo_time=predicted * iterate,
        n_devices=net.n_devices,
        n_links=topology.n_links,
        n_non_social_links=len(non_social),
        n_dp_devices=len(topology.dp_devices),
        connected=bool(np.isfinite(hitting)),
        **exposure(net, topology)._asdict(),
    )


def schedule_metrics(net: Network, schedule: TopologySchedule, predictor: Any,
                     noise_variance: float | None = None, *,
                     local_iterate: float | None = None) -> Metrics:
    """:func:`evaluate` of a time-varying topology already validated on ``net``.

    Its features are :func:`~topokit.design.features.features_of_schedule`'s
    (with the predictor's settings when it has them): H is the hitting time
    of the window's mean mixing matrix, the gap the per-round contraction over
    the window, L the mean time of the window's rounds unless
    ``local_iterate`` gives the time of the rounds a run used
    (:func:`topokit.validate`).  phi, the links and the stranger pairs are
    those of the union of the window's links; the exposed pairs are NaN (the
    exposure walks one topology; :func:`topokit.privacy_audit` gossips over the
    rounds).  The shipped predictors were fitted on static topologies, so a
    schedule's prediction extrapolates from what its features share with them.
    """
    settings = getattr(predictor, "feature_settings", None)
    if settings is None:
        from .features import FeatureSettings

        settings = FeatureSettings()
    features = features_of_schedule(net, schedule, net.class_counts, settings)
    if isinstance(predictor, GlobalIteratePredictor):
        predicted = predictor.predict_one(features.hitting_time, features.phi, noise_variance)
    else:
        predicted = predictor.predict_features(features)
    iterate = features.local_iterate if local_iterate is None else float(local_iterate)
    union = schedule.union()
    return Metrics(
        hitting_time=features.hitting_time, spectral_gap=features.spectral_gap,
        phi=features.phi, local_iterate=iterate, predicted_global_iterate=predicted,
        pseudo_time=predicted * iterate, n_devices=net.n_devices, n_links=features.n_links,
        n_non_social_links=len(union.non_social_edges(net)),
        n_dp_devices=features.n_dp_devices, connected=features.connected,
        stranger_pairs=exposure(net, union).stranger_pairs, exposed_pairs=float("nan"),
    )
