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
  :data:`FACTORED_MIN_DEVICES` devices on.  With the consensus mode set apart,
  W0 = W - J (J = 11^T / n; W0 has the eigenvalues lambda_k, k >= 2, and 0 on the
  constant vector), each function is a resolvent in disguise:

  .. math:: C_g = W_0 (I - g W_0^2)^{-1} W_0 + \\frac{J}{1 - g},\\qquad
            M = W_0 (I - W_0^2)^{-1} W_0,

  and the drift is (1 - g) (I - g W0)^{-1} W0 P, as P has no consensus
  component.  W0^2 is never formed: 1 / (1 - g x^2) = (1 / (1 - s x) + 1 / (1 + s x)) / 2
  with s = sqrt(g), so (I - g W0^2)^{-1} = ((I - sW0)^{-1} + (I + sW0)^{-1}) / 2, and
  (I - W0^2)^{-1} = ((I - W0)^{-1} + (I + W0)^{-1}) / 2.  A diagonal entry is then a
  sum of quadratic forms w0_i^T R^{-1} w0_i = ||L^{-1} w0_i||^2 (R = L L^T positive
  definite), without cancellation, computed for the rows that are read only (the DP
  devices'); the consensus share 1 / (n (1 - g)) is added exactly, so no factor's
  conditioning depends on 1 - g.  The mean of the felt diagonal is
  (tr (I - g W0^2)^{-1} - n) / (g n) + 1 / (n (1 - g)), the trace from triangular
  inverses: a subtraction whose relative error grows like n eps / g times the factors'
  condition, so below g = 1/2 it is summed row by row instead.  Cholesky factors and
  triangular solves are BLAS-3, n^3 / 3 flops each, where an eigendecomposition costs
  several n^3, much of it in BLAS-2: at 1,000 devices, one core, the features of a
  topology take 0.13 s instead of 0.18 s.

The factors of I -+ sW0 are positive definite for every W with eigenvalues in [-1, 1]
and g < 1; those of I -+ W0 are singular exactly when W has a second eigenvalue of modulus
1, when the gap is 0 and M is never asked for.  A factorisation that fails all the same
(rounding, a gap at the tolerance) falls back to the eigenpairs, and to inf for M where
they too find a second eigenvalue of modulus 1.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg as sl
from numpy.typing import NDArray

__all__ = ["FACTORED_MIN_DEVICES", "EigenFunctions", "FactoredFunctions", "spectral_functions"]

#: From this many devices on, features come from Cholesky factors of shifted W, not eigh.
#: A SIoT topology's features, one core (two): 1.07x (1.08x) faster at 512 devices, 1.36x
#: (1.29x) at 1,000; below 512 the two are within noise of each other.
FACTORED_MIN_DEVICES = 512

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

    @functools.cached_property
    def _squared_vectors(self) -> NDArray[np.float64]:
        return self.vectors**2

    def _mode_diagonal(self, weight: NDArray[np.float64]) -> NDArray[np.float64]:
        """diag(sum_k weight_k u_k u_k^T) over the non-consensus modes."""
        return self._squared_vectors @ weight

    def disagreement_diagonal(self, rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        """M_ii on every row (``rows``, the rows that are read, is not needed here)."""
        squared = self.values**2
        return self._mode_diagonal(squared / (1.0 - squared))

    def felt_diagonal(self, rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        """(C_g)_ii on every row, the consensus mode's 1 / (n (1 - g)) included."""
        return self._felt_diagonal

    def felt_mean(self) -> float:
        """tr C_g / n."""
        return float(self._felt_diagonal.mean())

    @functools.cached_property
    def _felt_diagonal(self) -> NDArray[np.float64]:
        # Read twice (the felt noise and n_W): computed once.
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
        # W0 = W - J: the consensus mode set apart, so that no factor's conditioning
        # depends on 1 - gamma (its share, 1 / (1 - g), is added exactly).
        self.deflated = weights - 1.0 / self.n
        identity, root = np.eye(self.n), np.sqrt(gamma)
        # (I - g W0^2)^{-1} = ((I - sW0)^{-1} + (I + sW0)^{-1}) / 2 with s = sqrt(g).
        self.felt_factors = (_cholesky(identity - root * self.deflated),
                             _cholesky(identity + root * self.deflated))

    def felt_diagonal(self, rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        """(C_g)_ii = w0_i^T (I - g W0^2)^{-1} w0_i + 1 / (n (1 - g)) on ``rows``, 0 elsewhere."""
        diagonal = self._halved_forms(self.felt_factors, rows)
        diagonal[rows] += self._consensus_share()
        return diagonal

    def felt_mean(self) -> float:
        """tr C_g / n: tr (I - g W0^2)^{-1} from the triangular inverses (module notes)."""
        if self.gamma < _TRACE_IDENTITY_MIN_GAMMA:
            return float(self.felt_diagonal(np.ones(self.n, dtype=bool)).mean())
        inverse_trace = sum(_inverse_norm2(lower) for lower in self.felt_factors) / 2.0
        # sum_{k>=2} lambda_k^2 / (1 - g lambda_k^2) = (tr (I - g W0^2)^{-1} - n) / g.
        return float((inverse_trace - self.n) / self.gamma / self.n + self._consensus_share())

    def disagreement_diagonal(self, rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        """M_ii = w0_i^T (I - W0^2)^{-1} w0_i on ``rows``, 0 elsewhere."""
        identity = np.eye(self.n)
        try:
            factors = (_cholesky(identity - self.deflated), _cholesky(identity + self.deflated))
        except np.linalg.LinAlgError:  # a gap at UNIT_EIGENVALUE_TOL: I -+ W0 near singular
            eigen = EigenFunctions(self.weights, self.gamma)
            if not eigen.connected:
                return np.where(rows, np.inf, 0.0)
            return eigen.disagreement_diagonal(rows)
        return self._halved_forms(factors, rows)

    def drift_norm2(self, centred: NDArray[np.float64]) -> float:
        """||(1 - g) (I - g W0)^{-1} W0 centred||_F^2 (centred has no consensus component)."""
        lower = _cholesky(np.eye(self.n) - self.gamma * self.deflated)
        drift = sl.cho_solve((lower, True), self.deflated @ centred, check_finite=False)
        return float(np.sum(((1.0 - self.gamma) * drift) ** 2))

    def _consensus_share(self) -> float:
        return 1.0 / (self.n * (1.0 - self.gamma))

    def _halved_forms(self, factors: tuple[NDArray[np.float64], NDArray[np.float64]],
                      rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        """(w0_i^T A^{-1} w0_i + w0_i^T B^{-1} w0_i) / 2 on ``rows``, 0 elsewhere
        (A = L_a L_a^T, B = L_b L_b^T)."""
        columns = self.deflated[:, rows]
        diagonal = np.zeros(self.n)
        diagonal[rows] = sum(_column_norms2(sl.solve_triangular(
            lower, columns, lower=True, check_finite=False)) for lower in factors) / 2.0
        return diagonal


#: Below this gamma, tr C_g comes from the quadratic forms of every row, not the trace identity.
_TRACE_IDENTITY_MIN_GAMMA = 0.5


def _cholesky(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """The lower Cholesky factor; ``numpy.linalg.LinAlgError`` if not positive definite."""
    return sl.cholesky(matrix, lower=True, check_finite=False)


def _inverse_norm2(lower: NDArray[np.float64]) -> float:
    """||L^{-1}||_F^2 = tr (L L^T)^{-1}, by LAPACK's triangular inverse."""
    inverse, info = sl.lapack.dtrtri(lower, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dtrtri failed with info {info}")
    return float(np.sum(inverse * inverse))


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
