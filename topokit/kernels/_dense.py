"""LAPACK paths for single large matrices.

For one matrix of a few hundred nodes or more, numpy's multithreaded
LAPACK beats Numba's per-matrix kernels; stacks of small matrices stay on the
Numba kernels, parallel over the stack.  Reducible input is left to the Numba
kernel, which handles components.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

#: From this many nodes on, a single matrix goes to LAPACK.
DENSE_THRESHOLD = 128


def strongly_connected(matrix: NDArray[np.float64]) -> bool:
    support = csr_matrix(matrix > 0)
    count, _ = connected_components(support, directed=True, connection="strong")
    return count == 1


def hitting_times_dense(transition: NDArray[np.float64]) -> NDArray[np.float64]:
    """Fundamental-matrix hitting times of an irreducible chain.

    See ``_numba._hitting_times_irreducible``.
    """
    n = transition.shape[0]
    if np.allclose(transition.sum(axis=0), 1.0, rtol=0, atol=1e-12):
        stationary = np.full(n, 1.0 / n)
    else:
        system = np.eye(n) - transition.T + 1.0
        stationary = np.linalg.solve(system, np.ones(n))
    fundamental = np.linalg.inv(np.eye(n) - transition + stationary[None, :])
    times = (np.diag(fundamental)[None, :] - fundamental) / stationary[None, :]
    np.fill_diagonal(times, 0.0)
    return times


def spectral_gap_dense(symmetric: NDArray[np.float64]) -> float:
    eigenvalues = np.linalg.eigvalsh(symmetric)
    return float(1.0 - max(abs(eigenvalues[-2]), abs(eigenvalues[0])))
