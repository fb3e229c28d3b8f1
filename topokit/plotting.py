"""Figures.  matplotlib lives only here (and in the subpackages' own plotting
modules); every function takes data and returns a :class:`matplotlib.figure.Figure`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["degree_deviation_figure", "save_figure"]


def _figure(ncols: int = 1, width: float = 5.0, height: float = 4.0):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width * ncols, height), layout="constrained")
    axes = figure.subplots(1, ncols, squeeze=False)[0]
    return figure, axes


def save_figure(figure: Figure, path) -> None:
    """Save atomically (PNG, or any format matplotlib infers from the suffix)."""
    from pathlib import Path

    from ._io import atomic_path

    path = Path(path)
    with atomic_path(path, suffix=path.suffix) as tmp:
        figure.savefig(tmp, dpi=150, format=path.suffix.lstrip(".") or "png")


def degree_deviation_figure(table: pd.DataFrame, *, max_points: int = 20_000) -> Figure:
    """The paper's Fig. 3: degree deviation against H and against 1 / spectral gap.

    Parameters
    ----------
    table : DataFrame
        Columns ``degree_deviation``, ``hitting_time``, ``spectral_gap``
        (the output of :func:`topokit.batch.batch_analyze` on a random ensemble).
    """
    figure, (left, right) = _figure(2)
    sample = table if len(table) <= max_points else table.sample(max_points, random_state=0)
    x = sample["degree_deviation"].to_numpy()
    for axis, y, label in (
        (left, sample["hitting_time"].to_numpy(), "hitting time $\\mathcal{H}(G_c)$"),
        (right, 1.0 / sample["spectral_gap"].to_numpy(), "1 / spectral gap $1/\\delta(G_c)$"),
    ):
        axis.scatter(x, y, s=4, alpha=0.3, linewidths=0)
        groups = pd.Series(y).groupby(np.round(x, 3)).median()
        axis.plot(groups.index, groups.to_numpy(), color="black", lw=1.5, label="median")
        axis.set_xlabel("degree deviation (mean |deg - mean deg|)")
        axis.set_ylabel(label)
        axis.legend(loc="upper left")
    left.set_title("(a) hitting time")
    right.set_title("(b) reciprocal of the spectral gap")
    return figure
