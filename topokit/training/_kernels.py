"""Private Numba kernels of the training core.  They never validate: the models and
:func:`topokit.training.train` hand them arrays of the right shapes.

Their plain-numpy twins, which ``tests/training/test_training.py`` compares them with:
``Model.gradient`` (``shift_logits`` + ``clipped_residual``), ``scores().argmax``
and ``Model.accuracy`` (``argmax_classes``, ``count_correct``,
``count_correct_certified``), ``np.isfinite(...).all()`` (``all_finite``) and
scipy's CSR product (``csr_mix``).  Flags come from ``topokit.kernels.NJIT_FLAGS``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kernels import NJIT_FLAGS

_TINY = 1e-12


@njit(**NJIT_FLAGS)
def shift_logits(logits, bias):
    """logits (n, b, k) <- logits + bias[:, None, :] minus its maximum over the classes.

    The maximum is taken as ``np.max`` does (a NaN propagates).
    """
    n, b, k = logits.shape
    for i in range(n):
        for r in range(b):
            top = -np.inf
            for c in range(k):
                v = logits[i, r, c] + bias[i, c]
                logits[i, r, c] = v
                if v > top or v != v:
                    top = v
            for c in range(k):
                logits[i, r, c] -= top


@njit(**NJIT_FLAGS)
def clipped_residual(exp_logits, y, weight, row_sq_norms, bound, bias_grad):
    """The weighted, clipped softmax residual of every example, in place.

    ``exp_logits`` (n, b, k) holds exp(shifted logits) on entry (see
    :func:`shift_logits`; numpy's vectorised exp runs in between) and
    ``weight * clip * (softmax - one_hot(y))`` on exit; ``bias_grad`` (n, k)
    receives its sum over the batch (the bias part of the gradient).  Example
    (i, r) is clipped to norm ``bound[i]`` with the ghost norm (||x||^2 + 1)
    ||residual||^2 (``row_sq_norms`` holds ||x||^2); ``bound[i] = inf`` means
    no clipping.  Rows of weight 0 (not drawn) are set to exactly 0.  The
    operations are those of the numpy path
    (``LogisticRegression._residual`` and ``_clip_factors``) except that the
    sums over the classes run left to right.
    """
    n, b, k = exp_logits.shape
    for i in range(n):
        clip = bound[i]
        for c in range(k):
            bias_grad[i, c] = 0.0
        for r in range(b):
            total = 0.0
            for c in range(k):
                total += exp_logits[i, r, c]
            label = y[i, r]
            sq = 0.0
            for c in range(k):
                p = exp_logits[i, r, c] / total
                if c == label:
                    p -= 1.0
                exp_logits[i, r, c] = p
                sq += p * p
            factor = weight[i, r]
            if clip < np.inf:
                norm = math.sqrt(max((row_sq_norms[i, r] + 1.0) * sq, _TINY))
                factor = min(1.0, clip / norm) * factor
            if factor == 0.0:
                # A row not drawn (or padding): exactly no contribution, even where its own
                # logits overflowed (0 * NaN would poison the sums).
                for c in range(k):
                    exp_logits[i, r, c] = 0.0
                continue
            for c in range(k):
                scaled = exp_logits[i, r, c] * factor
                exp_logits[i, r, c] = scaled
                bias_grad[i, c] += scaled


@njit(**NJIT_FLAGS)
def _running_argmax(logits, bias, i, best, label):
    """label[j] = argmax_c (logits[i * k + c, j] + bias[i, c]), best[j] its value.

    Classes in the outer loop and examples in the inner one (branch-free,
    vectorisable); strict ">" keeps the first maximum as argmax does, and a NaN
    becomes the running maximum as in ``np.maximum``.
    """
    k = bias.shape[1]
    m = logits.shape[1]
    base = i * k
    shift = bias[i, 0]
    for j in range(m):
        best[j] = logits[base, j] + shift
        label[j] = 0
    for c in range(1, k):
        shift = bias[i, c]
        row = base + c
        for j in range(m):
            v = logits[row, j] + shift
            old = best[j]
            label[j] = c if v > old else label[j]
            best[j] = v if (v > old or v != v) else old


@njit(**NJIT_FLAGS)
def argmax_classes(logits, bias, labels):
    """labels[i, j] = argmax_c (logits[i * k + c, j] + bias[i, c]) (first maximum wins).

    ``logits`` is (n * k, m): class c of device i in row i * k + c, as
    ``LogisticRegression`` lays out the test-set product.
    """
    n = bias.shape[0]
    best = np.empty(logits.shape[1])
    for i in range(n):
        _running_argmax(logits, bias, i, best, labels[i])


@njit(**NJIT_FLAGS)
def count_correct(logits, bias, truth, correct):
    """correct[i] = #{j : argmax_c (logits[i * k + c, j] + bias[i, c]) == truth[j]}."""
    n = bias.shape[0]
    m = logits.shape[1]
    best = np.empty(m)
    label = np.empty(m, dtype=np.int64)
    for i in range(n):
        _running_argmax(logits, bias, i, best, label)
        hits = 0
        for j in range(m):
            hits += label[j] == truth[j]
        correct[i] = hits


@njit(**NJIT_FLAGS)
def _exact_label(X, weights, bias, i, j):
    """argmax_c (X[j] . weights[i, :, c] + bias[i, c]) in float64, as ``_running_argmax``."""
    f = X.shape[1]
    k = bias.shape[1]
    best = 0.0
    label = 0
    for c in range(k):
        v = 0.0
        for g in range(f):
            v += X[j, g] * weights[i, g, c]
        v += bias[i, c]
        if c == 0:
            best = v
        else:
            if v > best:
                label = c
            if v > best or v != v:
                best = v
    return label


@njit(**NJIT_FLAGS)
def count_correct_certified(logits32, bias, truth, x_norm, w_norm, scale, X, weights, correct):
    """``count_correct`` from single-precision logits, exact where it matters.

    ``logits32`` (n * k, m) is X W computed in float32 (every partial sum
    below float32's overflow).  Its error in every entry is at most ``scale
    * x_norm[j] * w_norm[i]`` (``scale`` a bound of gamma_{f+2}, x_norm[j] =
    ||x_j||, w_norm[i] = max_c ||w_ic||; ``inf`` sends device i to float64)
    plus an absolute 1e-40 (1 + ||x||) (1 + ||w||) for float32's subnormal
    range; wherever the
    two best classes of an example are closer than twice that (plus the
    rounding of the bias), the example is classified again in float64 from
    ``X`` (m, f) and ``weights`` (n, f, k).  So the labels are those of the
    float64 product except for float64 near-ties (differences of a few ulps),
    which any two summation orders may already break differently.  A NaN
    anywhere sends the example to the float64 path.
    """
    n, k = bias.shape
    m = logits32.shape[1]
    first = np.empty(m)
    second = np.empty(m)
    label = np.empty(m, dtype=np.int64)
    eps = 2.0 ** -52
    for i in range(n):
        base = i * k
        shift = bias[i, 0]
        for j in range(m):
            first[j] = np.float64(logits32[base, j]) + shift
            second[j] = -np.inf
            label[j] = 0
        for c in range(1, k):
            shift = bias[i, c]
            row = base + c
            for j in range(m):
                v = np.float64(logits32[row, j]) + shift
                top = first[j]
                above = v > top
                runner = second[j]
                runner = runner if runner >= v else v
                second[j] = top if above else runner
                label[j] = c if above else label[j]
                first[j] = v if above else top
        hits = 0
        for j in range(m):
            top = first[j]
            runner = second[j]
            spread = x_norm[j] * w_norm[i]
            radius = (scale * spread + 1e-40 * (1.0 + x_norm[j] + w_norm[i] + spread)
                      + eps * (abs(top) + abs(runner)))
            guess = label[j]
            if not (top - runner > 2.0 * radius):
                guess = _exact_label(X, weights, bias, i, j)
            hits += guess == truth[j]
        correct[i] = hits


@njit(**NJIT_FLAGS)
def weights_to_float32(weights, tall, x_max):
    """tall[i, c, f] = float32(weights[i, f, c]); returns max_c ||w_ic|| per device.

    A device whose sums could overflow float32 (max_c ||w_ic|| * ``x_max`` >=
    1e36) or whose weights are not finite gets ``inf`` (the float64 path).
    """
    n, f, k = weights.shape
    norms = np.empty(n)
    sq = np.empty(k)
    for i in range(n):
        for c in range(k):
            sq[c] = 0.0
        for g in range(f):
            for c in range(k):
                w = weights[i, g, c]
                tall[i, c, g] = np.float32(w)
                sq[c] += w * w
        largest = 0.0
        for c in range(k):
            if sq[c] > largest or sq[c] != sq[c]:
                largest = sq[c]
                if largest != largest:
                    break  # NaN weights: the float64 path
        norm = math.sqrt(largest)
        norms[i] = norm if norm * x_max < 1e36 else np.inf
    return norms


@njit(**NJIT_FLAGS)
def all_finite(values):
    """``np.isfinite(values).all()`` for a 2-d array, stopping at the first non-finite value."""
    n, p = values.shape
    for i in range(n):
        for j in range(p):
            v = values[i, j]
            if not (v - v == 0.0):  # NaN and +-inf give NaN
                return False
    return True


@njit(**NJIT_FLAGS)
def csr_mix(indptr, indices, data, values, out):
    """out = A @ values for A in CSR form (indptr, indices, data), summed in index order.

    The arithmetic of scipy's ``csr_matrix @ ndarray`` (start at 0, add
    a_ij * values[j] link by link), without its per-call overhead and into
    a buffer.
    """
    n, p = out.shape
    for i in range(n):
        for q in range(p):
            out[i, q] = 0.0
        for jj in range(indptr[i], indptr[i + 1]):
            a = data[jj]
            j = indices[jj]
            for q in range(p):
                out[i, q] += a * values[j, q]
