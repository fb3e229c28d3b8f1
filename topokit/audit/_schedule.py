"""The arithmetic of the privacy audit of a time-varying topology (a TopologySchedule).

:func:`topokit.audit.privacy_audit` of a :class:`~topokit.network.TopologySchedule`
whose rounds are not all one topology.  Notation of :mod:`topokit.audit`, with
round t's own mixing matrix W_t and the devices O_t = N_t(k) that observer k
hears in round t (its neighbours in round t's topology), and

.. math:: \\Phi(t, r) = W_{t-1} W_{t-2} \\cdots W_r, \\qquad \\Phi(r, r) = I.

Round t's messages are m^t = x^t + u^t + Z eta^t and x^{t+1} = W_t m^t, so k's
view, the rows (t, j) with j in O_t and t < T, is y = A s + B eta with

.. math:: B[(t, j), (r, l)] = \\Phi(t, r)_{jl}\\, z_l \\quad (r \\le t),

A[(t, j), i] = Phi(t, 0)_{ji} in gossip (u^0 = s, x^0 = 0) and, in D-SGD,
owner i's T columns A_i[(t, j), s] = Phi(t, s)_{ji} (s <= t).  The static
kernels (:mod:`topokit.audit._kernels`) rest on W being the same every round:
the generator of C shifts by one round (the generalised Schur algorithm), a
D-SGD column is a shifted gossip column, the filter's blocks are fixed.  None
of that holds here, so the view is written out, one observer at a time:

- :func:`view_matrices`: B (only the columns of noisy devices) and the shift
  columns, from the rows Phi(t, r)[O_t] computed backwards from each round t,
  one sparse product per step;
- :func:`observer_bounds`: a square-root factor of C = B B^T from a QR
  factorisation of B^T (C itself is never formed, so its condition number is
  not squared), then, for every shift column a, the least-squares solution w
  of L w = a: mu^2 = ||w||^2 = a^T C^+ a, and a is off range(C) (k cancels
  the noise and reads it: exposed) when the residual exceeds EXPOSED_RTOL
  ||a||, with directions below PIVOT_RTOL of the largest singular value
  taken as zero (as in the static audit: they can only lower mu).

When every round is one topology this is the static audit's view; the tests
check both against each other and against a dense computation of their own.
These functions trust their inputs (validated by ``privacy_audit``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numpy.typing import NDArray

from ._kernels import PIVOT_RTOL

#: A shift column a is off range(C) (exposed) when its least-squares residual exceeds this
#: fraction of ||a||.  On the tests' random schedules residuals are <= 1e-14 or >= 1e-3,
#: as those of the static audit's dense twin (``topokit.testing.naive_audit``).
EXPOSED_RTOL = 1e-8


class ScheduleProblem(NamedTuple):
    """What every observer's computation shares, for a time-varying topology."""

    weights: tuple[sp.csr_array, ...]                       # W_t for t < T, (n, n) each
    neighbours: tuple[tuple[NDArray[np.int64], ...], ...]   # [t][k]: O_t of observer k
    variance: NDArray[np.float64]    # q_j = z_j^2, (n,)
    rounds: int                      # T >= 1
    knows_own_noise: bool            # the observer's own draws are known to it
    model: str = "gossip"            # "gossip" (s enters at round 0) or "dsgd" (every round)


def _observer_variance(problem: ScheduleProblem, k: int) -> NDArray[np.float64]:
    """The noise variances as observer k sees them (its own draws known: q_k = 0)."""
    variance = problem.variance.copy()
    if problem.knows_own_noise:
        variance[k] = 0.0
    return variance


def view_rows(problem: ScheduleProblem, k: int) -> int:
    """The number of rows of k's view, sum_t |O_t|."""
    return int(sum(neighbours[k].size for neighbours in problem.neighbours))


def view_matrices(problem: ScheduleProblem, k: int
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """B restricted to the noisy devices' columns, and the shift columns, of k's view.

    Returns
    -------
    noise : ndarray of shape (R, T p)
        B[(t, j), (r, l)] = Phi(t, r)_{jl} z_l for the p noisy devices l
        (round-major columns), R = sum_t |O_t| rows in round order.
    shifts : ndarray of shape (R, n) (gossip) or (T, R, n) (D-SGD)
        Phi(t, 0)_{ji} in gossip; ``shifts[s]`` = A_i[:, s] of every owner i in D-SGD.
    """
    variance = _observer_variance(problem, k)
    noisy = np.flatnonzero(variance)
    scale = np.sqrt(variance[noisy])
    rounds, n, p = problem.rounds, variance.size, noisy.size
    sizes = [neighbours[k].size for neighbours in problem.neighbours]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    noise = np.zeros((starts[-1], rounds * p))
    dsgd = problem.model == "dsgd"
    shifts = np.zeros((rounds, starts[-1], n) if dsgd else (starts[-1], n))
    for t in range(rounds):
        rows = slice(starts[t], starts[t + 1])
        phi = np.zeros((sizes[t], n))                      # Phi(t, t)[O_t] = E_{O_t}^T
        phi[np.arange(sizes[t]), problem.neighbours[t][k]] = 1.0
        for r in range(t, -1, -1):
            noise[rows, r * p:(r + 1) * p] = phi[:, noisy] * scale
            if dsgd:
                shifts[r, rows] = phi
            if r > 0:  # Phi(t, r - 1) = Phi(t, r) W_{r-1}
                phi = np.asarray(problem.weights[r - 1].T @ phi.T).T
        if not dsgd:
            shifts[rows] = phi                               # Phi(t, 0)[O_t]
    return noise, shifts


def _range_solve(noise: NDArray[np.float64], shifts: NDArray[np.float64]
                 ) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """w with L w = a on range(C) for every column a of ``shifts``, and which a leave it.

    C = B B^T = L L^T with L = R^T from the QR factorisation B^T = Q R; the
    SVD L = U S V^T then gives w = S^+ U^T a (up to the orthogonal V, which
    leaves ||w|| and w^T w' unchanged) and the residual ||a - U U^T a||.
    """
    size, columns = shifts.shape
    if size == 0 or noise.shape[1] == 0:  # no view, or a view without noise
        norms = np.linalg.norm(shifts, axis=0)
        return np.zeros((0, columns)), norms > 0
    triangle = scipy.linalg.qr(noise.T, mode="raw", check_finite=False)[1]  # (min, R)
    left, values, _ = np.linalg.svd(triangle.T, full_matrices=False)
    rank = int((values > PIVOT_RTOL * values.max(initial=0.0)).sum())
    coefficients = left[:, :rank].T @ shifts
    residual = np.linalg.norm(shifts - left[:, :rank] @ coefficients, axis=0)
    solved = coefficients / values[:rank, None]
    return solved, residual > EXPOSED_RTOL * np.linalg.norm(shifts, axis=0)


def observer_bounds(problem: ScheduleProblem, k: int
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(mu, mu_lower) of every owner against observer k (NaN at i = k), as the static
    :func:`topokit.audit._kernels.observer_bounds` defines them.

    Gossip: mu_ik = ||w_i|| (both); an owner k hears in round 0 gets 1/z_i
    exactly (its first message is the only way s_i enters the view).  D-SGD:
    with G_i = W_i^T W_i (T x T), mu = sqrt(min(sum |G_i|, T / z_i^2)) and
    mu_lower = sqrt(sum G_i); exposed (inf) when any of owner i's T columns
    leaves range(C).
    """
    noise, shifts = view_matrices(problem, k)
    if problem.model == "dsgd":
        rounds, size, n = shifts.shape
        solved, off = _range_solve(noise, shifts.transpose(1, 0, 2).reshape(size, rounds * n))
        solved = solved.reshape(-1, rounds, n)
        gram = np.einsum("rsi,rti->ist", solved, solved)
        with np.errstate(divide="ignore"):
            composition = rounds / _observer_variance(problem, k)     # T / z_i^2
        upper = np.sqrt(np.minimum(np.abs(gram).sum(axis=(1, 2)), composition))
        lower = np.sqrt(np.maximum(gram.sum(axis=(1, 2)), 0.0))
        exposed = off.reshape(rounds, n).any(axis=0)
        upper[exposed] = lower[exposed] = np.inf
        upper[k] = lower[k] = np.nan
        return upper, lower
    solved, off = _range_solve(noise, shifts)
    mu = np.linalg.norm(solved, axis=0)
    mu[off] = np.inf
    heard = problem.neighbours[0][k]
    with np.errstate(divide="ignore"):
        mu[heard] = 1.0 / np.sqrt(_observer_variance(problem, k)[heard])
    mu[k] = np.nan
    return mu, mu


def workspace_bytes(problem: ScheduleProblem, k: int) -> float:
    """Bytes of the largest arrays :func:`observer_bounds` allocates for observer k."""
    size, rounds, n = view_rows(problem, k), problem.rounds, problem.variance.size
    noisy = int(np.count_nonzero(problem.variance))
    columns = rounds * n if problem.model == "dsgd" else n
    gram = n * rounds * rounds if problem.model == "dsgd" else 0
    # B and its QR copy, the triangle and the SVD's factors, the shifts, their
    # coefficients and residuals.
    return 8.0 * (2 * size * rounds * noisy + 3 * size * size + 3 * size * columns + gram)
