"""What a topology does to training: mixing, DP noise and data heterogeneity.

:func:`topology_features` describes one topology of a network by the
quantities that decide how fast decentralized SGD with partial DP reaches a
target accuracy over it, beyond DeepPrivacy's (H, phi) [1]_:

- **mixing**: the hitting time H and spectral gap of the mixing matrix W
  (:meth:`Topology.mixing_matrix <topokit.network.Topology.mixing_matrix>`:
  the topology's link weights if it carries any, else Lazy-Metropolis), and
  the *effective number of neighbours* of Vogels et al. [2]_;
- **DP noise**: the variance the DP devices' Gaussian noise leaves in the
  network average, in the devices' disagreement, and at the average device;
- **heterogeneity** (when each device's class counts are known, given or
  carried by the network as ``net.class_counts``): how far each device's
  data, and its W-weighted neighbourhood's, is from the data the consensus
  model is fitted to (Le Bars et al. [3]_; D-Cliques [4]_).

:class:`FeatureSettings` holds the training settings the noise features
depend on (noise multiplier, clipping norm, batch size, local steps, data
size, the decay gamma of the effective number of neighbours); a fitted
:class:`~topokit.design.time_predictor.TrainingTimePredictor` stores the
settings its features were computed with.

References
----------
.. [1] C.-W. Ching, H.-S. Huang, C.-A. Yang, Y.-C. Liu and J.-J. Kuo,
   "Efficient Communication Topology via Partially Differential Privacy for
   Decentralized Learning" (DeepPrivacy), Definitions 1 and 6, Algorithm 1.
.. [2] T. Vogels, H. Hendrikx and M. Jaggi, "Beyond spectral gap: the role of
   the topology in decentralized learning", NeurIPS 2022.
.. [3] B. Le Bars, A. Bellet, M. Tommasi, E. Lavoie and A.-M. Kermarrec,
   "Refined convergence and topology learning for decentralized SGD with
   heterogeneous data", AISTATS 2023.
.. [4] A. Bellet, A.-M. Kermarrec and E. Lavoie, "D-Cliques: compensating
   for data heterogeneity with topology in decentralized federated
   learning", SRDS 2022.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import check_int, check_positive, check_real
from ..errors import InvalidInputError
from ..kernels import lazy_metropolis
from ..kernels.unchecked import hitting_time_and_gap_unchecked, walk_summary_unchecked
from ..network.core import Network, Topology, class_count_matrix
from ..network.quantities import adjacency_matrix
from ..network.schedule import TopologySchedule
from ._schedule_walk import ScheduleFunctions
from ._spectral import EigenFunctions, FactoredFunctions, spectral_functions

#: Either way of computing the features' functions of W (:mod:`._spectral`).
SpectralFunctions = EigenFunctions | FactoredFunctions

__all__ = [
    "TopologyFeatures",
    "FeatureSettings",
    "topology_features",
    "check_class_counts",
    "walk_summary",
    "WALK_CACHE_SIZE",
    "DEFAULT_NOISE_MULTIPLIER",  # noqa: F822 (resolved by the module's __getattr__)
]


#: z of DPConfig()'s defaults (epsilon = 1, delta = 1e-5 per round, analytic Gaussian
#: mechanism), about 3.7306: the noise multiplier features assume unless told otherwise.
DEFAULT_NOISE_MULTIPLIER: float  # computed on first use (module __getattr__)


@functools.cache
def _default_noise_multiplier() -> float:
    """sigma / Delta of DPConfig()'s defaults (epsilon = 1, delta = 1e-5 per round, analytic
    Gaussian mechanism): the noise multiplier the training core uses unless told otherwise.

    Computed on first use: dp-accounting is a heavy import, and ``import topokit``
    (every CLI command) should not pay for it.
    """
    from ..dp import gaussian_sigma

    return gaussian_sigma(1.0, 1e-5, 1.0)


def __getattr__(name: str) -> Any:
    # DEFAULT_NOISE_MULTIPLIER (about 3.7306) is resolved lazily, see _default_noise_multiplier.
    if name == "DEFAULT_NOISE_MULTIPLIER":
        return _default_noise_multiplier()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class FeatureSettings:
    """Training settings that the noise and mixing features depend on.

    Parameters
    ----------
    noise_multiplier : float, optional
        z = sigma / Delta of every DP device; None (default) means
        :data:`DEFAULT_NOISE_MULTIPLIER` (3.7306: epsilon = 1, delta = 1e-5 per
        round, as :class:`topokit.training.DPConfig` calibrates it).
    max_grad_norm : float, default 1.0
        Per-example clipping norm C.
    batch_size : int, default 64
        Expected minibatch size B; a device with fewer rows uses them all.
    local_steps : int, default 1
        Local SGD steps K per round.
    n_samples : int or None, default None
        Training rows split (IID, equal shares) over the devices when no class
        counts are given; None: every device holds at least ``batch_size``.
    gamma : float in [0, 1), default 0.99
        Decay of the random walk behind the effective number of neighbours,
        the felt noise and the heterogeneity disagreement (Vogels et al.'s
        gamma, about 1 - eta mu: how fast SGD forgets what mixing brought).
        0.99 (a memory of about 100 rounds) ranked topologies best among 0.8,
        0.9, 0.95 and 0.99 in ``analyses/predictor_corpus.py``'s
        leave-network-out evaluation.
    device_noise_multipliers : sequence of float >= 0, optional
        z_i of each device in node order (``net.nodes``), for DP devices that
        add different noise (such as :func:`topokit.optimize`'s per-device
        levels under ``max_stranger_mu``); only the DP devices' entries are
        used (the others add no noise).  None (default): every DP device adds
        ``noise_multiplier``, which keeps its meaning as the common value.
        Left out of :meth:`to_dict` when None, so settings written before it
        existed read and predict the same.

    Examples
    --------
    >>> FeatureSettings(noise_multiplier=4.0).to_dict()["noise_multiplier"]
    4.0
    >>> FeatureSettings(device_noise_multipliers=[4, 3.5]).device_noise_multipliers
    (4.0, 3.5)
    """

    noise_multiplier: float | None = None
    max_grad_norm: float = 1.0
    batch_size: int = 64
    local_steps: int = 1
    n_samples: int | None = None
    gamma: float = 0.99
    device_noise_multipliers: tuple[float, ...] | None = None

    def __post_init__(self):
        set_ = object.__setattr__
        multiplier = (_default_noise_multiplier() if self.noise_multiplier is None
                      else self.noise_multiplier)
        set_(self, "noise_multiplier", check_real(multiplier, "noise_multiplier", low=0))
        set_(self, "max_grad_norm", check_positive(self.max_grad_norm, "max_grad_norm"))
        set_(self, "batch_size", check_int(self.batch_size, "batch_size", low=1))
        set_(self, "local_steps", check_int(self.local_steps, "local_steps", low=1))
        if self.n_samples is not None:
            set_(self, "n_samples", check_int(self.n_samples, "n_samples", low=1))
        set_(self, "gamma", check_real(self.gamma, "gamma", low=0, high=1, closed="left"))
        if self.device_noise_multipliers is not None:
            set_(self, "device_noise_multipliers",
                 _check_device_noise(self.device_noise_multipliers))

    def to_dict(self) -> dict[str, Any]:
        """The settings as keyword arguments of :func:`topology_features` (JSON-ready)."""
        data = asdict(self)
        if self.device_noise_multipliers is None:
            del data["device_noise_multipliers"]  # as written before per-device noise existed
        else:
            data["device_noise_multipliers"] = list(self.device_noise_multipliers)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSettings:
        """Settings from :meth:`to_dict`; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInputError(
                f"unknown feature setting {unknown[0]!r}; expected {', '.join(sorted(known))}"
            )
        return cls(**data)


def _check_device_noise(values: Any) -> tuple[float, ...]:
    """Per-device noise multipliers as a tuple of finite floats >= 0."""
    from collections.abc import Mapping, Set

    if isinstance(values, (Mapping, Set)):  # iterating them would read device ids as levels
        raise InvalidInputError(
            "device_noise_multipliers must be a sequence in node order, not a "
            f"{type(values).__name__}; for a mapping device -> z use "
            "[levels.get(node, 0.0) for node in net.nodes]")
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise InvalidInputError(
            "device_noise_multipliers must be a sequence of numbers >= 0 (one z per device, "
            f"node order); got {type(values).__name__}")
    return tuple(check_real(value, f"device_noise_multipliers[{i}]", low=0)
                 for i, value in enumerate(values))


@dataclass(frozen=True)
class TopologyFeatures:
    """What one topology does to training (see :func:`topology_features`).

    Noise features are per coordinate and per unit step size (multiply by
    eta_t^2 for round t); ``inf`` where the topology is disconnected and the
    quantity has no limit.

    Attributes
    ----------
    n_devices, n_links, n_dp_devices : int
        |V|, |E_c| and the devices that add DP noise.
    connected : bool
    phi : float
        DeepPrivacy's DP ratio: ends of non-social links over |V|.
    hitting_time : float
        H = max_ij m_ij of the random walk on W (Lazy-Metropolis unless the
        topology carries weights; ``inf`` if disconnected).
    spectral_gap : float
        1 - max(|lambda_2|, |lambda_n|) of W (0 if disconnected).
    effective_neighbours : float
        Vogels et al.'s n_W(gamma), between 1 (no averaging) and |V|.
    local_iterate : float
        L, seconds per round (eq. 8).
    noise_average : float
        Variance the DP noise leaves in the network average per round.
    noise_disagreement : float
        Stationary per-device variance of the noise around the average.
    noise_felt : float
        Variance of the noise a device feels, gamma-discounted (see Notes of
        :func:`topology_features`).
    heterogeneity_local : float
        Mean squared distance of each device's label distribution to the
        consensus one (0 with IID data or unknown class counts).
    heterogeneity_neighbourhood : float
        The same for each device's W-weighted neighbourhood (Le Bars et al.).
    heterogeneity_disagreement : float
        Disagreement a constant heterogeneous drift causes, gamma-discounted;
        between 0 (exact averaging) and ``heterogeneity_local`` (no mixing).
    """

    n_devices: int
    n_links: int
    n_dp_devices: int
    connected: bool
    phi: float
    hitting_time: float
    spectral_gap: float
    effective_neighbours: float
    local_iterate: float
    noise_average: float
    noise_disagreement: float
    noise_felt: float
    heterogeneity_local: float
    heterogeneity_neighbourhood: float
    heterogeneity_disagreement: float

    def to_dict(self) -> dict[str, Any]:
        """The fields as Python scalars (``inf`` stays a float)."""
        return {key: (value.item() if isinstance(value, np.generic) else value)
                for key, value in asdict(self).items()}


def check_class_counts(class_counts: ArrayLike, n_devices: int, *,
                       nodes: Sequence[Hashable] | None = None) -> NDArray[np.float64]:
    """Class counts of shape (n_devices, n_classes), non-negative, finite, no empty row.

    Rows are devices in node order (``net.nodes``), columns classes; with
    ``nodes`` (the network's node ids) a mapping node -> counts is accepted too,
    and an unknown or missing node is named.  Counts
    need not be whole numbers here (proportions work too); a
    :class:`~topokit.network.Network`'s ``class_counts`` must be, and
    are checked when it is built.

    Returns
    -------
    ndarray of shape (n_devices, n_classes)
        The counts as float64.

    Raises
    ------
    InvalidInputError
        Naming the problem: wrong shape, NaN / inf, a negative count, or a
        device without data.

    Examples
    --------
    >>> check_class_counts([[3, 1], [0, 2]], 2).sum(axis=1)
    array([4., 2.])
    >>> check_class_counts({"A": [3, 1], "B": [0, 2]}, 2, nodes=["A", "B"]).shape
    (2, 2)
    """
    # Rows keep their row-numbered messages; only a mapping needs the node ids.
    return class_count_matrix(class_counts, n_devices,
                               nodes=nodes if isinstance(class_counts, Mapping) else None)


def _batch_sizes(settings: FeatureSettings, counts: NDArray | None, n: int) -> NDArray:
    """Expected minibatch size B_i = min(B, |D_i|) of every device."""
    if counts is not None:
        sizes = counts.sum(axis=1)
    elif settings.n_samples is not None:
        # The sizes of numpy.array_split(range(n_samples), n): the first r parts one longer.
        quotient, remainder = divmod(settings.n_samples, n)
        sizes = np.full(n, float(quotient))
        sizes[:remainder] += 1.0
    else:
        return np.full(n, float(settings.batch_size))
    return np.minimum(float(settings.batch_size), np.maximum(sizes, 1.0))


def _noise_variances(dp_mask: NDArray[np.bool_], settings: FeatureSettings,
                     counts: NDArray | None) -> NDArray[np.float64]:
    """s_i^2 = (z_i Delta_i)^2 at step size 1 for DP devices, 0 for the others.

    Delta_i = 2 C (1 / B_i + K - 1) is the clipped replace-one sensitivity of
    :func:`topokit.training.privacy.clipped_sensitivity` (restated here: the
    design layer does not import the training core); z_i is the device's own
    multiplier when the settings give them, else the common one.
    """
    batch = _batch_sizes(settings, counts, dp_mask.size)
    sensitivity = 2.0 * settings.max_grad_norm * (1.0 / batch + (settings.local_steps - 1))
    return np.where(dp_mask, (_device_noise(settings, dp_mask.size) * sensitivity) ** 2, 0.0)


def _device_noise(settings: FeatureSettings, n: int) -> float | NDArray[np.float64]:
    """z_i of the n devices: the per-device multipliers if given, else the common z."""
    if settings.device_noise_multipliers is None:
        return settings.noise_multiplier
    if len(settings.device_noise_multipliers) != n:
        raise InvalidInputError(
            f"device_noise_multipliers has {len(settings.device_noise_multipliers)} entries for "
            f"{n} devices; give one z per device in net.nodes order")
    return np.array(settings.device_noise_multipliers)


def _noise_features(variances: NDArray, functions: SpectralFunctions | ScheduleFunctions,
                    gamma: float) -> dict[str, float]:
    n = variances.size
    average = float(variances.sum() / n**2)
    if not variances.any():
        disagreement = 0.0
    elif functions.connected:
        disagreement = float(variances @ functions.disagreement_diagonal(variances > 0) / n)
    else:
        disagreement = float("inf")
    felt = float((1.0 - gamma) * (variances @ functions.felt_diagonal(variances > 0)) / n)
    neighbours = float(1.0 / ((1.0 - gamma) * functions.felt_mean()))
    return {"noise_average": average, "noise_disagreement": disagreement,
            "noise_felt": felt, "effective_neighbours": neighbours}


def _heterogeneity_features(counts: NDArray | None,
                            neighbourhood_norm2: Callable[[NDArray], float],
                            functions: SpectralFunctions | ScheduleFunctions) -> dict[str, float]:
    if counts is None:
        return {"heterogeneity_local": 0.0, "heterogeneity_neighbourhood": 0.0,
                "heterogeneity_disagreement": 0.0}
    proportions = counts / counts.sum(axis=1, keepdims=True)
    # W is doubly stochastic, so D-PSGD's consensus fits the devices' plain average.
    centred = proportions - proportions.mean(axis=0)
    n = counts.shape[0]
    local = float(np.sum(centred**2) / n)
    neighbourhood = float(neighbourhood_norm2(centred) / n)
    # The drift (1 - gamma) sum_{t>=1} gamma^{t-1} W^t (I - J) Pi that mixing leaves.
    return {"heterogeneity_local": local, "heterogeneity_neighbourhood": neighbourhood,
            "heterogeneity_disagreement": functions.drift_norm2(centred) / n}


def topology_features(
    net: Network,
    topology: Topology | None = None,
    *,
    class_counts: ArrayLike | None = None,
    noise_multiplier: float | None = None,
    max_grad_norm: float = 1.0,
    batch_size: int = 64,
    local_steps: int = 1,
    n_samples: int | None = None,
    gamma: float = 0.99,
    device_noise_multipliers: ArrayLike | None = None,
) -> TopologyFeatures:
    """Mixing, DP-noise and heterogeneity features of a topology on a network.

    Parameters
    ----------
    net : Network
    topology : Topology or TopologySchedule, optional
        Defaults to NDLF (the social links, no DP device).  Validated against
        ``net`` (:class:`~topokit.errors.InvalidTopologyError`).  A
        time-varying topology's features are those of its rounds
        (:func:`features_of_schedule`).
    class_counts : array-like of shape (n_devices, n_classes), optional
        Training rows of each class on each device, rows in node order
        (``net.nodes``).  Gives the data sizes |D_i| (hence the batch sizes
        and the DP sensitivity) and the heterogeneity features.  None
        (default): the network's own ``net.class_counts``; when that is None
        too, IID data (heterogeneity 0) of ``n_samples`` rows.  Given
        counts win over the network's.
    noise_multiplier, max_grad_norm, batch_size, local_steps, n_samples, gamma
        See :class:`FeatureSettings`.
    device_noise_multipliers : sequence of float >= 0, optional
        z_i of each device in node order, overriding ``noise_multiplier`` on
        the DP devices (see :class:`FeatureSettings`).

    Returns
    -------
    TopologyFeatures

    Raises
    ------
    InvalidInputError
        Class counts of the wrong shape, with NaN / inf or negative entries,
        or a device without data; a setting out of range.
    InvalidTopologyError
        A topology that breaks a DeepPrivacy rule on ``net``.

    Notes
    -----
    W is the topology's mixing matrix, :meth:`Topology.mixing_matrix
    <topokit.network.Topology.mixing_matrix>`: the Lazy-Metropolis
    matrix (eigenvalues 1 = lambda_1 > lambda_2 >= ... >= 0 when connected)
    or, for a topology that carries link weights (such as
    :func:`topokit.design.mixing.fastest_mixing_topology`'s), the matrix of
    those weights (eigenvalues in [-1, 1]); symmetric and doubly stochastic
    either way, with eigenvectors u_k.  H is then the hitting time of the
    random walk on W and the gap 1 - max(|lambda_2|, |lambda_n|).  The
    predictors shipped with topokit were fitted on runs that mixed with
    Lazy-Metropolis weights only: their predictions for weighted topologies
    extrapolate.  DP device i adds Gaussian noise of
    per-coordinate variance :math:`s_i^2 \\eta_t^2`,
    :math:`s_i = z_i\\,2C(1/B_i + K - 1)` (clipped sensitivity, Algorithm 1;
    z_i = z unless per-device multipliers are given), to the model it sends;
    the other devices add none.  Since
    :math:`\\mathbf 1^\\top W = \\mathbf 1^\\top`, one round leaves in the
    network average

    .. math:: U_{avg} = \\frac{1}{n^2}\\sum_i s_i^2 .

    The noise that stays in the disagreement X - 1 x-bar is, at stationarity
    of x <- W(x + noise),

    .. math:: U_{dis} = \\frac1n \\sum_i s_i^2 M_{ii},\\quad
              M = \\sum_{k\\ge 2}\\frac{\\lambda_k^2}{1-\\lambda_k^2} u_k u_k^\\top
              = W^2 (I - W^2 + J)^{-1} - J

    (J = 11^T / n); it grows like 1 / gap.  Vogels et al. (NeurIPS 2022) discount the
    walk by gamma (SGD forgets old noise): with
    :math:`C_\\gamma = \\sum_{k\\ge1} \\lambda_k^2/(1-\\gamma\\lambda_k^2)\\,u_k u_k^\\top`,

    .. math:: U_{felt} = \\frac{1-\\gamma}{n}\\sum_i s_i^2 (C_\\gamma)_{ii},\\qquad
              n_W(\\gamma) = \\frac{1}{(1-\\gamma)\\,\\mathrm{tr}(C_\\gamma)/n} .

    U_felt is U_avg for exact averaging (W = J) and sum_i s_i^2 / n without
    any (W = I); n_W is |V| and 1 there.  With label proportions pi_i (rows of
    class_counts, normalised) and pi-bar their plain mean (the distribution
    D-PSGD's consensus model is fitted to, as W is doubly stochastic),
    heterogeneity is measured as the mean squared distance to pi-bar of
    pi_i (local), of :math:`\\sum_j W_{ij}\\pi_j` (neighbourhood: Le Bars et
    al.'s tau-bar^2 (AISTATS 2023) with label distributions in place of
    gradients; D-Cliques make it small), and of the drift that mixing leaves,
    discounted by gamma like the noise (disagreement):

    .. math:: \\frac{1}{n}\\Big\\|(1-\\gamma)\\sum_{t\\ge1}\\gamma^{t-1}W^t(I-J)\\Pi\\Big\\|_F^2
              = \\frac{1}{n}\\Big\\|\\sum_{k\\ge2}\\frac{(1-\\gamma)\\lambda_k}{1-\\gamma\\lambda_k}
              u_k u_k^\\top \\Pi\\Big\\|_F^2 ,

    At gamma = 1 and without the factor 1 - gamma the sum is the
    steady-state consensus error of a constant drift,
    :math:`W (I - W)^+ (I - J)\\Pi`; the discount keeps it finite when mixing
    is slow, and the factor puts it between 0 (exact averaging) and the local
    heterogeneity (no mixing).

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> features = topology_features(net, net.topology)
    >>> round(features.hitting_time, 3), features.phi, features.n_dp_devices
    (25.967, 0.5, 3)
    >>> features.heterogeneity_local
    0.0

    DP devices may add different noise (z_i in node order; here device C adds
    less than D and E), which the noise features count:

    >>> uniform = topology_features(net, net.topology, noise_multiplier=4.0)
    >>> lower = topology_features(net, net.topology, noise_multiplier=4.0,
    ...                           device_noise_multipliers=[0, 0, 2.0, 4.0, 4.0, 0])
    >>> bool(lower.noise_felt < uniform.noise_felt)
    True

    Class counts carried by the network are used when none are given:

    >>> skewed = net.with_class_counts([[9, 1], [1, 9]] * 3)
    >>> round(topology_features(skewed, net.topology).heterogeneity_local, 6)
    0.32
    """
    settings = FeatureSettings(noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm,
                               batch_size=batch_size, local_steps=local_steps,
                               n_samples=n_samples, gamma=gamma,
                               device_noise_multipliers=device_noise_multipliers)
    return _features(net, topology, class_counts, settings)


def _features(net: Network, topology: Topology | None, class_counts: ArrayLike | None,
              settings: FeatureSettings) -> TopologyFeatures:
    """:func:`topology_features` with its settings already checked."""
    if not isinstance(net, Network):
        raise InvalidInputError(f"net must be a topokit Network; got {type(net).__name__}")
    if topology is None:
        topology = Topology(list(net.social.edges))
    if not isinstance(topology, (Topology, TopologySchedule)):
        raise InvalidInputError("topology must be a topokit Topology, TopologySchedule or None; "
                                f"got {type(topology).__name__}")
    topology.validate(net)
    # The network's counts were checked when it was built.
    counts = (net.class_counts if class_counts is None
              else check_class_counts(class_counts, net.n_devices, nodes=net.nodes))
    if isinstance(topology, TopologySchedule):
        return features_of_schedule(net, topology, counts, settings)
    return features_of_topology(net, topology, counts, settings)


def features_of_schedule(net: Network, schedule: TopologySchedule,
                         counts: NDArray[np.float64] | None,
                         settings: FeatureSettings) -> TopologyFeatures:
    """:func:`topology_features` of a time-varying topology already validated on ``net``.

    The noise and heterogeneity features are the static ones' sums with the
    powers of W replaced by the products of the rounds that follow a message,
    averaged over the start rounds (:mod:`._schedule_walk`); the spectral gap
    is the per-round contraction over the window and H the hitting time of
    the window's mean matrix.  Links, phi and L are those of the window: its
    union's links and the mean time of its rounds.
    """
    functions = ScheduleFunctions(net, schedule, settings.gamma)
    union = adjacency_matrix(net, schedule.union())
    hitting, _ = walk_summary(union, functions.mean_matrix)
    dp_mask = _dp_mask(net, schedule.dp_devices)
    variances = _noise_variances(dp_mask, settings, counts)
    return TopologyFeatures(
        n_devices=net.n_devices,
        **_links_and_phi(union > 0, net.social_adjacency > 0),
        n_dp_devices=int(np.count_nonzero(dp_mask)),
        connected=functions.connected,
        hitting_time=float(hitting),
        spectral_gap=functions.contraction_gap,
        local_iterate=schedule.physical_time(net, schedule.window) / schedule.window,
        **_noise_features(variances, functions, settings.gamma),
        **_heterogeneity_features(counts, functions.neighbourhood_norm2, functions),
    )


def _dp_mask(net: Network, devices: frozenset) -> NDArray[np.bool_]:
    """The DP devices as a boolean vector in node order."""
    mask = np.zeros(net.n_devices, dtype=bool)
    mask[[net.index[node] for node in devices]] = True
    return mask


def _links_and_phi(linked: NDArray[np.bool_], social: NDArray[np.bool_]) -> dict[str, Any]:
    """``n_links`` and DeepPrivacy's ``phi`` (ends of non-social links over |V|) of a
    symmetric link matrix."""
    non_social = linked & ~social
    return {"n_links": int(np.count_nonzero(np.triu(linked, 1))),
            "phi": float(np.count_nonzero(non_social.any(axis=1))) / linked.shape[0]}


def features_of_topology(net: Network, topology: Topology, counts: NDArray[np.float64] | None,
                         settings: FeatureSettings) -> TopologyFeatures:
    """:func:`topology_features` of a topology already validated on ``net``, with checked
    ``counts`` (or None) and settings: for callers that hold both (:func:`topokit.evaluate`)."""
    dp_mask = _dp_mask(net, topology.dp_devices)
    weights = None if topology.weights is None else topology.mixing_matrix(net.nodes)
    return features_of_arrays(net, adjacency_matrix(net, topology), dp_mask, counts, settings,
                              weights=weights)


#: Topologies whose (H, gap) :func:`walk_summary` remembers (least recently used dropped).
WALK_CACHE_SIZE = 4096
_walks: OrderedDict[bytes, tuple[float, float]] = OrderedDict()
_walks_lock = threading.Lock()


def walk_summary(adjacency: NDArray[np.float64],
                 weights: NDArray[np.float64] | None = None) -> tuple[float, float]:
    """(H, spectral gap) of the random walk of a topology: of its Lazy-Metropolis matrix
    (one fused compiled call) when ``weights`` is None, else of ``weights``.

    The one place :func:`topology_features` and :func:`topokit.evaluate` compute
    them, once per topology: a search scores a topology from several places (its
    starts, the rescoring of AutoTag's snapshots, the final design's metrics) and
    :func:`topokit.validate` every trial of the same topology, so the results of
    the last :data:`WALK_CACHE_SIZE` matrices are kept, keyed by a digest of what
    the result depends on: the exact bytes of ``weights``, or the links of
    ``adjacency`` (the same input gives the same numbers; a pure function).
    The matrices are trusted, not validated (see :mod:`topokit.kernels.unchecked`):
    ``adjacency`` a symmetric 0/1 matrix, ``weights`` a symmetric doubly
    stochastic matrix with entries >= 0, as topokit builds them.

    Examples
    --------
    >>> import numpy as np
    >>> ring = np.roll(np.eye(4), 1, axis=1) + np.roll(np.eye(4), -1, axis=1)
    >>> hitting, gap = walk_summary(ring)
    >>> round(hitting, 3), round(gap, 3)
    (8.0, 0.5)
    """
    key = _walk_key(adjacency, weights)
    with _walks_lock:
        known = _walks.get(key)
        if known is not None:
            _walks.move_to_end(key)
            return known
    summary = _compute_walk(adjacency, weights)
    with _walks_lock:
        _walks[key] = summary
        if len(_walks) > WALK_CACHE_SIZE:
            _walks.popitem(last=False)
    return summary


def _walk_key(adjacency: NDArray[np.float64], weights: NDArray[np.float64] | None) -> bytes:
    """A digest of what the walk depends on: the exact bytes of ``weights`` when given, else
    the links of ``adjacency`` (its Lazy-Metropolis matrix depends on nothing else), one bit
    each: a 64th of its bytes to hash at every score of a search."""
    digest = hashlib.blake2b(digest_size=20)
    if weights is None:
        digest.update(b"lazy-metropolis")
        matrix = np.asarray(adjacency)
        digest.update(str(matrix.shape).encode())
        digest.update(np.packbits(matrix != 0).tobytes())
    else:
        matrix = np.ascontiguousarray(weights, dtype=np.float64)
        digest.update(str(matrix.shape).encode())
        digest.update(matrix.tobytes())
    return digest.digest()


def _compute_walk(adjacency: NDArray[np.float64],
                  weights: NDArray[np.float64] | None) -> tuple[float, float]:
    # Matrices topokit built: the kernels' trusting entry points, no second validation.
    if weights is None:
        adjacency = np.ascontiguousarray(adjacency, dtype=np.float64)
        hitting, gap = hitting_time_and_gap_unchecked(adjacency)
    else:
        hitting, gap = walk_summary_unchecked(np.ascontiguousarray(weights, dtype=np.float64))
    return float(hitting), float(gap)


def features_of_arrays(net: Network, adjacency: NDArray[np.float64], dp_mask: NDArray[np.bool_],
                       counts: NDArray[np.float64] | None, settings: FeatureSettings, *,
                       social: NDArray[np.bool_] | None = None,
                       link_times: NDArray[np.float64] | None = None,
                       weights: NDArray[np.float64] | None = None) -> TopologyFeatures:
    """:func:`topology_features` of a topology given as arrays, unchecked.

    For searches that score thousands of topologies (:func:`topokit.optimize`):
    ``adjacency`` is the topology's symmetric 0/1 matrix in node order,
    ``dp_mask`` marks its DP devices, ``counts`` are checked class counts or
    None; ``social`` (G_s as a boolean matrix) and ``link_times``
    (``net.link_times``) may be passed precomputed.  ``weights`` is the
    mixing matrix W in node order (as :meth:`Topology.mixing_matrix` builds
    it: symmetric, doubly stochastic, >= 0, zero off the adjacency's links);
    None: the Lazy-Metropolis matrix of ``adjacency``, through the fused
    kernel as before weights existed.  The caller guarantees a valid
    topology.
    """
    social = net.social_adjacency > 0 if social is None else social
    link_times = net.link_times if link_times is None else link_times
    hitting, gap = walk_summary(adjacency, weights)
    if weights is None:
        weights = lazy_metropolis(adjacency)
    functions = spectral_functions(weights, settings.gamma, gap)
    variances = _noise_variances(dp_mask, settings, counts)
    linked = adjacency > 0
    return TopologyFeatures(
        n_devices=net.n_devices,
        **_links_and_phi(linked, social),
        n_dp_devices=int(np.count_nonzero(dp_mask)),
        connected=bool(np.isfinite(hitting)),
        hitting_time=float(hitting),
        spectral_gap=float(gap),
        local_iterate=(float(link_times[linked].max()) if linked.any()
                       else float(net.compute_time.max())),
        **_noise_features(variances, functions, settings.gamma),
        **_heterogeneity_features(counts, lambda centred: np.sum((weights @ centred) ** 2),
                                  functions),
    )
