"""The direct dense computation of the network-privacy audit, the twin of
:func:`topokit.audit.privacy_audit`.

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

D-SGD (``model="dsgd"``): owner i's contribution changes by delta_s in every
round s, which moves the view by A_i delta with A_i[(t, j), s] = (W^{t-s})_{j i}
for s <= t (0 for s > t), written out column by column.  With x_s the
least-squares solution of B x_s = A_i[:, s], G_i = X^T X = A_i^T (B B^T)^+ A_i
(:func:`naive_dsgd_gram`), mu_ik = sqrt(min(sum_{s,t} |G_i[s, t]|, T / z_i^2)), inf
when any column leaves range(B); ``lower=True`` gives sqrt(sum_{s,t} G_i[s, t]) instead.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np

from topokit.network.core import Network, Topology
from topokit.network.quantities import adjacency_matrix

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


def _view_matrices(powers: list[np.ndarray], heard: list[int], z: np.ndarray, rounds: int,
                   model: str) -> tuple[np.ndarray, np.ndarray]:
    """B (noise) and the shift columns of the view of the devices ``heard``.

    Gossip: one column per owner, A e_i.  D-SGD: T columns per owner, owner-major
    (column i T + s is A_i[:, s]).
    """
    n = z.size
    mixing = np.zeros((rounds * len(heard), rounds * n))
    for t in range(rounds):
        for r in range(t + 1):
            block = powers[t - r][heard] * z[None, :]
            mixing[t * len(heard):(t + 1) * len(heard), r * n:(r + 1) * n] = block
    if model == "gossip":
        return mixing, np.vstack([powers[t][heard] for t in range(rounds)])
    shifts = np.zeros((rounds * len(heard), n * rounds))
    for t in range(rounds):
        for s in range(t + 1):
            shifts[t * len(heard):(t + 1) * len(heard), s::rounds] = powers[t - s][heard]
    return mixing, shifts


def _least_squares(mixing: np.ndarray, shifts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares solutions of mixing x = shifts[:, c] and whether each column is off range."""
    if mixing.size == 0:  # k hears nobody: its view is empty
        return np.zeros((0, shifts.shape[1])), np.zeros(shifts.shape[1], dtype=bool)
    left, values, right = np.linalg.svd(mixing, full_matrices=False)
    rank = int((values > RCOND * values.max(initial=0.0)).sum())
    coefficients = left[:, :rank].T @ shifts
    solutions = right[:rank].T @ (coefficients / values[:rank, None])
    residuals = np.linalg.norm(shifts - left[:, :rank] @ coefficients, axis=0)
    return solutions, residuals > RTOL * np.linalg.norm(shifts, axis=0)


def _setup(net: Network, topology: Topology, rounds: int,
           noise_multiplier: float | Mapping[Hashable, float]):
    adjacency = adjacency_matrix(net, topology)
    weights = topology.mixing_matrix(net.nodes)
    powers = [np.eye(net.n_devices)]
    for _ in range(rounds - 1):
        powers.append(weights @ powers[-1])
    return adjacency, powers, _noise(net, topology, noise_multiplier)


def _observer_solutions(adjacency: np.ndarray, powers: list, noise: np.ndarray, k: int,
                        rounds: int, model: str, knows_own_noise: bool):
    """Observer k's least-squares solutions of its view and which shifts leave range(C)."""
    heard = [j for j in range(len(noise)) if adjacency[k, j] and j != k]
    z = noise.copy()
    if knows_own_noise:
        z[k] = 0.0
    mixing, shifts = _view_matrices(powers, heard, z, rounds, model)
    return _least_squares(mixing, shifts)


def naive_dsgd_gram(
    net: Network,
    topology: Topology,
    rounds: int,
    noise_multiplier: float | Mapping[Hashable, float] = 1.0,
    *,
    observer_knows_own_noise: bool = True,
) -> np.ndarray:
    """G_i = A_i^T C^+ A_i of every (owner i, observer k) pair in the D-SGD model.

    Returns
    -------
    ndarray of shape (n, n, T, T)
        NaN at i = k, inf where any column of A_i leaves range(C).
    """
    n = net.n_devices
    adjacency, powers, noise = _setup(net, topology, rounds, noise_multiplier)
    gram = np.full((n, n, rounds, rounds), np.nan)
    for k in range(n):
        solutions, off_range = _observer_solutions(adjacency, powers, noise, k, rounds, "dsgd",
                                                   observer_knows_own_noise)
        for i in range(n):
            if i == k:
                continue
            columns = slice(i * rounds, (i + 1) * rounds)
            x = solutions[:, columns]
            gram[i, k] = np.inf if off_range[columns].any() else x.T @ x
    return gram


def naive_privacy_audit(
    net: Network,
    topology: Topology,
    rounds: int,
    noise_multiplier: float | Mapping[Hashable, float] = 1.0,
    *,
    observer_knows_own_noise: bool = True,
    model: str = "gossip",
    lower: bool = False,
) -> np.ndarray:
    """mu of every (owner, observer) pair: (n, n), NaN on the diagonal, inf where exposed.

    ``model="dsgd"``: sqrt(sum |G_i|), or with ``lower=True`` sqrt(sum G_i) (module docstring).
    """
    if model == "dsgd":
        gram = naive_dsgd_gram(net, topology, rounds, noise_multiplier,
                               observer_knows_own_noise=observer_knows_own_noise)
        with np.errstate(invalid="ignore", divide="ignore"):
            if lower:
                total = gram.sum(axis=(2, 3))
            else:  # capped by the composition of the owner's T messages
                cap = rounds / _noise(net, topology, noise_multiplier) ** 2
                total = np.minimum(np.abs(gram).sum(axis=(2, 3)), cap[:, None])
            return np.sqrt(np.where(np.isnan(total), np.nan, np.maximum(total, 0.0)))
    n = net.n_devices
    adjacency, powers, noise = _setup(net, topology, rounds, noise_multiplier)
    mu = np.full((n, n), np.nan)
    for k in range(n):
        solutions, off_range = _observer_solutions(adjacency, powers, noise, k, rounds, "gossip",
                                                   observer_knows_own_noise)
        mu[:, k] = np.linalg.norm(solutions, axis=0)
        mu[off_range, k] = np.inf
        mu[k, k] = np.nan
    return mu
