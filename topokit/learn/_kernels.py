"""Private Numba kernels of :mod:`topokit.learn`.  They never validate.

Edges are visited in ``numpy.triu_indices(d, 1)`` order by two nested loops
(``i < j``, ``k`` counting), so no index array and no edge-to-degree matrix
``S`` is ever formed: ``S w`` is accumulated node by node and ``S^T v`` is
``v[i] + v[j]``.  The public wrappers live in :mod:`topokit.learn.solvers`;
the plain-numpy twins are ``solvers._fbf_numpy`` and ``solvers._pdhg_numpy``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kernels._config import NJIT_FLAGS


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
