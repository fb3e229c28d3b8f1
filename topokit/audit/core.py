"""What a stranger learns: an exact network-privacy audit of a topology with partial DP.

DeepPrivacy's partial DP protects a device only against the neighbours it
talks to; its data then travels, averaged, to devices it never trusted.
:func:`privacy_audit` measures, for every ordered pair (owner i, observer k),
how much k's view of the gossip tells about i's private value, as a Gaussian
DP parameter mu_ik (network DP in the sense of Cyffers and Bellet [1]_ and
Muffliato [2]_), exactly for linear gossip.

**The model** (one coordinate; coordinates are independent).  x^0 = s, every
device's private value.  In round t = 0, ..., T-1 device j sends
m_j^t = x_j^t + z_j eta_j^t to its neighbours, eta_j^t ~ N(0, 1) fresh each
round (z_j the device's noise multiplier: the given z for DP devices, 0 for
the others, unless a per-device mapping says otherwise); then
x^{t+1} = W m^t, W the topology's mixing matrix: Lazy-Metropolis (DeepPrivacy
eq. 4) unless the topology carries weights (:meth:`Topology.mixing_matrix`).

**The threat model.**  The observer k sees m_j^t of every topology
neighbour j != k for t < T (not the messages it sends, nor x^T), knows W,
every z_j and every private value except s_i.  What it knows of its own noise
draws is an option:

- ``observer_knows_own_noise=True`` (default): k is the participating
  device, which drew its own noise.  Its own draws then never protect anyone
  against it.  This is the stronger adversary, so the default audit holds
  against both (Fig. 2(b): 4 exposed stranger pairs of 16);
- ``False``: k does not use them, as an eavesdropper on the links into k
  would not know them; mu can only be lower.  This is the reading under which
  the numbers measured in the issue that specifies the audit hold
  (Fig. 2(b): 2 exposed stranger pairs of 16).

The view is Gaussian with mean A s and covariance C; changing s_i by the
sensitivity 1 moves its mean by a_i = A e_i (a_i[t, j] = (W^t)_{ji}), so
the privacy loss is exactly that of a Gaussian mechanism:

.. math:: \\mu_{ik} = \\sqrt{a_i^\\top C^+ a_i},

and mu_ik = inf when a_i has a component outside range(C): k combines its
observations to cancel every noise term and reads s_i ("exposed").
For any delta, (epsilon, delta)-DP follows from mu exactly (Balle and Wang's
Gaussian mechanism [3]_ with sigma = 1 / mu): :meth:`PrivacyAudit.epsilon`.

**D-SGD** (``model="dsgd"``).  A device's private contribution enters every
round: m_j^t = x_j^t + u_j^t + z_j eta_j^t, x^{t+1} = W m^t, x^0 = 0, where
u_i^t (a gradient step) may change by at most the sensitivity (1; z is in
units of it) in every round, independently, between neighbouring datasets of
owner i.  Gossip is the case u^0 = s, u^t = 0 after.  The view's noise is the
same as in gossip; its mean moves by A_i delta, delta in R^T the per-round
changes, with A_i's column s = Z^s a_i (a_i shifted by s rounds).  With
G_i = A_i^T C^+ A_i (T x T), mu_ik^2 = sup_delta sum over coordinates of
delta^T G_i delta, the supremum over per-round changes of l2 norm <= 1 (a
d-dimensional clipped gradient: coordinates independent, sharing W).  Since
<delta_s, delta_t> <= 1 this is at most sum_{s,t} |G_i[s, t]|, and, as k's
view is a post-processing of owner i's T messages (each a Gaussian mechanism
with noise z_i) and of noise independent of i's data, at most T / z_i^2:

.. math:: \\mu_{ik} = \\sqrt{\\min\\Big(\\sum_{s,t} |G_i[s,t]|,\\ T / z_i^2\\Big)},

an upper bound, reported as ``mu``.  ``mu_lower`` = sqrt(sum_{s,t} G_i[s, t])
is the loss of one admissible change (the same unit step every round), so the
exact loss lies in [mu_lower, mu]; both are equal (:attr:`PrivacyAudit.tight`)
when G_i >= 0 entrywise.  mu = inf when a column of A_i leaves range(C), which
happens exactly for the pairs exposed in gossip (a functional that reads
round s's change, shifted back by s rounds, reads s_i in a shorter gossip view).

**Which guarantee holds for which model.**  Gossip of fixed values: ``mu`` is
exact.  Linear D-SGD with contributions that do not depend on the state:
``mu`` is a guarantee (an upper bound of the exact loss).  Real, non-linear
D-SGD: a gradient depends on the state, which depends on the others' noise
and on i's own earlier contributions; the audit's view is then a
linearisation and its numbers an approximation, not a guarantee.  What holds
rigorously there is the composition bound sqrt(T) / z_i of a DP owner
against anyone (its messages are T adaptive Gaussian mechanisms, the rest is
post-processing); a non-DP owner sends its contributions in the clear and
keeps no rigorous protection beyond what the linear model suggests.

**Time-varying topologies.**  Given a
:class:`~topokit.network.TopologySchedule`, round t mixes with its own
topology's matrix W_t (x^{t+1} = W_t m^t) and observer k hears its round-t
neighbours: a_i[t, j] = (W_{t-1} ... W_0)_{ji}, and in D-SGD round s's change
moves the view by (W_{t-1} ... W_s) e_i, no longer a shifted a_i.  The DP
devices are the schedule's, adding noise in every round.  A schedule whose
T rounds are all one topology is audited as that topology (the same view);
otherwise the view is written out, densely, per observer
(:mod:`topokit.audit._schedule`): a square-root factor of C from a QR
factorisation of the noise's coefficients (C is never formed), and an owner
is exposed when a_i (in D-SGD, any of its T columns) leaves range(C) by more
than 1e-8 ||a_i|| in least squares.  Its memory grows with T^2 |N(k)| times
the noisy devices per observer (checked before it starts), its work with
about the cube of T |N(k)|: an audit of tens to a few hundred devices over
tens of rounds.

**How it is computed.**  Per observer (observers in parallel threads):
exposure from the subspace of noise-free functionals of s that the view
determines (one application of W per round, see
:func:`topokit.audit._kernels.revealed_leverage`); mu = 1/z_i for a
heard owner; for the other owners, the Fisher information a_i^T C^+ a_i of
all of them at once, from a square-root factor of C built round by round
(the generalised Schur algorithm; C itself is never formed) when T |N(k)| is
small, or from a Kalman filter on the messages k does not hear when k hears
many devices (it hands an ill-conditioned view back to the square-root
method).  ``topokit.testing.naive_audit`` is the direct dense twin the tests
compare with (1e-9 relative).

D-SGD uses the square-root method for every observer and every owner (heard
ones included: their later messages also carry the state), with the T shifted
columns solved together.

**Exactness.**  See above for which guarantee holds for which model.  In
floating point, directions of the view whose noise is below 1e-12 of the
largest are dropped, which can only lower mu: a pair that draws most of its
mu from them (long horizons, near-exposed pairs, mu in the hundreds or more)
gets a lower bound.

References
----------
.. [1] E. Cyffers and A. Bellet, "Privacy amplification by decentralization",
   AISTATS 2022.
.. [2] E. Cyffers, M. Even, A. Bellet and L. Massoulie, "Muffliato: peer-to-peer
   privacy amplification for decentralized optimization and averaging",
   NeurIPS 2022.
.. [3] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising",
   ICML 2018.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.special import log_ndtr

from .._checks import brief, check_choice, check_fits_in_memory, check_int, check_real
from .._io import jsonable
from ..errors import InvalidInputError, NodeNotFoundError
from ..network.core import Network, Topology
from ..network.schedule import TopologySchedule
from . import _kernels as kernels
from . import _schedule as schedule_kernels

__all__ = ["PrivacyAudit", "privacy_audit", "stranger_summary", "AUDIT_MODELS", "MAX_AUDIT_ROUNDS",
           "check_audit_rounds", "device_noise", "audit_memory_needed"]

#: The audit's models of what a device contributes: ``"gossip"`` (one private value,
#: averaged) and ``"dsgd"`` (a bounded contribution every round, as in D-SGD training).
AUDIT_MODELS = kernels.MODELS

#: The most rounds an audit of each model watches.  A gossip audit's work grows with the
#: rounds (the toy example: 18 s at 10^5 rounds on one core, and optimize audits hundreds
#: of topologies); the D-SGD model's with about their cube (8.5 s at 1,000 rounds, 69 s at
#: 1,500, beyond ten minutes at 3,000).  mu levels off once the gossip has mixed, which
#: takes a few times the hitting time H.
MAX_AUDIT_ROUNDS = {"gossip": 100_000, "dsgd": 1_000}


def check_audit_rounds(rounds: Any, model: str = "gossip", name: str = "rounds",
                       low: int = 1) -> int:
    """``rounds`` as an int in [low, :data:`MAX_AUDIT_ROUNDS` of ``model``], or one line
    naming ``name`` (a parameter or a CLI option) with the limit and why.

    >>> check_audit_rounds(50)
    50
    >>> check_audit_rounds(3000, "dsgd", "--rounds")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: --rounds 3000 is more than the 1000 rounds a dsgd ...
    """
    rounds = check_int(rounds, name, low=low)
    limit = MAX_AUDIT_ROUNDS[check_choice(model, "model", kernels.MODELS)]
    if rounds > limit:
        growth = "the cube of the rounds" if model == "dsgd" else "the rounds"
        raise InvalidInputError(
            f"{name} {rounds} is more than the {limit} rounds a {model} audit watches (its work "
            f"grows with {growth}: minutes to hours beyond); give at most {limit}")
    return rounds


#: Bisection steps of the mu -> epsilon conversion (each halves the bracket).
_BISECTION_STEPS = 200
#: A D-SGD bound is tight when mu_lower is within this (relative) of mu.
_TIGHT_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class PrivacyAudit:
    """The privacy loss mu_ik of every owner i against every observer k.

    Attributes
    ----------
    mu : ndarray of shape (n, n)
        mu-GDP of owner i (row) against observer k (column), in the node order
        ``nodes`` (= ``net.nodes`` = ``list(net.social)``); NaN on the diagonal
        and in the columns of observers not audited, ``inf`` where k reads s_i
        exactly (exposed).
    nodes : tuple
        The device ids, in the order of the rows and columns.
    rounds : int
        T, the rounds the observers watch.
    noise : ndarray of shape (n,)
        z_j of every device (0: it adds no noise).
    social : ndarray of shape (n, n), bool
        True where i and k are social neighbours.
    topology : Topology or TopologySchedule
        The audited topology (or time-varying topology).
    delta : float or None
        The delta of :meth:`to_frame`'s and :meth:`summary`'s epsilon (None: no epsilon).
    observer_knows_own_noise : bool
        Whether an observer used its own noise draws (see :mod:`topokit.audit`).
    observers : tuple
        The audited observers.
    model : {"gossip", "dsgd"}
        What a device's private value is (see :mod:`topokit.audit`).
    mu_lower : ndarray of shape (n, n) or None
        D-SGD only: the privacy loss of one sequence of per-round changes (the
        same unit change every round), a lower bound of the exact loss, which
        lies in [mu_lower, mu]; equal to ``mu`` where the bound is tight
        (:attr:`tight`).  None for gossip, where ``mu`` is exact.
    sensitivity : ndarray of shape (n,) or None
        Delta_i of every device, when the audit was given distinct ones
        (device j's noise std is then z_j Delta_j); None when every device has
        the same one (mu does not depend on a common value).
    """

    mu: NDArray[np.float64]
    nodes: tuple[Hashable, ...]
    rounds: int
    noise: NDArray[np.float64]
    social: NDArray[np.bool_]
    topology: Topology | TopologySchedule
    delta: float | None = None
    observer_knows_own_noise: bool = True
    observers: tuple[Hashable, ...] = ()
    model: str = "gossip"
    mu_lower: NDArray[np.float64] | None = None
    sensitivity: NDArray[np.float64] | None = None

    @property
    def audited(self) -> NDArray[np.bool_]:
        """(n, n) mask of the audited ordered pairs: owner != observer, observer audited."""
        mask = np.zeros(self.mu.shape, dtype=bool)
        index = {node: k for k, node in enumerate(self.nodes)}
        mask[:, [index[node] for node in self.observers]] = True
        np.fill_diagonal(mask, False)
        return mask

    @property
    def stranger(self) -> NDArray[np.bool_]:
        """(n, n) mask of the audited pairs that are not social neighbours."""
        return self.audited & ~self.social

    @property
    def tight(self) -> NDArray[np.bool_]:
        """(n, n) mask of the audited pairs whose ``mu`` is the exact loss, not only a bound.

        Every audited pair for gossip; for D-SGD the pairs with ``mu_lower``
        within 1e-9 (relative) of ``mu``, and the exposed ones.
        """
        if self.mu_lower is None:
            return self.audited
        with np.errstate(invalid="ignore"):
            close = (self.mu_lower >= self.mu * (1 - _TIGHT_RTOL)) | np.isinf(self.mu)
        return self.audited & close

    def epsilon(self, delta: float) -> NDArray[np.float64]:
        """Epsilon of every pair at ``delta``: (epsilon, delta)-DP equivalent to mu-GDP.

        mu-GDP holds exactly when, for every epsilon >= 0,

        .. math:: \\delta(\\varepsilon) = \\Phi\\left(-\\frac{\\varepsilon}{\\mu}
                  + \\frac{\\mu}{2}\\right) - e^{\\varepsilon}
                  \\Phi\\left(-\\frac{\\varepsilon}{\\mu} - \\frac{\\mu}{2}\\right);

        epsilon is the root of delta(epsilon) = ``delta`` (0 when delta(0) is
        below it; inf for mu = inf), as dp-accounting's
        ``get_epsilon_gaussian(1 / mu, delta)`` computes it, vectorised.

        Parameters
        ----------
        delta : float in (0, 1)

        Returns
        -------
        ndarray of shape (n, n)
            NaN where ``mu`` is NaN.
        """
        delta = check_real(delta, "delta", low=0, high=1, closed="neither")
        return _gdp_epsilon(self.mu, delta)

    def to_frame(self):
        """One row per audited ordered pair: owner, observer, social, mu (and epsilon).

        Returns
        -------
        pandas.DataFrame
            Columns ``owner``, ``observer``, ``social`` (bool), ``mu`` (inf:
            exposed), for D-SGD ``mu_lower``, and, when the audit has a
            ``delta``, ``epsilon`` (of ``mu``).
        """
        import pandas as pd

        owners, observers = np.nonzero(self.audited)
        columns = {
            "owner": [self.nodes[i] for i in owners],
            "observer": [self.nodes[k] for k in observers],
            "social": self.social[owners, observers],
            "mu": self.mu[owners, observers],
        }
        if self.mu_lower is not None:
            columns["mu_lower"] = self.mu_lower[owners, observers]
        if self.delta is not None:
            columns["epsilon"] = self.epsilon(self.delta)[owners, observers]
        return pd.DataFrame(columns)

    def summary(self) -> dict[str, Any]:
        """Counts and quantiles of mu over stranger pairs and over social pairs.

        Returns
        -------
        dict
            ``model``; ``stranger_pairs``, ``exposed_stranger_pairs`` (mu = inf),
            ``stranger_mu_median``, ``stranger_mu_p90``, ``stranger_mu_max``
            (over the finite mu; None if there are none), and the same for
            ``social``; for D-SGD also ``tight_stranger_pairs`` (finite pairs
            whose mu is exact, not only a bound) and ``stranger_mu_lower_max``;
            with a ``delta``, also ``delta`` and ``stranger_epsilon_max``
            (finite pairs).
        """
        out: dict[str, Any] = {"model": self.model}
        for name, mask in (("stranger", self.stranger), ("social", self.audited & self.social)):
            values = self.mu[mask]
            finite = values[np.isfinite(values)]
            out[f"{name}_pairs"] = int(mask.sum())
            out[f"exposed_{name}_pairs"] = int(np.isinf(values).sum())
            quantiles = np.quantile(finite, [0.5, 0.9]) if finite.size else (None, None)
            out[f"{name}_mu_median"] = _number(quantiles[0])
            out[f"{name}_mu_p90"] = _number(quantiles[1])
            out[f"{name}_mu_max"] = _number(finite.max()) if finite.size else None
        if self.mu_lower is not None:
            finite = self.stranger & np.isfinite(self.mu)
            out["tight_stranger_pairs"] = int((finite & self.tight).sum())
            out["stranger_mu_lower_max"] = (_number(self.mu_lower[finite].max())
                                            if finite.any() else None)
        if self.delta is not None:
            values = self.mu[self.stranger]
            finite = values[np.isfinite(values)]
            out["delta"] = self.delta
            out["stranger_epsilon_max"] = (_number(_gdp_epsilon(finite.max(), self.delta))
                                           if finite.size else None)
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: settings, summary, mu (null where not finite) and exposure."""
        lower = {} if self.mu_lower is None else {"mu_lower": self.mu_lower}
        return jsonable({
            "nodes": list(self.nodes),
            "model": self.model,
            "rounds": self.rounds,
            "noise_multiplier": self.noise,
            "sensitivity": self.sensitivity,
            "observer_knows_own_noise": self.observer_knows_own_noise,
            "observers": list(self.observers),
            "topology": self.topology.to_dict(),
            "summary": self.summary(),
            "mu": self.mu,
            **lower,
            "exposed": np.isinf(self.mu),
        })


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _gdp_epsilon(mu: Any, delta: float) -> NDArray[np.float64]:
    """Epsilon at ``delta`` of mu-GDP, elementwise (see :meth:`PrivacyAudit.epsilon`).

    Vectorised bisection on log delta(epsilon), which decreases in epsilon,
    in the form of dp-accounting's ``_get_log_delta`` (sigma = 1 / mu).
    """
    mu = np.asarray(mu, dtype=np.float64)
    epsilon = np.where(np.isinf(mu), np.inf, np.where(mu == 0, 0.0, np.nan))
    active = np.isfinite(mu) & (mu > 0)
    if not active.any():
        return epsilon
    values, target = mu[active], np.log(delta)

    def log_delta(eps: NDArray[np.float64]) -> NDArray[np.float64]:
        x = log_ndtr(values / 2 - eps / values)
        y = eps + log_ndtr(-eps / values - values / 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(y < x, x + np.log1p(-np.exp(y - x)), -np.inf)

    low = np.zeros(values.size)
    high = np.ones(values.size)
    while (above := log_delta(high) > target).any():
        low, high = np.where(above, high, low), np.where(above, high * 10, high)
    for _ in range(_BISECTION_STEPS):
        middle = (low + high) / 2
        above = log_delta(middle) > target
        low, high = np.where(above, middle, low), np.where(above, high, middle)
        if np.all(high - low <= 1e-14 * np.maximum(high, 1.0)):
            break
    result = np.where(log_delta(np.zeros(values.size)) <= target, 0.0, high)
    epsilon[active] = result
    return epsilon


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

def _audited(topology: Any, noise_multiplier: Any) -> tuple[Any, Any]:
    """The topology and noise an audit reads: a Design's topology with its own noise unless
    ``noise_multiplier`` is given; else 1 where none is given."""
    # A Design by what it has: the audit sits below the design layer and imports none of it.
    if not isinstance(topology, Topology) and hasattr(topology, "noise_multipliers") \
            and isinstance(getattr(topology, "topology", None), Topology):
        if noise_multiplier is None and topology.noise is not None:
            noise_multiplier = topology.noise_multipliers
        topology = topology.topology
    return topology, 1.0 if noise_multiplier is None else noise_multiplier


def _audit_inputs(net: Any, topology: Any, noise_multiplier: Any, model: Any, rounds: Any
                  ) -> tuple[Topology | TopologySchedule, str, int, NDArray[np.float64]]:
    """The validated topology, model, rounds and each device's z (node order) of an audit."""
    topology, noise_multiplier = _audited(topology, noise_multiplier)
    topology = _check_network(net, topology)
    model = check_choice(model, "model", kernels.MODELS)
    rounds = check_audit_rounds(rounds, model)
    return topology, model, rounds, device_noise(net, topology, noise_multiplier)


def _check_knows(observer_knows_own_noise: Any) -> bool:
    if not isinstance(observer_knows_own_noise, (bool, np.bool_)):
        raise InvalidInputError(
            f"observer_knows_own_noise must be True or False; got {observer_knows_own_noise!r}")
    return bool(observer_knows_own_noise)


def _check_network(net: Any, topology: Any) -> Topology | TopologySchedule:
    """The topology (or schedule) to audit, validated against ``net``: the given, the stored,
    or NDLF."""
    if not isinstance(net, Network):
        raise InvalidInputError(
            f"net must be a topokit Network; got {type(net).__name__}. "
            "Read one with topokit.load_network(path) or topokit.load_example(name)"
        )
    if topology is None:
        topology = net.topology if net.topology is not None else Topology(net.social.edges)
    if isinstance(topology, TopologySchedule):  # its rounds past the window: _schedule_rounds
        return topology.validate(net)
    if not isinstance(topology, Topology):
        raise InvalidInputError(
            f"topology must be a topokit Topology, TopologySchedule or None; got "
            f"{type(topology).__name__}. Build one with topokit.Topology(edges, dp_devices)"
        )
    return topology.validate(net)


def device_noise(net: Network, topology: Topology | TopologySchedule,
                 noise_multiplier: Any) -> NDArray:
    """z_j of every device in node order, as :func:`privacy_audit` reads ``noise_multiplier``.

    One number: every DP device of ``topology`` (of a schedule: its DP devices, the
    same in every round) adds it, the others 0.  A mapping
    node -> z: each device its own, and every DP device must have an entry.
    Refused in one line naming the device or value otherwise.

    Examples
    --------
    >>> from topokit import load_example
    >>> toy = load_example("toy")
    >>> device_noise(toy, toy.topology, 2.0).tolist()
    [0.0, 0.0, 2.0, 2.0, 2.0, 0.0]
    """
    noise = np.zeros(net.n_devices)
    if isinstance(noise_multiplier, Mapping):
        for node, value in noise_multiplier.items():
            noise[_device_index(net, node, "noise_multiplier")] = check_real(
                value, f"noise_multiplier[{node!r}]", low=0)
        missing = [node for node in net.nodes
                   if node in topology.dp_devices and node not in noise_multiplier]
        if missing:
            raise InvalidInputError(
                f"noise_multiplier has no entry for DP device {missing[0]!r}; give every DP "
                "device its z (0 for no noise) or pass one number for all DP devices"
            )
        return noise
    value = _check_common_value(noise_multiplier, "noise_multiplier", positive=False)
    noise[[net.index[node] for node in topology.dp_devices]] = value
    return noise


def _sensitivity_vector(net: Network, sensitivity: Any) -> NDArray | None:
    """Delta_i of every device, in node order; None when every device has the same one
    (mu is scale-free, so a common value is the unit audit)."""
    if isinstance(sensitivity, Mapping):
        for node in sensitivity:  # every name checked before any value
            _device_index(net, node, "sensitivity")
        missing = [node for node in net.nodes if node not in sensitivity]
        if missing:
            raise InvalidInputError(
                f"sensitivity has no entry for device {missing[0]!r}; give every device its "
                "Delta (or one number for all)")
        values = np.array([check_real(sensitivity[node], f"sensitivity[{node!r}]", low=0,
                                      closed="neither") for node in net.nodes])
        return None if np.all(values == values[0]) else values
    _check_common_value(sensitivity, "sensitivity", positive=True)
    return None


def _check_common_value(value: Any, name: str, *, positive: bool) -> float:
    """``value`` as a float: the one number (not a mapping) given for every device.

    Finite and >= 0, or > 0 if ``positive``.  Anything but a number is refused
    with a message that names the mapping form too, since the argument takes both.
    """
    bound = "> 0" if positive else ">= 0"
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        raise InvalidInputError(
            f"{name} must be a number {bound} or a mapping device -> number; got {brief(value)}")
    return check_real(value, name, low=0, closed="neither" if positive else "both")


def _device_index(net: Network, node: Hashable, name: str) -> int:
    """Index of ``node`` in ``net``; a device the argument ``name`` keys that is not there
    raises :class:`NodeNotFoundError`."""
    if node not in net.index:
        raise NodeNotFoundError(f"{name} names device {node!r}, which is not in the network")
    return net.index[node]


def _check_observers(net: Network, observers: Any) -> list[int]:
    """Indices of the observers to audit (all by default), in node order."""
    if observers is None:
        return list(range(net.n_devices))
    if isinstance(observers, (str, bytes)) or not isinstance(observers, Iterable):
        raise InvalidInputError(
            f"observers must be an iterable of device ids or None; got {brief(observers)}"
        )
    chosen = set()
    for node in observers:
        try:
            chosen.add(net.index[node])
        except (KeyError, TypeError):
            raise NodeNotFoundError(
                f"observers names device {brief(node)}, which is not in the network"
            ) from None
    return sorted(chosen)


def _problem(net: Network, topology: Topology | TopologySchedule, noise: NDArray, rounds: int,
             knows_own_noise: bool, model: str = "gossip"
             ) -> kernels.AuditProblem | schedule_kernels.ScheduleProblem:
    """What every observer's computation shares: the static kernels' problem for a topology,
    and for a schedule whose T rounds are all one topology (the same view); the time-varying
    kernels' problem otherwise."""
    if isinstance(topology, TopologySchedule):
        rounds_of = _schedule_rounds(net, topology, rounds)
        if len(set(rounds_of)) > 1:
            return _schedule_problem(net, rounds_of, noise, knows_own_noise, model)
        topology = rounds_of[0]
    weights, neighbours = _round_arrays(net, topology)
    return kernels.AuditProblem(weights, neighbours, noise**2, rounds, knows_own_noise, model)


def _round_arrays(net: Network, topology: Topology
                  ) -> tuple[sp.csr_array, tuple[NDArray[np.int64], ...]]:
    """W (Lazy-Metropolis unless weighted) and every device's neighbours of ``topology``."""
    from ..network.quantities import adjacency_matrix

    adjacency = adjacency_matrix(net, topology)
    weights = sp.csr_array(topology.mixing_matrix(net.nodes))
    return weights, tuple(np.flatnonzero(row) for row in adjacency)


def _schedule_rounds(net: Network, schedule: TopologySchedule, rounds: int) -> list[Topology]:
    """The topologies of rounds 0 to T - 1; a generated schedule's rounds past its window
    (which ``validate`` checked) checked against ``net`` here."""
    if not schedule.is_generated:
        return [schedule.topology_at(t) for t in range(rounds)]
    return [schedule.topology_at(t) if t < schedule.window else schedule.round_on(net, t)
            for t in range(rounds)]


def _schedule_problem(net: Network, rounds_of: list[Topology], noise: NDArray,
                      knows_own_noise: bool, model: str) -> schedule_kernels.ScheduleProblem:
    """The time-varying kernels' problem: W_t and the neighbours of every round, each
    distinct topology's arrays built once (a cyclic schedule's repeat)."""
    built = {topology: _round_arrays(net, topology) for topology in set(rounds_of)}
    return schedule_kernels.ScheduleProblem(
        tuple(built[topology][0] for topology in rounds_of),
        tuple(built[topology][1] for topology in rounds_of),
        noise**2, len(rounds_of), knows_own_noise, model)


#: How to shrink an audit that does not fit in memory (the end of the refusal; the CLI
#: rewrites it in its own options).
MEMORY_FIX = "audit fewer observers (observers=...), fewer rounds, or use fewer threads (n_jobs)"


#: Bytes per n^2 of the audit's (n, n) arrays: adjacency, W, mu, its lower bound, the
#: social mask.
_ARRAYS_PER_N2 = 8.0 * 5


def _largest_workspace(problem: kernels.AuditProblem | schedule_kernels.ScheduleProblem,
                       observers: Sequence[int]) -> float:
    """The largest workspace any of ``observers`` needs, by either method."""
    if isinstance(problem, schedule_kernels.ScheduleProblem):
        return max((schedule_kernels.workspace_bytes(problem, k) for k in observers),
                   default=0.0)
    n = problem.variance.size
    return max((max(kernels.workspace_bytes(problem, k, n, method) for method in kernels.METHODS)
                for k in observers), default=0.0)


def audit_memory_needed(n_devices: int, rounds: int, *, model: str = "gossip",
                        threads: int = 1, degree: int = 1, noisy: int = 0) -> float:
    """Bytes a privacy audit allocates at most, before its topology is built.

    The bound :func:`privacy_audit` checks before it starts: the (n, n) arrays
    and, for each of ``threads`` threads, the workspace of an observer that
    hears ``degree`` devices while ``noisy`` devices of the network add noise
    (the busiest observer of a topology gives its bound).  With the defaults a
    lower bound for any topology: every observer hears at least one device.

    Examples
    --------
    >>> short = audit_memory_needed(100, 50, model="dsgd", degree=4, noisy=10)
    >>> short < audit_memory_needed(100, 500, model="dsgd", degree=4, noisy=10)
    True
    """
    variance = np.zeros(int(n_devices))
    variance[:noisy] = 1.0
    heard = (np.arange(min(int(degree), int(n_devices))),)  # observer 0 hears `degree`
    problem = kernels.AuditProblem(None, heard, variance, int(rounds), True, model)
    return _ARRAYS_PER_N2 * float(n_devices) ** 2 + threads * _largest_workspace(problem, [0])


def _check_memory(n: int, rounds: int,
                  problem: kernels.AuditProblem | schedule_kernels.ScheduleProblem | None = None,
                  observers: Sequence[int] = (), threads: int = 1) -> None:
    """Refuse, before allocating, an audit whose arrays cannot fit in memory.

    Without ``problem``: the (n, n) arrays (adjacency, W, mu, the social mask),
    checked before they are built; with it, also every thread's largest workspace.
    """
    largest = 0.0 if problem is None else _largest_workspace(problem, observers)
    check_fits_in_memory(_ARRAYS_PER_N2 * n * n + threads * largest,
                         f"a privacy audit of {n} devices over {rounds} rounds", MEMORY_FIX)


def _thread_count(n_jobs: int, n_tasks: int) -> int:
    import joblib

    return max(1, min(joblib.effective_n_jobs(n_jobs), n_tasks))


def _columns(problem: kernels.AuditProblem | schedule_kernels.ScheduleProblem,
             observers: list[int], threads: int,
             progress: Callable[[int, int], Any] | None
             ) -> dict[int, tuple[NDArray, NDArray]]:
    """The columns of mu and mu_lower of every observer, in threads.

    BLAS runs on one thread throughout (threadpoolctl): the observers' matrices
    are small, and a BLAS pool spinning next to them (or next to other
    programs on a busy machine) slows them down several times.  Parallelism
    comes from the observers (``threads``).
    """
    import joblib

    from .._blas import one_blas_thread

    bounds = (schedule_kernels.observer_bounds
              if isinstance(problem, schedule_kernels.ScheduleProblem) else
              kernels.observer_bounds)

    def one(k: int) -> tuple[int, tuple[NDArray, NDArray]]:
        return k, bounds(problem, k)

    columns: dict[int, tuple[NDArray, NDArray]] = {}
    with one_blas_thread():
        results = map(one, observers) if threads == 1 else joblib.Parallel(
            n_jobs=threads, prefer="threads", return_as="generator_unordered")(
            joblib.delayed(one)(k) for k in observers)
        for k, column in results:
            columns[k] = column
            if progress is not None:
                progress(len(columns), len(observers))
    return columns


def privacy_audit(
    net: Network,
    topology: Topology | TopologySchedule | None = None,
    *,
    rounds: int,
    noise_multiplier: float | Mapping[Hashable, float] | None = None,
    delta: float | None = None,
    observers: Iterable[Hashable] | None = None,
    observer_knows_own_noise: bool = True,
    model: str = "gossip",
    n_jobs: int = 1,
    progress: Callable[[int, int], Any] | None = None,
    sensitivity: float | Mapping[Hashable, float] = 1.0,
) -> PrivacyAudit:
    """Audit what every device's view of the gossip reveals of every other's private value.

    Parameters
    ----------
    net : Network
    topology : Topology, TopologySchedule or Design, optional
        The topology to audit; default: the one stored with the network, else
        NDLF (the social graph, no DP device).  A :class:`~topokit.Design`
        audits its topology with the noise it decided (``Design.noise``).  A
        :class:`~topokit.network.TopologySchedule` (a time-varying topology)
        gossips over round t's mixing matrix W_t and observer k hears its
        round-t neighbours (see "Time-varying topologies" in
        :mod:`topokit.audit`); its DP devices add noise in every round.
    rounds : int >= 1
        T, the rounds of gossip the observers watch (t = 0, ..., T-1).
    noise_multiplier : float >= 0 or mapping device -> float, optional
        z of every DP device of the topology (others add no noise); a mapping
        gives each device it names its z (non-DP devices included) and must
        name every DP device.  None (default): a Design's own levels, else 1.
    delta : float in (0, 1), optional
        Adds epsilon at this delta to :meth:`PrivacyAudit.to_frame` and
        :meth:`PrivacyAudit.summary`.
    observers : iterable of device ids, optional
        Audit only these observers (their columns of ``mu``); default all.
    observer_knows_own_noise : bool, default True
        Whether the observer uses its own noise draws: True audits the
        participating device (the stronger adversary), False an eavesdropper
        on its incoming links (see the threat model in
        :mod:`topokit.audit`).
    model : {"gossip", "dsgd"}, default "gossip"
        "gossip": the private value is the devices' starting point x^0 (it
        enters once; mu is exact).  "dsgd": it enters every round as a
        contribution (a gradient step) that may change by the sensitivity in
        each round; mu is an upper bound over all such changes, exact where
        ``PrivacyAudit.tight`` (see :mod:`topokit.audit`).
    n_jobs : int, default 1
        Threads over observers (-1: all cores).  BLAS is limited to one thread
        while the audit runs (threadpoolctl).
    progress : callable(done, total), optional
        Called after each observer.
    sensitivity : float > 0 or mapping device -> float > 0, default 1.0
        Delta_i, how far one device's private value (gossip) or per-round
        contribution (D-SGD) can move, in the units of the noise: device j's
        noise then has std z_j Delta_j, and mu_ik is Delta_i times the mu of
        unit values under the noise multipliers z_j Delta_j (exact: mu is
        linear in the shift and 1 / scale in the noise).  One number for all
        devices changes nothing (mu is scale-free).  Distinct values are what
        D-SGD training gives when the devices' expected batches differ: a
        clipping DP device's Delta_i = 2 eta C (1 / min(B, |D_i|) + K - 1)
        (``TrainingRun.sensitivity``), so a device with a small dataset adds
        more noise, and protects the others more, than one with a large one.
        A mapping must name every device.

    Returns
    -------
    PrivacyAudit

    Raises
    ------
    InvalidInputError
        ``rounds`` < 1, a negative, NaN or infinite noise multiplier, a
        mapping without a DP device, a sensitivity that is not finite and > 0
        or a mapping of them without every device, an invalid ``delta`` or
        ``n_jobs``, or an audit too large for this machine's memory (checked
        before allocating).
    NodeNotFoundError
        A device of ``noise_multiplier``, ``sensitivity`` or ``observers`` not
        in the network.
    InvalidTopologyError
        A topology, or a round of a schedule, that breaks a DeepPrivacy rule
        on ``net``.

    Notes
    -----
    mu_ik = sqrt(a_i^T C^+ a_i) with a_i the move of k's view when s_i grows
    by 1 and C the covariance of its noise; inf when a_i leaves range(C).
    Exposure is decided on the subspace of noise-free functionals the view
    determines, with a documented numerical tolerance
    (:data:`topokit.audit._kernels.LEVERAGE_TOL`): for long horizons
    that subspace can keep growing through directions that shrink like the
    powers of W, and directions below 1e-8 of the unit scale are not counted.

    Examples
    --------
    DeepPrivacy's Fig. 2(b) (DP devices C, D, E), z = 1, 30 rounds; the
    observers are the participating devices (the default):

    >>> from topokit import load_example
    >>> toy = load_example("toy")
    >>> audit = privacy_audit(toy, rounds=30)
    >>> s = audit.summary()
    >>> s["stranger_pairs"], s["exposed_stranger_pairs"]
    (16, 4)
    >>> round(s["stranger_mu_median"], 2), round(s["stranger_mu_max"], 2)
    (1.0, 1.37)
    >>> float(audit.mu[audit.nodes.index("B"), audit.nodes.index("D")])  # D reads B's value
    inf

    An eavesdropper on the links into each device, which does not know that
    device's noise draws, reads two of those four (the issue's reading):

    >>> privacy_audit(toy, rounds=30, observer_knows_own_noise=False).summary()[
    ...     "exposed_stranger_pairs"]
    2

    Sensitivities: a common one changes nothing; with D's twice the others', D's
    values are twice as exposed to the noise, and D's own noise protects twice as much:

    >>> same = privacy_audit(toy, rounds=30, sensitivity=0.05)
    >>> bool(np.allclose(same.mu, audit.mu, equal_nan=True))
    True
    >>> heavy = privacy_audit(toy, rounds=30, sensitivity={
    ...     node: 2.0 if node == "D" else 1.0 for node in toy.nodes})
    >>> d = toy.nodes.index("D")
    >>> scaled = privacy_audit(toy, rounds=30, noise_multiplier={"C": 1, "D": 2, "E": 1})
    >>> bool(np.allclose(heavy.mu[d], 2 * scaled.mu[d], equal_nan=True))
    True

    A time-varying topology: the toy's links split into two rounds used in
    turn.  A schedule of one topology is that topology's audit.

    >>> from topokit.network import TopologySchedule
    >>> links = toy.topology.edges
    >>> halves = [Topology(links[::2], toy.topology.dp_devices),
    ...           Topology(links[1::2], toy.topology.dp_devices)]
    >>> alternating = privacy_audit(toy, TopologySchedule(halves), rounds=30)
    >>> alternating.summary()["stranger_pairs"]
    16
    >>> one = privacy_audit(toy, TopologySchedule([toy.topology]), rounds=30)
    >>> bool(np.array_equal(one.mu, audit.mu, equal_nan=True))
    True
    """
    from .._jobs import check_n_jobs

    topology, model, rounds, noise = _audit_inputs(net, topology, noise_multiplier, model,
                                                   rounds)
    scale = _sensitivity_vector(net, sensitivity)
    if delta is not None:
        delta = check_real(delta, "delta", low=0, high=1, closed="neither")
    chosen = _check_observers(net, observers)
    observer_knows_own_noise = _check_knows(observer_knows_own_noise)
    threads = _thread_count(check_n_jobs(n_jobs), len(chosen))
    _check_memory(net.n_devices, rounds)
    # In units of each owner's own sensitivity: noise std z_j Delta_j, then rows times Delta_i.
    problem = _problem(net, topology, noise if scale is None else noise * scale, rounds,
                       bool(observer_knows_own_noise), model)
    _check_memory(net.n_devices, rounds, problem, chosen, threads)
    mu = np.full((net.n_devices, net.n_devices), np.nan)
    lower = mu.copy() if model == "dsgd" else None
    for k, (column, column_lower) in _columns(problem, chosen, threads, progress).items():
        mu[:, k] = column if scale is None else column * scale
        if lower is not None:
            lower[:, k] = column_lower if scale is None else column_lower * scale
    social = net.social_adjacency.astype(bool)
    for array in (mu, noise, social, lower, scale):
        if array is not None:
            array.flags.writeable = False
    return PrivacyAudit(
        mu=mu, nodes=tuple(net.nodes), rounds=rounds, noise=noise, social=social,
        topology=topology, delta=delta, observer_knows_own_noise=bool(observer_knows_own_noise),
        observers=tuple(net.nodes[k] for k in chosen), model=model, mu_lower=lower,
        sensitivity=scale,
    )


def stranger_summary(
    net: Network,
    topology: Topology | TopologySchedule | None = None,
    *,
    rounds: int,
    noise_multiplier: float | Mapping[Hashable, float] | None = None,
    observer_knows_own_noise: bool = True,
    model: str = "gossip",
    progress: Callable[[int, int], Any] | None = None,
) -> dict[str, Any]:
    """What strangers learn, in the two numbers a report shows: exactly those of the full audit.

    ``stranger_pairs``, ``exposed_stranger_pairs`` and ``stranger_mu_max`` of
    ``privacy_audit(net, topology, ...).summary()``, computing only what they
    depend on (:func:`topokit.audit._kernels.stranger_summary`): each observer's
    stranger owners; in the gossip model, not the noisy owners whose bound
    mu_ik <= 1/z_i (the data-processing inequality: s_i reaches the view only
    through i's first noisy message) cannot change the maximum; and, with no
    unheard device adding noise, exposure by the walks that reach an owner
    instead of a subspace per round.  On a 300-device SIoT network (16,220
    social links, 50 rounds) NDLF's summary takes seconds where the full
    audit took over a minute.  Arguments as :func:`privacy_audit`'s; a
    :class:`~topokit.network.TopologySchedule` gets the full audit's numbers.

    Examples
    --------
    >>> from topokit import load_example
    >>> toy = load_example("toy")
    >>> summary = stranger_summary(toy, rounds=30)
    >>> full = privacy_audit(toy, rounds=30).summary()
    >>> [summary[key] == full[key] for key in summary]
    [True, True, True]
    """
    if isinstance(topology, TopologySchedule):  # no shortcut of time-varying views: the audit
        full = privacy_audit(net, topology, rounds=rounds, noise_multiplier=noise_multiplier,
                             observer_knows_own_noise=observer_knows_own_noise, model=model,
                             progress=progress).summary()
        return {key: full[key] for key in
                ("stranger_pairs", "exposed_stranger_pairs", "stranger_mu_max")}
    topology, model, rounds, noise = _audit_inputs(net, topology, noise_multiplier, model,
                                                   rounds)
    observer_knows_own_noise = _check_knows(observer_knows_own_noise)
    _check_memory(net.n_devices, rounds)
    problem = _problem(net, topology, noise, rounds, bool(observer_knows_own_noise), model)
    _check_memory(net.n_devices, rounds, problem, range(net.n_devices))
    strangers = ~net.social_adjacency.astype(bool)
    np.fill_diagonal(strangers, False)
    from .._blas import one_blas_thread

    with one_blas_thread():
        exposed, largest = kernels.stranger_summary(problem, strangers, progress)
    return {"stranger_pairs": int(strangers.sum()), "exposed_stranger_pairs": exposed,
            "stranger_mu_max": largest}
