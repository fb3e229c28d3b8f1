"""The noise a topology needs so that no stranger learns more than a bound (``optimize``'s
``max_stranger_mu``).

Under :func:`topokit.privacy_audit`'s model (linear gossip, one private value
per device), when every DP device adds noise of the same multiplier z, every
observer's view has noise covariance z^2 C_1, C_1 the covariance at z = 1, so

.. math:: \\mu_{ik}(z) = \\mu_{ik}(1) / z

for every pair that is not exposed, and exposure (mu = inf: the observer can
cancel the noise) does not depend on z > 0.  The same holds for the audit's
D-SGD model (both terms of its bound scale as 1 / z).  One audit at z = 1
therefore gives the smallest common z for which every stranger pair has mu at
most the bound: z* = max(z_0, max_stranger mu_ik(1) / bound), with z_0 the
noise the DP devices add anyway (their epsilon's); no z helps a topology that
exposes a stranger pair.

Per-device levels do not scale this way, but in the gossip model mu is
monotone in each of them: with more noise on one device, the observer's view
is the same view plus independent noise (a post-processing), so no mu grows.
(The D-SGD model's audited value is an upper bound, sqrt(min(sum |G_i|,
T / z^2)), which need not be monotone: there the bisection's level is one
that passed its audit, not necessarily the least.)  :class:`DeviceNoise`
(which relies on this, and whose final audit checks it) therefore finds, for
one device with the others fixed, the least z_j in [z_0, z_j] that keeps the
bound by bisection, one audit with the per-device noise per test; it proves
nothing it has not audited (:meth:`DeviceNoise.audit` of the final levels).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..network.core import Network, Topology
from ._kernels import stranger_mu_max

#: z* is raised by this relative margin so that a fresh audit at z* meets the bound strictly.
_MARGIN = 1.0 + 1e-9
#: Per-device levels are within the bound when the worst mu is this far below it: half of
#: z*'s margin, so that the levels at z* (whose mu lies a full margin below, when the worst
#: pair hears a device at z*) pass whatever the audit's last bits, and a lowered level
#: still leaves room for a fresh audit's round-off.
_WITHIN = 1.0 + 0.5e-9

#: A device's bisection stops when its bracket is this narrow relative to its upper end:
#: a percent of noise moves the predicted time little, and every test is one audit.
NOISE_RTOL = 1e-2


class StrangerBound(NamedTuple):
    """What :func:`topokit.optimize` must guarantee every stranger pair."""

    max_mu: float       # the bound on mu_ik over stranger pairs (i, k)
    rounds: int         # T, the rounds of gossip the audit watches
    base_noise: float   # z_0: what every DP device adds regardless (the predictor's settings)
    model: str = "gossip"  # the audit's model: "gossip" (one value) or "dsgd" (every round)


class NoiseRequirement(NamedTuple):
    """The noise one topology needs under a :class:`StrangerBound`."""

    noise_multiplier: float      # z* for every DP device; inf when no z suffices
    exposed_stranger_pairs: int  # pairs no noise protects (the observer cancels it)
    unit_mu_max: float           # the worst finite stranger mu at z = 1 (0.0 if none)

    @property
    def feasible(self) -> bool:
        return self.exposed_stranger_pairs == 0

    @property
    def stranger_mu_max(self) -> float:
        """The worst stranger mu at z* (inf when infeasible)."""
        if not self.feasible:
            return float("inf")
        return self.unit_mu_max / self.noise_multiplier if self.unit_mu_max > 0 else 0.0


def required_noise(net: Network, topology: Topology, bound: StrangerBound) -> NoiseRequirement:
    """z* of every DP device so that every stranger pair has mu <= ``bound.max_mu``.

    Module notes: one audit at z = 1, then mu scales as 1 / z.  The returned
    z* brings the worst stranger mu to the bound divided by 1 + 1e-9, or keeps
    z_0 when that already suffices.  The topology mixes with
    its own weights if it carries them.
    """
    from ..network.quantities import adjacency_matrix

    dp = np.zeros(net.n_devices, dtype=bool)
    dp[[net.index[node] for node in topology.dp_devices]] = True
    weights = None if topology.weights is None else sp.csr_array(topology.mixing_matrix(net.nodes))
    return required_noise_of_arrays(adjacency_matrix(net, topology), dp, net.social_adjacency > 0,
                                    bound, weights=weights)


def required_noise_of_arrays(adjacency: NDArray[np.float64], dp_mask: NDArray[np.bool_],
                             social: NDArray[np.bool_], bound: StrangerBound, *,
                             weights: sp.csr_array | None = None) -> NoiseRequirement:
    """:func:`required_noise` of a topology given as arrays (node order), unchecked.

    For searches: no Network or Topology is built, and the audit computes only
    each observer's stranger owners.  ``weights`` is W (default Lazy-Metropolis).
    """
    exposed, unit = stranger_mu_max(adjacency, dp_mask.astype(np.float64), social, bound.rounds,
                                    weights=weights, model=bound.model)
    unit = 0.0 if unit is None else float(unit)
    if exposed:
        return NoiseRequirement(float("inf"), int(exposed), unit)
    # A hair above unit / max_mu, so that the bound holds after rounding, not only up to it.
    return NoiseRequirement(max(bound.base_noise, unit / bound.max_mu * _MARGIN), 0, unit)


class NoiseAudit(NamedTuple):
    """What one audit at given per-device noise levels found over the stranger pairs."""

    exposed_stranger_pairs: int
    stranger_mu_max: float  # the worst finite stranger mu (0.0 if none)

    def within(self, bound: StrangerBound) -> bool:
        """No stranger exposed, and the worst mu within the bound by the margin 5e-10."""
        return self.exposed_stranger_pairs == 0 and self.stranger_mu_max * _WITHIN <= bound.max_mu


@dataclass
class DeviceNoise:
    """Stranger audits of one topology (arrays, node order) at per-device noise levels.

    ``weights`` is W (default Lazy-Metropolis); ``audits`` counts the audits run.
    """

    adjacency: NDArray[np.float64]
    social: NDArray[np.bool_]
    bound: StrangerBound
    weights: sp.csr_array | None = None
    audits: int = 0

    def audit(self, noise: NDArray[np.float64]) -> NoiseAudit:
        """The stranger pairs' exposure and worst mu when device j adds z_j = ``noise[j]``."""
        self.audits += 1
        exposed, worst = stranger_mu_max(self.adjacency, noise, self.social, self.bound.rounds,
                                         weights=self.weights, model=self.bound.model)
        return NoiseAudit(int(exposed), 0.0 if worst is None else float(worst))

    def least_noise(self, noise: NDArray[np.float64], device: int,
                    rtol: float = NOISE_RTOL) -> float:
        """The least z of ``device`` in [z_0, noise[device]] found to keep the bound.

        The other devices keep their levels, and ``noise`` must meet the bound
        (the upper end of the bracket is trusted, not audited).  A level
        ``rtol`` below the current one is tried first (a device the worst
        pairs need costs one audit), then z_0, then bisection until the
        bracket is narrower than ``rtol`` times its upper end.  Returns
        ``noise[device]`` when nothing lower was found to keep the bound.
        """
        trial = np.array(noise, dtype=np.float64)
        low, high = self.bound.base_noise, float(noise[device])
        if low >= high:
            return high
        step = max(low, high * (1.0 - rtol))
        if not self._meets(trial, device, step):
            return high  # the worst pairs need all of this device's noise
        if step == low or self._meets(trial, device, low):
            return low
        high = step
        while high - low > rtol * high:
            middle = 0.5 * (low + high)
            if self._meets(trial, device, middle):
                high = middle
            else:
                low = middle
        return high

    def _meets(self, trial: NDArray[np.float64], device: int, level: float) -> bool:
        trial[device] = level
        return self.audit(trial).within(self.bound)
