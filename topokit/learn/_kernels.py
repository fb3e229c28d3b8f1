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
def fbf_loop(z, w, v, d, alpha, beta, zeta, step, tol, max_iter):
    """Forward-backward-forward iterations on the log-degree problem (in place).

    Primal ``w`` (edges), dual ``v`` (nodes) for
    ``min_{w>=0} z^T w + f2(S w) + 2 beta ||w||^2`` with
    ``f2(u) = -alpha sum log(u + zeta)``.  Returns
    ``(n_iter, primal_residual, dual_residual)``; stops when both relative
    residuals ``||Q - Y|| / ||w||`` and ``||q - y|| / ||v||`` are below tol.
    """
    sw = np.empty(d)
    sp = np.empty(d)
    v_old = np.empty(d)
    p_bar = np.empty(d)
    four_beta = 4.0 * beta
    primal_res = np.inf
    dual_res = np.inf
    n_iter = 0
    for it in range(max_iter):
        n_iter = it + 1
        # forward step on the primal, prox of z^T w + indicator(w >= 0); accumulate S w, S P
        for i in range(d):
            sw[i] = 0.0
            sp[i] = 0.0
            v_old[i] = v[i]
        k = 0
        for i in range(d - 1):
            vi = v_old[i]
            acc_w = 0.0
            acc_p = 0.0
            for j in range(i + 1, d):
                wk = w[k]
                y_k = wk - step * (four_beta * wk + vi + v_old[j])
                p_k = y_k - step * z[k]
                if p_k < 0.0:
                    p_k = 0.0
                acc_w += wk
                acc_p += p_k
                sw[j] += wk
                sp[j] += p_k
                k += 1
            sw[i] += acc_w
            sp[i] += acc_p
        # dual: prox of the conjugate of f2, then the correcting forward step
        dual_change = 0.0
        dual_norm = 0.0
        for i in range(d):
            y = v_old[i] + step * sw[i] + step * zeta
            pb = 0.5 * (y - math.sqrt(y * y + 4.0 * alpha * step))
            y -= step * zeta
            q = pb + step * sp[i]
            v[i] = v_old[i] - y + q
            p_bar[i] = pb
            dual_change += (q - y) * (q - y)
            dual_norm += v[i] * v[i]
        # second pass over the edges: the correcting forward step on the primal
        primal_change = 0.0
        primal_norm = 0.0
        k = 0
        for i in range(d - 1):
            vi = v_old[i]
            pi = p_bar[i]
            for j in range(i + 1, d):
                wk = w[k]
                y_k = wk - step * (four_beta * wk + vi + v_old[j])
                p_k = y_k - step * z[k]
                if p_k < 0.0:
                    p_k = 0.0
                q_k = p_k - step * (four_beta * p_k + pi + p_bar[j])
                diff = q_k - y_k
                w_new = wk + diff
                w[k] = w_new
                primal_change += diff * diff
                primal_norm += w_new * w_new
                k += 1
        primal_res = math.sqrt(primal_change) / max(math.sqrt(primal_norm), 1e-300)
        dual_res = math.sqrt(dual_change) / max(math.sqrt(dual_norm), 1e-300)
        if primal_res < tol and dual_res < tol:
            break
    return n_iter, primal_res, dual_res
