"""The audit's Kalman filter compiled for observers with few hidden devices.

:func:`topokit.audit._kernels.filter_information` runs one round of the filter as a
dozen numpy and sparse products. When the observer hides few devices (small networks:
the toy, the topologies a design report audits) those matrices are a few rows wide and
each call costs microseconds of Python overhead and nothing of arithmetic: at 16 devices
a sparse observer takes 2.6 ms, a compiled one 0.4 ms (``python -m
analyses.audit_filter``, which finds the two even near 256 devices;
``_kernels.DENSE_DEVICES`` says where this one takes over). The same recursion, on dense
blocks, in the same order of operations; ``tests/audit/test_audit.py`` holds it against
the sparse Python filter and the dense twin. Flags from ``topokit.kernels.NJIT_FLAGS``;
imported only when an audit needs it (Numba compiles it once per machine, about 5 s of
CPU, then loads it from its cache).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels import NJIT_FLAGS


@njit(**NJIT_FLAGS)
def pseudo_inverse_root(covariance, rtol, rcond):
    """``_kernels._pseudo_inverse_root``: (R, True), or (empty, False) if ill-conditioned.

    ``rtol``, ``rcond``: ``_kernels.COVARIANCE_RTOL`` and ``FILTER_RCOND``.
    """
    size = covariance.shape[0]
    inverse_scale = np.zeros(size)
    for i in range(size):
        if covariance[i, i] > 0.0:
            inverse_scale[i] = 1.0 / np.sqrt(covariance[i, i])
    values, vectors = np.linalg.eigh(covariance * np.outer(inverse_scale, inverse_scale))
    largest = max(values.max(), 0.0)
    kept = 0
    for value in values:
        if value > rtol * largest:
            if value < rcond * largest:
                return np.zeros((0, size)), False
            kept += 1
    root = np.empty((kept, size))
    row = 0
    for j in range(size):
        if values[j] > rtol * largest:
            scale = 1.0 / np.sqrt(values[j])
            for i in range(size):
                root[row, i] = vectors[i, j] * scale * inverse_scale[i]
            row += 1
    return root, True


@njit(**NJIT_FLAGS)
def filter_information(to_heard, to_hidden, heard_variance, hidden_variance, motion, rounds,
                       rtol, rcond):
    """``_kernels.filter_information`` on dense blocks: (information, True), or
    (partial, False) as soon as an innovation covariance is ill-conditioned.

    ``to_heard`` = W_OU (d, u), ``to_hidden`` = W_UU (u, u), the noise variances of
    the heard and the hidden devices, ``motion`` = M_0 (u, owners), T = ``rounds``;
    ``rtol``, ``rcond`` as in :func:`pseudo_inverse_root`.
    """
    covariance = np.diag(hidden_variance)
    information = np.zeros(motion.shape[1])
    heard_t = np.ascontiguousarray(to_heard.T)
    hidden_t = np.ascontiguousarray(to_hidden.T)
    for _ in range(rounds - 1):
        cross = to_heard @ covariance                              # W_OU S
        innovation = cross @ heard_t + np.diag(heard_variance)     # F
        jump = to_heard @ motion                                   # J
        root, ok = pseudo_inverse_root((innovation + innovation.T) / 2, rtol, rcond)
        if not ok:
            return information, False
        read = root @ jump
        information += (read * read).sum(axis=0)
        gain_root = (to_hidden @ np.ascontiguousarray(cross.T)) @ np.ascontiguousarray(root.T)
        covariance = (to_hidden @ covariance @ hidden_t + np.diag(hidden_variance)
                      - gain_root @ np.ascontiguousarray(gain_root.T))
        covariance = (covariance + covariance.T) / 2
        motion = to_hidden @ motion - gain_root @ read
    return information, True
