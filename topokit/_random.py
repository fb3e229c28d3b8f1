"""Seeds and random generators: one derivation scheme for all of topokit.

Every random function of topokit takes ``seed: int | numpy.random.Generator |
None`` and normalises it with :func:`check_random_state`.  Streams are derived
from a :class:`numpy.random.SeedSequence` in exactly two ways, each for its own
job:

- **roles of one call** (data split, initialisation, sampling, DP noise):
  :func:`spawn_generators` spawns one child per named role, so adding draws to
  one role never shifts another;
- **items addressed by index** (the i-th graph of an ensemble, trial t of a
  topology): :func:`keyed_rng` / :func:`keyed_seed` build the stream from
  ``SeedSequence([seed, *key])``, so an item's randomness depends on its key
  alone, never on how the work is chunked, ordered or resumed.

Secure-aggregation keys and masks never come from here: they are drawn from
the operating system's randomness (:mod:`topokit.gfl.secagg`).

:func:`sample_connected_edges` is the one sampler of uniform random connected
graphs with a given number of links.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .errors import InvalidInputError

__all__ = [
    "SeedLike",
    "check_random_state",
    "spawn_generators",
    "seed_sequence",
    "keyed_rng",
    "keyed_seed",
    "sample_connected_edges",
]

SeedLike = int | np.integer | np.random.Generator | np.random.SeedSequence | None


def seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """Return a SeedSequence for ``seed`` (a Generator contributes fresh entropy from itself)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(seed.integers(0, 2**63, size=4).tolist())
    if seed is None:
        return np.random.SeedSequence(None)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        if int(seed) < 0:
            raise InvalidInputError(f"seed must be an integer >= 0; got {seed}")
        return np.random.SeedSequence(int(seed))
    raise InvalidInputError(
        f"seed must be an integer >= 0, a numpy.random.Generator or None; got {seed!r}"
    )


def int_seed(seed: SeedLike) -> int:
    """An int seed for keyed streams: a non-negative int as given, else one drawn from ``seed``.

    Examples
    --------
    >>> int_seed(7)
    7
    >>> int_seed(np.random.default_rng(0)) == int_seed(np.random.default_rng(0))
    True
    """
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seed_sequence(seed)  # refuses a negative seed with the usual message
        return int(seed)
    return int(seed_sequence(seed).generate_state(1)[0])


def check_random_state(seed: SeedLike) -> np.random.Generator:
    """Turn ``seed`` into a :class:`numpy.random.Generator`.

    A Generator is returned as is (so the caller's stream advances); an int or
    None builds a new PCG64 generator.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed_sequence(seed))


def spawn_generators(seed: SeedLike, roles: Sequence[str]) -> dict[str, np.random.Generator]:
    """One independent generator per named role, all derived from ``seed``.

    Examples
    --------
    >>> rngs = spawn_generators(0, ["partition", "noise"])
    >>> sorted(rngs)
    ['noise', 'partition']
    """
    children = seed_sequence(seed).spawn(len(roles))
    return {role: np.random.default_rng(child) for role, child in zip(roles, children, strict=True)}


def keyed_rng(seed: int, *key: int) -> np.random.Generator:
    """The generator of the item ``key`` of the job seeded with ``seed``.

    Examples
    --------
    >>> a = keyed_rng(7, 3).random()
    >>> b = keyed_rng(7, 3).random()
    >>> a == b, a == keyed_rng(7, 4).random()
    (True, False)
    """
    return np.random.default_rng(np.random.SeedSequence([int(seed), *map(int, key)]))


def keyed_seed(seed: int, *key: int) -> int:
    """A 32-bit integer seed for the item ``key`` (for APIs that take an int)."""
    sequence = np.random.SeedSequence([int(seed), *map(int, key)])
    return int(sequence.generate_state(1)[0])


def _spans(n_nodes: int, pairs: NDArray[np.intp], chosen: NDArray[np.intp]) -> bool:
    rows, cols = pairs[chosen, 0], pairs[chosen, 1]
    graph = coo_matrix((np.ones(chosen.size), (rows, cols)), shape=(n_nodes, n_nodes))
    count, _ = connected_components(graph, directed=False)
    return count == 1


def sample_connected_edges(
    n_nodes: int,
    pairs: NDArray[np.intp],
    n_edges: int,
    rng: np.random.Generator,
    *,
    max_draws: int = 10_000,
) -> NDArray[np.intp] | None:
    """Indices into ``pairs`` of a uniform random connected graph with ``n_edges`` links.

    Draws ``n_edges`` distinct pairs uniformly (``rng.choice(len(pairs),
    n_edges, replace=False)``) until the graph on ``n_nodes`` nodes is
    connected: conditioned on connectivity, every connected edge set is
    equally likely.  Sparse requests (a spanning tree among many pairs) are
    rarely connected, so the draws are capped and the caller decides what to
    tell the user.

    Parameters
    ----------
    n_nodes : int
        Nodes are 0..n_nodes-1.
    pairs : ndarray of shape (k, 2)
        The candidate links, as node indices.
    n_edges : int
        Links to draw (``n_nodes - 1 <= n_edges <= k``).
    rng : numpy.random.Generator
    max_draws : int
        Give up after this many draws.

    Returns
    -------
    ndarray of int or None
        The chosen rows of ``pairs`` in the order drawn, or None when no draw
        was connected.

    Examples
    --------
    >>> pairs = np.array([(0, 1), (1, 2), (0, 2)])
    >>> chosen = sample_connected_edges(3, pairs, 2, np.random.default_rng(0))
    >>> len(chosen), len(set(chosen.tolist()))
    (2, 2)
    """
    pairs = np.asarray(pairs, dtype=np.intp)
    for _ in range(max_draws):
        chosen = rng.choice(len(pairs), size=n_edges, replace=False)
        if _spans(n_nodes, pairs, chosen):
            return chosen
    return None
