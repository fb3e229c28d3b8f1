"""Metropolis-family weight matrices: Lazy-Metropolis and Metropolis-Hastings.

Private Numba kernels.  They never validate: the public wrappers in
:mod:`topokit.kernels` do, and hand them contiguous float64 adjacencies (any
non-zero off-diagonal entry is a link; the diagonal is ignored).  Their
plain-numpy twins live in ``topokit/testing/naive_kernels.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._config import NJIT_FLAGS, PARALLEL_FLAGS


@njit(**NJIT_FLAGS)
def _metropolis_weights_into(adjacency, out, degree_scale, offset, inverse):
    """Metropolis-family weights a_ij = 1 / (degree_scale * max(deg_i, deg_j) + offset).

    Lazy-Metropolis is (2, 0), Metropolis-Hastings (1, 1); the diagonal takes
    the rest of each row.  Any non-zero off-diagonal entry is a link.  Written
    branch-free: 1 / (s max(d_i, d_j) + o) = min(1 / (s d_i + o), 1 / (s d_j + o))
    to the bit (rounding is monotone), and adding the zeros of non-links leaves
    each row sum unchanged, so the weights are those of the paper's formula.
    ``inverse`` is a length-n workspace.
    """
    n = adjacency.shape[0]
    for i in range(n):
        degree = 0.0
        for j in range(n):
            degree += 1.0 if adjacency[i, j] != 0.0 else 0.0
        degree -= 1.0 if adjacency[i, i] != 0.0 else 0.0
        denominator = degree_scale * degree + offset
        inverse[i] = 1.0 / denominator if denominator > 0.0 else 0.0
    for i in range(n):
        own = inverse[i]
        for j in range(n):
            other = inverse[j]
            weight = own if own < other else other
            out[i, j] = weight if adjacency[i, j] != 0.0 else 0.0
        out[i, i] = 0.0
        row_sum = 0.0
        for j in range(n):
            row_sum += out[i, j]
        out[i, i] = 1.0 - row_sum


@njit(**NJIT_FLAGS)
def _metropolis_weights_one(adjacency, out, degree_scale, offset):
    _metropolis_weights_into(adjacency, out, degree_scale, offset, np.empty(adjacency.shape[0]))


@njit(**NJIT_FLAGS)
def lazy_metropolis_one(adjacency, out):
    """Lazy-Metropolis weights (DeepPrivacy eq. 4) of one (n, n) adjacency into ``out``."""
    # 2 * max + 0.0 equals 2 * max exactly, so the weights are bit-identical to
    # the paper's 1 / (2 max(deg_i, deg_j)).
    _metropolis_weights_one(adjacency, out, 2.0, 0.0)


@njit(**NJIT_FLAGS)
def metropolis_one(adjacency, out):
    """Metropolis-Hastings weights of one (n, n) adjacency into ``out``."""
    _metropolis_weights_one(adjacency, out, 1.0, 1.0)


@njit(**PARALLEL_FLAGS)
def metropolis_family_stack(adjacency, degree_scale, offset, chunks):
    """Metropolis-family weights of a (k, n, n) stack, parallel over ``chunks`` chunks.

    Lazy-Metropolis (DeepPrivacy eq. 4) is ``(2.0, 0.0)``, Metropolis-Hastings ``(1.0, 1.0)``.
    """
    k = adjacency.shape[0]
    out = np.empty_like(adjacency)
    chunks = max(1, min(k, chunks))
    for chunk in prange(chunks):
        inverse = np.empty(adjacency.shape[1])
        for g in range(chunk * k // chunks, (chunk + 1) * k // chunks):
            _metropolis_weights_into(adjacency[g], out[g], degree_scale, offset, inverse)
    return out
