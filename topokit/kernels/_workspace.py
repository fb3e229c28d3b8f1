"""The per-matrix workspace of the hitting-time, gap and fused kernels.

A kernel of one matrix works in caller-owned arrays, so that a stack kernel
allocates them once per chunk of matrices, not once per matrix.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._config import NJIT_FLAGS

#: Rows of the float workspace ``vectors`` (each of length n).
_HALF_INVERSE_DEGREE, _V, _P, _DIAGONAL, _OFF_SQUARED = 0, 1, 2, 3, 4
_N_VECTORS = 5


@njit(**NJIT_FLAGS)
def workspace(n):
    """(matrix (n, n), vectors (_N_VECTORS, n), seen (n,), stack (n,)) for one matrix at a time."""
    return (np.empty((n, n)), np.zeros((_N_VECTORS, n)),
            np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
