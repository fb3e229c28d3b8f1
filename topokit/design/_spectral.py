"""Functions of a mixing matrix W that the noise and heterogeneity features need.

:mod:`topokit.design.features` reads, for a symmetric doubly stochastic W with
eigenpairs (lambda_k, u_k), k = 1 the consensus mode (lambda_1 = 1, u_1 = 1 / sqrt(n)):

- the **disagreement diagonal** M_ii, M = sum_{k>=2} lambda_k^2 / (1 - lambda_k^2) u_k u_k^T,
  on the rows of the DP devices;
- the **felt diagonal** (C_g)_ii, C_g = sum_{k>=1} lambda_k^2 / (1 - g lambda_k^2) u_k u_k^T
  (g the discount gamma), on every row: its mean gives the effective number of neighbours;
- the squared norm of the **drift** sum_{k>=2} (1 - g) lambda_k / (1 - g lambda_k) u_k u_k^T P
  of class proportions P with centred columns.

Two ways give them, equal to rounding (``tests/design/test_spectral_features.py``):

- :class:`EigenFunctions`: every eigenpair (``numpy.linalg.eigh``), below
  :data:`FACTORED_MIN_DEVICES` devices.  The shipped predictors were fitted on
  features computed this way, and small topologies keep them to the bit.
- :class:`FactoredFunctions`: Cholesky factors of matrices shifted from W, from
  :data:`FACTORED_MIN_DEVICES` devices on.  Each function is a resolvent in
  disguise: with S = W^2,

  .. math:: C_g = W (I - g S)^{-1} W,\\qquad
            M = W (I - S + J)^{-1} W - J,

  (J = 11^T / n moves the consensus eigenvalue of I - S from 0 to 1), and the
  drift is (1 - g) (I - g W)^{-1} W P, as P has no consensus component.  Each
  diagonal entry is a quadratic form w_i^T R^{-1} w_i of a positive definite R,
  the squared norm of L^{-1} w_i with R = L L^T; the one subtraction, M's 1/n,
  leaves an absolute error near eps / n.  A Cholesky factorisation and a
  triangular solve cost n^3 / 3 and n^3 flops in BLAS-3, against an
  eigendecomposition's several n^3, much of it in BLAS-2: on 2 cores 0.07 s
  against 0.14 s at 1,000 devices.

A factorisation that fails (W with an eigenvalue at -1 or a second one at 1 that
the gap missed) falls back to the eigenpairs, so both ways agree on every input.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sl
from numpy.typing import NDArray

__all__ = ["FACTORED_MIN_DEVICES", "EigenFunctions", "FactoredFunctions", "spectral_functions"]

#: From this many devices on, features come from Cholesky factors of shifted W, not eigh
#: (2 cores: eigh 0.14 s against 0.07 s for the factors at 1,000 devices; on par near 200).
FACTORED_MIN_DEVICES = 256

#: An eigenvalue of W this close to 1 beyond the first is a second connected component.
UNIT_EIGENVALUE_TOL = 1e-9


class EigenFunctions:
    """The features' functions of W from every eigenpair, the consensus mode set apart."""

    def __init__(self, weights: NDArray[np.float64], gamma: float):
        values, vectors = np.linalg.eigh(weights)
        # W is doubly stochastic: its largest eigenvalue is 1 with the constant vector; drop it.
        self.values, self.vectors = values[:-1], vectors[:, :-1]
        self.gamma = gamma
        # |lambda|: a weighted W need not be lazy, and an eigenvalue -1 (a bipartite graph
        # with zero self-weights) never decays either.  Lazy-Metropolis eigenvalues are >= 0,
        # so for it this is the test of lambda_2 alone.
        self.connected = bool(self.values.size == 0
                              or np.abs(self.values).max() < 1.0 - UNIT_EIGENVALUE_TOL)

    def _mode_diagonal(self, weight: NDArray[np.float64]) -> NDArray[np.float64]:
        """diag(sum_k weight_k u_k u_k^T) over the non-consensus modes."""
        return (self.vectors**2) @ weight

    def disagreement_diagonal(self, rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        """M_ii on every row (``rows``, the rows that are read, is not needed here)."""
        squared = self.values**2
        return self._mode_diagonal(squared / (1.0 - squared))

    def felt_diagonal(self) -> NDArray[np.float64]:
        """(C_g)_ii of every device, the consensus mode's 1 / (n (1 - g)) included."""
        squared = self.values**2
        n = self.vectors.shape[0]
        return (1.0 / (n * (1.0 - self.gamma))
                + self._mode_diagonal(squared / (1.0 - self.gamma * squared)))

    def drift_norm2(self, centred: NDArray[np.float64]) -> float:
        """||sum_{k>=2} (1 - g) lambda_k / (1 - g lambda_k) u_k u_k^T centred||_F^2."""
        scale = (1.0 - self.gamma) * self.values / (1.0 - self.gamma * self.values)
        drift = scale[:, None] * (self.vectors.T @ centred)
        return float(np.sum(drift**2))


class FactoredFunctions:
    """The features' functions of W from Cholesky factors of resolvents (module notes).

    Build with :func:`spectral_functions`, which falls back to :class:`EigenFunctions`
    when a factorisation fails (``numpy.linalg.LinAlgError``).
    """

    def __init__(self, weights: NDArray[np.float64], gamma: float, connected: bool):
        self.weights, self.gamma, self.connected = weights, gamma, connected
        self.n = weights.shape[0]
        self.squared = weights @ weights  # S = W^2
        # The one factor every topology needs (the felt noise and n_W): taken here, so a
        # W that cannot be factored falls back before any feature is read.
        self.felt_columns = _whitened(np.eye(self.n) - gamma * self.squared, weights)

    def felt_diagonal(self) -> NDArray[np.float64]:
        """(C_g)_ii = w_i^T (I - g S)^{-1} w_i of every device."""
        return _column_norms2(self.felt_columns)

    def disagreement_diagonal(self, rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        """M_ii = w_i^T (I - S + J)^{-1} w_i - 1/n on ``rows``, 0 elsewhere."""
        shifted = np.eye(self.n) - self.squared + 1.0 / self.n
        try:
            columns = _whitened(shifted, self.weights[:, rows])
        except np.linalg.LinAlgError:  # a gap near UNIT_EIGENVALUE_TOL: I - S + J near singular
            return EigenFunctions(self.weights, self.gamma).disagreement_diagonal(rows)
        diagonal = np.zeros(self.n)
        diagonal[rows] = _column_norms2(columns) - 1.0 / self.n
        return diagonal

    def drift_norm2(self, centred: NDArray[np.float64]) -> float:
        """||(1 - g) (I - g W)^{-1} W centred||_F^2 (centred has no consensus component)."""
        lower = _cholesky(np.eye(self.n) - self.gamma * self.weights)
        drift = sl.cho_solve((lower, True), self.weights @ centred, check_finite=False)
        return float(np.sum(((1.0 - self.gamma) * drift) ** 2))


def _cholesky(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """The lower Cholesky factor; ``numpy.linalg.LinAlgError`` if not positive definite."""
    return sl.cholesky(matrix, lower=True, check_finite=False)


def _whitened(matrix: NDArray[np.float64], columns: NDArray[np.float64]) -> NDArray[np.float64]:
    """L^{-1} columns, with matrix = L L^T: column norms^2 are columns_i^T matrix^{-1} columns_i."""
    return sl.solve_triangular(_cholesky(matrix), columns, lower=True, check_finite=False)


def _column_norms2(columns: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.einsum("ij,ij->j", columns, columns)


def spectral_functions(weights: NDArray[np.float64], gamma: float,
                       gap: float) -> EigenFunctions | FactoredFunctions:
    """The features' functions of W (n x n), by eigenpairs or factors as the module notes say.

    ``gap`` is 1 - max(|lambda_2|, |lambda_n|) of W, as :func:`topokit.design.features.walk_summary`
    gives it: the factored way reads connectivity from it.
    """
    if weights.shape[0] < FACTORED_MIN_DEVICES:
        return EigenFunctions(weights, gamma)
    try:
        return FactoredFunctions(weights, gamma, connected=gap > UNIT_EIGENVALUE_TOL)
    except np.linalg.LinAlgError:
        return EigenFunctions(weights, gamma)
