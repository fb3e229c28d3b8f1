"""Private Numba kernels of :mod:`topokit.learn`.  They never validate.

Edges are visited in ``numpy.triu_indices(d, 1)`` order by two nested loops
(``i < j``, ``k`` counting), so no index array and no edge-to-degree matrix
``S`` is ever formed: ``S w`` is accumulated node by node and ``S^T v`` is
``v[i] + v[j]``.  The public wrappers live in :mod:`topokit.learn.solvers`;
the plain-numpy twin of the FBF loop is ``solvers._fbf_numpy``.
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

