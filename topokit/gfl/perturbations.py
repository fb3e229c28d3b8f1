"""Server-to-server and client-to-server perturbations of privatized GFL.

Index convention
----------------
``G[m, p]`` is the noise that server ``m`` adds to the message it sends to
server ``p`` (``G[m, m]`` is the noise on the copy ``m`` keeps for itself).
The conference paper [3]_ writes this as :math:`g_{mp}`, the journals [1]_ [2]_
as :math:`g_{pm}` ("added to the message sent by server m to server p").
Server ``p`` combines (journal eq. 8)

.. math:: w_p = \\sum_m a_{pm} (\\psi_m + G[m, p]),

i.e. ``w = A @ psi + einsum('pm,mpd->pd', A, G)``.

Schemes
-------
- ``homomorphic`` (journal eq. 47): server m draws one Laplace vector
  :math:`g_m` and sends :math:`\\psi_m + g_m` to every neighbour while keeping
  :math:`\\psi_m - \\frac{1 - a_{mm}}{a_{mm}} g_m`, so that
  :math:`\\sum_p a_{pm} G[m, p] = 0` for every m (eq. 46 holds server by
  server) and one combine step leaves the network centroid unchanged.  This
  needs the column sums of A to be one and :math:`a_{mm} > 0`.
- ``random``: independent Laplace noise on every message, including (by the
  option ``include_self``, on by default) the copy a server keeps.

All noise is Laplace of variance :math:`\\sigma^2`, numpy ``scale =
sqrt(sigma^2 / 2)`` (:func:`topokit.dp.laplace_scale`), i.i.d. per
coordinate, message and iteration.

References
----------
.. [1] E. Rizk, S. Vlaski, A. H. Sayed, "Privatized graph federated learning"
   (journal), eqs. (5)-(8), (46)-(47).  ``shared/papers/000_*``.
.. [2] Same authors, journal version with sharing updates, eqs. (46)-(48),
   (51)-(55).  ``shared/papers/001_*``.
.. [3] Same authors, conference version.  ``shared/papers/003_*``.
"""

from __future__ import annotations

from typing import Any, Literal

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import as_matrix_stack, check_choice, check_int, check_nonnegative
from .._random import SeedLike, check_random_state
from ..dp import laplace_scale
from ..errors import DisconnectedGraphError, InvalidInputError
from ..kernels import lazy_metropolis, metropolis

__all__ = [
    "SCHEMES",
    "Scheme",
    "validate_combination_matrix",
    "combination_matrix",
    "laplace_noise",
    "homomorphic_noise",
    "random_noise",
    "server_noise",
    "combine",
]

Scheme = Literal["none", "random", "homomorphic"]
#: The servers' perturbation schemes: none, independent random noise, graph-homomorphic.
SCHEMES: tuple[str, ...] = ("none", "random", "homomorphic")
_WEIGHTS = {"lazy-metropolis": lazy_metropolis, "metropolis": metropolis}


# --------------------------------------------------------------------------- validation
def validate_combination_matrix(A: ArrayLike, *, atol: float = 1e-8) -> NDArray[np.float64]:
    """Check that ``A`` is a valid GFL combination matrix and return it as float64.

    Valid means (journal Assumption 1, and eq. 47 for homomorphic noise):
    square, finite, non-negative, doubly stochastic (rows and columns sum to
    one), a positive diagonal :math:`a_{mm} > 0`, and a connected support
    graph.  Symmetry is not required.

    Parameters
    ----------
    A : array-like of shape (P, P)
    atol : float
        Tolerance on the row and column sums.

    Returns
    -------
    ndarray of shape (P, P), C-contiguous float64

    Raises
    ------
    InvalidInputError
        Naming the broken property (shape, negative entries, row sums,
        column sums, zero diagonal).
    DisconnectedGraphError
        If the support graph of A is not connected.

    Examples
    --------
    >>> import networkx as nx
    >>> A = validate_combination_matrix(combination_matrix(nx.path_graph(3)))
    >>> A.shape
    (3, 3)
    """
    stack, _ = as_matrix_stack(A, "A")
    if stack.shape[0] != 1:
        raise InvalidInputError(f"A must be a single (P, P) matrix; got shape {np.shape(A)}")
    matrix = np.ascontiguousarray(stack[0])
    row_gap = np.abs(matrix.sum(axis=1) - 1.0).max()
    if row_gap > atol:
        raise InvalidInputError(
            f"A must be doubly stochastic: its rows must sum to 1 (largest error {row_gap:.3g}). "
            "Build it with topokit.lazy_metropolis(G)."
        )
    col_gap = np.abs(matrix.sum(axis=0) - 1.0).max()
    if col_gap > atol:
        raise InvalidInputError(
            f"A must be doubly stochastic: its columns must sum to 1 (largest error "
            f"{col_gap:.3g}); graph-homomorphic noise cancels only then (journal eq. 46)."
        )
    diagonal = np.diag(matrix)
    if (diagonal <= 0).any():
        bad = np.flatnonzero(diagonal <= 0).tolist()
        raise InvalidInputError(
            f"A must have a positive diagonal a_mm > 0 (journal eq. 47 divides by a_mm); "
            f"a_mm = 0 for servers {bad[:8]}"
        )
    support = nx.from_numpy_array((matrix + matrix.T > 0).astype(np.int8))
    if not nx.is_connected(support):
        n_comp = nx.number_connected_components(support)
        raise DisconnectedGraphError(
            f"A must have a connected support graph; it has {n_comp} components"
        )
    return matrix


def combination_matrix(
    graph: Any, weights: Literal["lazy-metropolis", "metropolis"] = "lazy-metropolis"
) -> NDArray[np.float64]:
    """Combination matrix of a server graph from the foundation's kernels.

    Parameters
    ----------
    graph : networkx.Graph or array-like of shape (P, P)
        Server graph or its 0/1 adjacency.
    weights : {"lazy-metropolis", "metropolis"}
        Lazy-Metropolis (default, :math:`a_{mm} \\ge 1/2`) or plain Metropolis.
        The choice matters: under Metropolis the homomorphic self-term
        :math:`(1 - a_{mm}) / a_{mm}` is large and makes the individual MSD
        worse than under random noise.

    Returns
    -------
    ndarray of shape (P, P), validated by :func:`validate_combination_matrix`.
    """
    check_choice(weights, "weights", sorted(_WEIGHTS))
    return validate_combination_matrix(_WEIGHTS[weights](graph))


# --------------------------------------------------------------------------- noise
def laplace_noise(sigma2: float, shape: tuple[int, ...], rng: SeedLike = None) -> NDArray:
    """I.i.d. Laplace noise of variance ``sigma2`` (``scale = sqrt(sigma2 / 2)``).

    ``sigma2 = 0`` returns zeros (and draws nothing).
    """
    sigma2 = check_nonnegative(sigma2, "sigma2")
    if sigma2 == 0:
        return np.zeros(shape)
    return check_random_state(rng).laplace(0.0, laplace_scale(sigma2), size=shape)


def _check_dim(dim: Any) -> int:
    return check_int(dim, "dim", low=1)


def _homomorphic_from_draws(A: NDArray, g: NDArray) -> NDArray:
    """Kernel: G[..., m, p, :] from one draw g[..., m, :] per server (no validation).

    ``g`` has shape (..., P, d); returns (..., P, P, d).
    """
    P = A.shape[0]
    diagonal = np.diag(A)
    # neighbour mask: m sends to p when a_pm > 0, i.e. A.T[m, p] > 0
    sends = (A.T > 0).astype(np.float64)
    factor = sends.copy()
    factor[np.arange(P), np.arange(P)] = -(1.0 - diagonal) / diagonal
    return factor[..., :, :, None] * g[..., :, None, :]


def homomorphic_noise(
    A: ArrayLike, sigma2: float, dim: int, rng: SeedLike = None
) -> NDArray[np.float64]:
    """Graph-homomorphic perturbations (journal eq. 47).

    Parameters
    ----------
    A : array-like of shape (P, P)
        Valid combination matrix (see :func:`validate_combination_matrix`).
    sigma2 : float
        Variance :math:`\\sigma_g^2` of the Laplace draw :math:`g_m`.
    dim : int
        Model dimension M.
    rng : int, Generator or None

    Returns
    -------
    G : ndarray of shape (P, P, dim)
        ``G[m, p]`` is the noise on server m's message to server p:
        :math:`g_m` if p is a neighbour (:math:`a_{pm} > 0`),
        :math:`-\\frac{1 - a_{mm}}{a_{mm}} g_m` if p = m, and 0 otherwise.
        It satisfies ``einsum('pm,mpd->md', A, G) == 0`` to rounding.

    Examples
    --------
    >>> import networkx as nx
    >>> A = combination_matrix(nx.cycle_graph(4))
    >>> G = homomorphic_noise(A, 0.1, 2, rng=0)
    >>> bool(np.allclose(np.einsum('pm,mpd->md', A, G), 0))
    True
    """
    A = validate_combination_matrix(A)
    dim = _check_dim(dim)
    g = laplace_noise(sigma2, (A.shape[0], dim), rng)
    return _homomorphic_from_draws(A, g)


def random_noise(
    A: ArrayLike, sigma2: float, dim: int, rng: SeedLike = None, *, include_self: bool = True
) -> NDArray[np.float64]:
    """Independent Laplace perturbations on every message (the papers' "random" scheme).

    Parameters
    ----------
    A, sigma2, dim, rng
        As in :func:`homomorphic_noise`.
    include_self : bool, default True
        Also perturb the copy a server keeps (``G[m, m]``).  The papers do not
        say; perturbing it is the conservative reading (the server's own model
        is then as noisy as the ones it receives).

    Returns
    -------
    G : ndarray of shape (P, P, dim)
        Same index convention as :func:`homomorphic_noise`; zero where p does
        not receive from m.
    """
    A = validate_combination_matrix(A)
    dim = _check_dim(dim)
    P = A.shape[0]
    draws = laplace_noise(sigma2, (P, P, dim), rng)
    return draws * _random_mask(A, include_self)[:, :, None]


def _random_mask(A: NDArray, include_self: bool) -> NDArray:
    mask = (A.T > 0).astype(np.float64)
    np.fill_diagonal(mask, 1.0 if include_self else 0.0)
    return mask


def server_noise(
    scheme: str,
    A: ArrayLike,
    sigma2: float,
    dim: int,
    rng: SeedLike = None,
    *,
    include_self: bool = True,
) -> NDArray[np.float64]:
    """``G`` for a scheme name: ``"none"`` (zeros), ``"random"`` or ``"homomorphic"``."""
    check_choice(scheme, "scheme", SCHEMES)
    if scheme == "none":
        A = validate_combination_matrix(A)
        return np.zeros((A.shape[0], A.shape[0], _check_dim(dim)))
    if scheme == "random":
        return random_noise(A, sigma2, dim, rng, include_self=include_self)
    return homomorphic_noise(A, sigma2, dim, rng)


def combine(A: ArrayLike, psi: ArrayLike, G: ArrayLike | None = None) -> NDArray[np.float64]:
    """One combine step :math:`w_p = \\sum_m a_{pm} (\\psi_m + G[m, p])` (journal eq. 8).

    Parameters
    ----------
    A : array-like of shape (P, P)
    psi : array-like of shape (P, d)
        Aggregated server models :math:`\\psi_m`.
    G : array-like of shape (P, P, d), optional
        Perturbations, ``G[m, p]`` on m's message to p.

    Returns
    -------
    ndarray of shape (P, d)
    """
    A = validate_combination_matrix(A)
    psi = np.asarray(psi, dtype=np.float64)
    if psi.ndim != 2 or psi.shape[0] != A.shape[0]:
        raise InvalidInputError(f"psi must have shape ({A.shape[0]}, d); got {psi.shape}")
    out = A @ psi
    if G is not None:
        G = np.asarray(G, dtype=np.float64)
        if G.shape != (A.shape[0], A.shape[0], psi.shape[1]):
            raise InvalidInputError(
                f"G must have shape {(A.shape[0], A.shape[0], psi.shape[1])}; got {G.shape}"
            )
        out = out + np.einsum("pm,mpd->pd", A, G)
    return out
