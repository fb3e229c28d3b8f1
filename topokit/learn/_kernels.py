"""Private Numba kernels of :mod:`topokit.learn`.  They never validate.

Edges are visited in ``numpy.triu_indices(d, 1)`` order by two nested loops
(``i < j``, ``k`` counting), so no index array and no edge-to-degree matrix
``S`` is ever formed: ``S w`` is accumulated node by node and ``S^T v`` is
``v[i] + v[j]``.  The public wrappers live in :mod:`topokit.learn.solvers`;
the plain-numpy twins are ``solvers._fbf_numpy``, ``solvers._pdhg_numpy`` and
``_dual_newton.newton_numpy`` (for the dual Newton kernels at the end of this module).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kernels import NJIT_FLAGS


@njit(**NJIT_FLAGS)
def degrees(w, d):
    """S w: the weighted degree of every node (O(p))."""
    out = np.zeros(d)
    k = 0
    for i in range(d - 1):
        acc = 0.0
        for j in range(i + 1, d):
            x = w[k]
            acc += x
            out[j] += x
            k += 1
        out[i] += acc
    return out


@njit(**NJIT_FLAGS)
def _forward(x, vi, vj, step, four_beta):
    """One edge of the forward step x - step (4 beta x + S^T v), with (S^T v)_k = v_i + v_j."""
    return x - step * (four_beta * x + vi + vj)


@njit(**NJIT_FLAGS)
def _prox(y, zk, step):
    """One edge of the primal prox max(0, y - step z)."""
    p = y - step * zk
    return 0.0 if p < 0.0 else p


@njit(**NJIT_FLAGS)
def _accumulate(w, z, v, d, step, four_beta, sw, sp):
    """sw = S w and sp = S P with P = max(0, w - step (4 beta w + S^T v) - step z)."""
    for i in range(d):
        sw[i] = 0.0
        sp[i] = 0.0
    k = 0
    for i in range(d - 1):
        vi = v[i]
        acc_w = 0.0
        acc_p = 0.0
        for j in range(i + 1, d):
            wk = w[k]
            p_k = _prox(_forward(wk, vi, v[j], step, four_beta), z[k], step)
            acc_w += wk
            acc_p += p_k
            sw[j] += wk
            sp[j] += p_k
            k += 1
        sw[i] += acc_w
        sp[i] += acc_p


@njit(**NJIT_FLAGS)
def fbf_loop(z, w, v, d, alpha, beta, zeta, step, tol, max_iter):
    """Forward-backward-forward iterations on the log-degree problem (in place).

    Primal ``w`` (edges), dual ``v`` (nodes) for
    ``min_{w>=0} z^T w + f2(S w) + 2 beta ||w||^2`` with
    ``f2(u) = -alpha sum log(u + zeta)`` (Kalofolias 2016, Alg. 1).  One pass
    over the edges per iteration: the correcting forward step of iteration t
    is fused with the first forward step of iteration t + 1.  Returns
    ``(n_iter, primal_residual, dual_residual)``; stops when both relative
    residuals ``||Q - Y|| / ||w||`` and ``||q - y|| / ||v||`` are below tol.
    """
    sw = np.empty(d)
    sp = np.empty(d)
    sw_next = np.empty(d)
    sp_next = np.empty(d)
    v_old = np.empty(d)
    p_bar = np.empty(d)
    four_beta = 4.0 * beta
    primal_res = np.inf
    dual_res = np.inf
    n_iter = 0
    _accumulate(w, z, v, d, step, four_beta, sw, sp)
    for it in range(max_iter):
        n_iter = it + 1
        # dual: prox of the conjugate of f2 at y = v + step S w, then the correcting step
        dual_change = 0.0
        dual_norm = 0.0
        for i in range(d):
            v_old[i] = v[i]
            y = v[i] + step * sw[i] + step * zeta
            pb = 0.5 * (y - math.sqrt(y * y + 4.0 * alpha * step))
            y -= step * zeta
            q = pb + step * sp[i]
            v[i] = v[i] - y + q
            p_bar[i] = pb
            dual_change += (q - y) * (q - y)
            dual_norm += v[i] * v[i]
            sw_next[i] = 0.0
            sp_next[i] = 0.0
        # primal: correcting forward step, fused with the next iteration's first step
        primal_change = 0.0
        primal_norm = 0.0
        k = 0
        for i in range(d - 1):
            vi = v_old[i]
            pi = p_bar[i]
            vi_new = v[i]
            acc_w = 0.0
            acc_p = 0.0
            for j in range(i + 1, d):
                wk = w[k]
                zk = z[k]
                y_k = _forward(wk, vi, v_old[j], step, four_beta)
                p_k = _prox(y_k, zk, step)
                diff = _forward(p_k, pi, p_bar[j], step, four_beta) - y_k
                wk = wk + diff
                w[k] = wk
                primal_change += diff * diff
                primal_norm += wk * wk
                p_next = _prox(_forward(wk, vi_new, v[j], step, four_beta), zk, step)
                acc_w += wk
                acc_p += p_next
                sw_next[j] += wk
                sp_next[j] += p_next
                k += 1
            sw_next[i] += acc_w
            sp_next[i] += acc_p
        for i in range(d):
            sw[i] = sw_next[i]
            sp[i] = sp_next[i]
        primal_res = math.sqrt(primal_change) / max(math.sqrt(primal_norm), 1e-300)
        dual_res = math.sqrt(dual_change) / max(math.sqrt(dual_norm), 1e-300)
        if primal_res < tol and dual_res < tol:
            break
    return n_iter, primal_res, dual_res



@njit(**NJIT_FLAGS)
def pdhg_loop(z, w, v, sb, d, alpha, beta, zeta, norm_s, ratio, tol, max_iter, period, c_ratio):
    """Primal-dual hybrid gradient (Chambolle-Pock) on the log-degree problem (in place).

    Primal ``w`` (edges), dual ``v`` (nodes), ``sb = S wbar`` (the extrapolated
    primal's degrees, carried between calls).  Steps ``tau = 0.99 ratio / ||S||``,
    ``sigma = 1 / (ratio ||S||)`` (so ``tau sigma ||S||^2 < 1``); every
    ``period`` iterations the primal weight is reset to
    ``ratio = c_ratio ||w|| / ||v||`` (the balance of the two iterates' scales, as
    PDLP's primal weight).  One pass over the edges per iteration, which also
    evaluates the duality gap of the current ``w`` with the dual candidate
    ``v(w) = -alpha / (S w + zeta)``: per edge
    ``f(w_k) + f*(s_k) - s_k w_k`` with ``s_k = alpha (1/deg_i + 1/deg_j)``, i.e.
    ``2 beta (w_k - (s_k - z_k) / (4 beta))^2`` if ``s_k > z_k`` else
    ``(z_k - s_k) w_k + 2 beta w_k^2``.  Needs ``beta > 0``.  Stops when that
    gap is at most ``tol |objective|``, and returns
    ``(n_iter, relative_gap, ratio)``; ``w`` is then one step past the
    certified iterate (its own gap is checked by the caller).
    """
    sw = degrees(w, d)
    sw_next = np.empty(d)
    inv = np.empty(d)
    four_beta = 4.0 * beta
    tau = 0.99 * ratio / norm_s
    sigma = 1.0 / (ratio * norm_s)
    rel_gap = np.inf
    n_iter = 0
    for it in range(max_iter):
        n_iter = it + 1
        # dual: v <- prox_{sigma g*}(v + sigma S wbar), g(u) = -alpha sum log(u + zeta)
        v_norm2 = 0.0
        ok = True
        log_sum = 0.0
        for i in range(d):
            y = v[i] + sigma * (sb[i] + zeta)
            v[i] = 0.5 * (y - math.sqrt(y * y + 4.0 * alpha * sigma))
            v_norm2 += v[i] * v[i]
            deg = sw[i] + zeta
            if deg > 0.0:
                inv[i] = alpha / deg
                log_sum += math.log(deg)
            else:
                inv[i] = 0.0
                ok = False
            sw_next[i] = 0.0
            sb[i] = 0.0
        # primal: w <- max(0, (w - tau (S^T v + z)) / (1 + 4 beta tau)), gap of the old w
        shrink = 1.0 / (1.0 + four_beta * tau)
        gap = 0.0
        lin = 0.0
        quad = 0.0
        k = 0
        for i in range(d - 1):
            vi = v[i]
            inv_i = inv[i]
            acc_w = 0.0
            acc_b = 0.0
            for j in range(i + 1, d):
                wk = w[k]
                zk = z[k]
                excess = inv_i + inv[j] - zk
                if excess > 0.0:
                    a = wk - excess / four_beta
                    gap += 0.5 * four_beta * a * a
                else:
                    gap += (0.5 * four_beta * wk - excess) * wk
                lin += zk * wk
                quad += wk * wk
                wn = (wk - tau * (vi + v[j] + zk)) * shrink
                if wn < 0.0:
                    wn = 0.0
                w[k] = wn
                bar = 2.0 * wn - wk
                acc_w += wn
                acc_b += bar
                sw_next[j] += wn
                sb[j] += bar
                k += 1
            sw_next[i] += acc_w
            sb[i] += acc_b
        for i in range(d):
            sw[i] = sw_next[i]
        if ok:
            objective = lin + 0.5 * four_beta * quad - alpha * log_sum
            rel_gap = gap / max(abs(objective), 1e-300)
            if rel_gap <= tol:
                break
        if period > 0 and n_iter % period == 0 and quad > 0.0 and v_norm2 > 0.0:
            ratio = c_ratio * math.sqrt(quad / v_norm2)
            tau = 0.99 * ratio / norm_s
            sigma = 1.0 / (ratio * norm_s)
    return n_iter, rel_gap, ratio


@njit(**NJIT_FLAGS)
def duality_gap(w, z, d, alpha, beta, zeta):
    """(relative duality gap, objective) of ``w`` with the dual candidate -alpha / (S w + zeta).

    The same per-edge gap as :func:`pdhg_loop`; ``(inf, inf)`` at a zero degree.
    Needs ``beta > 0``.
    """
    sw = degrees(w, d)
    inv = np.empty(d)
    log_sum = 0.0
    for i in range(d):
        deg = sw[i] + zeta
        if deg <= 0.0:
            return np.inf, np.inf
        inv[i] = alpha / deg
        log_sum += math.log(deg)
    four_beta = 4.0 * beta
    gap = 0.0
    lin = 0.0
    quad = 0.0
    k = 0
    for i in range(d - 1):
        for j in range(i + 1, d):
            wk = w[k]
            zk = z[k]
            excess = inv[i] + inv[j] - zk
            if excess > 0.0:
                a = wk - excess / four_beta
                gap += 0.5 * four_beta * a * a
            else:
                gap += (0.5 * four_beta * wk - excess) * wk
            lin += zk * wk
            quad += wk * wk
            k += 1
    objective = lin + 0.5 * four_beta * quad - alpha * log_sum
    return gap / max(abs(objective), 1e-300), objective


# ----------------------------------------------------------------- dual (semismooth) Newton
# The Fenchel dual of eq. (7) lives on the d nodes (v < 0), and its primal is explicit:
# w_k(v) = max(0, -(v_i + v_j) - z_k) / (4 beta).  These kernels evaluate it, list the
# active edges (the support of w(v)) and solve the Newton system on that support.


@njit(**NJIT_FLAGS)
def dual_evaluate(v, z, d, beta, zeta, deg):
    """One pass over the edges at the dual point ``v``; fills ``deg = S w(v) + zeta``.

    Returns ``(z^T w(v), ||w(v)||^2, number of active edges)`` with
    ``w_k(v) = max(0, -(v_i + v_j) - z_k) / (4 beta)``; ``w(v)`` is not stored.
    """
    inv4b = 1.0 / (4.0 * beta)
    for i in range(d):
        deg[i] = 0.0
    lin = 0.0
    quad = 0.0
    n_active = 0
    k = 0
    for i in range(d - 1):
        vi = v[i]
        acc = 0.0
        for j in range(i + 1, d):
            s = -(vi + v[j]) - z[k]
            if s > 0.0:
                wk = s * inv4b
                acc += wk
                deg[j] += wk
                lin += z[k] * wk
                quad += wk * wk
                n_active += 1
            k += 1
        deg[i] += acc
    for i in range(d):
        deg[i] += zeta
    return lin, quad, n_active


@njit(**NJIT_FLAGS)
def dual_active_pairs(v, z, d, ia, ja):
    """Write the endpoints of the active edges (-(v_i + v_j) > z_k) to ia, ja; return the count.

    ``ia`` and ``ja`` must hold at least the count :func:`dual_evaluate` returned at ``v``.
    """
    n = 0
    k = 0
    for i in range(d - 1):
        vi = v[i]
        for j in range(i + 1, d):
            if -(vi + v[j]) - z[k] > 0.0:
                ia[n] = i
                ja[n] = j
                n += 1
            k += 1
    return n


@njit(**NJIT_FLAGS)
def _active_matvec(ia, ja, n_active, scale, extra, x, out):
    """out = (scale S_A S_A^T + diag(extra)) x.

    ``(S_A S_A^T x)_i`` sums ``x_i + x_j`` over the active edges (i, j) at node i.
    """
    for i in range(x.size):
        out[i] = extra[i] * x[i]
    for e in range(n_active):
        a = ia[e]
        b = ja[e]
        t = scale * (x[a] + x[b])
        out[a] += t
        out[b] += t


@njit(**NJIT_FLAGS)
def dual_newton_direction(ia, ja, n_active, beta, extra, g, rtol, max_cg, x):
    """Solve ``(S_A S_A^T / (4 beta) + diag(extra)) x = g`` by Jacobi-preconditioned CG.

    ``S_A`` keeps the active edges ``(ia[e], ja[e])``, ``e < n_active``; the
    matrix is the negated Hessian of the dual (symmetric positive definite, as
    ``extra = alpha / v^2 > 0``).  Stops when ``||residual|| <= rtol ||g||`` or
    after ``max_cg`` steps (every CG iterate is an ascent direction, so a
    truncated solve is still a valid inexact Newton step).  Returns the steps used.
    """
    d = g.size
    scale = 1.0 / (4.0 * beta)
    diag = extra.copy()
    for e in range(n_active):
        diag[ia[e]] += scale
        diag[ja[e]] += scale
    r = g.copy()
    pre = r / diag
    direction = pre.copy()
    product = np.empty(d)
    rz = np.dot(r, pre)
    bound = rtol * math.sqrt(np.dot(g, g))
    for i in range(d):
        x[i] = 0.0
    for it in range(1, max_cg + 1):
        _active_matvec(ia, ja, n_active, scale, extra, direction, product)
        curvature = np.dot(direction, product)
        if not curvature > 0.0:  # only by rounding: the matrix is positive definite
            return it - 1
        a = rz / curvature
        for i in range(d):
            x[i] += a * direction[i]
            r[i] -= a * product[i]
        if math.sqrt(np.dot(r, r)) <= bound:
            return it
        for i in range(d):
            pre[i] = r[i] / diag[i]
        rz_new = np.dot(r, pre)
        ratio = rz_new / rz
        rz = rz_new
        for i in range(d):
            direction[i] = pre[i] + ratio * direction[i]
    return max_cg


@njit(**NJIT_FLAGS)
def dual_primal(v, z, d, beta, w):
    """w_k = max(0, -(v_i + v_j) - z_k) / (4 beta): the primal point of the dual ``v``."""
    inv4b = 1.0 / (4.0 * beta)
    k = 0
    for i in range(d - 1):
        vi = v[i]
        for j in range(i + 1, d):
            s = -(vi + v[j]) - z[k]
            w[k] = s * inv4b if s > 0.0 else 0.0
            k += 1


@njit(**NJIT_FLAGS)
def _start_excess(c, sample, per_pair, alpha, zeta):
    acc = 0.0
    for y in sample:
        if 2.0 * c > y:
            acc += 2.0 * c - y
    return per_pair * acc + zeta - alpha / c


@njit(**NJIT_FLAGS)
def uniform_dual_start(sample, per_pair, alpha, zeta):
    """c > 0 with ``per_pair * sum(max(0, 2c - sample)) + zeta = alpha / c`` (bisection on log c).

    The left side is increasing in c and the right decreasing, so the root is unique.
    """
    lo, hi = -60.0, 0.0
    while _start_excess(math.exp(hi), sample, per_pair, alpha, zeta) < 0.0:
        lo, hi = hi, hi + 10.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _start_excess(math.exp(mid), sample, per_pair, alpha, zeta) < 0.0:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


@njit(**NJIT_FLAGS)
def node_gap(x):
    """t - 1 - log t at t = 1 + x (>= 0), without cancellation near x = 0."""
    if abs(x) < 1e-3:
        return x * x * (0.5 - x * (1.0 / 3.0 - x * (0.25 - x * (0.2 - x / 6.0))))
    return x - math.log1p(x)


@njit(**NJIT_FLAGS)
def dual_summary(v, deg, lin, quad, alpha, beta, zeta):
    """(dual value up to a constant, relative duality gap, rounding bound of the value) at ``v``.

    ``deg``, ``lin`` and ``quad`` come from :func:`dual_evaluate` at ``v``.  The value is
    ``-2 beta quad + alpha sum log(-v) + zeta sum v``; the gap ``P(w(v)) - D(v)`` is
    ``alpha sum (t_i - 1 - log t_i)``, ``t_i = deg_i (-v_i) / alpha``, over ``|P(w(v))|``
    (infinite at a zero degree, where ``P`` is).
    """
    d = v.size
    log_sum = 0.0
    abs_log = 0.0
    v_sum = 0.0
    for i in range(d):
        lv = math.log(-v[i])
        log_sum += lv
        abs_log += abs(lv)
        v_sum += v[i]
    value = -2.0 * beta * quad + alpha * log_sum + zeta * v_sum
    noise = 64.0 * 2.220446049250313e-16 * (2.0 * beta * quad + alpha * abs_log - zeta * v_sum)
    for i in range(d):
        if not deg[i] > 0.0:
            return value, np.inf, noise
    gap = 0.0
    log_deg = 0.0
    for i in range(d):
        gap += node_gap(deg[i] * (-v[i]) / alpha - 1.0)
        log_deg += math.log(deg[i])
    objective = lin + 2.0 * beta * quad - alpha * log_deg
    return value, alpha * gap / max(abs(objective), 1e-300), noise


@njit(**NJIT_FLAGS)
def dual_newton_loop(z, v, d, alpha, beta, zeta, tol, max_iter, armijo, min_step,
                     cg_rtol_min, cg_max, idle_max):
    """Damped semismooth Newton on the dual of the log-degree problem (``v`` in place).

    Each step: list the active edges, solve the generalised Newton system by
    :func:`dual_newton_direction` (relative residual ``min(0.1, sqrt(gap))``, at least
    ``cg_rtol_min``), then halve the step from 1 until ``v`` stays negative and the
    dual value rises by ``armijo * t * slope`` (up to its rounding bound).  Stops at a
    relative gap <= ``tol``, after ``max_iter`` steps, when no step is accepted, or
    after ``idle_max`` steps in a row that neither raise the best dual value beyond
    its rounding nor halve the best gap (rounding has stopped the progress).
    Returns ``(n_steps, relative_gap)``.  The plain-numpy twin is
    ``topokit.learn._dual_newton.newton_numpy``.
    """
    cur = v.copy()
    trial = np.empty(d)
    deg = np.empty(d)
    deg_trial = np.empty(d)
    grad = np.empty(d)
    extra = np.empty(d)
    delta = np.empty(d)
    lin, quad, n_active = dual_evaluate(cur, z, d, beta, zeta, deg)
    value, gap, noise = dual_summary(cur, deg, lin, quad, alpha, beta, zeta)
    ia = np.empty(max(n_active, 1), np.int32)
    ja = np.empty(max(n_active, 1), np.int32)
    n_iter = 0
    idle = 0
    best_value = value
    best_gap = gap
    while gap > tol and n_iter < max_iter and idle < idle_max:
        if n_active > ia.size:  # the lists only grow
            ia = np.empty(n_active, np.int32)
            ja = np.empty(n_active, np.int32)
        n_pairs = dual_active_pairs(cur, z, d, ia, ja)
        for i in range(d):
            grad[i] = deg[i] + alpha / cur[i]
            extra[i] = alpha / (cur[i] * cur[i])
        rtol = max(cg_rtol_min, min(0.1, math.sqrt(gap)))
        dual_newton_direction(ia, ja, n_pairs, beta, extra, grad, rtol, cg_max, delta)
        slope = np.dot(grad, delta)
        t = 1.0
        accepted = False
        while t >= min_step:
            negative = True
            for i in range(d):
                trial[i] = cur[i] + t * delta[i]
                if not trial[i] < 0.0:
                    negative = False
            if negative:
                lin_t, quad_t, n_t = dual_evaluate(trial, z, d, beta, zeta, deg_trial)
                value_t, gap_t, noise_t = dual_summary(trial, deg_trial, lin_t, quad_t,
                                                       alpha, beta, zeta)
                if value_t >= value + armijo * t * slope - noise:
                    accepted = True
                    break
            t *= 0.5
        if not accepted:
            break
        # idle: a step that neither raises the best value beyond rounding nor halves the best gap
        if value_t > best_value + noise or gap_t < 0.5 * best_gap:
            idle = 0
        else:
            idle += 1
        best_value = max(best_value, value_t)
        best_gap = min(best_gap, gap_t)
        cur, trial = trial, cur
        deg, deg_trial = deg_trial, deg
        value, gap, noise, n_active = value_t, gap_t, noise_t, n_t
        n_iter += 1
    for i in range(d):
        v[i] = cur[i]
    return n_iter, gap
