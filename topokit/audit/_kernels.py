"""The arithmetic of the network-privacy audit (:func:`topokit.audit.privacy_audit`).

One observer k at a time (the caller runs observers in threads).  Notation of
:mod:`topokit.audit`: W the Lazy-Metropolis matrix, O = N(k) the
devices k hears, U the others (k included), q_j = z_j^2 the noise variance of
device j (0 for k itself when k knows its own draws), T the rounds.

- :func:`revealed_leverage`: which owners k can read exactly, from the
  subspace of noise-free functionals of s that k's view determines (a
  recursion on subspaces of R^n with one application of W per round, well
  conditioned, unlike the powers W^t).
- :func:`batch_information`: the Fisher information of every owner from the
  whole view at once, through a square-root factor of C = Cov(view) computed
  round by round from its generator (the generalised Schur algorithm: C
  itself is never formed, so its condition number is not squared).  Cheap
  when T |O| is small; the accurate one.
- :func:`filter_information`: the same from a Kalman filter on the hidden
  messages m_U (innovations, one |O| x |O| covariance per round).  Cheap when
  k hears many devices; it works with covariances, so it refuses (and the
  batch method takes over) when an innovation covariance is ill-conditioned.
  An observer hiding at most DENSE_DEVICES devices runs it compiled, on dense
  blocks (:mod:`topokit.audit._compiled`).
- :func:`observer_column`: mu_ik for every owner i, choosing the cheaper of
  the two by a flop count.
- :func:`dsgd_information` and :func:`observer_bounds`: the D-SGD model, in
  which an owner's contribution enters every round (T delayed shifts per
  owner, solved against the same square-root factor).
- :func:`stranger_summary`: the exposed stranger count and the worst finite
  stranger mu, computing only the owners that can change them;
  :func:`stranger_mu_max` the same straight from arrays, for topology searches.

These functions trust their inputs (validated by ``privacy_audit``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numpy.typing import NDArray

#: Singular values below this count as zero in the revealed-subspace recursion.  Every
#: matrix there has columns of norm <= 1 (W applied to unit or orthonormal vectors), so
#: the tolerance is absolute.  A direction kept at sigma carries errors of about
#: 1e-16 / sigma, far below LEVERAGE_TOL.
RANK_TOL = 1e-8
#: An owner is exposed when the projection of e_i on the revealed subspace exceeds this.
#: On the tests' random topologies exposed owners have >= 0.07, the others <= 1e-13.
LEVERAGE_TOL = 1e-6
#: Pivots of the square-root factor of the view covariance below this fraction of the
#: largest row norm of its generator are zero (noise-free combinations of the view).
#: Square-root quantities carry errors of about 1e-16 of that scale.
PIVOT_RTOL = 1e-12
#: Eigenvalues of an innovation covariance (the Kalman filter) below this fraction of
#: the largest are zero (noise-free combinations of what k hears).
COVARIANCE_RTOL = 1e-12
#: An innovation covariance with an eigenvalue between COVARIANCE_RTOL and this fraction
#: of the largest is ill-conditioned for the filter, which works with covariances (squared
#: condition numbers): the observer goes to the square-root batch method instead.  On 80
#: random cases (the tests' kind) the filter, so guarded, agrees with the twin to 2e-10
#: (refusing 1 observer in 733); unguarded, only to 2e-7.
FILTER_RCOND = 1e-8
#: Relative costs, in dense GEMM multiply-adds, of a multiply-add in a sparse product
#: (scipy's CSR kernels) and in the batch method's thin Householder updates; used to pick
#: the cheaper method for each observer.
SPARSE_COST = 6.0
BATCH_COST = 3.0
#: An observer that hides at most this many devices runs the compiled dense filter
#: (:mod:`topokit.audit._compiled`), and networks this small find the revealed subspace on
#: dense blocks: there scipy's per-call overhead, not arithmetic, is the cost.  Per observer
#: on SIoT networks with random topologies (``python -m analyses.audit_filter``), compiled
#: against sparse: 0.41 vs 2.59 ms at 16 devices, 9.8 vs 15.4 ms at 128, even at 256.
DENSE_DEVICES = 128

METHODS = ("batch", "filter")
MODELS = ("gossip", "dsgd")
#: Bytes of the D-SGD solves' workspace (T x K x owners) per chunk of owners.
DSGD_CHUNK_BYTES = 64e6


class AuditProblem(NamedTuple):
    """What every observer's computation shares."""

    weights: sp.csr_array            # W, (n, n)
    neighbours: tuple[NDArray[np.int64], ...]  # topology neighbours of each device, sorted
    variance: NDArray[np.float64]    # q_j = z_j^2, (n,)
    rounds: int                      # T >= 1
    knows_own_noise: bool            # the observer's own draws are known to it
    model: str = "gossip"            # "gossip" (s enters at round 0) or "dsgd" (every round)


def observer_variance(problem: AuditProblem, k: int) -> NDArray[np.float64]:
    """The noise variances as observer k sees them (its own draws known: q_k = 0)."""
    if not problem.knows_own_noise:
        return problem.variance
    variance = problem.variance.copy()
    variance[k] = 0.0
    return variance


def _null_space(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """Orthonormal basis of {x : matrix x = 0} (singular values <= RANK_TOL are zero)."""
    rows, cols = matrix.shape
    if rows == 0:
        return np.eye(cols)
    _, values, vt = np.linalg.svd(matrix, full_matrices=True)
    rank = int((values > RANK_TOL).sum())
    return vt[rank:].T


def _new_directions(candidates: NDArray[np.float64], basis: NDArray[np.float64]
                    ) -> NDArray[np.float64]:
    """Orthonormal directions of span(candidates) outside span(basis) (basis orthonormal)."""
    for _ in range(2):  # project twice: one Gram-Schmidt pass loses orthogonality
        candidates = candidates - basis @ (basis.T @ candidates)
    if candidates.shape[1] == 0:
        return candidates
    left, values, _ = np.linalg.svd(candidates, full_matrices=False)
    return left[:, values > RANK_TOL]


def revealed_leverage(problem: AuditProblem, k: int) -> NDArray[np.float64]:
    """||P_R e_i|| for every device i, R the functionals of s that k's view fixes exactly.

    With E_O the coordinates k hears and P the noisy devices, R = R_T where
    R_1 = span(e_j : j in O, q_j = 0) and
    R_h = (span(e_O) + W R_{h-1}) intersected with {v : v_P = 0}:
    the dual of "a perturbation e_i can be hidden by noise for T rounds".
    R lies on the clean devices: the clean heard ones, plus a subspace F of
    the clean hidden ones, grown one round at a time until it stops growing
    (then it is fixed: the recursion repeats itself).
    """
    weights, variance = problem.weights, observer_variance(problem, k)
    n = variance.size
    heard = np.zeros(n, dtype=bool)
    heard[problem.neighbours[k]] = True
    noisy = variance > 0
    clean_heard = np.flatnonzero(heard & ~noisy)
    hidden = np.flatnonzero(~heard & ~noisy)      # clean devices k does not hear
    blocked = np.flatnonzero(noisy & ~heard)       # rows a revealed vector must vanish on
    leverage = np.zeros(n)
    leverage[clean_heard] = 1.0
    if clean_heard.size == 0 or hidden.size == 0:
        return leverage  # nothing is revealed, or nothing beyond what k hears
    if blocked.size == 0 and (weights.data >= 0).all():
        leverage[hidden] = _reached(weights, clean_heard, hidden, problem.rounds - 1)
        return leverage
    if n <= DENSE_DEVICES:
        # Small: dense blocks; scipy's sparse slicing costs more than the products it saves.
        weights = weights.toarray()
        from_heard = weights[:, clean_heard]                  # W e_j, j clean heard
    else:
        from_heard = weights[:, clean_heard].toarray()
    to_blocked, to_hidden = weights[blocked][:, hidden], weights[hidden][:, hidden]
    found = np.zeros((hidden.size, 0))
    for _ in range(problem.rounds - 1):
        # X = W [e_O_clean, F] on the blocked and the hidden rows.
        x_blocked = np.hstack([from_heard[blocked], to_blocked @ found])
        x_hidden = np.hstack([from_heard[hidden], to_hidden @ found])
        new = _new_directions(x_hidden @ _null_space(x_blocked), found)
        if new.shape[1] == 0:
            break
        found = np.hstack([found, new])
    leverage[hidden] = np.linalg.norm(found, axis=1)
    return leverage


def _reached(weights: sp.csr_array, sources: NDArray[np.int64], hidden: NDArray[np.int64],
             steps: int) -> NDArray[np.float64]:
    """1.0 for every hidden device a walk of 1 to ``steps`` hops of W reaches from ``sources``
    through hidden devices only, else 0.0: :func:`revealed_leverage` when no unheard device
    adds noise and W >= 0.

    Then nothing blocks the recursion, and R on the hidden devices is the span of
    W_HH^t W_HS e_j (j a source, t < ``steps``): a hidden device has a nonzero
    coordinate in R exactly when one of these nonnegative vectors has, that is when
    such a walk reaches it (no cancellation).  This is the exact answer; the
    recursion's floating-point subspaces can miss a direction that arrives only
    through many small weights (below ``RANK_TOL``), never find one that is not
    there.  One sparse product per hop instead of an SVD per round.
    """
    if steps < 1:
        return np.zeros(hidden.size)
    # Counts of walks' predecessors in int64: a device can have more than 127 of them.
    rows = weights[hidden]  # the rows of the hidden devices, sliced once
    into_hidden = (rows[:, sources] != 0).astype(np.int64)
    among_hidden = (rows[:, hidden] != 0).astype(np.int64)
    frontier = np.asarray(into_hidden.sum(axis=1)).ravel() > 0
    reached = frontier.copy()
    for _ in range(steps - 1):
        following = (among_hidden @ frontier.astype(np.int64)) > 0
        if np.array_equal(following, frontier):
            break  # the walks' ends repeat from here on
        frontier = following
        reached |= frontier
    return reached.astype(np.float64)


def _propagated(problem: AuditProblem, heard: NDArray[np.int64]) -> NDArray[np.float64]:
    """V[t] = W^t E_O for t < T, shape (T, n, d): one sparse product per round."""
    n, rounds = problem.variance.size, problem.rounds
    powers = np.empty((rounds, n, heard.size))
    powers[0] = 0.0
    powers[0][heard, np.arange(heard.size)] = 1.0
    for t in range(1, rounds):
        powers[t] = problem.weights @ powers[t - 1]
    return powers


def _householder_product(reflectors: NDArray[np.float64], tau: NDArray[np.float64]
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """V, T with H_1 ... H_k = I - V T V^T (LAPACK's compact WY form, forward columnwise).

    ``reflectors``, ``tau``: a QR factorisation in LAPACK's raw form (k = tau.size).
    """
    k = tau.size
    vectors = np.tril(reflectors[:, :k], -1)
    vectors[np.arange(k), np.arange(k)] = 1.0
    gram = vectors.T @ vectors
    triangle = np.zeros((k, k))
    for i in range(k):
        triangle[i, i] = tau[i]
        triangle[:i, i] = -tau[i] * (triangle[:i, :i] @ gram[:i, i])
    return vectors, triangle


def _schur_factor(generator: NDArray[np.float64], d: int
                  ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """A square-root factor of the view covariance C, round by round (generalised Schur).

    C = sum_r Z^r G G^T Z^{rT} with Z the shift down by one round (d rows)
    and G the (T d, p) generator of the noise each round injects.  Round b
    (rows of block b): a pivoted QR of the block's generator rows gives an
    orthogonal Theta with G_b Theta = [R^T 0] (pivot order), so the first
    ``rank`` columns of G Theta are the columns of L for round b's pivots and
    the next generator is [Z (those columns), the others].  Only orthogonal
    transformations of G, never C itself: small singular values of the view
    keep their accuracy (forming C would square the condition number).

    Returns
    -------
    factor : ndarray of shape (T d, K)
        Columns of L, in elimination order; L L^T = C.
    pivots : ndarray of shape (K,)
        The view coordinate of each column's pivot; ``factor[pivots]`` is
        lower triangular with a non-zero diagonal.
    """
    size = generator.shape[0]
    g = generator.copy()
    scale = np.linalg.norm(g, axis=1).max(initial=0.0)
    factor = np.zeros((size, size))
    pivots: list[NDArray[np.int64]] = []
    found = 0
    for start in range(0, size, d):
        (reflectors, tau), triangle, order = scipy.linalg.qr(
            g[start:start + d].T, mode="raw", pivoting=True, check_finite=False)
        rank = int((np.abs(np.diag(triangle)) > PIVOT_RTOL * scale).sum())
        vectors, weights = _householder_product(reflectors, tau)
        rest = g[start:]
        rest -= ((rest @ vectors) @ weights) @ vectors.T              # G Theta, rows >= start
        factor[start:, found:found + rank] = rest[:, :rank]
        pivots.append(start + order[:rank])
        g[:start + d, :rank] = 0.0
        g[start + d:, :rank] = factor[start:size - d, found:found + rank]  # Z (new columns)
        found += rank
    return factor[:, :found], np.concatenate(pivots or [np.zeros(0, dtype=np.int64)])


def _view_factor(problem: AuditProblem, k: int
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]] | None:
    """W^t E_O (:func:`_propagated`) and the square-root factor of C with its pivots.

    The generator of C (the noise round 0 injects into the view at every later
    round) is G[(t, j), l] = z_l (W^t)_{lj}.  None when the view carries no noise.
    """
    heard = problem.neighbours[k]
    powers = _propagated(problem, heard)
    variance = observer_variance(problem, k)
    noisy = np.flatnonzero(variance)
    if noisy.size == 0:
        return None
    scaled = powers[:, noisy, :] * np.sqrt(variance[noisy])[None, :, None]
    generator = scaled.transpose(0, 2, 1).reshape(-1, noisy.size)
    factor, pivots = _schur_factor(generator, heard.size)
    return powers, factor, pivots


def batch_information(problem: AuditProblem, k: int, owners: NDArray[np.int64]
                      ) -> NDArray[np.float64]:
    """a_i^T C^+ a_i for the owners (none exposed), from a square-root factor of C.

    a_i[t, j] = (W^t)_{j i}.  With L L^T = C (:func:`_schur_factor`) and a_i
    in C's range, a_i = L w_i and a_i^T C^+ a_i = ||w_i||^2: one triangular solve.
    """
    view = _view_factor(problem, k)
    if view is None:
        return np.zeros(owners.size)  # a noise-free view that exposes nobody here
    powers, factor, pivots = view
    shifts = powers[:, owners, :].transpose(0, 2, 1).reshape(-1, owners.size)
    solved = scipy.linalg.solve_triangular(factor[pivots], shifts[pivots], lower=True,
                                           check_finite=False)
    return np.einsum("ij,ij->j", solved, solved)


def _shifted_gram(lower: NDArray[np.float64], powers: NDArray[np.float64],
                  pivots: NDArray[np.int64], d: int, owners: NDArray[np.int64]
                  ) -> NDArray[np.float64]:
    """G_i[s, t] = (Z^s a_i)^T C^+ (Z^t a_i) for the owners: shape (owners, T, T).

    Z^s a_i (the move of the view when owner i's round-s contribution grows by 1)
    vanishes before round s, and ``lower`` (= L[pivots]) is lower triangular
    round by round, so its solve starts at round s's first pivot.
    """
    rounds = powers.shape[0]
    pivot_round, pivot_slot = pivots // d, pivots % d
    starts = np.searchsorted(pivot_round, np.arange(rounds))
    solved = np.zeros((rounds, pivots.size, owners.size))
    for s in range(rounds):
        first = starts[s]
        rhs = powers[pivot_round[first:, None] - s, owners[None, :], pivot_slot[first:, None]]
        solved[s, first:] = scipy.linalg.solve_triangular(
            lower[first:, first:], rhs, lower=True, check_finite=False)
    stacked = solved.transpose(2, 0, 1)                   # (owners, T, K)
    return stacked @ stacked.transpose(0, 2, 1)


def dsgd_information(problem: AuditProblem, k: int, owners: NDArray[np.int64]
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """sum_{s,t} |G_i[s, t]| and sum_{s,t} G_i[s, t], G_i = A_i^T C^+ A_i, per owner.

    In D-SGD owner i's contribution enters every round; A_i's column s is the
    move of the view when it grows by 1 in round s, Z^s a_i (a_i shifted by s
    rounds: the dynamics do not depend on t).  The first sum bounds mu_ik^2
    over per-round changes of norm <= 1, the second is mu^2 when every round
    changes by the same unit step; they agree when G_i >= 0 entrywise.
    Owners must not be exposed (then every column lies in range(C)).  Owners
    go in chunks of DSGD_CHUNK_BYTES of workspace.
    """
    view = _view_factor(problem, k)
    if view is None:
        return np.zeros(owners.size), np.zeros(owners.size)
    powers, factor, pivots = view
    lower = factor[pivots]
    d = problem.neighbours[k].size
    per_owner = 8.0 * problem.rounds * max(pivots.size, problem.rounds)  # solves, or Gram
    chunk = max(1, int(DSGD_CHUNK_BYTES // per_owner))
    absolute, plain = np.zeros(owners.size), np.zeros(owners.size)
    for start in range(0, owners.size, chunk):
        gram = _shifted_gram(lower, powers, pivots, d, owners[start:start + chunk])
        absolute[start:start + chunk] = np.abs(gram).sum(axis=(1, 2))
        plain[start:start + chunk] = gram.sum(axis=(1, 2))
    return absolute, plain


def _pseudo_inverse_root(covariance: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """R with J^T R^T R J = J^T covariance^+ J for every J in the range; None if ill-conditioned.

    The covariance is first scaled to a unit diagonal (what k hears from a
    clean device can be a thousand times smaller than a noisy device's
    message without being any less accurate); then eigenvalues below
    COVARIANCE_RTOL times the largest are zero, and one between that and
    FILTER_RCOND times the largest makes the result None.  On the range, any
    generalised inverse gives the same quadratic form, so the scaled one serves.
    """
    diagonal = np.sqrt(np.maximum(covariance.diagonal(), 0.0))
    inverse_scale = np.divide(1.0, diagonal, out=np.zeros_like(diagonal), where=diagonal > 0)
    values, vectors = np.linalg.eigh(covariance * np.outer(inverse_scale, inverse_scale))
    largest = max(values.max(initial=0.0), 0.0)
    keep = values > COVARIANCE_RTOL * largest
    if (values[keep] < FILTER_RCOND * largest).any():
        return None
    return (vectors[:, keep] / np.sqrt(values[keep])).T * inverse_scale


def filter_information(problem: AuditProblem, k: int, owners: NDArray[np.int64],
                       compiled: bool | None = None) -> NDArray[np.float64] | None:
    """The owners' Fisher information from the innovations of a Kalman filter.

    The hidden messages m_U^t given the view up to round t are Gaussian with
    covariance S_t, and their mean moves with s by M_t = d mean / d s_owners.
    Round t + 1 shows y = W_OO m_O^t + W_OU m_U^t + D_O eta_O: its innovation
    has covariance F = W_OU S W_OU^T + Q_O and moves with s by J = W_OU M;
    the information adds J^T F^+ J.  Then, with the gain K = W_UU S W_OU^T F^+,
    S <- W_UU S W_UU^T + Q_U - K F K^T and M <- W_UU M - K J.
    Round 0 tells nothing about hidden owners: S_0 = Q_U, M_0 = identity columns.
    Returns None as soon as an innovation covariance is ill-conditioned
    (FILTER_RCOND): covariances square the view's condition number.
    ``compiled``: run the compiled dense filter (:mod:`topokit.audit._compiled`);
    None (default) does when k hides at most DENSE_DEVICES devices.
    """
    variance = observer_variance(problem, k)
    heard = problem.neighbours[k]
    hidden = np.setdiff1d(np.arange(variance.size), heard)
    motion = np.zeros((hidden.size, owners.size))
    motion[np.searchsorted(hidden, owners), np.arange(owners.size)] = 1.0
    if compiled is None:
        compiled = hidden.size <= DENSE_DEVICES
    if compiled:
        return _compiled_filter(problem, variance, heard, hidden, motion)
    rows = problem.weights[heard]
    to_heard, to_hidden = rows[:, hidden].tocsr(), problem.weights[hidden][:, hidden].tocsr()
    covariance = np.diag(variance[hidden])
    information = np.zeros(owners.size)
    for _ in range(problem.rounds - 1):
        cross = to_heard @ covariance                         # W_OU S, (d, u)
        innovation = (to_heard @ cross.T).T + np.diag(variance[heard])
        jump = to_heard @ motion                              # J, (d, m)
        root = _pseudo_inverse_root((innovation + innovation.T) / 2)
        if root is None:
            return None
        information += np.square(root @ jump).sum(axis=0)
        gain_root = (to_hidden @ cross.T) @ root.T            # K F^{1/2}-like factor
        propagated = to_hidden @ (to_hidden @ covariance).T
        covariance = propagated + np.diag(variance[hidden]) - gain_root @ gain_root.T
        covariance = (covariance + covariance.T) / 2
        motion = to_hidden @ motion - gain_root @ (root @ jump)
    return information


def _compiled_filter(problem: AuditProblem, variance: NDArray[np.float64],
                     heard: NDArray[np.int64], hidden: NDArray[np.int64],
                     motion: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """:func:`filter_information` by the compiled dense filter (None: ill-conditioned)."""
    from ._compiled import filter_information as compiled_filter

    to_heard = _dense_block(problem.weights, heard, hidden)
    to_hidden = _dense_block(problem.weights, hidden, hidden)
    information, well_conditioned = compiled_filter(
        to_heard, to_hidden, variance[heard], variance[hidden], motion, problem.rounds,
        COVARIANCE_RTOL, FILTER_RCOND)
    return information if well_conditioned else None


def _dense_block(weights: sp.csr_array, rows: NDArray[np.int64], cols: NDArray[np.int64]
                 ) -> NDArray[np.float64]:
    """W[rows][:, cols] as a C-contiguous dense array."""
    return np.ascontiguousarray(weights[rows][:, cols].toarray())


def _flops(problem: AuditProblem, k: int, n_owners: int) -> dict[str, float]:
    """Estimated cost of each method for observer k, in dense-GEMM multiply-adds.

    Sparse products and the batch method's thin (d-column) transformations run
    at a fraction of GEMM speed: SPARSE_COST and BATCH_COST (measured on 200- and
    500-device audits, BLAS on one thread); the compiled dense filter runs its
    products at GEMM speed.
    """
    d = problem.neighbours[k].size
    n, rounds = problem.variance.size, problem.rounds
    noisy = int(np.count_nonzero(problem.variance))
    size, hidden = rounds * d, n - d
    stored = problem.weights.nnz * hidden / max(n, 1)
    return {
        # Schur steps on the generator, the triangular solve, W^t E_O.
        "batch": BATCH_COST * size * size * (noisy + n_owners / 2)
                 + SPARSE_COST * rounds * problem.weights.nnz * d,
        "filter": rounds * (_dense_filter_round(hidden, d, n_owners)
                            if hidden <= DENSE_DEVICES else
                            SPARSE_COST * stored * (3 * hidden + n_owners)
                            + hidden * hidden * d + hidden * d * n_owners
                            + d * d * n_owners + 10 * d**3),
    }


def _dense_filter_round(hidden: int, d: int, n_owners: int) -> float:
    """Multiply-adds of one round of the compiled dense filter (hidden u, heard d)."""
    return (2 * hidden**3 + 3 * hidden * hidden * d + hidden * hidden * n_owners
            + 2 * hidden * d * n_owners + d * d * n_owners + 10 * d**3)


def choose_method(problem: AuditProblem, k: int, n_owners: int) -> str:
    """The cheaper method for observer k by :func:`_flops`."""
    flops = _flops(problem, k, n_owners)
    return min(METHODS, key=flops.__getitem__)


def workspace_bytes(problem: AuditProblem, k: int, n_owners: int, method: str) -> float:
    """Bytes of the largest arrays the method allocates for observer k."""
    d = problem.neighbours[k].size
    n, rounds = problem.variance.size, problem.rounds
    if method == "batch" or problem.model == "dsgd":
        size = rounds * d
        noisy = int(np.count_nonzero(problem.variance))
        common = 8.0 * (rounds * n * d * 2 + 4 * size * noisy + size * size)
        if problem.model == "dsgd":  # the solves of one chunk of owners, and their Gram matrices
            solves = 8.0 * rounds * max(size, rounds) * n_owners
            return common + 3 * min(solves, DSGD_CHUNK_BYTES)
        return common + 8.0 * 2 * size * n_owners
    hidden = n - d
    return 8.0 * (4 * hidden * hidden + 3 * hidden * n_owners + n * n)


def _wanted_owners(n: int, k: int, wanted: NDArray[np.bool_] | None) -> NDArray[np.bool_]:
    """Mask of the owners to compute: ``wanted`` (all by default), never k itself."""
    mask = np.ones(n, dtype=bool) if wanted is None else np.asarray(wanted, dtype=bool).copy()
    mask[k] = False
    return mask


def observer_column(problem: AuditProblem, k: int, method: str | None = None,
                    wanted: NDArray[np.bool_] | None = None) -> NDArray[np.float64]:
    """mu_ik for every owner i against observer k (NaN at i = k).

    A heard owner i shows its round-0 message s_i + z_i eta_i^0 directly and,
    once k knows that message, nothing else it sends depends on s_i: mu = 1/z_i
    (inf if z_i = 0).  A hidden owner is exposed (inf) when the revealed
    subspace reaches it; the others get sqrt of their Fisher information.
    ``method`` forces "batch" or "filter" (tests); None picks the cheaper.  The
    filter hands an ill-conditioned view over to the batch method.  In the
    D-SGD model: the upper bound of :func:`observer_bounds`.  ``wanted``: a
    mask of the owners to compute (default all); the others stay NaN.
    """
    if problem.model == "dsgd":
        return _dsgd_bounds(problem, k, wanted)[0]
    variance = observer_variance(problem, k)
    n = variance.size
    column = np.full(n, np.nan)
    wanted = _wanted_owners(n, k, wanted)
    heard = problem.neighbours[k]
    is_heard = np.zeros(n, dtype=bool)
    is_heard[heard] = True
    with np.errstate(divide="ignore"):
        column[is_heard & wanted] = 1.0 / np.sqrt(variance[is_heard & wanted])
    owners = np.flatnonzero(wanted & ~is_heard)
    if owners.size == 0:
        return column
    exposed = revealed_leverage(problem, k)[owners] > LEVERAGE_TOL
    column[owners[exposed]] = np.inf
    owners = owners[~exposed]
    if owners.size == 0 or heard.size == 0:
        column[owners] = 0.0
        return column
    method = method or choose_method(problem, k, owners.size)
    information = filter_information(problem, k, owners) if method == "filter" else None
    if information is None:  # the batch method, chosen or because the filter refused
        information = batch_information(problem, k, owners)
    column[owners] = np.sqrt(np.maximum(information, 0.0))
    return column


def _dsgd_bounds(problem: AuditProblem, k: int, wanted: NDArray[np.bool_] | None = None
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`observer_bounds` in the D-SGD model (the batch method only).

    The upper bound is also capped at sqrt(T) / z_i: owner i's T messages are
    T Gaussian mechanisms of sensitivity 1 and noise z_i, and k's view is a
    post-processing of them and of noise independent of i's data, so
    G_i <= I / z_i^2 (Loewner order) and delta^T G_i delta <= T / z_i^2.

    Exposure is the gossip model's: if a functional f of the view cancels the
    noise and reads the round-s change (f^T Z^s a_i != 0), f shifted back by s
    rounds cancels the noise of a (T - s)-round gossip view and reads s_i.
    A heard owner is not a special case here: its later messages also carry
    the state, which depends on the others' noise.
    """
    variance = observer_variance(problem, k)
    n = variance.size
    upper = np.full(n, np.nan)
    owners = np.flatnonzero(_wanted_owners(n, k, wanted))
    if owners.size == 0:
        return upper, upper.copy()
    exposed = revealed_leverage(problem, k)[owners] > LEVERAGE_TOL
    upper[owners[exposed]] = np.inf
    owners = owners[~exposed]
    lower = upper.copy()
    if owners.size == 0 or problem.neighbours[k].size == 0:
        upper[owners] = lower[owners] = 0.0
        return upper, lower
    absolute, plain = dsgd_information(problem, k, owners)
    with np.errstate(divide="ignore"):
        composition = problem.rounds / variance[owners]   # T / z_i^2, inf without noise
    upper[owners] = np.sqrt(np.minimum(np.maximum(absolute, 0.0), composition))
    lower[owners] = np.sqrt(np.maximum(plain, 0.0))
    return upper, lower


def observer_bounds(problem: AuditProblem, k: int, method: str | None = None,
                    wanted: NDArray[np.bool_] | None = None
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(mu, mu_lower) of every owner against observer k (NaN at i = k).

    Gossip: both are :func:`observer_column`'s exact mu.  D-SGD: mu =
    sqrt(min(sum_{s,t} |G_i[s, t]|, T / z_i^2)) bounds the privacy loss over
    every sequence of per-round changes of norm <= 1, and mu_lower = sqrt(sum_{s,t} G_i[s, t]) is
    the loss of one such sequence (the same unit change every round), so the
    exact loss lies between them; they are equal when G_i >= 0 entrywise.
    """
    if problem.model == "dsgd":
        return _dsgd_bounds(problem, k, wanted)
    column = observer_column(problem, k, method, wanted)
    return column, column


def stranger_mu_max(
    adjacency: NDArray[np.float64],
    noise: NDArray[np.float64],
    social: NDArray[np.bool_],
    rounds: int,
    *,
    knows_own_noise: bool = True,
    model: str = "gossip",
    weights: sp.csr_array | None = None,
) -> tuple[int, float | None]:
    """Exposed stranger pairs and the largest finite stranger mu, from arrays (internal).

    The two numbers of ``privacy_audit(...).summary()`` that a topology search
    needs (``exposed_stranger_pairs``, ``stranger_mu_max``), without building
    a Network, a Topology or the (n, n) result, computing only the stranger
    owners of every observer.  Trusts its inputs, like the rest of this module.

    Parameters
    ----------
    adjacency : ndarray of shape (n, n)
        The topology's links (non-zero off the diagonal), symmetric.
    noise : ndarray of shape (n,)
        z_j of every device (0: no noise).
    social : ndarray of shape (n, n), bool
        True where two devices are social neighbours (those pairs are not strangers).
    rounds : int >= 1
    knows_own_noise, model
        As in :func:`topokit.audit.privacy_audit`.
    weights : sparse (n, n), optional
        W; default the Lazy-Metropolis matrix of ``adjacency``.

    Returns
    -------
    (int, float or None)
        The count of exposed stranger pairs (mu = inf) and the largest finite
        stranger mu (None when there is none).
    """
    from ..kernels import lazy_metropolis

    links = np.asarray(adjacency) != 0
    np.fill_diagonal(links, False)
    if weights is None:
        weights = sp.csr_array(lazy_metropolis(links.astype(np.float64)))
    problem = AuditProblem(weights, tuple(np.flatnonzero(row) for row in links),
                           np.asarray(noise, dtype=np.float64) ** 2, rounds,
                           knows_own_noise, model)
    return stranger_summary(problem, ~np.asarray(social, dtype=bool))


def stranger_summary(problem: AuditProblem, strangers: NDArray[np.bool_],
                     progress: Callable[[int, int], Any] | None = None
                     ) -> tuple[int, float | None]:
    """Exposed stranger pairs and the largest finite stranger mu, computing only what they need.

    Every observer computes only its stranger owners (``strangers[i, k]``:
    owner i is a stranger to observer k).  In the gossip model, s_i enters k's
    view only through owner i's round-0 message s_i + z_i eta_i^0, a Gaussian
    mechanism of mu = 1/z_i: the view is a post-processing of it, so
    mu_ik <= 1/z_i for every observer, with equality when k hears i.  A noisy
    owner is then never exposed, and one whose bound 1/z_i does not exceed the
    largest mu already found cannot change the maximum: neither is computed.
    (In the D-SGD model owners enter every round and every stranger owner is
    computed.)  ``progress(done, total)`` after each observer.

    Returns
    -------
    (int, float or None)
        The count of exposed stranger pairs (mu = inf) and the largest finite
        stranger mu (None when there is none): what
        ``privacy_audit(...).summary()`` reports as ``exposed_stranger_pairs``
        and ``stranger_mu_max``.
    """
    n = problem.variance.size
    exposed, largest = 0, None
    bound = np.full(n, np.inf)
    if problem.model == "gossip":
        noisy = problem.variance > 0
        bound[noisy] = 1.0 / np.sqrt(problem.variance[noisy])
        largest = _heard_stranger_bound(problem, strangers, noisy, bound)
    for k in range(n):
        wanted = strangers[:, k].copy()
        wanted[k] = False
        if largest is not None:
            wanted &= ~(bound <= largest)  # mu_ik <= bound[i] cannot raise the maximum
        if wanted.any():
            values = observer_column(problem, k, wanted=wanted)[wanted]
            exposed += int(np.isinf(values).sum())
            finite = values[np.isfinite(values)]
            if finite.size:
                largest = max(largest if largest is not None else 0.0, float(finite.max()))
        if progress is not None:
            progress(k + 1, n)
    return exposed, largest


def _heard_stranger_bound(problem: AuditProblem, strangers: NDArray[np.bool_],
                          noisy: NDArray[np.bool_], bound: NDArray[np.float64]) -> float | None:
    """The largest 1/z_i over noisy stranger owners i that their observer hears (gossip:
    their mu exactly), or None when no observer hears a noisy stranger."""
    largest = None
    for k, heard in enumerate(problem.neighbours):
        owners = heard[strangers[heard, k] & noisy[heard]]
        if owners.size:
            value = float(bound[owners].max())
            largest = value if largest is None else max(largest, value)
    return largest
