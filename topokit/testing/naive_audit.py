"""The direct dense computation of the network-privacy audit, the twin of
:func:`topokit.design.audit.privacy_audit`.

For every observer k it writes the view down as it is defined: the rows
(t, j), j a neighbour of k and t < T, of

    y = A s + B eta,  A[(t, j), :] = (W^t)_{j, :},
    B[(t, j), (r, l)] = (W^{t-r})_{j l} z_l  for r <= t (0 for r > t),

with the powers W^t multiplied out and eta the (T n) standard normal draws
(observer k's own draws left out when it knows them).  Then, for every
owner i, a = A e_i and the least-squares solution x of B x = a
(as ``numpy.linalg.lstsq`` computes it: singular values below ``RCOND``
times the largest taken as zero): mu_ik = ||x|| = sqrt(a^T (B B^T)^+ a) when the residual
||B x - a|| is at most ``RTOL`` ||a||, inf otherwise (a leaves range(B):
k cancels the noise).  No structure is used beyond one SVD of B per observer, shared by its owners.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np

from topokit.design.features import _adjacency
from topokit.design.network import Network, Topology
from topokit.kernels import lazy_metropolis

#: Singular values of B below RCOND times the largest are zero (lstsq's rcond).
RCOND = 1e-12
#: a is outside range(B) (exposed) when the least-squares residual exceeds RTOL ||a||.
#: On the tests' random topologies the residuals are either <= 3e-15 or >= 1e-3.
RTOL = 1e-8


def _noise(net: Network, topology: Topology,
           noise_multiplier: float | Mapping[Hashable, float]) -> np.ndarray:
    if isinstance(noise_multiplier, Mapping):
        return np.array([float(noise_multiplier.get(node, 0.0)) for node in net.nodes])
    return np.array([float(noise_multiplier) if node in topology.dp_devices else 0.0
                     for node in net.nodes])


def _least_squares_mu(mixing: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """||x_i|| for the least-squares solutions of mixing x_i = shifts[:, i]; inf off the range.

    One SVD of ``mixing`` serves every column (what ``lstsq`` computes column by column).
    """
    if mixing.size == 0:  # k hears nobody: its view is empty
        return np.zeros(shifts.shape[1])
    left, values, right = np.linalg.svd(mixing, full_matrices=False)
    rank = int((values > RCOND * values.max(initial=0.0)).sum())
    coefficients = left[:, :rank].T @ shifts
    solutions = right[:rank].T @ (coefficients / values[:rank, None])
    residuals = np.linalg.norm(shifts - left[:, :rank] @ coefficients, axis=0)
    mu = np.linalg.norm(solutions, axis=0)
    mu[residuals > RTOL * np.linalg.norm(shifts, axis=0)] = np.inf
    return mu


def naive_privacy_audit(
    net: Network,
    topology: Topology,
    rounds: int,
    noise_multiplier: float | Mapping[Hashable, float] = 1.0,
    *,
    observer_knows_own_noise: bool = False,
) -> np.ndarray:
    """mu of every (owner, observer) pair: (n, n), NaN on the diagonal, inf where exposed."""
    n = net.n_devices
    adjacency = _adjacency(net, topology)
    weights = lazy_metropolis(adjacency)
    powers = [np.eye(n)]
    for _ in range(rounds - 1):
        powers.append(weights @ powers[-1])
    noise = _noise(net, topology, noise_multiplier)
    mu = np.full((n, n), np.nan)
    for k in range(n):
        heard = [j for j in range(n) if adjacency[k, j] and j != k]
        z = noise.copy()
        if observer_knows_own_noise:
            z[k] = 0.0
        shifts = np.vstack([powers[t][heard] for t in range(rounds)])
        mixing = np.zeros((rounds * len(heard), rounds * n))
        for t in range(rounds):
            for r in range(t + 1):
                block = powers[t - r][heard] * z[None, :]
                mixing[t * len(heard):(t + 1) * len(heard), r * n:(r + 1) * n] = block
        mu[:, k] = _least_squares_mu(mixing, shifts)
        mu[k, k] = np.nan
    return mu
