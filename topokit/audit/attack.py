"""The reconstruction attack that checks the audit: what an observer actually recovers.

:func:`reconstruction_attack` plays observer k of :func:`topokit.audit.privacy_audit`'s
gossip model on simulated private values.  It writes k's view down as the linear
map the audit assumes (the messages of k's topology neighbours over T rounds),
and computes from it the best linear unbiased estimate (BLUE) of every other
device's value: the knowledge-matrix attack of El Mrini, Cyffers and Bellet
[1]_.  The owners the audit marks exposed (mu = inf) come back exactly, to
rounding; the others with a Gaussian error whose standard deviation is the
audit's 1 / mu.  The attack is thus an independent check of the audit: the
exposure is not a loose bound, a real adversary reads those values.

References
----------
.. [1] M. El Mrini, E. Cyffers and A. Bellet, "Privacy attacks in decentralized
   learning", ICML 2024.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._blas import one_blas_thread
from .._checks import brief, check_fits_in_memory, check_int
from ..errors import InvalidInputError, NodeNotFoundError
from ..network.core import Network, Topology
from .core import _check_network, check_audit_rounds, device_noise

__all__ = ["ReconstructionAttack", "reconstruction_attack"]

#: Singular values of the view's noise map B below this fraction of the largest are zero
#: (the relative cut-off of the pseudo-inverse; the audit's dense twin uses the same).
RCOND = 1e-12
#: An owner is exposed when the part of a_i = A e_i outside range(B) exceeds this
#: fraction of ||a_i||: k then cancels every noise term and reads s_i.
EXPOSED_RTOL = 1e-8


@dataclass(frozen=True, eq=False)
class ReconstructionAttack:
    """What observer k reconstructs of every owner's private value.

    Attributes
    ----------
    estimate : ndarray of shape (n,) or (n, d)
        The BLUE of every owner's value (d independent coordinates when the
        values have them), in node order; NaN for the observer itself and for
        owners whose value never reaches k's view (not identifiable).
    error : ndarray, the shape of ``estimate``
        ``estimate - values``.
    predicted_std : ndarray of shape (n,)
        The BLUE's standard deviation from the noise covariance: 0 where
        exposed, inf where not identifiable, NaN for the observer.  With unit
        sensitivity (the audit's default) it is ``1 / mu[:, k]``.
    exposed : ndarray of shape (n,), bool
        Owners k reads exactly (the audit's mu = inf).
    values : ndarray, the shape of ``estimate``
        The true (simulated) private values.
    observer : hashable
        k.
    nodes : tuple
        The device ids, in the order of the arrays.
    rounds : int
        T, the rounds k watched.
    """

    estimate: NDArray[np.float64]
    error: NDArray[np.float64]
    predicted_std: NDArray[np.float64]
    exposed: NDArray[np.bool_]
    values: NDArray[np.float64]
    observer: Hashable
    nodes: tuple[Hashable, ...]
    rounds: int


def _view_maps(weights: NDArray, heard: NDArray, noise: NDArray, rounds: int
               ) -> tuple[NDArray, NDArray]:
    """A (T d, n) and B (T d, T n) with view = A s + B eta, by running the gossip.

    The state x^t is kept as its coefficients on (s, eta): x^0 = s; device j
    sends m_j^t = x_j^t + z_j eta_j^t (eta's column n + t n + j); then
    x^{t+1} = W m^t.  The view's rows are m_j^t for the heard devices j, round-major.
    """
    n = noise.size
    state = np.zeros((n, n + rounds * n))
    state[:, :n] = np.eye(n)
    rows = []
    for t in range(rounds):
        state[np.arange(n), n + t * n + np.arange(n)] = noise  # m^t = x^t + Z eta^t
        rows.append(state[heard].copy())
        if t + 1 < rounds:
            state = weights @ state
    view = np.vstack(rows) if rows else np.zeros((0, n + rounds * n))
    return view[:, :n], view[:, n:]


def _check_values(net: Network, values: Any, rng: np.random.Generator) -> NDArray:
    """The private values as an (n,) or (n, d) float array in node order."""
    n = net.n_devices
    if values is None:
        return rng.standard_normal(n)
    if isinstance(values, Mapping):
        for node in values:
            if node not in net.index:
                raise NodeNotFoundError(
                    f"values names device {brief(node)}, which is not in the network")
        missing = [node for node in net.nodes if node not in values]
        if missing:
            raise InvalidInputError(
                f"values has no entry for device {missing[0]!r}; give every device its value")
        try:
            array = np.array([np.asarray(values[node], dtype=float) for node in net.nodes])
        except (TypeError, ValueError):
            raise InvalidInputError(
                "values must map every device to a number or to 1-D arrays of one length"
            ) from None
    else:
        try:
            array = np.array(values, dtype=float)
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"values must be a mapping device -> number or an array in node order; "
                f"got {brief(values)}") from None
    if array.ndim not in (1, 2) or array.shape[0] != n:
        raise InvalidInputError(
            f"values must hold one number (or one 1-D array) per device, {n} in all; "
            f"got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InvalidInputError("values must be finite")
    return array


def reconstruction_attack(
    net: Network,
    topology: Topology | None = None,
    observer: Hashable = None,
    *,
    rounds: int = 50,
    noise_multiplier: float | Mapping[Hashable, float] | None = None,
    values: Mapping[Hashable, Any] | Any = None,
    seed: int | None = None,
    observer_knows_own_noise: bool = True,
    model: str = "gossip",
) -> ReconstructionAttack:
    """Reconstruct every owner's private value from observer k's view of the gossip.

    The knowledge-matrix attack of El Mrini, Cyffers and Bellet (ICML 2024),
    on the view :func:`topokit.audit.privacy_audit` assumes (gossip model):
    x^0 = s, device j sends m_j^t = x_j^t + z_j eta_j^t in round t < T
    (eta fresh each round), x^{t+1} = W m^t with W =
    ``topology.mixing_matrix(net.nodes)``, and k sees m_j^t of every topology
    neighbour j != k.  Simulating the gossip gives the view as the linear map
    view = A s + B eta.  As in the audit's threat model, k knows every value
    but the owner's s_i (and its own noise draws when
    ``observer_knows_own_noise``), so it subtracts their part, leaving
    a_i s_i + B eta over the unknown draws; the BLUE is the generalised
    least squares estimate with covariance C = B B^T, from one SVD of B with
    the relative cut-off :data:`RCOND`.  If a_i has a part outside range(B)
    (beyond :data:`EXPOSED_RTOL` of ||a_i||), the combinations of the view that
    noise does not touch read s_i exactly: the owner is exposed.  Otherwise the
    estimate's variance is 1 / (a_i^T C^+ a_i) = 1 / mu_ik^2.

    Parameters
    ----------
    net : Network
    topology : Topology, optional
        As in :func:`~topokit.audit.privacy_audit` (default: the stored one, else NDLF).
    observer : device id
        k, the device whose view is attacked.
    rounds : int >= 1, default 50
        T, the rounds k watches.
    noise_multiplier : float >= 0 or mapping device -> float, optional
        z of the DP devices, read as :func:`~topokit.audit.privacy_audit` reads
        it; default 1.0 (the audit's default).
    values : mapping device -> float or 1-D array, or array of shape (n,) or (n, d)
        The private values s, in node order for an array (d independent
        coordinates, each with its own noise, as in the audit's model);
        default: n standard normal values drawn from ``seed``.
    seed : int, optional
        Seed of ``numpy.random.default_rng``, which draws the values (when not
        given) and then the noise.
    observer_knows_own_noise : bool, default True
        As in the audit: k uses its own noise draws.
    model : {"gossip"}
        Only the gossip model (one private value at round 0).

    Returns
    -------
    ReconstructionAttack

    Raises
    ------
    InvalidInputError
        ``model="dsgd"``, ``rounds`` < 1, bad values or noise multipliers, or a
        view too large for this machine's memory.
    NodeNotFoundError
        An observer (or a device of ``values`` or ``noise_multiplier``) not in
        the network.

    Notes
    -----
    **Units.**  The noise of device j has std z_j (z in units of the
    sensitivity, which is 1: the audit's default, unclipped convention), and
    ``predicted_std`` is in the units of the values: the audit's mu with
    sensitivity Delta is Delta / ``predicted_std``; with the default
    Delta = 1, ``predicted_std = 1 / mu[:, k]``.  The view is dense, (T d) x
    (T n) for an observer hearing d devices: meant for checking the audit on
    small and medium networks.

    Examples
    --------
    DeepPrivacy's Fig. 2(b) (z = 1, 30 rounds).  The audit says D reads B's
    value exactly (mu = inf), and that B learns F's with mu = 1.37:

    >>> import numpy as np
    >>> from topokit import load_example
    >>> from topokit.audit import privacy_audit, reconstruction_attack
    >>> toy = load_example("toy")
    >>> b, f = toy.nodes.index("B"), toy.nodes.index("F")
    >>> audit = privacy_audit(toy, rounds=30)
    >>> float(audit.mu[b, toy.nodes.index("D")]), round(float(audit.mu[f, b]), 2)
    (inf, 1.37)

    The attack agrees: D recovers B's value to rounding, and B's estimate of
    F's value has the standard deviation 1 / mu (unit sensitivity):

    >>> by_d = reconstruction_attack(toy, observer="D", rounds=30, seed=0)
    >>> bool(by_d.exposed[b]), bool(abs(by_d.error[b]) < 1e-10)
    (True, True)
    >>> by_b = reconstruction_attack(toy, observer="B", rounds=30, seed=0)
    >>> bool(by_b.exposed[f]), round(float(by_b.predicted_std[f]), 3)
    (False, 0.731)
    >>> bool(np.isclose(by_b.predicted_std[f], 1 / audit.mu[f, b], rtol=1e-8))
    True

    Over many noise draws (coordinates of one run: fixed values, fresh noise
    in each), F's error has that standard deviation:

    >>> many = reconstruction_attack(toy, observer="B", rounds=30, seed=1,
    ...                              values=np.ones((toy.n_devices, 20_000)))
    >>> round(float(many.error[f].std() / many.predicted_std[f]), 1)
    1.0
    """
    if model != "gossip":
        raise InvalidInputError(
            f"reconstruction_attack supports only model='gossip' (one private value at "
            f"round 0); got model={brief(model)}")
    topology = _check_network(net, topology)
    rounds = check_audit_rounds(rounds, "gossip")
    if observer not in net.index:
        raise NodeNotFoundError(
            f"observer {brief(observer)} is not a device of the network")
    if not isinstance(observer_knows_own_noise, (bool, np.bool_)):
        raise InvalidInputError(
            f"observer_knows_own_noise must be True or False; got {observer_knows_own_noise!r}")
    noise = device_noise(net, topology, 1.0 if noise_multiplier is None else noise_multiplier)
    if seed is not None:
        seed = check_int(seed, "seed", low=0)
    rng = np.random.default_rng(seed)
    s = _check_values(net, values, rng)

    from ..network.quantities import adjacency_matrix

    n, k = net.n_devices, net.index[observer]
    heard = np.flatnonzero(adjacency_matrix(net, topology)[k])
    heard = heard[heard != k]
    check_fits_in_memory(
        8.0 * (3 * rounds * max(heard.size, 1) + n) * (n + rounds * n),
        f"a reconstruction attack on {n} devices over {rounds} rounds",
        "use fewer rounds or a smaller network")
    weights = np.asarray(topology.mixing_matrix(net.nodes), dtype=float)
    # BLAS on one thread, as in the audit: the matrices are small, a thread pool only
    # slows them down on a busy machine.
    with one_blas_thread():
        return _attack(net, k, observer, weights, heard, noise, s, rng, rounds,
                       bool(observer_knows_own_noise))


def _attack(net: Network, k: int, observer: Hashable, weights: NDArray, heard: NDArray,
            noise: NDArray, s: NDArray, rng: np.random.Generator, rounds: int,
            observer_knows_own_noise: bool) -> ReconstructionAttack:
    """The view, simulated, and the BLUE of every owner from it (inputs validated)."""
    n = net.n_devices
    a_map, b_full = _view_maps(weights, heard, noise, rounds)

    # Simulate: the view k receives, from the values and fresh unit draws.
    coords = s.reshape(n, -1)
    eta = rng.standard_normal((rounds * n, coords.shape[1]))
    view = a_map @ coords + b_full @ eta

    # What k knows of the noise: its own draws (columns of device k), when it uses them.
    unknown = np.ones(rounds * n, dtype=bool)
    if observer_knows_own_noise:
        unknown[k::n] = False
    b_unknown = b_full * unknown
    # Everything k knows subtracted: the others' values are added back per owner.
    known_removed = view - a_map @ coords - (b_full - b_unknown) @ eta

    estimate = np.full(coords.shape, np.nan)
    std = np.full(n, np.inf)
    exposed = np.zeros(n, dtype=bool)
    if view.shape[0]:
        left, singular, _ = np.linalg.svd(b_unknown, full_matrices=True)
        rank = int((singular > RCOND * singular.max(initial=0.0)).sum())
        noisy, clean = left[:, :rank], left[:, rank:]
        for i in range(n):
            a = a_map[:, i]
            size = np.linalg.norm(a)
            if i == k or size == 0.0:
                continue
            residual = known_removed + np.outer(a, coords[i])  # a_i s_i + B eta (unknown)
            off = clean.T @ a  # the part of a_i that noise does not touch
            if np.linalg.norm(off) > EXPOSED_RTOL * size:
                exposed[i] = True
                estimate[i] = off @ (clean.T @ residual) / (off @ off)
                std[i] = 0.0
            else:
                whitened = (noisy.T @ a) / singular[:rank]  # S^-1 U^T a: ||.|| = mu
                information = whitened @ whitened
                weights_i = noisy @ (whitened / singular[:rank]) / information
                estimate[i] = weights_i @ residual
                std[i] = 1.0 / np.sqrt(information)
    std[k] = np.nan
    estimate[k] = np.nan
    shape = s.shape
    estimate = estimate.reshape(shape)
    error = estimate - s
    for array in (estimate, error, std, exposed, s):
        array.flags.writeable = False
    return ReconstructionAttack(
        estimate=estimate, error=error, predicted_std=std, exposed=exposed, values=s,
        observer=observer, nodes=tuple(net.nodes), rounds=rounds)
