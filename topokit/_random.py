"""Seeds and random generators.

Every random function of topokit takes ``seed: int | numpy.random.Generator |
None`` and normalises it with :func:`check_random_state`.  Work with several
random roles (data split, initialisation, sampling, DP noise, masks) spawns one
independent generator per role from a single :class:`numpy.random.SeedSequence`
with :func:`spawn_generators`, so adding draws to one role never shifts another.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["SeedLike", "check_random_state", "spawn_generators", "seed_sequence"]

SeedLike = int | np.integer | np.random.Generator | np.random.SeedSequence | None


def seed_sequence(seed: SeedLike) -> np.random.SeedSequence:
    """Return a SeedSequence for ``seed`` (a Generator contributes fresh entropy from itself)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(seed.integers(0, 2**63, size=4).tolist())
    if seed is None or isinstance(seed, (int, np.integer)):
        if seed is not None and int(seed) < 0:
            raise ValueError(f"seed must be a non-negative integer; got {seed}")
        return np.random.SeedSequence(None if seed is None else int(seed))
    raise TypeError(
        f"seed must be an int, a numpy.random.Generator or None; got {type(seed).__name__}"
    )


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
