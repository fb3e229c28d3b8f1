"""Figures.  matplotlib lives only here (and in the subpackages' own plotting
modules); every function takes data and returns a :class:`matplotlib.figure.Figure`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from .autotag import Design
    from .network import Network

__all__ = ["degree_deviation_figure", "design_figure", "save_figure"]


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


def _layout(net: Network) -> dict:
    """Device positions: the network's own, else a seeded spring layout of G_s."""
    import networkx as nx

    if net.positions is not None:
        return {node: net.positions[k] for k, node in enumerate(net.nodes)}
    return nx.spring_layout(net.social, seed=0)


def _draw_topology(axis, net: Network, design: Design) -> None:
    import networkx as nx

    position = _layout(net)
    social = {frozenset(edge) for edge in net.social.edges}
    used = [tuple(edge) for edge in design.topology.edges]
    unused_social = [tuple(edge) for edge in social - {frozenset(edge) for edge in used}]
    used_social = [edge for edge in used if frozenset(edge) in social]
    non_social = [edge for edge in used if frozenset(edge) not in social]
    dp = set(design.topology.dp_devices)
    styles = (
        (unused_social, dict(style="dotted", edge_color="0.75", width=0.8), "social link, unused"),
        (used_social, dict(style="solid", edge_color="tab:blue", width=1.6), "social link, used"),
        (non_social, dict(style="dashed", edge_color="tab:red", width=1.6), "non-social link (DP ends)"),
    )
    for edges, style, label in styles:
        nx.draw_networkx_edges(net.social, position, edgelist=edges, ax=axis, label=label, **style)
    plain = [node for node in net.nodes if node not in dp]
    nx.draw_networkx_nodes(net.social, position, nodelist=plain, node_color="white",
                           edgecolors="black", node_size=120, ax=axis, label="device")
    nx.draw_networkx_nodes(net.social, position, nodelist=sorted(dp, key=str), node_color="tab:red",
                           edgecolors="black", node_shape="s", node_size=120, ax=axis,
                           label="DP device")
    if net.n_devices <= 40:
        nx.draw_networkx_labels(net.social, position, font_size=7, ax=axis)
    metrics = design.metrics
    axis.set_title(f"topology: {metrics.n_links} links, {metrics.n_dp_devices} DP devices, "
                   f"pseudo time {metrics.pseudo_time:.4g} s", fontsize=9)
    axis.legend(loc="best", fontsize=7)
    axis.set_axis_off()


def _draw_trade_off(axis, design: Design) -> None:
    if design.trace is None:
        frame = design.to_frame()
        axis.plot(frame["n"], frame["pseudo_time"], marker="o", ms=3)
        axis.set_xlabel("DP budget n")
    else:
        trace = design.trace
        order = np.arange(len(trace))
        finite = np.isfinite(trace.pseudo_time)
        points = axis.scatter(order[finite], trace.pseudo_time[finite], c=trace.n[finite], s=3,
                              cmap="viridis", linewidths=0)
        axis.figure.colorbar(points, ax=axis, label="DP budget n")
        boundaries = np.flatnonzero(np.diff(trace.n)) + 0.5
        for x in boundaries:
            axis.axvline(x, color="0.9", lw=0.5, zorder=0)
        axis.set_xlabel("snapshot (budgets n = 0..|V| in order)")
    best = design.metrics.pseudo_time
    axis.axhline(best, color="tab:red", lw=1, ls="--", label=f"chosen (n = {design.n})")
    axis.set_yscale("log")
    axis.set_ylabel("pseudo training time G' x L (s)")
    axis.set_title("SSP: every snapshot is a candidate", fontsize=9)
    axis.legend(loc="upper right", fontsize=7)


def design_figure(net: Network, design: Design) -> Figure:
    """A designed topology and the pseudo-time trade-off over AutoTag's snapshots.

    Left: the social links used (solid), social links left out (dotted), the
    added non-social links (dashed) and the DP devices (squares).  Right: the
    pseudo training time G' x L of every snapshot (with ``design.trace``; else
    the best candidate of each budget n), the chosen one as a line.

    Parameters
    ----------
    net : Network
    design : Design
        From :func:`topokit.autotag` (``trace=True`` for the per-snapshot curve).
    """
    figure, (left, right) = _figure(2, width=5.5, height=4.5)
    _draw_topology(left, net, design)
    _draw_trade_off(right, design)
    return figure
