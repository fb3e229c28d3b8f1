"""Coefficients that vary with the workload: the model columns of a predictor with ``varying_with``.

A linear model of log rounds whose coefficients are the same for every
workload ranks the topologies of one workload the same way at every DP budget
and target: the workload's features only shift the prediction.  Measured over
a corpus spanning epsilon 0.25-8 and targets far from and near the ceiling
(``analyses/workload_predictor.py``), the weight of each topology feature does
change with them: mixing matters more when little noise is added, noise more
near the ceiling.  Here each topology feature j enters with the coefficient

    c_j(lambda) = sum over the corners k of the workload box of  w_k(lambda) a_jk,

the bilinear interpolation between its coefficients a_jk >= 0 at the corners
of the range fitted on (lambda in [0, 1]^q: each varying workload feature
scaled to its fitted range, clipped there).  The corner weights are >= 0 and
sum to 1, so c_j >= 0 at every workload: a worse feature still never predicts
fewer rounds, which keeps the search's monotonicity argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product

import numpy as np
from numpy.typing import NDArray

__all__ = ["corner_names", "corner_weights", "varying_columns"]


def corner_weights(oriented: NDArray[np.float64],
                   ranges: Sequence[tuple[float, float]]) -> NDArray[np.float64]:
    """Bilinear weights of every row at the 2^q corners of the fitted box.

    ``oriented`` is (n_rows, q): the varying workload features after their
    transforms; ``ranges`` the (low, high) of each over the runs fitted on.
    Corners are ordered as :func:`itertools.product` of (low, high) per
    feature.

    >>> corner_weights(np.array([[0.0], [0.25], [2.0]]), [(0.0, 1.0)]).tolist()
    [[1.0, 0.0], [0.75, 0.25], [0.0, 1.0]]
    """
    low = np.array([lo for lo, _ in ranges], dtype=np.float64)
    span = np.array([hi - lo for lo, hi in ranges], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        position = np.clip((oriented - low) / span, 0.0, 1.0)
    position = np.nan_to_num(position, nan=0.0)
    weights = np.ones((oriented.shape[0], 2 ** len(ranges)))
    for k, corner in enumerate(product((0, 1), repeat=len(ranges))):
        for j, high in enumerate(corner):
            weights[:, k] *= position[:, j] if high else 1.0 - position[:, j]
    return weights


def varying_columns(Z: NDArray[np.float64], topology: Sequence[int], workload: Sequence[int],
                    weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """The model columns: the workload features as they are, then each topology feature
    times each corner's weight (corner-major).

    >>> Z = np.array([[1.0, 2.0, 3.0]])
    >>> varying_columns(Z, [0, 1], [2], np.array([[0.25, 0.75]])).tolist()
    [[3.0, 0.25, 0.5, 0.75, 1.5]]
    """
    topo = Z[:, list(topology)]
    parts = [Z[:, list(workload)]] + [topo * weights[:, [k]] for k in range(weights.shape[1])]
    return np.hstack(parts)


def corner_names(topology: Sequence[str], workload: Sequence[str],
                 varying: Sequence[str]) -> tuple[str, ...]:
    """Names of :func:`varying_columns`' columns: ``feature@name=low,...`` per corner.

    >>> corner_names(["phi"], ["target_closeness"], ["target_closeness"])
    ('target_closeness', 'phi@target_closeness=low', 'phi@target_closeness=high')
    """
    corners = [",".join(f"{name}={'high' if high else 'low'}"
                        for name, high in zip(varying, corner, strict=True))
               for corner in product((0, 1), repeat=len(varying))]
    return (*workload, *(f"{name}@{corner}" for corner in corners for name in topology))


def fitted_ranges(oriented: NDArray[np.float64], names: Sequence[str]) -> dict[str, list[float]]:
    """(low, high) of each varying feature's finite values: the box the corners span."""
    ranges = {}
    for j, name in enumerate(names):
        finite = oriented[:, j][np.isfinite(oriented[:, j])]
        ranges[name] = [float(finite.min()), float(finite.max())] if finite.size else [0.0, 0.0]
    return ranges


def ranges_in_order(ranges: Mapping[str, Sequence[float]],
                    names: Sequence[str]) -> list[tuple[float, float]]:
    """The (low, high) pairs of ``names`` from a name -> [low, high] mapping."""
    return [(float(ranges[name][0]), float(ranges[name][1])) for name in names]
