"""The router: what one matrix is, asked once, and so which kernel computes its quantities.

:func:`route` classifies a single matrix in one compiled pass (symmetric and
doubly stochastic?  connected support?  irreducible?) and reads its size
class; the hitting-time (:mod:`._hitting`), gap (:mod:`._gap`) and fused
(:mod:`._fused`) paths take the verdict, a :class:`Route`, instead of testing
the matrix again.  A stack never leaves Numba: its parallel kernels classify
each of its matrices with the same compiled tests.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ._config import NJIT_FLAGS
from ._connectivity import (
    reaches_everyone_both_ways,
    support_connected,
    symmetric_doubly_stochastic,
    symmetric_support,
)

#: From this many nodes on, a single matrix goes to LAPACK for its hitting times (Cholesky
#: inverse).  Measured on 2 idle cores: 0.27 ms against 0.25 ms for the Numba kernel at
#: n = 128, 0.28 ms against 0.43 ms at n = 160.
DENSE_THRESHOLD = 128

#: From this many nodes on, a single matrix goes to LAPACK for its spectral gap (2 idle
#: cores: Numba's tridiagonalisation 0.35 ms against 0.29 ms for LAPACK's dsyevr of
#: lambda_2 alone at n = 128, 0.16 ms against 0.17 ms at n = 96).
GAP_DENSE_THRESHOLD = 128

#: Up to this many nodes, :func:`topokit.kernels.hitting_time_and_gap` of one matrix runs the
#: fused serial kernel (the numbers :func:`topokit.evaluate` reports); larger single matrices
#: go to LAPACK (Cholesky inverse, Lanczos on it for the gap).  Measured on 2 idle cores at
#: n = 256: 4.0 ms fused, 1.9 ms LAPACK, 4.1 ms for numpy's inv and eigvalsh; the LAPACK
#: path is faster from about n = 160, but moving the limit would change the last bits of
#: the designs' metrics between 160 and 256 nodes.
FUSED_SINGLE_MAX = 256


class Route(NamedTuple):
    """The verdict on one (n, n) matrix with entries >= 0."""

    #: Nodes.
    n: int
    #: Exactly symmetric, every column summing to 1 within 1e-12 (the fast paths' input).
    symmetric: bool
    #: The undirected support (a_ij > 0 or a_ji > 0, i != j) is connected.
    connected: bool
    #: The directed support is strongly connected (the chain is irreducible).
    irreducible: bool
    #: Large enough for LAPACK's hitting times (``n >= DENSE_THRESHOLD``).
    dense: bool
    #: Large enough for LAPACK's spectral gap (``n >= GAP_DENSE_THRESHOLD``).
    dense_gap: bool


@njit(**NJIT_FLAGS)
def classify(matrix):
    """(symmetric doubly stochastic, support connected, irreducible) of one matrix."""
    n = matrix.shape[0]
    symmetric = symmetric_doubly_stochastic(matrix, np.empty(n))
    connected = support_connected(matrix, np.empty(n, dtype=np.int64),
                                  np.empty(n, dtype=np.int64))
    # With a symmetric support, weakly connected means strongly connected.
    irreducible = connected and (symmetric or symmetric_support(matrix)
                                 or reaches_everyone_both_ways(matrix))
    return symmetric, connected, irreducible


def route(matrix: NDArray[np.float64]) -> Route:
    """Classify one contiguous float64 (n, n) matrix with entries >= 0, once."""
    n = matrix.shape[0]
    symmetric, connected, irreducible = classify(matrix)
    return Route(n, bool(symmetric), bool(connected), bool(irreducible),
                 n >= DENSE_THRESHOLD, n >= GAP_DENSE_THRESHOLD)
