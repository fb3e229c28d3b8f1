"""Fastest-mixing weights of a graph (Boyd, Diaconis and Xiao [1]_).

Among the symmetric, doubly stochastic, non-negative matrices W that are zero
off the links of a graph, :func:`fastest_mixing_weights` finds the one whose
second-largest eigenvalue modulus (SLEM)

.. math:: \\mu(W) = \\max(\\lambda_2(W), -\\lambda_n(W)) = \\|W - \\mathbf{1}\\mathbf{1}^T/n\\|_2

is smallest ([1]_, Sec. 1.1): the mixing matrix under which gossip averaging
and decentralized SGD forget their initial disagreement fastest.  In the
paper's edge form ([1]_, Sec. 5) W is parametrised by one weight per link,

.. math:: W(w) = I - \\sum_l w_l a_l a_l^T, \\qquad w \\ge 0, \\qquad
          \\sum_{l \\ni i} w_l \\le 1 \\;\\; (W_{ii} \\ge 0),

with a_l = e_i - e_j for link l = {i, j}; symmetry, W1 = 1 and the zeros off
the graph then hold by construction, and the problem is convex in w.

Two solvers:

- ``"sdp"``: the semidefinite program min t s.t. -tI <= W(w) - J <= tI
  (J = 11^T/n), solved by Clarabel through cvxpy.  Exact to the solver's
  tolerance, but Clarabel's cost grows like n^6 (its scaling matrices of the
  n x n cones are dense): about 0.4 s at n = 32, 2.5 s at 40, 13 s at 64.
- ``"subgradient"``: the paper's Sec. 5 method made fast.  The paper steps
  along the subgradient -(u_i - u_j)^2 (u the eigenvector of lambda_2) or
  (v_i - v_j)^2 (v that of lambda_n) and projects back onto the feasible set.
  Here the step direction is a softmax-weighted average of those subgradients
  over all the extreme eigenvectors, which is the gradient of the smooth
  surrogate

  .. math:: f_\\sigma(w) = \\sigma \\log \\sum_{k \\ge 2}
            \\left(e^{\\lambda_k / \\sigma} + e^{-\\lambda_k / \\sigma}\\right),
            \\qquad \\mu \\le f_\\sigma \\le \\mu + \\sigma \\log(2(n - 1)),

  minimised by accelerated projected gradient (FISTA with backtracking and
  gradient restarts), with sigma halved between stages of growing length
  (Nesterov's smoothing [3]_, with continuation).  The projection onto
  {w >= 0, node sums <= 1} is exact: node by node, each node's links are cut
  back to a sum of 1 (as the paper projects), and the sweeps repeat, as
  coordinate ascent on the projection's dual, until they settle.  Eigenpairs
  come from LAPACK up to ``DENSE_EIGEN_MAX`` nodes; beyond, the extreme ones
  are tracked from step to step by one block Krylov step each (sparse
  products and a small eigenproblem only).

Both report a certified lower bound on the optimal SLEM, from the Lagrange
dual of [1]_: any symmetric Y with Y1 = 0 and nuclear norm <= 1 gives
:math:`\\mu^\\star \\ge \\operatorname{tr} Y - \\max_{w \\text{ feasible}}
\\sum_l w_l\\, a_l^T Y a_l` (a linear program: a fractional matching).  The
first-order method uses the average of its smoothed dual matrices over a
stage; it stops when the SLEM it found is within ``tol`` of that bound, so
``converged`` means "certified within tol of the optimum".

References
----------
.. [1] S. Boyd, P. Diaconis and L. Xiao, "Fastest mixing Markov chain on a
   graph", SIAM Review 46(4):667-689, 2004.
.. [2] S. Boyd, P. Diaconis, J. Sun and L. Xiao, "Fastest mixing Markov chain
   on a path", The American Mathematical Monthly 113(1):70-74, 2006.
.. [3] Y. Nesterov, "Smooth minimization of non-smooth functions",
   Mathematical Programming 103:127-152, 2005.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components

from .._blas import one_blas_thread
from .._checks import check_choice, check_finite_array, check_int, check_positive
from .._random import SeedLike, check_random_state
from ..errors import DisconnectedGraphError, InvalidInputError, TopokitError
from ._config import NJIT_FLAGS
from ._sparse import sparse_adjacency

__all__ = ["FastestMixing", "fastest_mixing_weights"]

METHODS = ("auto", "sdp", "subgradient")

#: ``method="auto"`` solves the SDP up to this many nodes, the first-order method beyond.
#: Clarabel on the SDP, measured on 2 shared cores (Watts-Strogatz graphs, degree 4):
#: 0.04 s at 16 nodes, 0.4 s at 32, 2.5 s at 40, 4.4 s at 48, 13 s at 64; it grows like
#: n^6, so 100-150 nodes would take minutes to hours.
SDP_MAX_NODES = 48

#: Up to this many nodes the first-order method takes every eigenpair from LAPACK; beyond,
#: the extreme ones tracked by block Krylov steps on the sparse W.  300 steps on 2 shared
#: cores, LAPACK / tracked: 0.7 / 1.1 s at 96 nodes, 1.3 / 1.2 s at 128, 2.6 / 1.4 s at 192,
#: 7.3 / 2.6 s at 320 (the same SLEM to 1e-5).
DENSE_EIGEN_MAX = 128

#: Default ``tol`` and ``max_iter`` of each method.  The SDP's tolerance is Clarabel's (gaps
#: and feasibility); the first-order method's is the certified gap slem - lower_bound.
#: ``max_iter`` counts Clarabel's interior-point iterations, or accelerated gradient steps.
DEFAULT_TOL = {"sdp": 1e-8, "subgradient": 1e-4}
DEFAULT_MAX_ITER = {"sdp": 200, "subgradient": 20_000}

# First-order schedule: stage k smooths with sigma_0 / 2^k for ceil(FIRST_STAGE * GROWTH^k)
# steps.  Measured on random graphs of 8-64 nodes, the SLEM then falls like 1 / steps and the
# certified gap reaches 1e-4 after 150-2,300 steps (a stage's end is where it is checked).
_FIRST_STAGE = 20
_STAGE_GROWTH = 1.5
_SIGMA_MAX = 0.05
_STEP_GROWTH = 1.1  # per accepted step; backtracking halves it
# Until the first backtrack: the first step is a worst-case bound on the curvature, often
# 1e-6 times the steps the iteration later takes, which growing by 1.1 takes 150 steps to reach.
_FIRST_STEP_GROWTH = 2.0

# A warm start is already near the optimum: its first stage smooths half as much.
_WARM_SIGMA_DIVISOR = 2.0

# Large graphs: Ritz pairs tracked at each end of the spectrum, and the block Krylov steps
# of the first call (later calls take one, warm-started).
_KRYLOV_BLOCK = 12
_KRYLOV_COLD_STEPS = 30

# Projection: coordinate-ascent sweeps until no multiplier moves by more than this.
_PROJECTION_TOL = 1e-13
_PROJECTION_SWEEPS = 10_000


class FastestMixing(NamedTuple):
    """Result of :func:`fastest_mixing_weights`.

    Attributes
    ----------
    weights : ndarray of shape (n, n)
        W: symmetric, rows and columns summing to 1, non-negative, zero off the
        graph's links (the diagonal holds each node's self-weight).
    slem : float
        max(|lambda_2|, |lambda_n|) of ``weights``, from its eigenvalues.
    lower_bound : float
        A certified lower bound on the smallest SLEM any such W can have (from
        a dual feasible point of Boyd, Diaconis and Xiao's problem); ``slem - lower_bound`` bounds
        how far ``weights`` is from optimal.
    method : str
        "sdp" or "subgradient", the solver that ran.
    n_iter : int
        Clarabel's iterations, or the first-order method's steps.
    converged : bool
        "sdp": Clarabel reported an optimal solution.  "subgradient": the
        certified gap ``slem - lower_bound`` reached ``tol``.
    """

    weights: NDArray[np.float64]
    slem: float
    lower_bound: float
    method: str
    n_iter: int
    converged: bool

    @property
    def gap(self) -> float:
        """slem - lower_bound: a certified bound on the distance to the optimal SLEM."""
        return self.slem - self.lower_bound


# ---------------------------------------------------------------------------------------------
# The graph's links and the matrices built from them
# ---------------------------------------------------------------------------------------------


class _Links(NamedTuple):
    """The links l = {ei[l], ej[l]} (ei < ej) of a graph and, per node, the links it is on."""

    n: int
    ei: NDArray[np.int64]
    ej: NDArray[np.int64]
    indptr: NDArray[np.int64]  # the links of node i are incident[indptr[i]:indptr[i + 1]]
    incident: NDArray[np.int64]
    other: NDArray[np.int64]  # other[p]: the far end of link incident[p] (the projection's)

    @property
    def m(self) -> int:
        return self.ei.shape[0]

    def node_sums(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        """sum of w_l over the links of each node: 1 - W_ii."""
        return (np.bincount(self.ei, weights=w, minlength=self.n)
                + np.bincount(self.ej, weights=w, minlength=self.n))


def _links_of(adjacency: Any) -> _Links:
    """Validated links of a connected graph; raise DisconnectedGraphError otherwise."""
    links = sparse_adjacency(adjacency)  # validates; drops the diagonal
    n = links.shape[0]
    count, labels = connected_components(links, directed=False)
    if count > 1:
        sizes = np.bincount(labels)
        raise DisconnectedGraphError(
            f"the graph must be connected; it has {count} components (sizes "
            f"{', '.join(map(str, sorted(sizes.tolist(), reverse=True)[:4]))}"
            f"{', ...' if count > 4 else ''}), and no weights mix across them (SLEM 1). "
            "Add links joining them or compute weights per component."
        )
    upper = sp.triu(links, k=1).tocoo()
    ei, ej = upper.row.astype(np.int64), upper.col.astype(np.int64)
    m = ei.shape[0]
    ends = np.concatenate([ei, ej])
    order = np.argsort(ends, kind="stable")
    incident = np.concatenate([np.arange(m), np.arange(m)])[order].astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=n))]).astype(np.int64)
    other = np.concatenate([ej, ei])[order].astype(np.int64)
    return _Links(n, ei, ej, indptr, incident, other)


def _weight_matrix(links: _Links, w: NDArray[np.float64]) -> NDArray[np.float64]:
    """W(w) = I - sum_l w_l a_l a_l^T as a dense matrix."""
    weights = np.zeros((links.n, links.n))
    weights[links.ei, links.ej] = w
    weights[links.ej, links.ei] = w
    # Feasible w has node sums <= 1; the clip only removes a negative round-off of 1e-16.
    weights[np.diag_indices(links.n)] = np.maximum(1.0 - links.node_sums(w), 0.0)
    return weights


def _slem(weights: NDArray[np.float64]) -> float:
    """max(|lambda_2|, |lambda_n|) of a symmetric stochastic matrix (lambda_1 = 1 dropped)."""
    if weights.shape[0] == 1:
        return 0.0
    values = np.linalg.eigvalsh(weights)  # ascending; the last is the eigenvalue 1
    return float(max(abs(values[0]), abs(values[-2])))


def _feasible(links: _Links, w: NDArray[np.float64]) -> NDArray[np.float64]:
    """w clipped to >= 0 and scaled so no node sum exceeds 1 (a solver's round-off)."""
    w = np.maximum(w, 0.0)
    sums = links.node_sums(w)
    return w / np.maximum(1.0, np.maximum(sums[links.ei], sums[links.ej]))


def _edge_weights_of(links: _Links, matrix: Any) -> NDArray[np.float64]:
    """The link weights of an (n, n) matrix (symmetrised; entries off the links ignored),
    made feasible: a start for the first-order method."""
    if sp.issparse(matrix):
        matrix = sp.csr_array(matrix)
        shape = matrix.shape
    else:
        matrix = check_finite_array(matrix, "initial_weights", ndim=2)
        shape = matrix.shape
    if shape != (links.n, links.n):
        raise InvalidInputError(
            f"initial_weights must be a matrix of shape ({links.n}, {links.n}), one row per "
            f"node of the graph; got shape {shape}"
        )
    upper = np.asarray(matrix[links.ei, links.ej], dtype=np.float64).ravel()
    lower = np.asarray(matrix[links.ej, links.ei], dtype=np.float64).ravel()
    if not np.all(np.isfinite(upper) & np.isfinite(lower)):
        raise InvalidInputError("initial_weights contains NaN or inf values on the links")
    return _feasible(links, (upper + lower) / 2.0)


def _metropolis_edge_weights(links: _Links) -> NDArray[np.float64]:
    """Metropolis-Hastings weights 1 / (1 + max(deg_i, deg_j)): feasible, the usual start."""
    degree = np.diff(links.indptr)
    return 1.0 / (1.0 + np.maximum(degree[links.ei], degree[links.ej]))


# ---------------------------------------------------------------------------------------------
# Projection onto {w >= 0, node sums <= 1}
# ---------------------------------------------------------------------------------------------


@njit(**NJIT_FLAGS)
def _node_threshold(excess, start, stop, total, previous):
    """The t >= 0 with sum_p max(excess[p] - t, 0) = 1 over excess[start:stop] (total > 1).

    Newton's method on the convex, decreasing, piecewise linear
    f(t) = sum_p max(excess[p] - t, 0) - 1 (Michelot's simplex algorithm): from a
    point left of the root each step lands on or left of it, and the steps stop
    once the set of excesses above t no longer changes, at the root exactly.  It
    starts from ``previous`` (the node's last threshold: the sweeps move it little,
    so one or two passes over the links usually settle it) if that lies left of
    the root, else from 0.  O(degree) per pass, where a sort costs O(degree log degree).
    The set of excesses above t only shrinks, so at most degree passes.
    """
    above, count = 0.0, 0
    for p in range(start, stop):
        if excess[p] > previous:
            above += excess[p]
            count += 1
    threshold = previous
    if count == 0 or above - count * previous < 1.0:  # right of the root: start from 0
        threshold, above, count = 0.0, total, 0
        for p in range(start, stop):
            if excess[p] > 0.0:
                count += 1
    while True:
        threshold = max((above - 1.0) / count, 0.0)
        above_next, count_next = 0.0, 0
        for p in range(start, stop):
            if excess[p] > threshold:
                above_next += excess[p]
                count_next += 1
        # The set can only shrink; round-off can grow it back when the root is ~1e-14 (a
        # sum just above 1), and the passes would then cycle: stop once it does not shrink.
        if count_next >= count:
            return threshold
        above, count = above_next, count_next


@njit(**NJIT_FLAGS)
def _project_kernel(y, ei, ej, indptr, incident, other, multipliers, tol, max_sweeps):
    """Euclidean projection of y onto {w >= 0, sum_{l on i} w_l <= 1 for every node i}.

    The projection is w_l = max(y_l - nu_i - nu_j, 0) for the optimal node
    multipliers nu >= 0 of its dual.  Coordinate ascent on the dual: each node
    in turn takes the nu_i that makes its own sum exactly 1 (a simplex-style
    threshold over its links, :func:`_node_threshold`) or 0 if its sum is
    already <= 1 -- one sweep cuts every node back in turn, as Boyd, Diaconis
    and Xiao (2004, Sec. 5) do; sweeps repeat until no nu_i moves by more than
    ``tol``.  ``multipliers`` is updated in place (a warm start for the next
    call).  Returns w and the number of sweeps.
    """
    n = multipliers.shape[0]
    excess = np.empty(incident.shape[0])  # y_l - nu_j at each (node, link) position
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        largest_move = 0.0
        for i in range(n):
            start, stop = indptr[i], indptr[i + 1]
            total = 0.0
            for p in range(start, stop):
                value = y[incident[p]] - multipliers[other[p]]
                excess[p] = value
                if value > 0.0:
                    total += value
            threshold = 0.0
            if total > 1.0:
                threshold = _node_threshold(excess, start, stop, total, multipliers[i])
            largest_move = max(largest_move, abs(threshold - multipliers[i]))
            multipliers[i] = threshold
        if largest_move <= tol:
            break
    w = np.empty_like(y)
    for link in range(y.shape[0]):
        w[link] = max(y[link] - multipliers[ei[link]] - multipliers[ej[link]], 0.0)
    return w, sweeps


class _Projector:
    """Projection onto the feasible weights, warm-started from the previous call."""

    def __init__(self, links: _Links):
        self.links = links
        self.multipliers = np.zeros(links.n)

    def __call__(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        links = self.links
        w, _ = _project_kernel(np.ascontiguousarray(y), links.ei, links.ej, links.indptr,
                               links.incident, links.other, self.multipliers,
                               _PROJECTION_TOL, _PROJECTION_SWEEPS)
        return _feasible(links, w)  # exact feasibility even if the sweeps stopped early


# ---------------------------------------------------------------------------------------------
# The dual bound
# ---------------------------------------------------------------------------------------------


def _dual_bound(links: _Links, g: NDArray[np.float64], trace: float) -> float:
    """Certified lower bound tr Y - max_{w feasible} sum_l w_l g_l on the optimal SLEM.

    ``g[l] = a_l^T Y a_l`` and ``trace = tr Y`` for a symmetric Y with Y1 = 0
    and nuclear norm <= 1; then tr(Y (W - J)) = tr Y - sum_l w_l g_l <= ||W - J||_2
    for every feasible W.  The max is a fractional matching LP; any y >= 0 with
    y_i + y_j >= g_l bounds it from above by sum_i y_i, so HiGHS's dual
    solution, repaired to exact feasibility, keeps the bound rigorous.
    """
    from scipy.optimize import linprog  # loaded when first needed, as topokit's other users do

    useful = np.flatnonzero(g > 0.0)  # links with g_l <= 0 never help the max
    if useful.size == 0:
        return float(trace)
    rows = np.concatenate([links.ei[useful], links.ej[useful]])
    columns = np.concatenate([np.arange(useful.size)] * 2)
    incidence = sp.csr_array((np.ones(rows.size), (rows, columns)),
                             shape=(links.n, useful.size))
    result = linprog(-g[useful], A_ub=incidence, b_ub=np.ones(links.n), bounds=(0, None),
                     method="highs")
    if result.status != 0:
        return -np.inf
    node_prices = np.maximum(-result.ineqlin.marginals, 0.0)
    shortfall = np.max(g - node_prices[links.ei] - node_prices[links.ej])
    if shortfall > 0.0:
        node_prices += shortfall / 2.0
    return float(trace - node_prices.sum())


# ---------------------------------------------------------------------------------------------
# Method "sdp"
# ---------------------------------------------------------------------------------------------


class _Solved(NamedTuple):
    w: NDArray[np.float64]
    lower_bound: float
    n_iter: int
    converged: bool


def _incidence(links: _Links) -> sp.csr_array:
    """The n x m oriented incidence matrix: column l is a_l = e_i - e_j."""
    columns = np.concatenate([np.arange(links.m)] * 2)
    values = np.concatenate([np.ones(links.m), -np.ones(links.m)])
    return sp.csr_array((values, (np.concatenate([links.ei, links.ej]), columns)),
                        shape=(links.n, links.m))


def _bound_from_matrix(links: _Links, dual: NDArray[np.float64]) -> float:
    """:func:`_dual_bound` of a symmetric matrix, made feasible (Y1 = 0, nuclear norm <= 1)."""
    centred = dual - dual.mean(axis=0) - dual.mean(axis=1)[:, None] + dual.mean()
    centred = (centred + centred.T) / 2.0
    centred /= max(1.0, float(np.abs(np.linalg.eigvalsh(centred)).sum()))
    g = (centred[links.ei, links.ei] + centred[links.ej, links.ej]
         - 2.0 * centred[links.ei, links.ej])
    return _dual_bound(links, g, float(np.trace(centred)))


def _solve_sdp(links: _Links, tol: float, max_iter: int) -> _Solved:
    """min t s.t. -tI <= W(w) - J <= tI, w >= 0, node sums <= 1, by Clarabel."""
    import cvxpy as cp  # heavy: loaded only when the SDP is solved

    n, incidence = links.n, _incidence(links)
    w = cp.Variable(links.m, nonneg=True)
    t = cp.Variable()
    centred = np.eye(n) - np.full((n, n), 1.0 / n) - incidence @ cp.diag(w) @ incidence.T
    upper = centred << t * np.eye(n)
    lower = centred >> -t * np.eye(n)
    problem = cp.Problem(cp.Minimize(t), [abs(incidence) @ w <= 1, upper, lower])
    try:
        problem.solve(solver=cp.CLARABEL, max_iter=max_iter, tol_gap_abs=tol,
                      tol_gap_rel=tol, tol_feas=tol)
    except cp.SolverError as error:
        raise TopokitError(
            f"the SDP solver failed on this {n}-node graph ({error}); "
            "use method='subgradient'"
        ) from None
    if w.value is None:
        raise TopokitError(
            f"the SDP solver ended with status {problem.status!r} and no solution on this "
            f"{n}-node graph; use method='subgradient'"
        )
    iterations = int(problem.solver_stats.num_iters or 0)
    bound = _bound_from_matrix(links, upper.dual_value - lower.dual_value)
    return _Solved(_feasible(links, w.value), bound, iterations,
                   problem.status == cp.OPTIMAL)


# ---------------------------------------------------------------------------------------------
# Method "subgradient": eigenpairs of W(w) on the complement of the constant vector
# ---------------------------------------------------------------------------------------------


class _DenseSpectrum:
    """Every eigenpair of W(w) but the consensus one, by LAPACK.

    ``at(w)`` gives the eigenpairs at a point where a gradient is needed;
    ``values(w)`` only the eigenvalues, for the backtracking test.
    """

    def __init__(self, links: _Links):
        self.links = links
        self.consensus = np.full((links.n, links.n), 1.0 / links.n)

    def _shifted(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        # W + J moves the eigenvalue 1 of the constant vector to 2, above all others (<= 1):
        # dropping the largest leaves lambda_2, ..., lambda_n with eigenvectors orthogonal to 1.
        return _weight_matrix(self.links, w) + self.consensus

    def at(self, w: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        values, basis = np.linalg.eigh(self._shifted(w))
        return values[:-1], basis[:, :-1]

    def values(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.linalg.eigvalsh(self._shifted(w))[:-1]


class _SparseSpectrum:
    """The extreme eigenpairs of W(w), tracked from step to step in a small subspace.

    W maps the vectors orthogonal to 1 to themselves (it is symmetric with
    W1 = 1), so a block kept orthogonal to 1 stays so.  ``at(w)`` extends the
    tracked block X (the k extreme Ritz vectors at each end from the previous
    call) to the subspace S = span{X, WX, W^2 X} and returns the Ritz pairs of
    W on S: one block Lanczos step per call, warm-started while w moves by
    small steps, so over the iterations it converges like block Lanczos.
    ``values(w)`` gives the Ritz values of W(w) on the same S: the backtracking
    test then compares values of one smooth model (the smoothed SLEM of the
    compression S^T W S, affine in w), not two differently converged spectra.
    Sparse products and small dense eigenproblems only.
    """

    def __init__(self, links: _Links, rng: np.random.Generator):
        n = links.n
        self.links = links
        self.block = min(_KRYLOV_BLOCK, (n - 1) // 6)
        self.tracked = _orthonormal(rng.standard_normal((n, 2 * self.block)))
        self.space = self.tracked
        rows = np.concatenate([links.ei, links.ej, np.arange(n)])
        columns = np.concatenate([links.ej, links.ei, np.arange(n)])
        pattern = sp.csr_array((np.arange(1.0, rows.size + 1.0), (rows, columns)), shape=(n, n))
        self.order = pattern.data.astype(np.int64) - 1  # CSR slot -> entry of `values`
        self.pattern = pattern
        self.sweeps = _KRYLOV_COLD_STEPS  # the first call starts from a random block

    def matrix(self, w: NDArray[np.float64]) -> sp.csr_array:
        values = np.concatenate([w, w, 1.0 - self.links.node_sums(w)])
        return sp.csr_array((values[self.order], self.pattern.indices, self.pattern.indptr),
                            shape=self.pattern.shape)

    def at(self, w: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        matrix, k = self.matrix(w), self.block
        for _ in range(self.sweeps):
            once = matrix @ self.tracked
            self.space = _orthonormal(np.hstack([self.tracked, once, matrix @ once]))
            values, ritz = np.linalg.eigh(self.space.T @ (matrix @ self.space))
            extremes = np.concatenate([np.arange(k), np.arange(values.size - k, values.size)])
            self.tracked = self.space @ ritz[:, extremes]
        self.sweeps = 1
        return values, self.space @ ritz

    def values(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.linalg.eigvalsh(self.space.T @ (self.matrix(w) @ self.space))


def _orthonormal(block: NDArray[np.float64]) -> NDArray[np.float64]:
    """An orthonormal basis of the part of span(block) orthogonal to 1 (rank-revealing)."""
    block = block - block.mean(axis=0)
    for _ in range(2):  # the second pass restores orthonormality to round-off
        values, vectors = np.linalg.eigh(block.T @ block)
        keep = values > 1e-20 * max(values[-1], 1e-300)
        block = block @ (vectors[:, keep] / np.sqrt(values[keep]))
        block -= block.mean(axis=0)
    return block


def _spectrum(links: _Links, rng: np.random.Generator) -> _DenseSpectrum | _SparseSpectrum:
    return _DenseSpectrum(links) if links.n <= DENSE_EIGEN_MAX else _SparseSpectrum(links, rng)


class _Smoothed(NamedTuple):
    """f_sigma at w: its value, the SLEM seen, and the dual matrix Y = dF/dW it comes with."""

    value: float
    slem: float
    g: NDArray[np.float64] | None  # g_l = a_l^T Y a_l; the gradient in w is -g
    trace: float  # tr Y


def _smoothed(links: _Links, spectrum, w: NDArray[np.float64], sigma: float,
              gradient: bool = True) -> _Smoothed:
    """f_sigma(w) = sigma log sum_k (exp(lambda_k / sigma) + exp(-lambda_k / sigma))."""
    values, basis = spectrum.at(w) if gradient else (spectrum.values(w), None)
    slem = float(np.abs(values).max())
    up = np.exp((values - slem) / sigma)
    down = np.exp((-values - slem) / sigma)
    total = up.sum() + down.sum()
    value = slem + sigma * np.log(total)
    if not gradient:
        return _Smoothed(value, slem, None, 0.0)
    # Y = sum_k c_k u_k u_k^T, c_k = softmax(+) - softmax(-): sum |c_k| <= 1 and Y1 = 0.
    weights = (up - down) / total
    kept = np.flatnonzero(np.abs(weights) > 1e-17)
    vectors = basis[:, kept]  # before gathering the links' ends: often a few columns of many
    differences = vectors[links.ei] - vectors[links.ej]
    return _Smoothed(value, slem, (differences * differences) @ weights[kept],
                     float(weights[kept].sum()))


# ---------------------------------------------------------------------------------------------
# Method "subgradient": the accelerated smoothed iteration
# ---------------------------------------------------------------------------------------------


class _State:
    """What the first-order method carries between stages."""

    def __init__(self, w: NDArray[np.float64], slem: float, step: float):
        self.w = w  # the current iterate
        self.best_w, self.best_slem = w, slem
        self.step = step
        self.growth = _FIRST_STEP_GROWTH  # _STEP_GROWTH after the first backtrack
        self.n_iter = 0
        self.lower_bound = -np.inf


def _step(links, spectrum, project, y, at_y: _Smoothed, sigma, state):
    """One projected gradient step from y, backtracking until the quadratic model holds."""
    while True:
        x = project(y + state.step * at_y.g)  # the gradient is -g
        at_x = _smoothed(links, spectrum, x, sigma, gradient=False)
        moved = x - y
        model = at_y.value - at_y.g @ moved + moved @ moved / (2.0 * state.step)
        if at_x.value <= model + 1e-14 * max(1.0, abs(model)) or state.step < 1e-16:
            return x, at_x
        state.step /= 2.0
        state.growth = _STEP_GROWTH


def _stage(links, spectrum, project, state: _State, sigma: float, steps: int,
           max_iter: int) -> tuple[NDArray[np.float64], float]:
    """FISTA on f_sigma for ``steps`` steps; returns the stage's momentum-weighted mean of g, tr Y.

    Gradient restarts (O'Donoghue and Candes) drop the momentum whenever the
    step turns against it; unlike restarts on the function value, they only
    compare quantities of one step.  The stage's mean dual matrix is a
    certificate (see :func:`_dual_bound`) that tightens as the iterates settle.
    """
    previous = y = state.w
    theta = 1.0
    g_sum, trace_sum, weight_sum = np.zeros(links.m), 0.0, 0.0
    for _ in range(min(steps, max_iter - state.n_iter)):
        at_y = _smoothed(links, spectrum, y, sigma)
        g_sum += theta * at_y.g
        trace_sum += theta * at_y.trace
        weight_sum += theta
        x, at_x = _step(links, spectrum, project, y, at_y, sigma, state)
        state.n_iter += 1
        if at_x.slem < state.best_slem:
            state.best_w, state.best_slem = x, at_x.slem
        if (y - x) @ (x - previous) > 0.0:
            y, previous, theta = x, x, 1.0
            continue
        theta_next = (1.0 + np.sqrt(1.0 + 4.0 * theta * theta)) / 2.0
        y = x + ((theta - 1.0) / theta_next) * (x - previous)
        theta, previous = theta_next, x
        state.step *= state.growth
    state.w = previous
    if weight_sum == 0.0:
        return np.zeros(links.m), 0.0
    return g_sum / weight_sum, trace_sum / weight_sum


def _certified(links: _Links, spectrum, state: _State, tol: float) -> bool:
    """Whether the best SLEM is within tol of the lower bound (recomputed exactly if tracked)."""
    if state.best_slem - state.lower_bound > tol:
        return False
    if isinstance(spectrum, _SparseSpectrum):  # Ritz values lie inside the true extremes
        state.best_slem = _slem(_weight_matrix(links, state.best_w))
    return state.best_slem - state.lower_bound <= tol


def _start(links: _Links, spectrum, initial: NDArray[np.float64] | None
           ) -> tuple[NDArray[np.float64], float, bool]:
    """The start point, its SLEM, and whether it is ``initial`` (else Metropolis-Hastings).

    ``initial`` is taken only if it mixes no slower than Metropolis-Hastings, so a poor
    warm start never makes the result slower than the cold one's start.
    """
    metropolis = _metropolis_edge_weights(links)
    if initial is None:
        return metropolis, _smoothed(links, spectrum, metropolis, 1.0).slem, False
    # The initial point first: the tracked spectrum converges on it (the cold steps).
    initial_slem = _smoothed(links, spectrum, initial, 1.0).slem
    metropolis_slem = _smoothed(links, spectrum, metropolis, 1.0).slem
    if initial_slem <= metropolis_slem:
        spectrum.at(initial)  # track the start's eigenvectors again
        return initial, initial_slem, True
    return metropolis, metropolis_slem, False


def _solve_first_order(links: _Links, tol: float, max_iter: int, rng: np.random.Generator,
                       initial: NDArray[np.float64] | None = None) -> _Solved:
    """Smoothed accelerated projected gradient with continuation in sigma; see the module doc."""
    spectrum = _spectrum(links, rng)
    project = _Projector(links)
    start, start_slem, warm = _start(links, spectrum, initial)
    sigma = float(np.clip((1.0 - start_slem) / 4.0, tol, _SIGMA_MAX))
    if warm:
        sigma = max(sigma / _WARM_SIGMA_DIVISOR, tol)
    # A safe first step: the Hessian of f_sigma is at most (2 max degree + 2) / sigma.
    state = _State(start, start_slem, sigma / (2.0 * np.diff(links.indptr).max() + 2.0))
    stage = 0
    while state.n_iter < max_iter:
        steps = int(np.ceil(_FIRST_STAGE * _STAGE_GROWTH**stage))
        g_mean, trace_mean = _stage(links, spectrum, project, state, sigma, steps, max_iter)
        state.lower_bound = max(state.lower_bound, _dual_bound(links, g_mean, trace_mean))
        if _certified(links, spectrum, state, tol):
            break
        sigma, stage = sigma / 2.0, stage + 1
        state.step /= 2.0  # the curvature of f_sigma doubles with 1 / sigma
    return _Solved(state.best_w, state.lower_bound, state.n_iter, False)


# ---------------------------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------------------------


def fastest_mixing_weights(
    adjacency: Any,
    *,
    method: str = "auto",
    tol: float | None = None,
    max_iter: int | None = None,
    seed: SeedLike = None,
    initial_weights: Any = None,
) -> FastestMixing:
    """Fastest-mixing symmetric weights on a graph's links (Boyd, Diaconis and Xiao).

    Minimises the second-largest eigenvalue modulus
    :math:`\\mu(W) = \\|W - \\mathbf{1}\\mathbf{1}^T/n\\|_2` over symmetric W with
    W1 = 1, W >= 0 and W_ij = 0 for i != j not linked (Boyd, Diaconis and Xiao,
    2004, Sec. 1.1), i.e.
    over the edge weights of :math:`W = I - \\sum_l w_l a_l a_l^T`.  The weights
    mix at least as fast as Metropolis-Hastings or Lazy-Metropolis ones, often
    much faster.

    Parameters
    ----------
    adjacency : networkx.Graph, scipy sparse matrix or array-like of shape (n, n)
        A connected undirected graph (node order ``list(graph)``) or its
        symmetric adjacency matrix: any non-zero off-diagonal entry is a link,
        the diagonal (self-loops) is ignored (every node may keep a self-weight).
    method : {"auto", "sdp", "subgradient"}, default "auto"
        "sdp" solves the semidefinite program with Clarabel (exact; practical
        up to about ``SDP_MAX_NODES`` = 48 nodes, its cost grows like n^6).
        "subgradient" runs the first-order method of the module docstring
        (smoothed subgradients, accelerated, with a certified stopping rule);
        a few hundred steps, under a minute of CPU, for the links of a design
        on a 1,000-device SIoT network (2 shared cores).  "auto" takes "sdp" up to
        ``SDP_MAX_NODES`` nodes and "subgradient" beyond.
    tol : float, optional
        "sdp": Clarabel's gap and feasibility tolerance (default 1e-8).
        "subgradient": stop once ``slem - lower_bound <= tol`` (default 1e-4),
        which certifies ``slem <= optimum + tol``.  The SLEM falls about like
        1 / steps, the certificate somewhat slower: 1e-4 takes a few hundred
        to a few thousand steps on most graphs of the tests (8-64 nodes; one
        of 30 nodes about 20,000) and a few hundred on SIoT designs of 1,000
        devices; 1e-5 can take ten times as many.
    max_iter : int, optional
        "sdp": Clarabel's iterations (default 200).  "subgradient": accelerated
        gradient steps, each one or two eigendecompositions (default 20,000).
    seed : int, numpy.random.Generator or None
        Start block of the eigenvector tracking, used by "subgradient" on
        graphs of more than ``DENSE_EIGEN_MAX`` nodes (None: fresh entropy);
        on smaller graphs the result is deterministic.
    initial_weights : array-like or scipy sparse matrix of shape (n, n), optional
        A warm start for "subgradient": a mixing matrix on the same node order,
        typically the ``weights`` of an earlier result on a subset or superset
        of these links (its entries off the links are ignored, links it lacks
        start at 0; it is symmetrised and scaled to be feasible).  The method
        starts from it, with a smoothing ``sigma`` half the cold one, when its
        SLEM is no larger than that of the Metropolis-Hastings weights it
        otherwise starts from.  The result is certified within ``tol`` either
        way (``converged``), but it depends on the start: a warm and a cold
        run agree to ``tol`` in SLEM, not bit for bit.  Ignored by "sdp".

    Returns
    -------
    FastestMixing
        ``weights`` (n, n), ``slem``, a certified ``lower_bound`` on the optimal
        SLEM, the ``method`` used, ``n_iter`` and ``converged``.

    Raises
    ------
    DisconnectedGraphError
        If the graph is not connected (no weights mix across components).
    InvalidInputError
        If the adjacency is not square or not symmetric, has NaN, infinite or
        negative entries, or the graph is directed; or if ``method``, ``tol``,
        ``max_iter`` or ``initial_weights`` is invalid.
    TopokitError
        If the SDP solver fails (use ``method="subgradient"``).

    See Also
    --------
    metropolis, lazy_metropolis : the usual heuristic weights.

    Notes
    -----
    On a path of n nodes the optimum puts 1/2 on every link and its SLEM is
    :math:`\\cos(\\pi/n)` (Boyd, Diaconis, Sun and Xiao, 2006); on the complete
    graph it is W = J, SLEM 0.
    Self-weights may be 0: unlike Lazy-Metropolis weights (W_ii >= 1/2),
    fastest-mixing ones are often not lazy and can have negative eigenvalues,
    so their SLEM may be set by lambda_n rather than lambda_2.  ``weights`` is
    dense; it is built from the solver's edge weights, so symmetry, the zeros
    off the graph and the unit row sums hold to round-off whatever the solver's
    accuracy.

    Examples
    --------
    The path of 4 nodes (Boyd, Diaconis, Sun and Xiao, 2006): weight 1/2 on every
    link, SLEM cos(pi/4).

    >>> import networkx as nx
    >>> result = fastest_mixing_weights(nx.path_graph(4))
    >>> np.diagonal(result.weights, 1).round(3).tolist()  # the links (i, i + 1)
    [0.5, 0.5, 0.5]
    >>> round(result.slem, 6), result.method, result.converged
    (0.707107, 'sdp', True)
    >>> result.gap < 1e-6
    True
    """
    method = check_choice(method, "method", METHODS)
    links = _links_of(adjacency)
    resolved = method if method != "auto" else (
        "sdp" if links.n <= SDP_MAX_NODES else "subgradient")
    tol = DEFAULT_TOL[resolved] if tol is None else check_positive(tol, "tol")
    max_iter = (DEFAULT_MAX_ITER[resolved] if max_iter is None
                else check_int(max_iter, "max_iter", low=1))
    rng = check_random_state(seed)
    initial = None if initial_weights is None else _edge_weights_of(links, initial_weights)
    if links.m == 0:  # one node: nothing to mix
        return FastestMixing(np.ones((1, 1)), 0.0, 0.0, resolved, 0, True)
    # BLAS on one thread: the matrices are small or the products thin, and spinning threads
    # slow everything on a shared machine (eigh of 32 x 32: 0.15 ms on one, 12 ms on two).
    with one_blas_thread():
        if resolved == "sdp":
            solved = _solve_sdp(links, tol, max_iter)
        else:
            solved = _solve_first_order(links, tol, max_iter, rng, initial)
        weights = _weight_matrix(links, solved.w)
        slem = _slem(weights)
    converged = solved.converged if resolved == "sdp" else slem - solved.lower_bound <= tol
    return FastestMixing(weights, slem, float(min(solved.lower_bound, slem)), resolved,
                         solved.n_iter, bool(converged))
