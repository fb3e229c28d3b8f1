"""Vectorised simulation of privatized graph federated learning.

One iteration i of the algorithm (journal [1]_ eqs. 6-8; updates journal
[2]_ eqs. 51-55), for every server p at once:

1. Server p samples L of its K clients without replacement.
2. Each sampled client starts from :math:`w_{p,i-1}` and runs
   :math:`E_{p,k}` local SGD epochs (one minibatch step of :math:`B_{p,k}`
   samples each, drawn with replacement), with step :math:`\\mu / E_{p,k}`
   (journal eq. 3; ``local_step="mu"`` uses :math:`\\mu`).
3. ``share="models"``: client k sends :math:`w_{p,k,i} + g_{p,k,i}` and
   :math:`\\psi_p = \\frac1L\\sum_k (w_{p,k,i} + g_{p,k,i})` (eq. 7).
   ``share="updates"``: client k sends
   :math:`\\psi_k = \\frac1{E}\\sum_e \\nabla Q(w_{k,e-1}) + g_k` and
   :math:`\\psi_p = w_{p,i-1} - \\mu\\frac1L\\sum_k(\\psi_k + g_k)` (eqs. 54-55),
   so the client noise is scaled by :math:`\\mu`.
4. Combine with server noise: :math:`w_p = \\sum_m a_{pm}(\\psi_m + G[m,p])`
   (eq. 8), G from :mod:`topokit.gfl.perturbations`.

Everything runs on arrays of shape (rows, P, L, ...), where the rows are the
variants of :func:`run_many` (schemes, noise levels, step sizes, share modes)
times the repetitions.  The local SGD of all clients is one call of a Numba
kernel (:func:`_local_kernel`, flags ``topokit.kernels.NJIT_FLAGS``);
:func:`_local_updates_numpy` is its numpy-vectorised twin (a Python loop over
the at most ``epochs[1]`` epochs only).  Aggregation, server noise and the
combine step are array expressions.  Variants share their random draws
(common random numbers), repetitions do not.

:func:`_run_loop` is the plain per-client loop reference used by the tests and
the benchmark; it consumes the same draws and must give the same numbers.

References
----------
.. [1] Rizk, Vlaski, Sayed, "Privatized graph federated learning" (journal).
.. [2] Same authors, the journal version with sharing updates, Sec. 3.4, 5.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd
from numba import njit
from numpy.typing import NDArray

from .._checks import check_fits_in_memory
from .._io import jsonable
from .._random import spawn_generators
from ..dp import laplace_scale
from ..errors import EncodingOverflowError, InvalidInputError
from ..kernels import NJIT_FLAGS
from .config import GFLConfig
from .perturbations import _homomorphic_from_draws, _random_mask, combination_matrix
from .secagg import secure_aggregate

__all__ = ["GFLProblem", "GFLResult", "build_problem", "run", "run_many", "BATCHABLE"]

ProgressCallback = Callable[[int, int], None]
# Secure-aggregation keys and masks take no role: they come from the OS (see secagg).
ROLES = ("data", "graph", "sampling", "client_noise", "server_noise")
#: Settings of a :class:`~topokit.gfl.GFLConfig` that :func:`run_many` can vary within one
#: batched run (the data, graph and clients stay those of the first).
BATCHABLE = frozenset(
    {"scheme", "sigma_g2", "share", "client_noise", "client_sigma2", "mu",
     "include_self_noise", "name"}
)


# =========================================================================== problem
@dataclass(frozen=True)
class GFLProblem:
    """Data, client settings and server graph of one GFL run.

    Attributes
    ----------
    task : str
    U : ndarray of shape (P, K, N_max, M)
        Features, zero beyond each client's size.
    D : ndarray of shape (P, K, N_max)
        Targets (regression) or labels in {-1, +1} (classification).
    n, E, B : ndarray of int, shape (P, K)
        Data size, epochs and minibatch size of every client.
    A : ndarray of shape (P, P)
        Validated combination matrix.
    w_opt : ndarray of shape (M,)
        Minimiser :math:`w^o` of the average empirical risk (journal eq. 1).
    rho : float
    test_U, test_y : ndarray or None
        Clean held-out set (classification).
    """

    task: str
    U: NDArray[np.float64]
    D: NDArray[np.float64]
    n: NDArray[np.int64]
    E: NDArray[np.int64]
    B: NDArray[np.int64]
    A: NDArray[np.float64]
    w_opt: NDArray[np.float64]
    rho: float
    test_U: NDArray[np.float64] | None = None
    test_y: NDArray[np.float64] | None = None

    @property
    def dim(self) -> int:
        """Model dimension M."""
        return self.U.shape[-1]


def _server_graph(config: GFLConfig, rng: np.random.Generator) -> nx.Graph:
    P = config.n_servers
    builders = {
        "ring": lambda: nx.cycle_graph(P) if P > 2 else nx.path_graph(P),
        "complete": lambda: nx.complete_graph(P),
        "star": lambda: nx.star_graph(P - 1) if P > 1 else nx.empty_graph(1),
        "path": lambda: nx.path_graph(P),
    }
    if config.graph in builders:
        return builders[config.graph]()
    for _ in range(1000):
        graph = nx.gnp_random_graph(P, config.edge_probability, seed=int(rng.integers(2**31)))
        if nx.is_connected(graph):
            return graph
    raise InvalidInputError(
        f"no connected Erdos-Renyi graph with P={P}, p={config.edge_probability} in 1000 draws; "
        "raise edge_probability"
    )


def _client_settings(config: GFLConfig, rng: np.random.Generator, shape: tuple[int, int]):
    E = rng.integers(config.epochs[0], config.epochs[1] + 1, size=shape)
    B = rng.integers(config.batch_size[0], config.batch_size[1] + 1, size=shape)
    return E.astype(np.int64), B.astype(np.int64)


def _regression_data(config: GFLConfig, rng: np.random.Generator):
    """Non-IID Gaussian features and linear targets (updates journal eqs. 63-67)."""
    P, K, M = config.n_servers, config.clients_per_server, config.n_features
    lo, hi = config.samples_per_client
    n = rng.integers(lo, hi + 1, size=(P, K)).astype(np.int64)
    q, _ = np.linalg.qr(rng.standard_normal((P, K, M, M)))
    eigs = rng.uniform(*config.feature_eigs, size=(P, K, M))
    chol = q * np.sqrt(eigs)[..., None, :]  # R = chol chol^T = Q diag(eigs) Q^T
    z = rng.standard_normal((P, K, hi, M))
    U = np.einsum("pkij,pknj->pkni", chol, z)
    w_star = rng.standard_normal(M)
    sigma_v = np.sqrt(rng.uniform(*config.noise_var, size=(P, K)))
    D = U @ w_star + sigma_v[..., None] * rng.standard_normal((P, K, hi))
    valid = np.arange(hi) < n[..., None]
    U *= valid[..., None]
    D *= valid
    # w^o = (R_u + rho I)^{-1} (R_u w* + r_uv) = (R_u + rho I)^{-1} r_du, eq. (65)
    R_u = np.einsum("pkni,pknj->ij", U, U / n[..., None, None]) / (P * K)
    r_du = np.einsum("pkn,pkni->i", D / n[..., None], U) / (P * K)
    w_opt = np.linalg.solve(R_u + config.rho * np.eye(M), r_du)
    return U, D, n, w_opt


def _logistic_risk(w: NDArray, U: NDArray, D: NDArray, weights: NDArray, rho: float):
    margin = D * (U @ w)
    value = (weights * np.logaddexp(0.0, -margin)).sum() + rho * w @ w
    coef = -weights * D * _sigmoid(-margin)
    grad = np.einsum("pkn,pkni->i", coef, U) + 2.0 * rho * w
    return value, grad


def _sigmoid(x: NDArray) -> NDArray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _classification_data(config: GFLConfig, rng: np.random.Generator):
    """Breast-cancer data split unequally over P*K clients with per-client feature noise.

    The papers use Avazu (not reachable offline); scikit-learn's bundled
    Wisconsin breast-cancer set (569 samples, 30 features) stands in.  A clean
    30 % is held out; the rest is standardised, split with Dirichlet(2)
    proportions (at least 2 samples per client) and each client's features get
    Gaussian noise with its own mean shift and standard deviation in [0.1, 1].
    """
    from scipy.optimize import minimize
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    y = np.where(y == 1, 1.0, -1.0)
    order = rng.permutation(len(y))
    n_test = int(round(0.3 * len(y)))
    test, train = order[:n_test], order[n_test:]
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    X = np.hstack([(X - mean) / std, np.ones((len(y), 1))])
    P, K = config.n_servers, config.clients_per_server
    if len(train) < 2 * P * K:
        raise InvalidInputError(
            f"classification has {len(train)} training samples, too few for {P * K} clients "
            "with at least 2 each"
        )
    sizes = 2 + rng.multinomial(len(train) - 2 * P * K, rng.dirichlet(np.full(P * K, 2.0)))
    n = sizes.reshape(P, K).astype(np.int64)
    N_max, M = int(n.max()), X.shape[1]
    U = np.zeros((P, K, N_max, M))
    D = np.zeros((P, K, N_max))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    # Data set-up, not the hot path.
    for c, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        p, k = divmod(c, K)
        rows = train[start : start + size]
        shift = rng.normal(0.0, 0.3, size=M - 1)
        noise = rng.uniform(0.1, 1.0) * rng.standard_normal((size, M - 1))
        U[p, k, :size] = X[rows]
        U[p, k, :size, :-1] += shift + noise
        D[p, k, :size] = y[rows]
    weights = (np.arange(N_max) < n[..., None]) / n[..., None] / (P * K)
    result = minimize(_logistic_risk, np.zeros(M), args=(U, D, weights, config.rho),
                      jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "maxiter": 5000})
    return U, D, n, result.x, X[test], y[test]


def _check_data_size(config: GFLConfig) -> None:
    """Refuse regression data that cannot fit in memory, before drawing any of it.

    The data set-up holds the features U and their draws z (P x K x N x M
    each), the clients' rotations (P x K x M x M) and the targets.
    """
    if config.task != "regression":
        return  # the breast-cancer data caps the clients at a few hundred
    P, K, M = config.n_servers, config.clients_per_server, config.n_features
    hi = config.samples_per_client[1]
    check_fits_in_memory(
        8 * P * K * (3 * hi * M + 2 * M * M + 2 * hi),
        f"the data of n_servers x clients_per_server = {P} x {K} clients with up to "
        f"{hi} samples of n_features={M}",
        "use fewer clients, samples or features",
    )


def _check_run_size(config: GFLConfig, n_variants: int) -> None:
    """Refuse a run whose per-iteration draws or recorded curves cannot fit in memory."""
    P, K, M = config.n_servers, config.clients_per_server, config.n_features
    L, E, B = config.clients_per_round, config.epochs[1], config.batch_size[1]
    R = config.repetitions * n_variants
    check_fits_in_memory(
        3 * 8 * R * P * (K + L * E * B + L * M + P * M + M),
        f"one iteration of repetitions={config.repetitions} x {n_variants} variant(s) over "
        f"n_servers={P}, clients_per_server={K}, n_features={M}",
        "use fewer repetitions, clients or features",
    )
    check_fits_in_memory(
        3 * 8 * (config.iterations + 1) * R,
        f"the curves of iterations={config.iterations} x repetitions={config.repetitions} x "
        f"{n_variants} variant(s)",
        "use fewer iterations or repetitions",
    )


def build_problem(config: GFLConfig) -> GFLProblem:
    """Generate the data, client settings and combination matrix of ``config``.

    Uses the ``data`` and ``graph`` generators spawned from ``config.seed``, so
    runs that differ only in sampling or noise share their problem.

    Raises
    ------
    InvalidInputError
        Data too large for this machine's memory (checked before drawing).
    """
    _check_data_size(config)
    rngs = spawn_generators(config.seed, ROLES)
    A = combination_matrix(_server_graph(config, rngs["graph"]), config.weights)
    test_U = test_y = None
    if config.task == "regression":
        U, D, n, w_opt = _regression_data(config, rngs["data"])
    else:
        U, D, n, w_opt, test_U, test_y = _classification_data(config, rngs["data"])
    E, B = _client_settings(config, rngs["data"], n.shape)
    return GFLProblem(config.task, np.ascontiguousarray(U), np.ascontiguousarray(D), n, E, B,
                      A, w_opt, float(config.rho), test_U, test_y)


# =========================================================================== results
def _db(values: NDArray) -> NDArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return 10.0 * np.log10(values)


@dataclass(frozen=True)
class GFLResult:
    """Learning curves of one configuration (averaged over its repetitions).

    Attributes
    ----------
    config : GFLConfig
    label : str
    msd_centroid_db : ndarray of shape (iterations + 1,)
        :math:`10\\log_{10}` of the mean over repetitions of
        :math:`\\|w_{c,i} - w^o\\|^2` (updates journal eq. 68); NaN after a
        divergence.
    msd_individual_db : ndarray of shape (iterations + 1,)
        Same for :math:`\\frac1P\\sum_p\\|w_{p,i} - w^o\\|^2` (eq. 69).
    test_error : ndarray or None
        Classification: error rate of the centroid model on the clean test set.
    diverged_at : int or None
        First iteration at which a repetition diverged.
    n_diverged : int
        Number of repetitions that diverged.
    w_opt : ndarray of shape (M,)
    final_centroid : ndarray of shape (repetitions, M)
    runtime_s : float
        Wall time of the whole batched run that produced this result.
    """

    config: GFLConfig
    label: str
    msd_centroid_db: NDArray[np.float64]
    msd_individual_db: NDArray[np.float64]
    test_error: NDArray[np.float64] | None
    diverged_at: int | None
    n_diverged: int
    w_opt: NDArray[np.float64]
    final_centroid: NDArray[np.float64]
    runtime_s: float

    @property
    def iterations(self) -> NDArray[np.int64]:
        """0, 1, ..., iterations."""
        return np.arange(self.msd_centroid_db.size)

    @property
    def diverged(self) -> bool:
        """Whether any repetition diverged."""
        return self.n_diverged > 0

    def steady_state_db(self, which: str = "centroid", fraction: float = 0.25) -> float:
        """MSD in dB averaged (in linear scale) over the last ``fraction`` of the iterations."""
        curve = {"centroid": self.msd_centroid_db, "individual": self.msd_individual_db}[which]
        tail = curve[-max(1, int(round(fraction * curve.size))):]
        return float(_db(np.mean(10.0 ** (tail / 10.0))))

    def to_frame(self) -> pd.DataFrame:
        """One row per iteration with the MSDs (and test error) and the variant's settings."""
        frame = pd.DataFrame({
            "iteration": self.iterations,
            "msd_centroid_db": self.msd_centroid_db,
            "msd_individual_db": self.msd_individual_db,
        })
        if self.test_error is not None:
            frame["test_error"] = self.test_error
        for key in ("scheme", "share", "sigma_g2", "mu", "client_noise", "client_sigma2",
                    "weights"):
            frame[key] = getattr(self.config, key)
        frame.insert(0, "label", self.label)
        return frame

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary with the full curves."""
        return {
            "label": self.label,
            "config": self.config.to_dict(),
            "msd_centroid_db": jsonable(self.msd_centroid_db),
            "msd_individual_db": jsonable(self.msd_individual_db),
            "test_error": None if self.test_error is None else jsonable(self.test_error),
            "diverged_at": self.diverged_at,
            "n_diverged": self.n_diverged,
            "w_opt": self.w_opt.tolist(),
            "runtime_s": self.runtime_s,
        }


# =========================================================================== rows
@dataclass(frozen=True)
class _Rows:
    """Per-row parameters of a batched run: rows = variants x repetitions."""

    configs: tuple[GFLConfig, ...]
    labels: tuple[str, ...]
    reps: int
    mu: NDArray
    server_scale: NDArray
    client_scale: NDArray
    homomorphic: NDArray
    random: NDArray
    include_self: NDArray
    updates: NDArray
    secagg: NDArray

    @property
    def count(self) -> int:
        return self.mu.size

    @property
    def rep_index(self) -> NDArray:
        return np.tile(np.arange(self.reps), len(self.configs))


def _variant_label(base: GFLConfig, variant: Mapping[str, Any], config: GFLConfig) -> str:
    if "name" in variant:
        return str(variant["name"])
    parts = [f"{k}={v}" for k, v in variant.items()]
    return ", ".join(parts) if parts else config.scheme


def _make_rows(base: GFLConfig, variants: Sequence[Mapping[str, Any]]) -> _Rows:
    if not variants:
        raise InvalidInputError("run_many needs at least one variant (use [{}] for the base)")
    configs, labels = [], []
    for variant in variants:
        extra = sorted(set(variant) - BATCHABLE)
        if extra:
            raise InvalidInputError(
                f"variants may change only {sorted(BATCHABLE)}; got {extra} (they change the data "
                "or the array shapes: make separate runs)"
            )
        config = base.replace(**variant)
        configs.append(config)
        labels.append(_variant_label(base, variant, config))
    reps = base.repetitions

    def column(fn: Callable[[GFLConfig], Any], dtype: Any = np.float64) -> NDArray:
        return np.repeat(np.array([fn(c) for c in configs], dtype=dtype), reps)

    def scale(value: float) -> float:
        return laplace_scale(value) if value > 0 else 0.0

    return _Rows(
        configs=tuple(configs),
        labels=tuple(labels),
        reps=reps,
        mu=column(lambda c: c.mu),
        server_scale=column(lambda c: scale(c.sigma_g2) if c.scheme != "none" else 0.0),
        client_scale=column(lambda c: scale(c.client_sigma2) if c.client_noise == "laplace"
                            else 0.0),
        homomorphic=column(lambda c: c.scheme == "homomorphic", bool),
        random=column(lambda c: c.scheme == "random", bool),
        include_self=column(lambda c: c.include_self_noise, bool),
        updates=column(lambda c: c.share == "updates", bool),
        secagg=column(lambda c: c.client_noise == "secagg", bool),
    )


# =========================================================================== draws
def _draw_iteration(rngs: dict[str, np.random.Generator], reps: int, problem: GFLProblem,
                    config: GFLConfig) -> dict[str, NDArray]:
    """All random numbers of one iteration, one set per repetition (shared by variants)."""
    P, K = problem.n.shape
    L, M = config.clients_per_round, problem.dim
    keys = rngs["sampling"].random((reps, P, K))
    selected = np.argpartition(keys, L - 1, axis=-1)[..., :L] if L < K else \
        np.broadcast_to(np.arange(K), (reps, P, K)).copy()
    return {
        "selected": selected,
        "batch": rngs["sampling"].random((reps, P, L, config.epochs[1], config.batch_size[1])),
        "client": rngs["client_noise"].laplace(size=(reps, P, L, M)),
        "own": rngs["server_noise"].laplace(size=(reps, P, M)),
        "pairs": rngs["server_noise"].laplace(size=(reps, P, P, M)),
    }


# =========================================================================== vectorised step
def _minibatch_gradient(problem: GFLProblem, w: NDArray, Ub: NDArray, Db: NDArray,
                        weight: NDArray) -> NDArray:
    """Average minibatch gradient; ``weight`` is mask / B of shape (..., Bmax).

    Regression: :math:`\\nabla Q = -2u(d - u^T w) + 2\\rho w`; classification:
    :math:`\\nabla Q = -y u \\sigma(-y u^T w) + 2\\rho w`.
    """
    inner = (Ub @ w[..., :, None])[..., 0]
    if problem.task == "regression":
        coef = -2.0 * (Db - inner)
    else:
        coef = -Db * _sigmoid(-Db * inner)
    return ((coef * weight)[..., None, :] @ Ub)[..., 0, :] + 2.0 * problem.rho * w


def _local_updates_numpy(problem: GFLProblem, config: GFLConfig, w: NDArray, mu: NDArray,
                         selected: NDArray, batch: NDArray) -> tuple[NDArray, NDArray]:
    """Numpy-vectorised twin of :func:`_local_updates` (same numbers up to rounding)."""
    R, P, L = selected.shape
    K, N_max = problem.n.shape[1], problem.U.shape[2]
    servers = np.arange(P)[None, :, None]
    E, B, n = (x[servers, selected] for x in (problem.E, problem.B, problem.n))
    step = mu[:, None, None] / E if config.local_step == "mu/E" else \
        np.broadcast_to(mu[:, None, None], E.shape)
    weight = (np.arange(batch.shape[-1]) < B[..., None]) / B[..., None]
    # flat row of sample b of epoch e of each client in U.reshape(-1, M)
    first = (servers * K + selected) * N_max
    flat = first[..., None, None] + (batch * n[..., None, None]).astype(np.intp)
    U_flat = problem.U.reshape(-1, problem.dim)
    D_flat = problem.D.reshape(-1)
    local = np.repeat(w[:, :, None, :], L, axis=2)
    total = np.zeros_like(local)
    for epoch in range(batch.shape[-2]):
        active = epoch < E
        if not active.any():
            break
        rows = flat[..., epoch, :]
        grad = _minibatch_gradient(problem, local, np.take(U_flat, rows, axis=0),
                                   np.take(D_flat, rows), weight)
        grad *= active[..., None]
        total += grad
        local -= step[..., None] * grad
    return local, total / E[..., None]


@njit(**NJIT_FLAGS)
def _local_kernel(U_flat, D_flat, first, n, E, B, batch, step, w, rho,
                  logistic):  # pragma: no cover
    """Numba kernel: local SGD of every sampled client (no validation).

    first, n, E, B, step : (C,) per flattened client c = (row, server, slot);
    batch : (C, Emax, Bmax) uniforms; w : (C, M) starting models.
    Returns the final local models and the averaged updates, both (C, M).
    """
    C, M = w.shape
    local = np.empty((C, M))
    update = np.zeros((C, M))
    for c in range(C):  # serial: tiny per-client work, threads cost more than they save
        wk = w[c].copy()
        grad = np.empty(M)
        for e in range(E[c]):
            grad[:] = 0.0
            for b in range(B[c]):
                row = first[c] + np.intp(batch[c, e, b] * n[c])
                inner = 0.0
                for j in range(M):
                    inner += U_flat[row, j] * wk[j]
                d = D_flat[row]
                if logistic:
                    coef = -d * 0.5 * (1.0 + np.tanh(-0.5 * d * inner))
                else:
                    coef = -2.0 * (d - inner)
                for j in range(M):
                    grad[j] += coef * U_flat[row, j]
            for j in range(M):
                g = grad[j] / B[c] + 2.0 * rho * wk[j]
                update[c, j] += g
                wk[j] -= step[c] * g
        for j in range(M):
            local[c, j] = wk[j]
            update[c, j] /= E[c]
    return local, update


def _local_updates(problem: GFLProblem, config: GFLConfig, w: NDArray, mu: NDArray,
                   selected: NDArray, batch: NDArray) -> tuple[NDArray, NDArray]:
    """Final local models and averaged updates of all sampled clients, shape (R, P, L, M).

    Flattens (rows, servers, clients) and calls the Numba kernel;
    :func:`_local_updates_numpy` is its numpy-vectorised twin.
    """
    R, P, L = selected.shape
    K, N_max, M = problem.n.shape[1], problem.U.shape[2], problem.dim
    servers = np.arange(P)[None, :, None]
    E, B, n = (x[servers, selected].ravel() for x in (problem.E, problem.B, problem.n))
    step = np.broadcast_to(mu[:, None, None], selected.shape).ravel()
    if config.local_step == "mu/E":
        step = step / E
    first = ((servers * K + selected) * N_max).ravel().astype(np.int64)
    start = np.ascontiguousarray(np.broadcast_to(w[:, :, None, :], (R, P, L, M)).reshape(-1, M))
    local, update = _local_kernel(
        problem.U.reshape(-1, M), problem.D.reshape(-1), first, n, E, B,
        np.ascontiguousarray(batch.reshape(R * P * L, *batch.shape[-2:])),
        np.ascontiguousarray(step, dtype=np.float64), start, float(problem.rho),
        problem.task == "classification")
    return local.reshape(R, P, L, M), update.reshape(R, P, L, M)


def _aggregate(rows: _Rows, config: GFLConfig, messages: NDArray, round_index: int) -> NDArray:
    """Server aggregation (1/L) sum_k messages; secure aggregation for the secagg rows.

    Keys and masks come from the operating system's randomness: the masks
    cancel exactly, so the result is the same bits whatever they are.  A row
    whose messages leave the fixed-point ring has diverged: it becomes NaN and
    is recorded as a divergence, as it is without secure aggregation.
    """
    out = messages.mean(axis=2)
    for r in np.flatnonzero(rows.secagg):
        if not np.all(np.isfinite(messages[r])):
            continue  # a diverged row stays NaN
        try:
            for p in range(messages.shape[1]):
                out[r, p] = secure_aggregate(
                    messages[r, p], round_index=round_index, frac_bits=config.frac_bits,
                    ring_bits=config.ring_bits,
                ).total / messages.shape[2]
        except EncodingOverflowError:
            out[r] = np.nan
    return out


def _noise_operators(A: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """Matrices that turn per-row draws into sum_m a_pm G[m, p] without building G."""
    P = A.shape[0]
    factor = _homomorphic_from_draws(A, np.ones((P, 1)))[..., 0]  # (m, p) factors
    hom = A * factor.T
    with_self = A * _random_mask(A, True).T
    without_self = A * _random_mask(A, False).T
    return hom, with_self, without_self


def _step(problem: GFLProblem, config: GFLConfig, rows: _Rows, w: NDArray,
          draws: Mapping[str, NDArray], round_index: int,
          operators: tuple[NDArray, NDArray, NDArray],
          local_updates: Callable[..., tuple[NDArray, NDArray]] | None = None) -> NDArray:
    """One GFL iteration for all rows (vectorised over rows, servers and clients)."""
    local_updates = _local_updates if local_updates is None else local_updates
    local, update = local_updates(problem, config, w, rows.mu, draws["selected"], draws["batch"])
    upd = rows.updates[:, None, None, None]
    client_noise = rows.client_scale[:, None, None, None] * draws["client"]
    messages = np.where(upd, update, local) + client_noise
    aggregate = _aggregate(rows, config, messages, round_index)
    psi = np.where(rows.updates[:, None, None], w - rows.mu[:, None, None] * aggregate, aggregate)
    hom, with_self, without_self = operators
    scale = rows.server_scale[:, None, None]
    noise_h = np.einsum("pm,rmd->rpd", hom, draws["own"])
    noise_r = np.where(rows.include_self[:, None, None],
                       np.einsum("pm,rmpd->rpd", with_self, draws["pairs"]),
                       np.einsum("pm,rmpd->rpd", without_self, draws["pairs"]))
    noise = np.where(rows.homomorphic[:, None, None], noise_h,
                     np.where(rows.random[:, None, None], noise_r, 0.0))
    return np.einsum("pm,rmd->rpd", problem.A, psi) + scale * noise


# =========================================================================== loop twin
def _step_loop(problem: GFLProblem, config: GFLConfig, rows: _Rows, w: NDArray,
               draws: Mapping[str, NDArray], round_index: int,
               operators: Any = None) -> NDArray:
    """Plain per-row, per-server, per-client loop of one iteration (reference twin)."""
    R, P, M = w.shape
    L = config.clients_per_round
    new = np.empty_like(w)
    for r in range(R):
        psi = np.empty((P, M))
        for p in range(P):
            sent = []
            for slot in range(L):
                k = draws["selected"][r, p, slot]
                E, B, n = problem.E[p, k], problem.B[p, k], problem.n[p, k]
                step = rows.mu[r] / E if config.local_step == "mu/E" else rows.mu[r]
                wk, total = w[r, p].copy(), np.zeros(M)
                for e in range(E):
                    idx = (draws["batch"][r, p, slot, e, :B] * n).astype(np.intp)
                    Ub, Db = problem.U[p, k, idx], problem.D[p, k, idx]
                    inner = Ub @ wk
                    coef = -2.0 * (Db - inner) if problem.task == "regression" else \
                        -Db * _sigmoid(-Db * inner)
                    grad = coef @ Ub / B + 2.0 * problem.rho * wk
                    total += grad
                    wk = wk - step * grad
                body = total / E if rows.updates[r] else wk
                sent.append(body + rows.client_scale[r] * draws["client"][r, p, slot])
            mean = np.mean(sent, axis=0)
            psi[p] = w[r, p] - rows.mu[r] * mean if rows.updates[r] else mean
        G = np.zeros((P, P, M))
        if rows.homomorphic[r]:
            G = _homomorphic_from_draws(problem.A, rows.server_scale[r] * draws["own"][r])
        elif rows.random[r]:
            G = rows.server_scale[r] * draws["pairs"][r] * \
                _random_mask(problem.A, bool(rows.include_self[r]))[:, :, None]
        for p in range(P):
            new[r, p] = sum(problem.A[p, m] * (psi[m] + G[m, p]) for m in range(P))
    return new


# =========================================================================== driver
def _simulate(config: GFLConfig, variants: Sequence[Mapping[str, Any]], step_fn: Callable,
              progress: ProgressCallback | None, problem: GFLProblem | None) -> list[GFLResult]:
    start = time.perf_counter()
    if problem is None:
        _check_data_size(config)
    _check_run_size(config, max(len(variants), 1))
    problem = build_problem(config) if problem is None else problem
    rows = _make_rows(config, variants)
    rngs = spawn_generators(config.seed, ROLES)
    operators = _noise_operators(problem.A)
    T, R, P = config.iterations, rows.count, problem.n.shape[0]
    w = np.zeros((R, P, problem.dim))
    msd_c, msd_i = np.empty((T + 1, R)), np.empty((T + 1, R))
    errors = np.empty((T + 1, R)) if problem.task == "classification" else None
    diverged_at = np.full(R, -1)
    tile = rows.rep_index

    def record(i: int) -> None:
        centroid = w.mean(axis=1)
        msd_c[i] = ((centroid - problem.w_opt) ** 2).sum(-1)
        msd_i[i] = ((w - problem.w_opt) ** 2).sum(-1).mean(-1)
        if errors is not None:
            errors[i] = (np.sign(centroid @ problem.test_U.T) != problem.test_y).mean(-1)
        bad = (~np.isfinite(msd_i[i]) | (msd_i[i] > config.divergence_threshold)) & \
            (diverged_at < 0)
        diverged_at[bad] = i
        w[diverged_at >= 0] = np.nan
        msd_c[i, diverged_at >= 0] = msd_i[i, diverged_at >= 0] = np.nan

    record(0)
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(1, T + 1):
            draws = {k: v[tile] for k, v in _draw_iteration(rngs, rows.reps, problem,
                                                             config).items()}
            w = step_fn(problem, config, rows, w, draws, i, operators)
            record(i)
            if progress is not None:
                progress(i, T)
    runtime = time.perf_counter() - start
    return [_result(rows, v, msd_c, msd_i, errors, diverged_at, w, problem, runtime)
            for v in range(len(rows.configs))]


def _result(rows: _Rows, v: int, msd_c: NDArray, msd_i: NDArray, errors: NDArray | None,
            diverged_at: NDArray, w: NDArray, problem: GFLProblem, runtime: float) -> GFLResult:
    cols = slice(v * rows.reps, (v + 1) * rows.reps)
    div = diverged_at[cols]
    return GFLResult(
        config=rows.configs[v],
        label=rows.labels[v],
        msd_centroid_db=_db(msd_c[:, cols].mean(axis=1)),
        msd_individual_db=_db(msd_i[:, cols].mean(axis=1)),
        test_error=None if errors is None else errors[:, cols].mean(axis=1),
        diverged_at=int(div[div >= 0].min()) if (div >= 0).any() else None,
        n_diverged=int((div >= 0).sum()),
        w_opt=problem.w_opt.copy(),
        final_centroid=w[cols].mean(axis=1),
        runtime_s=runtime,
    )


def run(config: GFLConfig, *, progress: ProgressCallback | None = None,
        problem: GFLProblem | None = None) -> GFLResult:
    """Run privatized GFL for one configuration.

    Parameters
    ----------
    config : GFLConfig
    progress : callable(i, total), optional
        Called after every iteration (the CLI turns it into a progress bar).
    problem : GFLProblem, optional
        Reuse data built by :func:`build_problem` (must match ``config``).

    Returns
    -------
    GFLResult
        Centroid and average individual MSD per iteration in dB, averaged over
        ``config.repetitions``.

    Examples
    --------
    >>> from topokit.gfl import preset
    >>> cfg = preset("regression").replace(clients_per_server=20, iterations=20)
    >>> result = run(cfg)
    >>> result.to_frame().shape[0]
    21
    """
    if not isinstance(config, GFLConfig):
        raise InvalidInputError(f"config must be a GFLConfig; got {type(config).__name__}")
    return _simulate(config, [{}], _step, progress, problem)[0]


def run_many(config: GFLConfig, variants: Sequence[Mapping[str, Any]], *,
             progress: ProgressCallback | None = None,
             problem: GFLProblem | None = None) -> list[GFLResult]:
    """Run several variants of ``config`` in one array pass.

    Parameters
    ----------
    config : GFLConfig
        Base configuration (data, graph, sizes, iterations, repetitions, seed).
    variants : sequence of dict
        Field overrides, restricted to :data:`BATCHABLE` (``scheme``,
        ``sigma_g2``, ``share``, ``client_noise``, ``client_sigma2``, ``mu``,
        ``include_self_noise``; ``name`` sets the label).  The variants share
        the problem and their random draws (common random numbers), so their
        differences are due to the varied setting only.

    Returns
    -------
    list of GFLResult, in the order of ``variants``.
    """
    if not isinstance(config, GFLConfig):
        raise InvalidInputError(f"config must be a GFLConfig; got {type(config).__name__}")
    return _simulate(config, list(variants), _step, progress, problem)


def _run_loop(config: GFLConfig, variants: Sequence[Mapping[str, Any]] = ({},),
              problem: GFLProblem | None = None) -> list[GFLResult]:
    """Per-client loop reference of :func:`run_many` (same draws, same numbers)."""
    return _simulate(config, list(variants), _step_loop, None, problem)

