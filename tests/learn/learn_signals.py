"""Signals shared by the graph-learning tests."""

import numpy as np


def smooth_signals(d: int, n: int, seed: int) -> np.ndarray:
    """n random-walk signals over d nodes (neighbouring nodes in index order are similar)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)).cumsum(axis=1)
