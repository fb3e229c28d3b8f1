"""Large sparse graphs: the Lazy-Metropolis walk as a sparse matrix, its spectral gap by
Lanczos, and Laplacian solves for hitting times to one target.

Private building blocks of :mod:`topokit.kernels._large`.  The weights are those
of :func:`topokit.kernels.lazy_metropolis` to the bit: w_ij = min(1 / (2 deg_i),
1 / (2 deg_j)) on links, each row summed in column order.

With W the matrix of the weights (no diagonal) and s its row sums, the walk is
P = I - L with the weighted Laplacian L = diag(s) - W.  P is symmetric, doubly
stochastic and lazy (p_ii >= 1/2), so its eigenvalues lie in [0, 1] and the gap
is 1 - lambda_2 = mu_2, the smallest non-zero eigenvalue of L.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import networkx as nx
import numpy as np
import scipy.sparse as sp
from numba import njit
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

from .._blas import one_blas_thread
from .._checks import as_matrix_stack, check_symmetric
from ..errors import InvalidInputError, TopokitError
from ._config import NJIT_FLAGS

#: Up to this many nodes the slowest mode comes from a dense eigendecomposition.
DENSE_MAX = 64

#: Lanczos basis size for the gap, and the fixed seed of its start vector.
LANCZOS_VECTORS = 20
LANCZOS_SEED = 20_240_519


class SparseWalk(NamedTuple):
    """The Lazy-Metropolis walk of a graph, in sparse form."""

    weights: sp.csr_array  # W: off-diagonal weights, symmetric, sorted indices
    row_sums: NDArray[np.float64]  # s_i = sum_j w_ij = 1 - p_ii

    @property
    def n(self) -> int:
        return self.row_sums.shape[0]

    def laplacian(self) -> sp.csr_array:
        """L = diag(s) - W = I - P."""
        return (sp.diags_array(self.row_sums) - self.weights).tocsr()


def _sparse_from_array(matrix: Any) -> sp.csr_array:
    """A dense array-like adjacency, validated as the dense functions do, in CSR form."""
    stack, single = as_matrix_stack(matrix, "adjacency")
    if not single:
        raise InvalidInputError(
            f"adjacency must be one matrix of shape (n, n); got a stack of shape {stack.shape}"
        )
    check_symmetric(stack, "adjacency")
    return sp.csr_array(stack[0])


def _check_sparse(matrix: sp.sparray | sp.spmatrix) -> sp.csr_array:
    """A scipy sparse adjacency: square, finite, >= 0 and symmetric (to 1e-10)."""
    csr = sp.csr_array(matrix, dtype=np.float64)
    if csr.ndim != 2 or csr.shape[0] != csr.shape[1]:
        raise InvalidInputError(f"adjacency must be a square matrix; got shape {csr.shape}")
    if csr.shape[0] == 0:
        raise InvalidInputError(f"adjacency must have at least one node; got shape {csr.shape}")
    values = csr.data
    if np.isnan(values).any():
        raise InvalidInputError("adjacency contains NaN values")
    if np.isinf(values).any():
        raise InvalidInputError("adjacency contains infinite values")
    if (values < 0).any():
        raise InvalidInputError("adjacency has negative entries; weights must be >= 0")
    asymmetry = abs(csr - csr.T).max() if csr.nnz else 0.0
    if asymmetry > 1e-10:
        raise InvalidInputError(
            f"adjacency must be symmetric; largest |a_ij - a_ji| is {asymmetry:.3g}"
        )
    return csr


def sparse_adjacency(graph: Any) -> sp.csr_array:
    """Links of a graph as a 0/1 CSR matrix without diagonal, sorted indices.

    ``graph`` is a networkx graph (node order ``list(graph)``), a scipy sparse
    matrix or array, or a dense array-like; any non-zero off-diagonal entry is
    a link.
    """
    if isinstance(graph, nx.Graph):
        if graph.is_directed():
            raise InvalidInputError("expected an undirected graph; got a directed one")
        if graph.number_of_nodes() == 0:
            raise InvalidInputError("the graph must have at least one node; got an empty graph")
        csr = nx.to_scipy_sparse_array(graph, nodelist=list(graph), weight=None,
                                       dtype=np.float64, format="csr")
    elif sp.issparse(graph):
        csr = _check_sparse(graph)
    else:
        csr = _sparse_from_array(graph)
    coo = sp.coo_array(csr)
    link = (coo.row != coo.col) & (coo.data != 0)
    links = sp.csr_array((np.ones(int(link.sum())), (coo.row[link], coo.col[link])),
                         shape=coo.shape)
    links.sum_duplicates()  # also sorts the indices
    links.data[:] = 1.0
    return links


@njit(**NJIT_FLAGS)
def _weights_and_row_sums(indptr, indices, weights, row_sums):
    """w_ij = min(1/(2 deg_i), 1/(2 deg_j)) on the links of a CSR pattern; row sums in order.

    The same numbers as the dense ``_weights._metropolis_weights_into`` (which
    adds the zeros of non-links, leaving each sum unchanged).
    """
    n = indptr.shape[0] - 1
    half_inverse = np.empty(n)
    for i in range(n):
        degree = float(indptr[i + 1] - indptr[i])
        half_inverse[i] = 1.0 / (2.0 * degree) if degree > 0 else 0.0
    for i in range(n):
        total = 0.0
        for position in range(indptr[i], indptr[i + 1]):
            j = indices[position]
            weight = min(half_inverse[i], half_inverse[j])
            weights[position] = weight
            total += weight
        row_sums[i] = total


def lazy_metropolis_sparse(adjacency: sp.csr_array) -> SparseWalk:
    """The Lazy-Metropolis walk on the links of a 0/1 CSR adjacency (:func:`sparse_adjacency`)."""
    n = adjacency.shape[0]
    weights = np.empty(adjacency.nnz)
    row_sums = np.empty(n)
    _weights_and_row_sums(adjacency.indptr, adjacency.indices, weights, row_sums)
    matrix = sp.csr_array((weights, adjacency.indices.copy(), adjacency.indptr.copy()),
                          shape=(n, n))
    return SparseWalk(matrix, row_sums)


def is_connected(adjacency: sp.csr_array) -> bool:
    count, _ = connected_components(adjacency, directed=False)
    return count == 1


class Spectrum(NamedTuple):
    """The slowest mode of the walk: mu_2 = 1 - lambda_2 and its unit eigenvector (Fiedler)."""

    gap: float
    fiedler: NDArray[np.float64]


def slowest_mode(walk: SparseWalk, *, tol: float = 0.0, max_iter: int | None = None) -> Spectrum:
    """lambda_2 of P by ARPACK, on P - J/n (the top eigenvalue 1 deflated).

    P - J/n has the eigenvalues lambda_2, ..., lambda_n (all in [0, 1)) and 0
    for the constant vector, so its largest eigenvalue is lambda_2; Lanczos
    finds it to ``tol`` (0: machine precision) from a fixed start vector, with
    BLAS on one thread (its products here are too thin to gain from threads,
    and spinning threads slow everything on a loaded machine).
    """
    n = walk.n
    weights, row_sums = walk.weights, walk.row_sums
    diagonal = 1.0 - row_sums
    if n <= DENSE_MAX:  # ARPACK needs n > 2, and LAPACK is faster for small n anyway
        values, vectors = np.linalg.eigh(weights.toarray() + np.diag(diagonal) - 1.0 / n)
        return Spectrum(float(1.0 - values[-1]), vectors[:, -1])

    def product(vector: NDArray[np.float64]) -> NDArray[np.float64]:
        return weights @ vector + diagonal * vector - vector.mean()

    operator = LinearOperator((n, n), matvec=product, dtype=np.float64)
    start = np.random.default_rng(LANCZOS_SEED).standard_normal(n)
    try:
        with one_blas_thread():
            values, vectors = eigsh(operator, k=1, which="LA", tol=tol, v0=start,
                                    ncv=min(n - 1, LANCZOS_VECTORS), maxiter=max_iter)
    except (ArpackNoConvergence, ArpackError) as error:
        raise TopokitError(
            f"the Lanczos iteration for the spectral gap of this {n}-node graph did not "
            f"converge ({error}); its slowest modes are too clustered for max_iter={max_iter}. "
            "Pass a larger max_iter or a looser tol."
        ) from None
    return Spectrum(float(1.0 - values[0]), vectors[:, 0])


class TargetSolve(NamedTuple):
    """Hitting times to one target t, certified from below."""

    times: NDArray[np.float64]  # m_it for every i (approximate; m_tt = 0)
    lower: float  # a certified lower bound on max_i m_it
    farthest: int  # argmax_i m_it


def _grounded(laplacian: sp.csr_array, target: int) -> sp.csr_array:
    keep = np.r_[0:target, target + 1:laplacian.shape[0]]
    return laplacian[keep][:, keep].tocsr()


def _conjugate_gradients(matrix: sp.csr_array, rtol: float, max_iter: int) -> NDArray[np.float64]:
    """Jacobi-preconditioned conjugate gradients for matrix @ x = 1 (SPD), from x = 0."""
    right = np.ones(matrix.shape[0])
    inverse_diagonal = 1.0 / matrix.diagonal()
    solution = np.zeros_like(right)
    residual = right.copy()
    preconditioned = inverse_diagonal * residual
    direction = preconditioned.copy()
    rho = residual @ preconditioned
    stop = rtol * np.linalg.norm(right)
    for _ in range(max_iter):
        image = matrix @ direction
        step = rho / (direction @ image)
        solution += step * direction
        residual -= step * image
        if np.linalg.norm(residual) <= stop:
            break
        preconditioned = inverse_diagonal * residual
        rho, previous = residual @ preconditioned, rho
        direction = preconditioned + (rho / previous) * direction
    return solution


def hitting_times_to(laplacian: sp.csr_array, target: int, *, rtol: float = 1e-12,
                     max_iter: int = 100_000) -> TargetSolve:
    """m_it for every i: the solution of (I - P) m = 1 off the target (DeepPrivacy eq. 11).

    The grounded Laplacian G = L without row and column t is a non-singular
    M-matrix, so G^{-1} >= 0 and, for any approximate solution x with residual
    r = 1 - G x, |x - m| <= ||r||_inf m entrywise: max_i m_it >= max_i x_i /
    (1 + ||r||_inf).  The residual's rounding is bounded (gamma_k |G| |x|) and
    added, so ``lower`` is a certified bound whatever the solver's accuracy.
    """
    grounded = _grounded(laplacian, target)
    solution = _conjugate_gradients(grounded, rtol, max_iter)
    residual = np.abs(1.0 - grounded @ solution)
    row_nonzeros = np.diff(grounded.indptr).max(initial=0) + 2
    rounding = row_nonzeros * np.finfo(np.float64).eps * (1.0 + abs(grounded) @ np.abs(solution))
    slack = float((residual + rounding).max())
    times = np.insert(solution, target, 0.0)
    farthest = int(np.argmax(times))
    lower = float(times[farthest]) / (1.0 + slack) if slack < 1.0 else 0.0
    return TargetSolve(times, lower, farthest)
