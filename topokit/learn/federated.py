"""Federated multi-graph learning with optional differential privacy (PPGL).

Zhang et al.'s Algorithm 1 [1]_ for the problem (eq. 8, read with its
adaptive weights as in :mod:`topokit.learn.problems`)

.. math::

    \\min_{w_i \\ge 0,\\, w_{con}} \\sum_i g_i(w_i)
    + \\frac{\\rho}{2}\\sum_i \\|w_i - w_{con}\\|_2 + \\lambda\\|w_{con}\\|_1,
    \\qquad g_i(w) = z_i^\\top w - \\alpha \\mathbf 1^\\top\\log(Sw + \\zeta) + 2\\beta\\|w\\|^2 .

One round t:

1. every client i (eqs. 10-12, 22), with momentum carried across rounds,
   ``w_ex = w^t + xi (w^t - w^{t-1})`` and
   ``w^{t+1} = Proj_{>=0}(w_ex - eta (grad g_i(w_ex) + s_i + rho gamma_i (w_ex - w_con)))``,
   ``s_i ~ N(0, sigma_i^2 I)`` when DP is on, and sends only ``w_i``;
2. the server sets ``w_con = soft(sum gamma_i w_i / sum gamma_i, lambda / (rho sum gamma_i))``
   with the old gamma (eq. 15), then ``gamma_i = 1 / (2 ||w_i - w_con|| + eps_gamma)`` (eq. 16).

Constants (the paper gives xi, eta, K; we state the rest): xi = 0.1, eta = 0.01,
K = 1, zeta = 1e-3, eps_gamma = 1e-6, w_0 = 0.01 (every edge, every graph),
gamma^0 = 1 / I.

DP (Corollary 1): every signal-difference vector z_n is clipped to norm C, so
one replaced signal moves the client's mean z, hence its gradient, by at most
2 C / N_i, and its released update by 2 eta C / N_i; the noise is
``sigma_i = gaussian_sigma(epsilon, delta, 2 C / N_i)``, the analytic Gaussian
mechanism at every epsilon (up to 1.4x less noise than the classic
2 sqrt(2 ln(1.25/delta)) C / (epsilon N_i) below epsilon = 1).  epsilon is per
round and per client (Table IV); the total over T rounds is accounted with
dp-accounting (RDP and PLD) and shown beside basic composition (T epsilon, T delta).

The round itself (client step, server step, stopping rule) is in
:mod:`topokit.learn._federated_steps`; this module checks the input, calibrates
and releases the DP noise and assembles :class:`FederatedGraphs`.

References
----------
.. [1] X. Zhang et al., "Graph Topology Learning Under Privacy Constraints",
   Algorithm 1, eqs. (8)-(16), (22), Corollary 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import (
    check_choice,
    check_in_open_unit_interval,
    check_int_at_least,
    check_nonnegative,
    check_positive,
    check_real,
)
from .._random import SeedLike, spawn_generators
from ..dp import account_epsilon, basic_composition, calibrate_noise
from ..errors import InvalidInputError
from ._federated_steps import (
    ClientData,
    GradientNoise,
    RoundParameters,
    RoundsOutcome,
    initial_iterates,
    run_rounds,
)
from ._federated_steps import gradients as _gradients  # noqa: F401  (baselines.fedavg's step)
from .solvers import (
    DEFAULT_THRESHOLD,
    ConvergenceWarning,
    LearnedGraph,
    check_signals,
    edge_index,
    log_degree_objective,
    pairwise_sq_distances,
    signal_difference_norms,
    weights_to_graph,
)

__all__ = [
    "PrivacySpent",
    "FederatedGraphs",
    "learn_federated",
    "federated_objective",
    "client_means",
    "XI",
    "ETA",
    "ZETA",
    "EPS_GAMMA",
    "W0",
]

XI = 0.1
ETA = 0.01
ZETA = 1e-3
EPS_GAMMA = 1e-6
W0 = 0.01


@dataclass(frozen=True)
class PrivacySpent:
    """Privacy of a DP run of :func:`learn_federated`, per client.

    ``release="gradients"`` (the paper's): ``epsilon``/``delta`` are per round;
    ``sigma`` the gradient-noise std of each client; ``noise_multiplier`` =
    sigma_i / (2 C / N_i) (the same for all clients); ``epsilon_rdp``/``epsilon_pld``
    the total over ``rounds`` releases from dp-accounting at ``total_delta`` =
    min(rounds * delta, 0.5); ``basic`` is (rounds * epsilon, rounds * delta).
    ``release="distances"``: one release of the mean distances, so ``rounds`` is
    1 and the totals are that release's (epsilon, delta).
    """

    epsilon: float
    delta: float
    clip: float
    rounds: int
    sigma: tuple[float, ...]
    noise_multiplier: float
    total_delta: float
    epsilon_rdp: float
    epsilon_pld: float
    basic_epsilon: float
    basic_delta: float
    release: str = "gradients"

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class FederatedGraphs:
    """Result of :func:`learn_federated`.

    Attributes
    ----------
    local : tuple of LearnedGraph
        One graph per client (objective = g_i(w_i)).
    consensus : LearnedGraph
        The consensus graph w_con (objective = the whole federated objective).
    gamma : ndarray of shape (n_clients,)
        Final adaptive weights (eq. 16).
    objective : float
        sum_i g_i(w_i) + (rho/2) sum_i ||w_i - w_con|| + lambda ||w_con||_1.
    residual : float
        Final fixed-point residual (see :func:`learn_federated`).
    converged : bool
    n_rounds : int
    privacy : PrivacySpent or None
    """

    local: tuple[LearnedGraph, ...]
    consensus: LearnedGraph
    gamma: NDArray[np.float64]
    objective: float
    residual: float
    converged: bool
    n_rounds: int
    privacy: PrivacySpent | None = None
    params: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "local": [g.to_dict() for g in self.local],
            "consensus": self.consensus.to_dict(),
            "gamma": self.gamma.tolist(),
            "objective": self.objective,
            "residual": self.residual,
            "converged": self.converged,
            "n_rounds": self.n_rounds,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
            "params": dict(self.params),
        }


# --------------------------------------------------------------------------- helpers


def check_clients(client_signals: Sequence[ArrayLike]) -> list[NDArray[np.float64]]:
    """Validate a list of (N_i, d) signal arrays with the same d."""
    if isinstance(client_signals, np.ndarray) and client_signals.ndim == 2:
        raise InvalidInputError(
            "client_signals must be a list of arrays (one per client); got one 2-D array. "
            "Use learn_graph for a single data set or wrap it in a list."
        )
    signals = [check_signals(X, name=f"client_signals[{i}]") for i, X in enumerate(client_signals)]
    if not signals:
        raise InvalidInputError("client_signals must hold at least one client; got none")
    sizes = {X.shape[1] for X in signals}
    if len(sizes) > 1:
        counts = [X.shape[1] for X in signals]
        raise InvalidInputError(
            f"every client must observe the same nodes; got node counts {counts}"
        )
    return signals


def client_means(X: NDArray[np.float64], clip: float | None) -> NDArray[np.float64]:
    """Mean signal-difference vector of one client, each z_n clipped to norm ``clip``.

    z_n / max(1, ||z_n|| / C) (the paper's clipping below Corollary 1).
    """
    if clip is None:
        return pairwise_sq_distances(X)
    scale = 1.0 / np.maximum(1.0, signal_difference_norms(X) / clip)
    return pairwise_sq_distances(X, sample_weight=scale)


def federated_objective(W, w_con, Z, alpha, beta, rho, lam, zeta=ZETA) -> float:
    """sum_i g_i(w_i) + (rho/2) sum_i ||w_i - w_con||_2 + lambda ||w_con||_1."""
    total = sum(log_degree_objective(W[r], Z[r], alpha, beta, zeta) for r in range(len(W)))
    total += rho / 2 * sum(float(np.linalg.norm(W[r] - w_con)) for r in range(len(W)))
    return float(total + lam * np.abs(w_con).sum())


# --------------------------------------------------------------------------- input checks

_COUPLINGS = ("explicit", "implicit")
_DP_RELEASES = ("gradients", "distances")


@dataclass(frozen=True)
class _Settings:
    """The checked scalar arguments of :func:`learn_federated`."""

    alpha: float
    beta: float
    rho: float
    lam: float
    eta: float
    zeta: float
    eps_gamma: float
    w0: float
    xi: float
    coupling: str
    dp_release: str
    rounds: int
    tol: float | None
    clip: float | None
    epsilon: float | None
    delta: float
    threshold: float

    def round_parameters(self) -> RoundParameters:
        return RoundParameters(
            alpha=self.alpha, beta=self.beta, rho=self.rho, lam=self.lam, eta=self.eta,
            xi=self.xi, zeta=self.zeta, eps_gamma=self.eps_gamma, coupling=self.coupling,
        )


def _optional(check: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    return lambda value, name: None if value is None else check(value, name)


#: How :func:`learn_federated` checks each scalar option (scikit-learn's parameter
#: constraints, as a table): the first bad one in this order is the one reported.
_CONSTRAINTS: dict[str, Callable[[Any, str], Any]] = {
    "alpha": check_positive,
    "beta": check_nonnegative,
    "rho": check_nonnegative,
    "lam": check_nonnegative,
    "eta": check_positive,
    "zeta": check_positive,
    "eps_gamma": check_positive,
    "w0": check_positive,
    "xi": lambda value, name: check_real(value, name, low=0, high=1, closed="left"),
    "coupling": lambda value, name: check_choice(value, name, _COUPLINGS),
    "dp_release": lambda value, name: check_choice(value, name, _DP_RELEASES),
    "rounds": lambda value, name: check_int_at_least(value, name, 1),
    "tol": _optional(check_positive),
    "clip": _optional(check_positive),
    "epsilon": _optional(check_positive),
}


def _check_settings(options: dict[str, Any]) -> _Settings:
    """The scalar options of :func:`learn_federated` (its keyword -> value), checked by
    :data:`_CONSTRAINTS` in its order and typed; ``delta`` is checked only with DP on."""
    settings = _Settings(
        **{name: check(options[name], name) for name, check in _CONSTRAINTS.items()},
        delta=(options["delta"] if options["epsilon"] is None
               else check_in_open_unit_interval(options["delta"], "delta")),
        threshold=options["threshold"],
    )
    if settings.epsilon is not None and settings.clip is None:
        raise InvalidInputError(
            "DP needs a clipping norm: pass clip=C (e.g. clip=20.0, the paper's value) "
            "with epsilon"
        )
    return settings


# --------------------------------------------------------------------------- privacy


class _Calibration(NamedTuple):
    """The noise of a DP run and the privacy it buys."""

    spent: PrivacySpent
    sigmas: NDArray[np.float64]
    """Noise std of every client, shape (n_clients,)."""


class _Release(NamedTuple):
    """What leaves the clients' signals: the data the rounds see, and the per-round noise."""

    data: ClientData
    noise: GradientNoise | None
    """Gradient noise of every round; None when the rounds are noiseless."""


def _calibrate_privacy(settings: _Settings, sizes: Sequence[int]) -> _Calibration | None:
    """sigma_i of every client (Corollary 1) and its accounting; None without DP.

    One replaced signal moves client i's clipped mean distances by at most
    2 C / N_i.  ``"gradients"`` releases once per round, ``"distances"`` once.
    """
    if settings.epsilon is None:
        return None
    epsilon, delta, clip = settings.epsilon, settings.delta, settings.clip
    releases = settings.rounds if settings.dp_release == "gradients" else 1
    sensitivity = 2.0 * clip / np.asarray(sizes, dtype=np.float64)
    sigmas = calibrate_noise(epsilon, delta, sensitivity=sensitivity)
    multiplier = float(sigmas[0] / sensitivity[0])
    total_delta = min(releases * delta, 0.5)
    basic_eps, basic_delta = basic_composition(epsilon, delta, releases)
    spent = PrivacySpent(
        epsilon=epsilon,
        delta=delta,
        clip=clip,
        rounds=releases,
        sigma=tuple(float(s) for s in sigmas),
        noise_multiplier=multiplier,
        total_delta=total_delta,
        epsilon_rdp=float(account_epsilon(multiplier, releases, total_delta, accountant="rdp")),
        epsilon_pld=float(account_epsilon(multiplier, releases, total_delta, accountant="pld")),
        basic_epsilon=basic_eps,
        basic_delta=basic_delta,
        release=settings.dp_release,
    )
    return _Calibration(spent=spent, sigmas=sigmas)


def _release(signals: list[NDArray[np.float64]], settings: _Settings,
             calibration: _Calibration | None, rng: np.random.Generator) -> _Release:
    """The clients' (clipped) mean distances and, with DP, their privatization.

    ``"distances"`` adds the noise to the mean distances once, here; the
    rounds are then post-processing of that release and run noiseless.
    ``"gradients"`` hands the noise to every round instead.
    """
    d = signals[0].shape[1]
    i, j = edge_index(d)
    Z = np.stack([client_means(X, settings.clip) for X in signals])
    noise = None
    if calibration is not None and settings.dp_release == "distances":
        Z += calibration.sigmas[:, None] * rng.standard_normal(Z.shape)
    elif calibration is not None:
        noise = GradientNoise(sigmas=calibration.sigmas, rng=rng)
    return _Release(data=ClientData(Z=Z, i=i, j=j, d=d), noise=noise)


# --------------------------------------------------------------------------- algorithm


def learn_federated(
    client_signals: Sequence[ArrayLike],
    alpha: float,
    beta: float,
    rho: float,
    lam: float,
    *,
    rounds: int = 50,
    tol: float | None = None,
    epsilon: float | None = None,
    delta: float = 1e-5,
    clip: float | None = None,
    seed: SeedLike = None,
    eta: float = ETA,
    xi: float = XI,
    zeta: float = ZETA,
    eps_gamma: float = EPS_GAMMA,
    w0: float = W0,
    threshold: float = DEFAULT_THRESHOLD,
    coupling: str = "explicit",
    dp_release: str = "gradients",
) -> FederatedGraphs:
    """Learn one graph per client and a consensus graph without sharing signals (PPGL).

    Parameters
    ----------
    client_signals : list of array-like of shape (N_i, n_nodes)
        Each client's signals (same nodes, any N_i).
    alpha, beta : float
        Log-degree model of every client (alpha > 0, beta >= 0).
    rho : float
        Coupling of the local graphs to the consensus graph (>= 0).
    lam : float
        l1 weight of the consensus graph (>= 0).
    rounds : int
        Communication rounds T (the paper: 50, far from the fixed point).
    tol : float, optional
        Stop early when the fixed-point residual (the largest natural residual
        of the clients' round problems, eq. 9, and the change of w_con) falls
        below tol.  Ignored with ``dp_release="gradients"`` (the noise keeps the
        iterates moving).
        When given and not reached, warns with ConvergenceWarning.
    epsilon : float, optional
        Per-client privacy budget, of each round (``dp_release="gradients"``) or
        of the one release (``"distances"``); turns DP on (needs ``clip``).
    delta : float
        Delta of each release (default 1e-5).
    clip : float, optional
        Clipping norm C of each z_n (needed with epsilon; the paper uses 20).
    seed : int, Generator or None
        Seed of the DP noise.
    eta, xi, zeta, eps_gamma, w0 : float
        Step, momentum, degree offset, gamma offset, initial weights (see module doc).
    coupling : {"explicit", "implicit"}
        ``"explicit"``: the paper's client step (eq. 11), a gradient step on
        ``(rho gamma_i / 2)||w - w_con||^2`` too; unstable once
        eta rho gamma_i > 2 (1 - xi), i.e. when a local graph comes within
        about eta rho of the consensus graph.  ``"implicit"``: that quadratic
        is taken by its proximal step, ``w = Proj_{>=0}(v / (1 + eta rho gamma_i))``
        with ``v = w_ex - eta (grad g_i + s_i) + eta rho gamma_i w_con``,
        which agrees to first order in eta rho gamma_i, has the same fixed
        points and the same DP sensitivity (the data term is scaled by
        eta / (1 + eta rho gamma_i) <= eta), and is stable for every gamma.
    dp_release : {"gradients", "distances"}
        What DP protects.  ``"gradients"`` (the paper's, Corollary 1): Gaussian
        noise on every round's gradient, ``epsilon`` per round, spent ``rounds``
        times.  ``"distances"``: each client privatizes its clipped mean
        distances z_i once (sensitivity 2 C / N_i, the same Gaussian mechanism)
        and runs every round on them without further noise; every w_i it sends
        is post-processing of that one release, so ``epsilon`` is the budget of
        the whole run, and ``tol`` applies.  Since the mean distances are the
        only data-dependent part of the gradient, T gradient releases with noise
        sigma carry the same information and (Gaussian composition is exact)
        the same privacy as one release with noise sigma / sqrt(T); releasing
        once also spares the iterates the noise's random walk.  The reported
        objective is that of the privatized distances.

    Returns
    -------
    FederatedGraphs

    Raises
    ------
    InvalidInputError
        Clients with different node counts, NaN signals, d < 2, a negative
        parameter, epsilon without clip.
    """
    options = {name: value for name, value in locals().items()
               if name not in ("client_signals", "seed")}
    signals = check_clients(client_signals)
    settings = _check_settings(options)
    calibration = _calibrate_privacy(settings, [X.shape[0] for X in signals])
    noise_rng = spawn_generators(seed, ["dp_noise"])["dp_noise"]
    data, noise = _release(signals, settings, calibration, noise_rng)
    start = initial_iterates(len(signals), data.Z.shape[1], settings.w0)
    outcome = run_rounds(start, data, settings.round_parameters(), rounds=settings.rounds,
                         tol=settings.tol, noise=noise)
    if settings.tol is not None and noise is None and not outcome.converged:
        warnings.warn(
            f"PPGL stopped after {outcome.n_rounds} rounds with residual "
            f"{outcome.residual:.2e} > tol={settings.tol:g}; raise rounds",
            ConvergenceWarning,
            stacklevel=2,
        )
    privacy = None if calibration is None else calibration.spent
    return _assemble(outcome, data, settings, privacy)


# --------------------------------------------------------------------------- result


def _learned_graph(weights: NDArray, objective: float, outcome: RoundsOutcome, d: int,
                   settings: _Settings) -> LearnedGraph:
    return LearnedGraph(
        weights=weights.copy(),
        graph=weights_to_graph(weights, d, threshold=settings.threshold),
        objective=objective,
        converged=bool(outcome.converged),
        n_iter=outcome.n_rounds,
        solver="ppgl",
        residual=float(outcome.residual),
        alpha=settings.alpha,
        beta=settings.beta,
        zeta=settings.zeta,
    )


def _assemble(outcome: RoundsOutcome, data: ClientData, settings: _Settings,
              privacy: PrivacySpent | None) -> FederatedGraphs:
    """The local graphs (objective g_i(w_i)) and the consensus graph (the whole objective)."""
    W, w_con, Z = outcome.iterates.W, outcome.iterates.w_con, data.Z
    s = settings
    local = tuple(
        _learned_graph(W[r], log_degree_objective(W[r], Z[r], s.alpha, s.beta, s.zeta),
                       outcome, data.d, s)
        for r in range(W.shape[0])
    )
    objective = federated_objective(W, w_con, Z, s.alpha, s.beta, s.rho, s.lam, s.zeta)
    return FederatedGraphs(
        local=local,
        consensus=_learned_graph(w_con, objective, outcome, data.d, s),
        gamma=outcome.iterates.gamma.copy(),
        objective=objective,
        residual=float(outcome.residual),
        converged=bool(outcome.converged),
        n_rounds=outcome.n_rounds,
        privacy=privacy,
        params={"alpha": s.alpha, "beta": s.beta, "rho": s.rho, "lam": s.lam, "zeta": s.zeta},
    )
