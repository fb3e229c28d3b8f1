"""Input checks of the public kernels, in one compiled pass over the stack.

:mod:`topokit._checks` validates with a handful of numpy passes and
temporaries per call (NaN, infinity, sign, symmetry, row sums); on a stack of
thousands of small matrices, or on one small matrix called in a loop, those
passes cost as much as the kernel.  Here a Numba scan reads each entry once
and only answers "clearly valid"; anything it flags (and anything that is not
already a float64 array) goes through the canonical checks of
:mod:`topokit._checks`, so every accepted input and every error message is the
one those checks give.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
from numba import njit, prange
from numpy.typing import NDArray

from .._checks import (
    as_matrix_stack,
    available_memory,
    check_row_stochastic,
    check_symmetric,
    graph_adjacency,
)
from ..errors import InvalidInputError
from ._config import NJIT_FLAGS, PARALLEL_FLAGS

#: A row sum this close to 1 passes without the canonical check (whose tolerance is 1e-8;
#: the margin covers the different summation order of numpy's pairwise sum).
_ROW_SUM_SURE = 1e-9

#: Fields of a scan's result: entries that are NaN, infinite or negative; entries with
#: a_ij != a_ji; the largest |row sum - 1|.
_BAD_VALUES, _UNEQUAL_PAIRS, _ROW_ERROR = 0, 1, 2

#: Side of the square tiles of the symmetry check.
_TILE = 32

#: From this many entries on a stack is scanned in parallel.
_PARALLEL_SCAN_ENTRIES = 1 << 22


@njit(**NJIT_FLAGS)
def _count_unequal_pairs(matrix):
    """How many pairs i < j have a_ij != a_ji, tile by tile (the transposed reads stay in cache)."""
    n = matrix.shape[0]
    unequal = 0
    for row_start in range(0, n, _TILE):
        row_end = min(n, row_start + _TILE)
        for column_start in range(row_start, n, _TILE):
            column_end = min(n, column_start + _TILE)
            for i in range(row_start, row_end):
                for j in range(max(column_start, i + 1), column_end):
                    unequal += 1 if matrix[i, j] != matrix[j, i] else 0
    return unequal


@njit(**NJIT_FLAGS)
def _scan_matrix(matrix, result, sums):
    """Count bad and asymmetric entries, and find the largest |row sum - 1|.

    Integer counts and column sums keep the loops vectorisable; a symmetric
    matrix's row sums are its column sums (up to the order of summation, far
    below the tolerance), so rows are summed apart only for the others.
    ``sums`` is a length-n workspace.
    """
    n = matrix.shape[0]
    bad = 0
    for j in range(n):
        sums[j] = 0.0
    for i in range(n):  # whole rows: vectorises
        row = matrix[i]
        for j in range(n):
            value = row[j]
            # NaN fails every comparison and infinity is not below it: one test for three.
            bad += 0 if (value >= 0.0 and value < np.inf) else 1
            sums[j] += value
    unequal = _count_unequal_pairs(matrix)
    if unequal:
        for i in range(n):
            total = 0.0
            for j in range(n):
                total += matrix[i, j]
            sums[i] = total
    row_error = 0.0
    for i in range(n):
        error = abs(sums[i] - 1.0)
        row_error = error if error > row_error else row_error
    result[_BAD_VALUES] = bad
    result[_UNEQUAL_PAIRS] = unequal
    result[_ROW_ERROR] = row_error


@njit(**NJIT_FLAGS)
def scan_serial(stack):
    result = np.zeros(3)
    scratch = np.empty(3)
    sums = np.empty(stack.shape[1])
    for g in range(stack.shape[0]):
        _scan_matrix(stack[g], scratch, sums)
        for field in range(3):
            result[field] = max(result[field], scratch[field])
    return result


@njit(**PARALLEL_FLAGS)
def scan_parallel(stack):
    k = stack.shape[0]
    each = np.empty((k, 3))
    for g in prange(k):
        _scan_matrix(stack[g], each[g], np.empty(stack.shape[1]))
    result = np.zeros(3)
    for g in range(k):
        for field in range(3):
            result[field] = max(result[field], each[g, field])
    return result


def _fast_float_stack(matrix: Any) -> tuple[NDArray[np.float64], bool] | None:
    """A float64 ndarray of shape (n, n) or (k, n, n), n >= 1, as a contiguous stack; else None."""
    if not isinstance(matrix, np.ndarray) or matrix.dtype != np.float64:
        return None
    if matrix.ndim not in (2, 3) or matrix.shape[-1] != matrix.shape[-2] or matrix.shape[-1] == 0:
        return None
    single = matrix.ndim == 2
    return np.ascontiguousarray(matrix[None] if single else matrix), single


def _scan(stack: NDArray[np.float64]) -> NDArray[np.float64]:
    # One matrix never enters the thread pool (see the package docstring), and a stack
    # only when large: a parallel region costs a wake-up and a barrier, which on a busy
    # machine waits for the slowest thread; the serial scan reads 4,000 16 x 16
    # matrices in about 1 ms.
    if stack.size < _PARALLEL_SCAN_ENTRIES:
        return scan_serial(stack)
    return scan_parallel(stack)


def checked_matrices(
    matrix: Any, name: str, *, symmetric: bool = False, stochastic: bool = False
) -> tuple[NDArray[np.float64], bool]:
    """Validate one matrix or a stack: finite, >= 0, optionally row-stochastic and symmetric.

    Returns the contiguous float64 (k, n, n) stack and whether the input was
    one matrix.  Raises what :func:`topokit._checks.as_matrix_stack`,
    :func:`~topokit._checks.check_row_stochastic` and
    :func:`~topokit._checks.check_symmetric` raise, in that order.
    """
    fast = _fast_float_stack(matrix)
    if fast is not None:
        stack, single = fast
        bad, unequal, row_error = _scan(stack)
        clear = (bad == 0.0 and (not symmetric or unequal == 0.0)
                 and (not stochastic or row_error <= _ROW_SUM_SURE))
        if clear:
            return stack, single
    stack, single = as_matrix_stack(matrix, name)
    if stochastic:
        check_row_stochastic(stack, name)
    if symmetric:
        check_symmetric(stack, name)
    return stack, single


def gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.3g} GiB"


def check_dense_fits(graph: nx.Graph) -> None:
    """Refuse, before allocating, a graph whose dense adjacency does not fit in memory."""
    n = graph.number_of_nodes()
    need = 8.0 * n * n
    if need > available_memory():
        raise InvalidInputError(
            f"a dense {n:,} x {n:,} matrix of this graph needs {gib(need)}, more than the "
            f"{gib(available_memory())} of memory available; for large sparse graphs use "
            "topokit.kernels.sparse_spectral_gap and topokit.kernels.hitting_time_bounds"
        )


def checked_adjacency(graph: Any) -> tuple[NDArray[np.float64], bool]:
    """A graph or validated symmetric adjacency matrices as a (k, n, n) stack; single?"""
    if isinstance(graph, nx.Graph):
        check_dense_fits(graph)
        return graph_adjacency(graph)[None], True
    return checked_matrices(graph, "adjacency", symmetric=True)
