"""Entry points that trust their input: for code that already holds valid matrices.

The public functions of :mod:`topokit.kernels` validate their input, then call
these.  Callers inside topokit that build the matrices themselves (an
adjacency of 0/1 links, a Lazy-Metropolis or other symmetric doubly
stochastic weight matrix) call them directly, so that a matrix is not checked
twice.  **They do not validate**: a matrix that is not square, has NaN or
negative entries, rows that do not sum to 1, or (for an adjacency) an
asymmetric support gives undefined results instead of an error.

=======================================  ============================================
name                                     computes
=======================================  ============================================
:func:`lazy_metropolis_one`              (Numba) Lazy-Metropolis weights of one
                                         (n, n) adjacency into ``out``
:func:`hitting_times_one`                (Numba) all-pairs hitting times of one
                                         row-stochastic matrix into ``out``; a status
:func:`hitting_time_and_gap_unchecked`   :func:`topokit.kernels.hitting_time_and_gap`
:func:`max_hitting_time_unchecked`       :func:`topokit.kernels.max_hitting_time`
:func:`spectral_gap_unchecked`           :func:`topokit.kernels.spectral_gap`
:func:`walk_summary_unchecked`           both of the above for one weight matrix,
                                         classified once
:func:`connected_unchecked`              whether the links of one (n, n) matrix
                                         connect its nodes
=======================================  ============================================

The two Numba kernels can be called from other Numba code; the status of
:func:`hitting_times_one` is :data:`OK` or :data:`REDUCIBLE_WITH_TRANSIENT_STATES`.
Arrays must be contiguous float64, as :func:`numpy.ascontiguousarray` gives.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from . import _fused, _gap, _hitting, _router
from ._config import chunks
from ._connectivity import support_connected
from ._hitting import OK, REDUCIBLE_WITH_TRANSIENT_STATES, hitting_times_one
from ._weights import lazy_metropolis_one

__all__ = [
    "OK",
    "REDUCIBLE_WITH_TRANSIENT_STATES",
    "lazy_metropolis_one",
    "hitting_times_one",
    "hitting_times_unchecked",
    "max_hitting_time_unchecked",
    "spectral_gap_unchecked",
    "hitting_time_and_gap_unchecked",
    "walk_summary_unchecked",
    "connected_unchecked",
]

def hitting_times_unchecked(transition: NDArray[np.float64]) -> NDArray[np.float64]:
    """All-pairs hitting times of one (n, n) row-stochastic matrix or a (k, n, n) stack."""
    if transition.ndim == 2:
        return _hitting.hitting_times_routed(transition, _router.route(transition))
    times, status = _hitting.hitting_times_stack(transition, chunks())
    _hitting.raise_on_status(status)
    return times


def max_hitting_time_unchecked(transition: NDArray[np.float64]) -> float | NDArray[np.float64]:
    """H of one (n, n) row-stochastic matrix (a float) or of each of a (k, n, n) stack."""
    if transition.ndim == 2:
        return _hitting.max_hitting_time_routed(transition, _router.route(transition))
    largest, status = _hitting.max_hitting_time_stack(transition, chunks())
    _hitting.raise_on_status(status)
    return largest


def spectral_gap_unchecked(symmetric: NDArray[np.float64]) -> float | NDArray[np.float64]:
    """The gap of one (n, n) symmetric stochastic matrix (a float) or of each of a stack."""
    if symmetric.ndim == 2:
        return _gap.spectral_gap_routed(symmetric, _router.route(symmetric))
    return _gap.spectral_gap_stack(symmetric, chunks())


def walk_summary_unchecked(weights: NDArray[np.float64]) -> tuple[float, float]:
    """(H, gap) of one (n, n) symmetric doubly stochastic weight matrix, classified once.

    The numbers of ``max_hitting_time(weights)`` and ``spectral_gap(weights)``.
    """
    route = _router.route(weights)
    return (_hitting.max_hitting_time_routed(weights, route),
            _gap.spectral_gap_routed(weights, route))


def hitting_time_and_gap_unchecked(
    adjacency: NDArray[np.float64],
) -> tuple[float, float] | tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(H, gap) of the Lazy-Metropolis walk on one (n, n) adjacency or a (k, n, n) stack.

    Any non-zero off-diagonal entry is a link; the support must be symmetric.
    """
    if adjacency.ndim == 3:
        return _fused.hitting_time_and_gap_stack(adjacency, chunks())
    if adjacency.shape[0] <= _router.FUSED_SINGLE_MAX:
        hitting, gap = _fused.hitting_time_and_gap_one(adjacency)
        return float(hitting), float(gap)
    return _fused.hitting_time_and_gap_large(adjacency)


def connected_unchecked(matrix: NDArray[np.float64]) -> bool:
    """Whether the support of one (n, n) float64 matrix (a_ij != 0 or a_ji != 0, i != j) is
    connected: a bit-mask sweep up to 64 nodes, else a depth-first search, O(n^2) and no
    sparse matrix to build."""
    n = matrix.shape[0]
    return bool(support_connected(matrix, np.empty(n, dtype=np.int64),
                                  np.empty(n, dtype=np.int64)))
