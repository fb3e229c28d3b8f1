"""Dual semismooth Newton for the log-degree model (eq. 7): the default solver for beta > 0.

The Fenchel dual of ``min_{w >= 0} z^T w - alpha sum log(S w + zeta) + 2 beta ||w||^2``
lives on the d nodes,

.. math::

    \\max_{v < 0}\\; D(v) = -2\\beta \\|w(v)\\|_2^2 + \\alpha \\sum_i \\log(-v_i)
    + \\zeta \\sum_i v_i + d\\alpha (1 - \\log \\alpha),
    \\qquad w_k(v) = \\max(0, -(v_i + v_j) - z_k) / (4\\beta),

and the primal point ``w(v)`` of a dual point is explicit.  ``D`` is concave
(strictly: the log term) with the piecewise smooth gradient
``S w(v) + zeta + alpha / v``, so a damped semismooth Newton method (Qi & Sun,
Math. Programming 58, 1993) converges fast: each step solves
``(S_A S_A^T / (4 beta) + diag(alpha / v^2)) delta = grad D(v)`` on the active
edges ``A`` (where ``w_k(v) > 0``) by Jacobi-preconditioned conjugate gradients
to a relative residual ``min(0.1, sqrt(gap))`` (a forcing term that keeps the
local convergence fast, Nocedal & Wright, Numerical Optimization, 2nd ed.,
sec. 7.1), then backtracks from the unit step until ``v < 0`` and the Armijo
condition holds.  As ``w(v)`` minimises the edge terms of the Lagrangian
exactly, the duality gap ``P(w(v)) - D(v)`` is a sum over nodes of
``alpha (t_i - 1 - log t_i) >= 0`` with ``t_i = (S w(v) + zeta)_i (-v_i) / alpha``:
non-negative terms, so the stopping rule (relative gap <= tol, as PDHG's) is a
certificate computed without cancellation.

:func:`newton_numba` runs the whole loop in one Numba kernel
(:func:`topokit.learn._kernels.dual_newton_loop`); :func:`newton_numpy` is its
plain-numpy twin (index arrays and ``np.bincount``), step for step.  Both take
and return what the other solvers of :mod:`topokit.learn.solvers` do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import _kernels

#: Armijo constant of the line search and the smallest step tried.
NEWTON_ARMIJO = 1e-4
NEWTON_MIN_STEP = 1e-12
#: Conjugate gradients: relative residual min(0.1, sqrt(gap)), at least this, and a step cap.
NEWTON_CG_RTOL_MIN = 1e-12
NEWTON_CG_MAX = 1000
#: Steps in a row that neither raise the best dual value beyond rounding nor halve the
#: best gap: rounding has stopped the progress, so stop.
NEWTON_IDLE_STEPS = 5
#: Size of the evenly spaced sample of z that sets the uniform start.
NEWTON_START_SAMPLE = 4096


def _n_nodes(p: int) -> int:
    return int(round((1 + math.sqrt(1 + 8 * p)) / 2))


def dual_start(z, d: int, alpha: float, beta: float, zeta: float, w0=None) -> NDArray[np.float64]:
    """The dual point to start from: ``-alpha / (S w0 + zeta)`` for a warm start, else uniform.

    The uniform point ``v = -c`` solves "mean degree of w(v) + zeta = alpha / c"
    (the optimality condition ``S w(v) + zeta = -alpha / v``, averaged over the
    nodes), with the mean degree estimated on an evenly spaced sample of ``z``.
    Nodes of zero degree under ``w0`` keep the uniform value.
    """
    sample = np.ascontiguousarray(z[:: max(1, z.size // NEWTON_START_SAMPLE)])
    per_pair = z.size / (d * sample.size * 2.0 * beta)
    v = np.full(d, -_kernels.uniform_dual_start(sample, per_pair, alpha, zeta))
    if w0 is not None:
        deg = _kernels.degrees(np.ascontiguousarray(w0, dtype=np.float64), d) + zeta
        v = np.where(deg > 0.0, -alpha / np.maximum(deg, 1e-300), v)
    return v


def newton_numba(z, alpha, beta, zeta, tol, max_iter, w0=None):
    """Dual Newton in Numba; returns ``(w, n_newton_steps, relative_gap)``."""
    d = _n_nodes(z.size)
    v = dual_start(z, d, alpha, beta, zeta, w0)
    n_iter, gap = _kernels.dual_newton_loop(
        z, v, d, alpha, beta, zeta, tol, max_iter, NEWTON_ARMIJO, NEWTON_MIN_STEP,
        NEWTON_CG_RTOL_MIN, NEWTON_CG_MAX, NEWTON_IDLE_STEPS,
    )
    w = np.empty_like(z)
    _kernels.dual_primal(v, z, d, beta, w)
    return w, int(n_iter), float(gap)


# --------------------------------------------------------------------------- numpy twin


@dataclass(frozen=True)
class DualPoint:
    """A dual point ``v < 0`` with its degrees ``S w(v) + zeta``, active-edge mask,
    dual value (up to a constant), relative gap and the rounding bound of the value."""

    v: NDArray[np.float64]
    deg: NDArray[np.float64]
    active: NDArray[np.bool_]
    value: float
    gap: float
    noise: float


def node_gap(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """t - 1 - log t at t = 1 + x (>= 0), a series below |x| < 1e-3 (no cancellation)."""
    series = x * x * (0.5 - x * (1.0 / 3.0 - x * (0.25 - x * (0.2 - x / 6.0))))
    return np.where(np.abs(x) < 1e-3, series, x - np.log1p(np.maximum(x, -1.0 + 1e-16)))


def dual_point(v, z, d, alpha, beta, zeta) -> DualPoint:
    """Evaluate the dual at ``v`` (numpy): what :func:`_kernels.dual_evaluate` and
    :func:`_kernels.dual_summary` compute."""
    i, j = np.triu_indices(d, 1)
    s = -(v[i] + v[j]) - z
    active = s > 0.0
    w = np.where(active, s * (1.0 / (4.0 * beta)), 0.0)
    deg = np.bincount(i, w, d) + np.bincount(j, w, d) + zeta
    quad = float(w @ w)
    log_v = np.log(-v)
    value = -2.0 * beta * quad + alpha * log_v.sum() + zeta * v.sum()
    noise = 64 * np.finfo(float).eps * (2.0 * beta * quad + alpha * np.abs(log_v).sum()
                                         - zeta * v.sum())
    gap = math.inf
    if np.all(deg > 0.0):
        objective = float(z @ w) + 2.0 * beta * quad - alpha * np.log(deg).sum()
        gap = alpha * float(node_gap(deg * (-v) / alpha - 1.0).sum()) / max(abs(objective), 1e-300)
    return DualPoint(v, deg, active, float(value), gap, float(noise))


def newton_direction(ia, ja, d, beta, extra, g, rtol, max_cg) -> NDArray[np.float64]:
    """Jacobi-preconditioned CG on (S_A S_A^T / (4 beta) + diag(extra)) x = g (numpy)."""
    scale = 1.0 / (4.0 * beta)

    def product(y):
        t = scale * (y[ia] + y[ja])
        return extra * y + np.bincount(ia, t, d) + np.bincount(ja, t, d)

    diag = extra + scale * (np.bincount(ia, minlength=d) + np.bincount(ja, minlength=d))
    x = np.zeros(d)
    r = g.copy()
    pre = r / diag
    direction = pre.copy()
    rz = r @ pre
    for _ in range(max_cg):
        q = product(direction)
        curvature = direction @ q
        if not curvature > 0.0:
            break
        a = rz / curvature
        x += a * direction
        r -= a * q
        if np.linalg.norm(r) <= rtol * np.linalg.norm(g):
            break
        pre = r / diag
        rz, rz_old = r @ pre, rz
        direction = pre + (rz / rz_old) * direction
    return x


def newton_step(point: DualPoint, z, d, alpha, beta, zeta) -> DualPoint | None:
    """One damped Newton step (numpy); ``None`` when no step length is accepted."""
    v = point.v
    i, j = np.triu_indices(d, 1)
    grad = point.deg + alpha / v
    rtol = max(NEWTON_CG_RTOL_MIN, min(0.1, math.sqrt(point.gap)))
    delta = newton_direction(i[point.active], j[point.active], d, beta, alpha / (v * v), grad,
                             rtol, NEWTON_CG_MAX)
    slope = float(grad @ delta)
    t = 1.0
    while t >= NEWTON_MIN_STEP:
        trial = v + t * delta
        if np.all(trial < 0.0):
            new = dual_point(trial, z, d, alpha, beta, zeta)
            if new.value >= point.value + NEWTON_ARMIJO * t * slope - point.noise:
                return new
        t *= 0.5
    return None


def newton_numpy(z, alpha, beta, zeta, tol, max_iter, w0=None):
    """Plain-numpy twin of :func:`newton_numba`, step for step; same return value."""
    d = _n_nodes(z.size)
    point = dual_point(dual_start(z, d, alpha, beta, zeta, w0), z, d, alpha, beta, zeta)
    n_iter = idle = 0
    best_value, best_gap = point.value, point.gap
    while point.gap > tol and n_iter < max_iter and idle < NEWTON_IDLE_STEPS:
        new = newton_step(point, z, d, alpha, beta, zeta)
        if new is None:
            break
        moved = new.value > best_value + point.noise or new.gap < 0.5 * best_gap
        idle = 0 if moved else idle + 1
        best_value, best_gap = max(best_value, new.value), min(best_gap, new.gap)
        point, n_iter = new, n_iter + 1
    i, j = np.triu_indices(d, 1)
    w = np.maximum(-(point.v[i] + point.v[j]) - z, 0.0) * (1.0 / (4.0 * beta))
    return w, n_iter, float(point.gap)
