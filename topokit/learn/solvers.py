"""Single-graph learning from smooth signals: the log-degree model and its solvers.

The model is eq. (7) of Zhang et al. [1]_ (Kalofolias' model [2]_ in vector form)

.. math::

    \\min_{w \\ge 0}\\; z^\\top w - \\alpha \\mathbf 1^\\top \\log(S w + \\zeta)
    + 2\\beta \\|w\\|_2^2,

over the ``p = d(d-1)/2`` upper-triangular edge weights ``w`` in
``numpy.triu_indices(d, 1)`` order, with ``z`` the mean pairwise squared
differences of the signals and ``S`` the edge-to-degree operator
(``S w = W 1``).  ``zeta = 0`` is eq. (7); ``zeta > 0`` is the ``g_i`` of eq. (8).

Solvers
-------
``"dual-newton"``
    A damped semismooth Newton method [5]_ on the Fenchel dual, which lives on the
    d nodes:

    .. math::

        \\max_{v < 0}\\; D(v) = -2\\beta \\|w(v)\\|_2^2 + \\alpha \\sum_i \\log(-v_i)
        + \\zeta \\sum_i v_i + d\\alpha (1 - \\log \\alpha),
        \\qquad w_k(v) = \\max(0, -(v_i + v_j) - z_k) / (4\\beta),

    with ``w(v)`` the primal point of ``v``.  ``D`` is concave with a piecewise
    smooth gradient ``S w(v) + zeta + alpha / v``; each Newton step solves the
    generalised Hessian system on the active edges (``w_k(v) > 0``) by
    preconditioned conjugate gradients (Newton-CG [6]_), with an Armijo line search
    that keeps ``v < 0``.  O(p) time per step (one pass over the edges, plus
    O(active edges) per CG step); 4-7 steps on the problems measured, up to about
    a hundred on very sparse graphs (small ``beta``).  It stops as PDHG does, on a
    certified relative duality gap, here ``P(w(v)) - D(v) <= tol |objective|``:
    as ``w(v)`` minimises the edge terms exactly, the gap is a sum over nodes of
    ``alpha (t_i - 1 - log t_i) >= 0`` with ``t_i = (S w(v) + zeta)_i (-v_i) / alpha``.
    Needs ``beta > 0``.
``"pdhg"``
    The primal-dual hybrid gradient method of Chambolle & Pock [3]_ in a Numba
    kernel, with PDLP's primal-weight balancing of the two step sizes [4]_
    (every 10 iterations the step ratio is set to 1.5 ||w|| / ||v||).  O(p) time
    and memory per iteration (one pass over the edges), ``S`` never formed.
    It stops on a certified duality gap: the dual candidate
    ``v(w) = -alpha / (S w + zeta)`` gives a closed-form per-edge Fenchel gap, so
    ``(objective(w) - optimum) / |objective(w)| <= tol`` at exit.  Needs
    ``beta > 0`` (the gap is infinite otherwise).
``"fbf"``
    Kalofolias' forward-backward-forward primal-dual method [2]_ (Komodakis &
    Pesquet's scheme) in a Numba kernel: O(p) time and memory per iteration,
    ``S`` never formed, stops when the relative primal and dual residuals are
    both below ``tol``.
``"cvxpy"``
    :func:`topokit.learn.problems.log_degree_problem` solved by Clarabel.
``"auto"``
    ``"dual-newton"`` when ``beta > 0``, else ``"fbf"``.  (The earlier default was
    ``"pdhg"``; both stop on the same certificate, so their objectives agree to
    ``tol``, and the weights to about ``sqrt(tol |objective| / (2 beta))``.)

References
----------
.. [1] X. Zhang et al., "Graph Topology Learning Under Privacy Constraints", eqs. (7)-(8).
.. [2] V. Kalofolias, "How to learn a graph from smooth signals", AISTATS 2016, Alg. 1.
.. [3] A. Chambolle and T. Pock, "A first-order primal-dual algorithm for convex
   problems with applications to imaging", J. Math. Imaging Vis. 40, 2011, Alg. 1.
.. [4] D. Applegate et al., "Practical large-scale linear programming using
   primal-dual hybrid gradient" (PDLP), NeurIPS 2021, sec. 3 (primal weight).
.. [5] L. Qi and J. Sun, "A nonsmooth version of Newton's method", Math.
   Programming 58, 1993 (semismooth Newton).
.. [6] J. Nocedal and S. J. Wright, "Numerical Optimization", 2nd ed., Springer
   2006, Alg. 7.1 (line search Newton-CG) and sec. 7.1 (forcing terms).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import (
    check_choice,
    check_finite_array,
    check_int,
    check_nonnegative,
    check_positive,
)
from ..errors import InvalidInputError
from . import _kernels
from ._dual_newton import newton_numba as _newton_numba
from ._dual_newton import newton_numpy as _newton_numpy  # noqa: F401  (the twin, beside the others)

__all__ = [
    "ConvergenceWarning",
    "LearnedGraph",
    "learn_graph",
    "learn_graph_from_distances",
    "params_for_degree",
    "pairwise_sq_distances",
    "log_degree_objective",
    "log_degree_gradient",
    "kkt_residual",
    "weights_to_graph",
    "weights_to_adjacency",
    "check_signals",
    "DEFAULT_THRESHOLD",
]

Solver = Literal["auto", "dual-newton", "pdhg", "fbf", "cvxpy"]
SOLVERS = ("auto", "dual-newton", "pdhg", "fbf", "cvxpy")

#: PDHG primal-weight rule: every PDHG_PERIOD iterations, ratio = PDHG_C_RATIO ||w|| / ||v||.
PDHG_PERIOD = 10
PDHG_C_RATIO = 1.5
#: Default tol per solver: a relative duality gap (dual Newton, PDHG), a relative residual (FBF).
DEFAULT_TOL = {"dual-newton": 1e-16, "pdhg": 1e-16, "fbf": 1e-8, "cvxpy": 1e-8}
#: Solvers that stop on a certified relative duality gap (so they need beta > 0).
GAP_SOLVERS = ("dual-newton", "pdhg")

#: Relative threshold of the edge rule: edge k exists if w_k > DEFAULT_THRESHOLD * max(w).
DEFAULT_THRESHOLD = 1e-3


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped at ``max_iter`` before reaching ``tol``."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class LearnedGraph:
    """A graph learned from signals.

    Attributes
    ----------
    weights : ndarray of shape (p,)
        Edge weights in ``numpy.triu_indices(n_nodes, 1)`` order.
    graph : networkx.Graph
        Nodes ``0 .. n_nodes-1``; an edge with a ``weight`` attribute for every
        ``w_k > threshold * max(w)``.
    objective : float
        The objective of eq. (7) (with ``zeta``) at ``weights``.
    converged : bool
        Whether the solver met its tolerance.
    n_iter : int
        Iterations used (Newton steps for dual-newton, 0 when a warm start is
        already optimal; 0 for cvxpy).
    solver : str
    residual : float
        Final stopping value: relative duality gap (dual Newton, PDHG), relative
        residual (FBF) or KKT residual (cvxpy).

    Unpacks as ``weights, graph = learn_graph(...)``.
    """

    weights: NDArray[np.float64]
    graph: nx.Graph = field(repr=False)
    objective: float
    converged: bool
    n_iter: int
    solver: str
    residual: float
    alpha: float
    beta: float
    zeta: float = 0.0

    def __iter__(self):
        yield self.weights
        yield self.graph

    @property
    def n_nodes(self) -> int:
        return self.graph.number_of_nodes()

    def adjacency(self) -> NDArray[np.float64]:
        """The symmetric weighted adjacency matrix of shape (n_nodes, n_nodes)."""
        return weights_to_adjacency(self.weights, self.n_nodes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (weights as a list)."""
        return {
            "n_nodes": self.n_nodes,
            "n_edges": self.graph.number_of_edges(),
            "weights": self.weights.tolist(),
            "objective": self.objective,
            "converged": self.converged,
            "n_iter": self.n_iter,
            "solver": self.solver,
            "residual": self.residual,
            "alpha": self.alpha,
            "beta": self.beta,
            "zeta": self.zeta,
        }


# --------------------------------------------------------------------------- helpers


def check_signals(X: ArrayLike, name: str = "X") -> NDArray[np.float64]:
    """Validate signals of shape (n_signals, n_nodes): finite, >= 1 signal, >= 2 nodes."""
    X = check_finite_array(X, name, ndim=2)
    n_signals, n_nodes = X.shape
    if n_nodes < 2:
        raise InvalidInputError(
            f"{name} must have shape (n_signals, n_nodes) with n_nodes >= 2; got shape {X.shape}"
        )
    if n_signals < 1:
        raise InvalidInputError(f"{name} must hold at least one signal; got shape {X.shape}")
    # The mean squared differences sum n_signals products of differences of two values:
    # beyond this size they overflow to inf, and every later step reads inf or NaN.
    largest = float(np.abs(X).max())
    if largest > np.sqrt(np.finfo(np.float64).max / (8.0 * n_signals * n_nodes)):
        raise InvalidInputError(
            f"{name} holds values too large (largest |x| is {largest:.3g}): their squared "
            "differences overflow; rescale the signals (e.g. divide by their standard deviation)"
        )
    return X


def n_nodes_from_edges(p: int) -> int:
    """d such that d(d-1)/2 = p; raise if p is not triangular."""
    d = int(round((1 + math.sqrt(1 + 8 * p)) / 2))
    if d * (d - 1) // 2 != p or d < 2:
        raise InvalidInputError(f"{p} is not d(d-1)/2 for an integer d >= 2")
    return d


def pairwise_sq_distances(X: NDArray[np.float64], sample_weight=None) -> NDArray[np.float64]:
    """z = (1/N) sum_n z_n with z_n[k] = (x_{n,i} - x_{n,j})^2 over triu pairs (i, j).

    Computed from the Gram matrix of the row-centred signals (differences do not
    change when a constant is subtracted from a signal), so O(N d^2) time and
    O(d^2) memory.  ``sample_weight`` (length N) gives a weighted mean
    ``(1/N) sum_n s_n z_n`` (used for clipping).
    """
    centred = X - X.mean(axis=1, keepdims=True)
    n = centred.shape[0]
    if sample_weight is None:
        gram = centred.T @ centred / n
    else:
        gram = (centred * (np.asarray(sample_weight)[:, None] / n)).T @ centred
    diag = np.diag(gram)
    i, j = np.triu_indices(X.shape[1], 1)
    z = diag[i] + diag[j] - 2.0 * gram[i, j]
    return np.maximum(z, 0.0)


def signal_difference_norms(X: NDArray[np.float64]) -> NDArray[np.float64]:
    """||z_n||_2 for every signal n in O(N d) (closed form of sum_{i<j} (x_i - x_j)^4).

    With x centred, sum_{i<j}(x_i - x_j)^4 = d sum x^4 + 3 (sum x^2)^2.
    """
    centred = X - X.mean(axis=1, keepdims=True)
    d = X.shape[1]
    sq = centred * centred
    return np.sqrt(d * (sq * sq).sum(axis=1) + 3.0 * sq.sum(axis=1) ** 2)


def edge_index(d: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Endpoints (i, j) of every edge, in triu order."""
    return np.triu_indices(d, 1)


def _degrees_numpy(w: NDArray, i: NDArray, j: NDArray, d: int) -> NDArray:
    return np.bincount(i, weights=w, minlength=d) + np.bincount(j, weights=w, minlength=d)


def log_degree_objective(
    w: NDArray[np.float64], z: NDArray[np.float64], alpha: float, beta: float, zeta: float = 0.0
) -> float:
    """z^T w - alpha 1^T log(S w + zeta) + 2 beta ||w||^2 (eq. 7); +inf at a zero degree."""
    d = n_nodes_from_edges(w.size)
    deg = _kernels.degrees(np.ascontiguousarray(w, dtype=np.float64), d) + zeta
    if np.any(deg <= 0):
        return math.inf
    return float(z @ w - alpha * np.log(deg).sum() + 2.0 * beta * (w @ w))


def log_degree_gradient(
    w: NDArray[np.float64], z: NDArray[np.float64], alpha: float, beta: float, zeta: float = 0.0
) -> NDArray[np.float64]:
    """z - alpha S^T (1 / (S w + zeta)) + 4 beta w (the gradient below eq. (11))."""
    d = n_nodes_from_edges(w.size)
    i, j = edge_index(d)
    inv = 1.0 / (_kernels.degrees(np.ascontiguousarray(w, dtype=np.float64), d) + zeta)
    return z - alpha * (inv[i] + inv[j]) + 4.0 * beta * w


def kkt_residual(
    w: NDArray[np.float64], z: NDArray[np.float64], alpha: float, beta: float, zeta: float = 0.0
) -> float:
    """Natural KKT residual ||w - max(0, w - grad f(w))||_inf of ``min_{w>=0} f``.

    Zero exactly at the solution: grad_k = 0 where w_k > 0 and grad_k >= 0 where
    w_k = 0.
    """
    grad = log_degree_gradient(w, z, alpha, beta, zeta)
    return float(np.max(np.abs(w - np.maximum(w - grad, 0.0))))


def weights_to_adjacency(weights: NDArray[np.float64], n_nodes: int) -> NDArray[np.float64]:
    """Symmetric (n_nodes, n_nodes) matrix from triu-ordered weights."""
    adjacency = np.zeros((n_nodes, n_nodes))
    i, j = edge_index(n_nodes)
    adjacency[i, j] = weights
    adjacency[j, i] = weights
    return adjacency


def weights_to_graph(
    weights: NDArray[np.float64],
    n_nodes: int,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    nodes: list | None = None,
) -> nx.Graph:
    """networkx Graph with a ``weight`` attribute on every edge w_k > threshold * max(w).

    ``nodes`` relabels node ``k`` as ``nodes[k]`` (default ``0 .. n_nodes-1``).
    """
    labels = list(range(n_nodes)) if nodes is None else list(nodes)
    graph = nx.Graph()
    graph.add_nodes_from(labels)
    top = float(np.max(weights, initial=0.0))
    if top <= 0:
        return graph
    i, j = edge_index(n_nodes)
    keep = np.flatnonzero(weights > threshold * top)
    graph.add_weighted_edges_from(
        (labels[i[k]], labels[j[k]], float(weights[k])) for k in keep
    )
    return graph


# --------------------------------------------------------------------------- solvers


def _fbf_step(d: int, beta: float) -> float:
    """Step size 0.9 / mu with mu = 4 beta + ||S||_2 = 4 beta + sqrt(2 (d - 1)).

    Kalofolias, Alg. 1.
    """
    return 0.9 / (4.0 * beta + math.sqrt(2.0 * (d - 1)))


def _fbf_numba(z, alpha, beta, zeta, tol, max_iter, w0=None):
    d = n_nodes_from_edges(z.size)
    w = np.zeros_like(z) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
    v = np.zeros(d)
    n_iter, r_primal, r_dual = _kernels.fbf_loop(
        z, w, v, d, alpha, beta, zeta, _fbf_step(d, beta), tol, max_iter
    )
    # w_{t+1} = w - Y + Q can sit 1e-10 below zero; the projection is within tol of it
    return np.maximum(w, 0.0), int(n_iter), max(r_primal, r_dual)


def _fbf_numpy(z, alpha, beta, zeta, tol, max_iter, w0=None):
    """Plain-numpy twin of the Numba FBF loop (index arrays and np.bincount); same iterates."""
    d = n_nodes_from_edges(z.size)
    i, j = edge_index(d)
    step = _fbf_step(d, beta)
    w = np.zeros_like(z) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
    v = np.zeros(d)
    residual = math.inf
    n_iter = 0
    for it in range(max_iter):
        n_iter = it + 1
        Y = w - step * (4 * beta * w + v[i] + v[j])
        P = np.maximum(Y - step * z, 0.0)
        y = v + step * _degrees_numpy(w, i, j, d)
        yz = y + step * zeta
        p_bar = 0.5 * (yz - np.sqrt(yz * yz + 4 * alpha * step))
        Q = P - step * (4 * beta * P + p_bar[i] + p_bar[j])
        q = p_bar + step * _degrees_numpy(P, i, j, d)
        w = w - Y + Q
        v = v - y + q
        r_primal = np.linalg.norm(Q - Y) / max(np.linalg.norm(w), 1e-300)
        r_dual = np.linalg.norm(q - y) / max(np.linalg.norm(v), 1e-300)
        residual = max(r_primal, r_dual)
        if r_primal < tol and r_dual < tol:
            break
    return np.maximum(w, 0.0), n_iter, residual


def _pdhg_start(z, alpha, zeta, d, w0):
    """Primal, dual and S wbar to start PDHG from: zero, or w0 with its dual candidate."""
    if w0 is None:
        return np.zeros_like(z), np.zeros(d), np.zeros(d)
    w = np.array(w0, dtype=np.float64, copy=True)
    sw = _kernels.degrees(w, d)
    v = np.where(sw + zeta > 0, -alpha / np.maximum(sw + zeta, 1e-300), 0.0)
    return w, v, sw.copy()


def _pdhg_numba(z, alpha, beta, zeta, tol, max_iter, w0=None):
    """PDHG with a certified relative duality gap <= tol; returns (w, n_iter, gap).

    The kernel's test certifies the iterate before its last step; the returned
    iterate's own gap is computed once more, and the loop resumes (warm) in the
    rare case that it is above ``tol``.
    """
    d = n_nodes_from_edges(z.size)
    w, v, sb = _pdhg_start(z, alpha, zeta, d, w0)
    norm_s = math.sqrt(2.0 * (d - 1))
    ratio = 1.0
    n_total = 0
    gap = math.inf
    while n_total < max_iter:
        n_iter, _, ratio = _kernels.pdhg_loop(
            z, w, v, sb, d, alpha, beta, zeta, norm_s, ratio, tol, max_iter - n_total,
            PDHG_PERIOD, PDHG_C_RATIO,
        )
        n_total += int(n_iter)
        gap, _ = _kernels.duality_gap(w, z, d, alpha, beta, zeta)
        if gap <= tol:
            break
    return w, n_total, float(gap)


def _pdhg_numpy(z, alpha, beta, zeta, tol, max_iter, w0=None):
    """Plain-numpy twin of the Numba PDHG loop (index arrays and np.bincount); same iterates.

    Stops on the gap of the iterate before the last step, as the kernel does.
    """
    d = n_nodes_from_edges(z.size)
    i, j = edge_index(d)
    w, v, _ = _pdhg_start(z, alpha, zeta, d, w0)
    wbar = w.copy()
    norm_s = math.sqrt(2.0 * (d - 1))
    ratio = 1.0
    tau, sigma = 0.99 * ratio / norm_s, 1.0 / (ratio * norm_s)
    gap = math.inf
    n_iter = 0
    for it in range(max_iter):
        n_iter = it + 1
        y = v + sigma * (_degrees_numpy(wbar, i, j, d) + zeta)
        v = 0.5 * (y - np.sqrt(y * y + 4.0 * alpha * sigma))
        deg = _degrees_numpy(w, i, j, d) + zeta
        if np.all(deg > 0):
            s = alpha * (1.0 / deg[i] + 1.0 / deg[j])
            excess = s - z
            terms = np.where(excess > 0, 2 * beta * (w - excess / (4 * beta)) ** 2,
                             (2 * beta * w - excess) * w)
            objective = z @ w + 2 * beta * (w @ w) - alpha * np.log(deg).sum()
            gap = terms.sum() / max(abs(objective), 1e-300)
        quad, v_norm2 = w @ w, v @ v
        w_new = np.maximum((w - tau * (v[i] + v[j] + z)) / (1 + 4 * beta * tau), 0.0)
        wbar = 2 * w_new - w
        w = w_new
        if gap <= tol:
            break
        if n_iter % PDHG_PERIOD == 0 and quad > 0 and v_norm2 > 0:
            ratio = PDHG_C_RATIO * math.sqrt(quad / v_norm2)
            tau, sigma = 0.99 * ratio / norm_s, 1.0 / (ratio * norm_s)
    return w, n_iter, float(gap)


def _solve_cvxpy(z, alpha, beta, zeta, cvxpy_solver):
    from .problems import DPP_MAX_NODES, log_degree_problem, log_degree_problem_fixed, solve_problem

    d = n_nodes_from_edges(z.size)
    if d <= DPP_MAX_NODES:
        problem, params = log_degree_problem(d, zeta=zeta)
        params["z"].value = z
        params["alpha"].value = alpha
        params["beta"].value = beta
        variable = problem.var_dict["w"]
    else:  # the DPP map grows like p^2 in memory
        problem, variable = log_degree_problem_fixed(z, alpha, beta, zeta=zeta)
    solve_problem(problem, solver=cvxpy_solver)
    return np.maximum(np.asarray(variable.value, dtype=np.float64), 0.0)


def learn_graph(
    X: ArrayLike,
    alpha: float,
    beta: float,
    *,
    solver: Solver = "auto",
    tol: float | None = None,
    max_iter: int = 100_000,
    zeta: float = 0.0,
    threshold: float = DEFAULT_THRESHOLD,
    w0: ArrayLike | None = None,
    cvxpy_solver: str = "auto",
) -> LearnedGraph:
    """Learn a weighted graph from smooth signals with the log-degree model (eq. 7).

    Parameters
    ----------
    X : array-like of shape (n_signals, n_nodes)
        One signal per row (scikit-learn's orientation); finite.
    alpha : float
        Weight of the log-degree barrier (> 0); scales the weights (w*(alpha, beta)
        = alpha w*(1, alpha beta)).
    beta : float
        Weight of 2 ||w||^2 (>= 0); larger beta gives denser graphs.
    solver : {"auto", "dual-newton", "pdhg", "fbf", "cvxpy"}
        ``"dual-newton"``: semismooth Newton on the d-dimensional dual (Numba
        kernels), a handful of O(p) steps, stopped on a certified duality gap
        (needs ``beta > 0``).  ``"pdhg"``: the Numba primal-dual hybrid gradient
        method with balanced steps, O(p) per iteration, stopped on the same kind
        of certificate (needs ``beta > 0``).  ``"fbf"``: the Numba
        forward-backward-forward primal-dual method, O(p) per iteration.
        ``"cvxpy"``: :func:`~topokit.learn.problems.log_degree_problem` with
        Clarabel (or SCS for large d).  ``"auto"``: ``"dual-newton"`` if
        ``beta > 0``, else ``"fbf"``.
    tol : float, optional
        Dual Newton and PDHG stop when the duality gap is at most
        ``tol |objective|`` (so the objective is within ``tol`` relative of the
        optimum; default 1e-16, as the gap is quadratic in the distance to the
        solution, ``gap >= 2 beta ||w - w*||^2``; it is a sum of non-negative
        terms, so it is computed without cancellation and a tol below machine
        epsilon is meaningful).  FBF stops when the relative primal and dual
        residuals are both < tol (default 1e-8).
    max_iter : int
        Iteration cap (Newton steps for ``"dual-newton"``); reaching it warns
        with :class:`ConvergenceWarning`.
    zeta : float
        Degree offset of eq. (8): log(S w + zeta). 0 gives eq. (7).
    threshold : float
        Relative edge rule for ``.graph``: edge if w_k > threshold * max(w).
    w0 : array-like of shape (p,), optional
        Warm start for dual Newton (its dual point ``-alpha / (S w0 + zeta)``),
        PDHG and FBF.

    Returns
    -------
    LearnedGraph

    Raises
    ------
    InvalidInputError
        NaN/inf signals, fewer than 2 nodes, a negative ``alpha``/``beta``,
        an unknown solver, ``solver="dual-newton"`` or ``"pdhg"`` with ``beta = 0``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 6)).cumsum(axis=1)  # smooth along a path
    >>> weights, graph = learn_graph(X, alpha=1.0, beta=0.1)
    >>> weights.shape
    (15,)

    The default solver and PDHG stop on the same certificate: the same optimum of eq. (7).

    >>> learned = learn_graph(X, alpha=1.0, beta=0.1)
    >>> learned.solver, learned.converged
    ('dual-newton', True)
    >>> by_pdhg = learn_graph(X, alpha=1.0, beta=0.1, solver="pdhg")
    >>> bool(abs(learned.objective - by_pdhg.objective) <= 1e-12 * abs(by_pdhg.objective))
    True
    """
    X = check_signals(X)
    return learn_graph_from_distances(
        pairwise_sq_distances(X), alpha, beta, solver=solver, tol=tol, max_iter=max_iter,
        zeta=zeta, threshold=threshold, w0=w0, cvxpy_solver=cvxpy_solver,
    )


def learn_graph_from_distances(
    z: ArrayLike,
    alpha: float,
    beta: float,
    *,
    solver: Solver = "auto",
    tol: float | None = None,
    max_iter: int = 100_000,
    zeta: float = 0.0,
    threshold: float = DEFAULT_THRESHOLD,
    w0: ArrayLike | None = None,
    cvxpy_solver: str = "auto",
) -> LearnedGraph:
    """Solve the log-degree model (eq. 7) for a given distance vector ``z``.

    :func:`learn_graph` computes ``z`` from signals and calls this; call it
    directly with distances of your own (a kernel, a feature distance, or the
    noisy mean distances a DP client releases).

    Parameters
    ----------
    z : array-like of shape (p,)
        The linear term: pairwise squared distances in ``numpy.triu_indices(d, 1)``
        order, p = d (d - 1) / 2 with d >= 2.  Entries may be negative when
        ``beta > 0`` (the problem stays bounded); with ``beta = 0`` they must be
        positive.
    alpha, beta, solver, tol, max_iter, zeta, threshold, w0, cvxpy_solver
        As in :func:`learn_graph`.

    Returns
    -------
    LearnedGraph

    Examples
    --------
    >>> z = np.array([1.0, 4.0, 1.0])          # a path 0 - 1 - 2: d(0,2) is largest
    >>> learned = learn_graph_from_distances(z, alpha=1.0, beta=0.1)
    >>> bool(learned.weights[1] < learned.weights[0])
    True
    """
    z = check_finite_array(z, "z", ndim=1)
    try:
        d = n_nodes_from_edges(z.size)
    except InvalidInputError:
        raise InvalidInputError(
            f"z must have length d (d - 1) / 2 for some d >= 2 (one entry per node pair); "
            f"got length {z.size}"
        ) from None
    alpha = check_positive(alpha, "alpha")
    beta = check_nonnegative(beta, "beta")
    zeta = check_nonnegative(zeta, "zeta")
    check_choice(solver, "solver", SOLVERS)
    if solver == "auto":
        solver = "dual-newton" if beta > 0 else "fbf"
    if tol is None:
        tol = DEFAULT_TOL[solver]
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", low=1)
    if solver in GAP_SOLVERS and beta == 0:
        raise InvalidInputError(f'solver="{solver}" needs beta > 0 (its duality gap is infinite '
                                'at beta = 0); got beta=0; use solver="fbf"')
    if beta == 0 and np.any(z <= 0):
        raise InvalidInputError(
            "with beta = 0 every distance in z must be positive (the problem is unbounded "
            "otherwise); pass beta > 0"
        )
    if w0 is not None:
        w0 = check_finite_array(w0, "w0", ndim=1)
        if w0.size != z.size or np.any(w0 < 0):
            raise InvalidInputError(
                f"w0 must be a non-negative vector of length {z.size}; got length {w0.size}"
            )
    return _learn_from_z(z, d, alpha, beta, zeta, solver, tol, max_iter, threshold, w0,
                         cvxpy_solver)


def _learn_from_z(z, d, alpha, beta, zeta, solver, tol, max_iter, threshold, w0=None,
                  cvxpy_solver="auto") -> LearnedGraph:
    if solver == "cvxpy":
        w = _solve_cvxpy(z, alpha, beta, zeta, cvxpy_solver)
        n_iter, converged = 0, True
        residual = kkt_residual(w, z, alpha, beta, zeta)
    else:
        fast = {"dual-newton": _newton_numba, "pdhg": _pdhg_numba, "fbf": _fbf_numba}[solver]
        w, n_iter, residual = fast(z, alpha, beta, zeta, tol, max_iter, w0)
        converged = residual <= tol if solver in GAP_SOLVERS else residual < tol
        if not converged:
            warnings.warn(
                f"{solver.upper()} stopped after {n_iter} iterations with residual "
                f"{residual:.2e} > tol={tol:g}; raise max_iter or tol",
                ConvergenceWarning,
                stacklevel=3,
            )
    return LearnedGraph(
        weights=w,
        graph=weights_to_graph(w, d, threshold=threshold),
        objective=log_degree_objective(w, z, alpha, beta, zeta),
        converged=bool(converged),
        n_iter=int(n_iter),
        solver=solver,
        residual=float(residual),
        alpha=alpha,
        beta=beta,
        zeta=zeta,
    )


def params_for_degree(
    X: ArrayLike,
    degree: float,
    *,
    alpha: float = 1.0,
    threshold: float = DEFAULT_THRESHOLD,
    rtol: float = 0.02,
    max_steps: int = 60,
    tol: float | None = 1e-12,
) -> tuple[float, float]:
    """(alpha, beta) whose learned graph has average degree ``degree``.

    The edge set of eq. (7) depends only on the product alpha * beta
    (substitute w = alpha u: w*(alpha, beta) = alpha w*(1, alpha beta)), and grows
    with beta; so alpha is fixed (default 1, as the paper does) and beta is
    found by bisection on log(beta).
    The average degree is 2 |E| / d with the edge rule of ``threshold``.

    Each probe is solved by the dual Newton solver (beta > 0 throughout; PDHG
    earlier, same certificate and the same betas on the cases
    checked) to a relative duality gap of ``tol``; the default 1e-12 puts every
    weight within about sqrt(1e-12 |objective| / (2 beta)) of the optimum, far
    inside the edge rule.

    Returns
    -------
    (alpha, beta) : tuple of float
        The beta whose average degree is closest to ``degree`` (within ``rtol``
        relative when reachable: the degree is piecewise constant in beta).

    Raises
    ------
    InvalidInputError
        ``degree`` outside (0, n_nodes - 1].
    """
    X = check_signals(X)
    d = X.shape[1]
    degree = check_positive(degree, "degree")
    alpha = check_positive(alpha, "alpha")
    if degree > d - 1:
        raise InvalidInputError(f"degree must be <= n_nodes - 1 = {d - 1}; got {degree}")
    tol = DEFAULT_TOL["dual-newton"] if tol is None else check_positive(tol, "tol")
    z = pairwise_sq_distances(X)
    scale = float(np.mean(z)) or 1.0

    def avg_degree(beta: float) -> float:
        # the solver alone: a probe needs the weights, not the networkx graph; a probe
        # that stops early (unconverged) still orders beta correctly in the bisection
        w = _newton_numba(z, alpha, beta, 0.0, tol, 200_000)[0]
        top = w.max(initial=0.0)
        return 2.0 * np.count_nonzero(w > threshold * top) / d if top > 0 else 0.0

    lo, hi = math.log(1e-6 / scale), math.log(1e6 / scale)
    best = (math.inf, math.exp(0.5 * (lo + hi)))
    for _ in range(max_steps):
        mid = 0.5 * (lo + hi)
        got = avg_degree(math.exp(mid) / alpha)
        gap = abs(got - degree)
        if gap < best[0]:
            best = (gap, math.exp(mid) / alpha)
        if gap <= rtol * degree or hi - lo < 1e-3:
            break
        if got < degree:
            lo = mid
        else:
            hi = mid
    return alpha, best[1]
