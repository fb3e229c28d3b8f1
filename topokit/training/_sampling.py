"""Poisson minibatch sampling for every device at once (the rate the DP accountant assumes)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

__all__ = ["PoissonSampler", "Minibatch"]


class Minibatch(NamedTuple):
    """One minibatch of every device, padded to the largest realised size.

    Attributes
    ----------
    index : ndarray of int64, shape (n_devices, width)
        Rows of the training data (padding: row 0, with weight 0).
    weight : ndarray of shape (n_devices, width)
        1 / B_i on the rows drawn (1 / max(B_i, |b_i|) on capped devices), 0 on
        padding.
    """

    index: NDArray[np.int64]
    weight: NDArray[np.float64]


class PoissonSampler:
    """Poisson minibatches for every device at once.

    Device i includes each of its |D_i| rows independently with probability
    q_i = min(1, B / |D_i|); the batch is returned padded to the largest
    realised size, with weight 1 / B_i (B_i = q_i |D_i|, the expected size) on
    real rows and 0 on padding, so that ``sum_b weight_b g_b`` is the usual
    DP-SGD estimate of the mean gradient.  When every q_i = 1 (full batch) no
    random numbers are drawn.

    A device marked in ``capped`` gets weight 1 / max(B_i, |b_i|) instead,
    |b_i| its realised batch size: its weighted sum of clipped gradients then
    never exceeds the clipping norm, whatever the draw (the later local steps of
    a DP device, see :func:`topokit.training.privacy.clipped_sensitivity`).
    The draw itself is the same with or without ``capped``.
    """

    def __init__(self, parts: list[NDArray[np.int64]], batch_size: int):
        sizes = np.array([len(p) for p in parts], dtype=np.int64)
        width = int(sizes.max())
        self.members = np.zeros((len(parts), width), dtype=np.int64)
        self.valid = np.zeros((len(parts), width), dtype=bool)
        for i, part in enumerate(parts):
            self.members[i, : len(part)] = part
            self.valid[i, : len(part)] = True
        self.sizes = sizes
        self.rate = np.minimum(1.0, batch_size / sizes)
        self.expected = self.rate * sizes
        self.full = bool(np.all(self.rate >= 1.0))
        if self.full:
            self._full_batch = Minibatch(self.members, self.valid / self.expected[:, None])

    def _divisors(self, counts: NDArray[np.int64], capped: NDArray[np.bool_] | None) -> NDArray:
        """B_i for every device, max(B_i, |b_i|) for the ``capped`` ones: shape (n_devices, 1)."""
        if capped is None:
            return self.expected[:, None]
        return np.where(capped, np.maximum(self.expected, counts), self.expected)[:, None]

    def sample_weights(
        self, rng: np.random.Generator, capped: NDArray[np.bool_] | None = None
    ) -> NDArray[np.float64]:
        """The same draw as :meth:`sample`, as weights on ``members``: (n_devices, max size).

        1 / B_i on the rows drawn (1 / max(B_i, |b_i|) on ``capped`` devices),
        0 elsewhere (and on padding); for callers that compute on every row of
        ``members`` instead of gathering the batch.
        """
        if self.full:
            return self._full_batch.weight  # |b_i| = |D_i| = B_i: capping changes nothing
        mask = (rng.random(self.valid.shape) < self.rate[:, None]) & self.valid
        divisors = self._divisors(mask.sum(axis=1), capped)
        return np.where(mask, 1.0 / divisors, 0.0)

    def sample(
        self, rng: np.random.Generator, capped: NDArray[np.bool_] | None = None
    ) -> Minibatch:
        """Draw one Poisson minibatch per device (see the class docstring for ``capped``)."""
        if self.full:
            return self._full_batch
        mask = (rng.random(self.valid.shape) < self.rate[:, None]) & self.valid
        counts = mask.sum(axis=1)
        width = max(int(counts.max()), 1)
        rows, cols = np.nonzero(mask)
        slots = (np.cumsum(mask, axis=1) - 1)[rows, cols]
        index = np.zeros((mask.shape[0], width), dtype=np.int64)
        weight = np.zeros((mask.shape[0], width))
        index[rows, slots] = self.members[rows, cols]
        weight[rows, slots] = 1.0 / self._divisors(counts, capped)[rows, 0]
        return Minibatch(index, weight)
