"""Figures of System 1 (topology design and its validation).

Every function takes data and returns a :class:`matplotlib.figure.Figure` built
without pyplot, in the style of :mod:`topokit.plotting._style`; save it with
:func:`save_figure`.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ._style import COLORS, new_figure, new_panels, save_figure, styled

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..design.result import Design
    from ..network.core import Network

__all__ = ["degree_deviation_figure", "design_figure", "save_figure", "validation_figure",
           "accuracy_time_figure", "global_iterate_figure"]


@styled
def degree_deviation_figure(table: pd.DataFrame, *, max_points: int = 20_000) -> Figure:
    """The paper's Fig. 3: degree deviation against H and against 1 / spectral gap.

    Parameters
    ----------
    table : DataFrame
        Columns ``degree_deviation``, ``hitting_time``, ``spectral_gap``
        (the output of :func:`topokit.batch.batch_analyze` on a random ensemble).
    """
    figure, axes = new_panels("scatter", ncols=2)
    left, right = axes[0]
    sample = table if len(table) <= max_points else table.sample(max_points, random_state=0)
    x = sample["degree_deviation"].to_numpy()
    for axis, y, label in (
        (left, sample["hitting_time"].to_numpy(), "hitting time $\\mathcal{H}(G_c)$"),
        (right, 1.0 / sample["spectral_gap"].to_numpy(), "1 / spectral gap $1/\\delta(G_c)$"),
    ):
        axis.scatter(x, y, s=4, alpha=0.3, linewidths=0)
        groups = pd.Series(y).groupby(np.round(x, 3)).median()
        axis.plot(groups.index, groups.to_numpy(), color=COLORS["ink"], lw=1.5, label="median")
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
    width = _link_widths(design)
    unused_social = [tuple(edge) for edge in social - {frozenset(edge) for edge in used}]
    used_social = [edge for edge in used if frozenset(edge) in social]
    non_social = [edge for edge in used if frozenset(edge) not in social]
    dp = set(design.topology.dp_devices)
    weighted = " (width: mixing weight)" if design.topology.weights is not None else ""
    styles = (
        (unused_social, dict(style="dotted", edge_color=COLORS["muted"]), "social link, unused"),
        (used_social, dict(style="solid", edge_color=COLORS["primary"]),
         f"social link, used{weighted}"),
        (non_social, dict(style="dashed", edge_color=COLORS["highlight"]),
         "non-social link (DP ends)"),
    )
    for edges, style, label in styles:
        widths = [width.get(frozenset(edge), 0.8) for edge in edges]
        nx.draw_networkx_edges(net.social, position, edgelist=edges, ax=axis, label=label,
                               width=widths or 1.0, **style)
    plain = [node for node in net.nodes if node not in dp]
    nx.draw_networkx_nodes(net.social, position, nodelist=plain, node_color=COLORS["paper"],
                           edgecolors=COLORS["ink"], node_size=120, ax=axis, label="device")
    nx.draw_networkx_nodes(net.social, position, nodelist=sorted(dp, key=str),
                           node_color=COLORS["highlight"], edgecolors=COLORS["ink"],
                           node_shape="s", node_size=120, ax=axis, label="DP device")
    if net.n_devices <= 40:
        nx.draw_networkx_labels(net.social, position, font_size=7, ax=axis)
    metrics = design.metrics
    axis.set_title(f"topology: {metrics.n_links} links, {metrics.n_dp_devices} DP devices, "
                   f"pseudo time {metrics.pseudo_time:.4g} s", fontsize=9)
    axis.legend(loc="best", fontsize=7)
    axis.set_axis_off()


def _link_widths(design: Design) -> dict[frozenset, float]:
    """Line width of each used link: 1.6, or with mixing weights 0.3-3 in proportion to its
    weight, so that a link the weights barely use is drawn barely there."""
    edges = [frozenset(edge) for edge in design.topology.edges]
    weights = design.topology.weights
    if weights is None or not edges:
        return dict.fromkeys(edges, 1.6)
    largest = max(weights) or 1.0
    return {edge: 0.3 + 2.7 * weight / largest for edge, weight in zip(edges, weights,
                                                                        strict=True)}


def _draw_references(axis, design: Design) -> None:
    """optimize's design against the reference designs it started from: predicted time."""
    times = {**design.stats["start_times"], "design": design.metrics.pseudo_time}
    names = sorted(times, key=lambda name: (not np.isfinite(times[name]), times[name]))
    finite = [times[name] for name in names if np.isfinite(times[name])]
    never = max(finite) * 2.0 if finite else 1.0
    values = [times[name] if np.isfinite(times[name]) else never for name in names]
    colors = [COLORS["highlight"] if name == "design" else COLORS["primary"]
              if np.isfinite(times[name]) else COLORS["muted"] for name in names]
    positions = np.arange(len(names))
    axis.barh(positions, values, color=colors)
    for y, name in enumerate(names):
        label = f" {times[name]:.4g} s" if np.isfinite(times[name]) \
            else " never reaches the target"
        axis.text(values[y], y, label, va="center", fontsize=7)
    axis.set_yticks(positions, names)
    axis.invert_yaxis()
    axis.set_xscale("log")
    axis.set_xlabel("predicted training time G x L (s)")
    axis.set_title("optimize: the design and the references it searched from", fontsize=9)


def _draw_trade_off(axis, design: Design) -> None:
    if "start_times" in design.stats:  # a design of optimize, not AutoTag's budgets
        _draw_references(axis, design)
        return
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
            axis.axvline(x, color=COLORS["faint"], lw=0.5, zorder=0)
        axis.set_xlabel("snapshot (budgets n = 0..|V| in order)")
    best = design.metrics.pseudo_time
    axis.axhline(best, color=COLORS["highlight"], lw=1, ls="--",
                 label=f"chosen (n = {design.n})")
    axis.set_yscale("log")
    axis.set_ylabel("pseudo training time G' x L (s)")
    axis.set_title("SSP: every snapshot is a candidate", fontsize=9)
    axis.legend(loc="upper right", fontsize=7)


@styled
def design_figure(net: Network, design: Design) -> Figure:
    """A designed topology, and how it compares with what the search weighed.

    Left: the social links used (solid), social links left out (dotted), the
    added non-social links (dashed) and the DP devices (squares); with mixing
    weights, a link's width is in proportion to its weight.  Right, for a
    design of :func:`topokit.optimize`: the predicted training time of the
    design and of the reference designs it searched from; for AutoTag's: the
    pseudo training time G' x L of every snapshot (with ``design.trace``; else
    the best candidate of each budget n), the chosen one as a line.

    Parameters
    ----------
    net : Network
    design : Design
        From :func:`topokit.optimize`, or :func:`topokit.autotag` (``trace=True``
        for the per-snapshot curve).
    """
    figure, axes = new_panels("topology", ncols=2)
    left, right = axes[0]
    _draw_topology(left, net, design)
    _draw_trade_off(right, design)
    return figure


#: Colour, marker and legend label of each kind of topology in the validation runs.
_KIND_STYLE = {
    "autotag": (COLORS["highlight"], "o", "AutoTag"),
    "ndlf": (COLORS["primary"], "s", "NDLF"),
    "dlfdp": (COLORS["secondary"], "^", "DLFDP"),
    "erg": (COLORS["tertiary"], "D", "ERG"),
    "random": (COLORS["neutral"], ".", "random"),
}
#: Markers of the user's own topologies (kind "custom"), in the order they come: each is
#: labelled by its name, and two of them must not read alike.
_CUSTOM_MARKERS = ("P", "X", "*", "v", "<", ">", "h", "p")


def _style_keys(frame: pd.DataFrame) -> pd.Series:
    """What each run is drawn by: its kind, or for a user's own topology (kind "custom")
    its name, so that two of them get two legend entries."""
    kind = frame["kind"].astype(str)
    if "topology" not in frame:
        return kind
    return kind.where(kind != "custom", "custom:" + frame["topology"].astype(str))


def _styles(frame: pd.DataFrame) -> dict[str, tuple[str, str, str]]:
    """Colour, marker and legend label of every key of :func:`_style_keys`, fixed over the
    whole table so that each topology looks the same in every panel."""
    markers = itertools.cycle(_CUSTOM_MARKERS)
    styles: dict[str, tuple[str, str, str]] = {}
    for key in _style_keys(frame).unique():
        kind, _, name = key.partition(":")
        styles[key] = ((COLORS["quaternary"], next(markers), name or kind) if kind == "custom"
                       else _KIND_STYLE.get(kind, (COLORS["ink"], "x", kind)))
    return styles


def _draw_never_reached(axis, group: pd.DataFrame, reached: pd.DataFrame, x_name: str,
                        y_name: str, styles: dict[str, tuple[str, str, str]]) -> None:
    """Runs that never reached the target, hollow, on a line above the measured ones (a
    prediction of "never" at the right edge)."""
    never = group[group["measured_rounds"].isna()]
    if never.empty:
        return
    measured = reached[y_name].to_numpy(float)
    line = 1.15 * measured.max() if measured.size else 1.0
    predicted = np.concatenate([reached[x_name].to_numpy(float),
                                never[x_name].to_numpy(float)])
    predicted = predicted[np.isfinite(predicted)]
    edge = 1.1 * predicted.max() if predicted.size else 1.0
    for key, points in never.groupby(_style_keys(never), sort=False):
        color, marker, _ = styles[key]
        x = points[x_name].to_numpy(float)
        x = np.where(np.isfinite(x), x, edge)
        axis.scatter(x, np.full(len(x), line), s=18, marker=marker, facecolors="none",
                     edgecolors=color, linewidths=0.9)
    axis.axhline(line, color=COLORS["faint"], lw=0.6, ls=":", zorder=0)
    axis.annotate("never reached", (0.01, line), xycoords=("axes fraction", "data"),
                  va="bottom", fontsize=7)


def _compact_ticks(axis) -> None:
    """At most five ticks per axis, written short (80k, 1.2M): long labels ran together."""
    from matplotlib.ticker import EngFormatter, MaxNLocator

    for which in (axis.xaxis, axis.yaxis):
        which.set_major_locator(MaxNLocator(5))
        which.set_major_formatter(EngFormatter(sep=""))


@styled
def validation_figure(frame: pd.DataFrame) -> Figure:
    """Predicted against measured training time, one column per target accuracy.

    Top: predicted global iterate G' against measured rounds; bottom: pseudo
    time G' x L against measured physical time (both in the units of the
    table: rounds and seconds).  One point per run; runs that never reached
    the target are drawn hollow on a line above the others ("never reached";
    their count is in the title), at their predicted value.  The legend names
    each kind of design; the user's own topologies (kind ``"custom"``) by
    their names, each with its own marker.

    Parameters
    ----------
    frame : DataFrame
        The runs table of :func:`topokit.validate` (columns ``target``,
        ``kind``, ``topology``, ``predicted_global_iterate``, ``measured_rounds``,
        ``pseudo_time``, ``measured_time``).
    """
    from ..validation.stats import correlation

    targets = sorted(frame["target"].unique())
    styles = _styles(frame)
    figure, axes = new_panels("validation", nrows=2, ncols=len(targets))
    rows = (
        ("predicted_global_iterate", "measured_rounds", "predicted global iterate G' (rounds)",
         "measured rounds"),
        ("pseudo_time", "measured_time", "pseudo time G' x L (s)", "measured physical time (s)"),
    )
    for column, target in enumerate(targets):
        group = frame[frame["target"] == target]
        reached = group.dropna(subset=["measured_rounds"])
        for row, (x_name, y_name, x_label, y_label) in enumerate(rows):
            axis = axes[row, column]
            for key, points in reached.groupby(_style_keys(reached), sort=False):
                color, marker, label = styles[key]
                axis.scatter(points[x_name], points[y_name], s=18, c=color, marker=marker,
                             alpha=0.7, linewidths=0, label=label)
            _draw_never_reached(axis, group, reached, x_name, y_name, styles)
            _compact_ticks(axis)
            rho = correlation(reached[x_name].to_numpy(float), reached[y_name].to_numpy(float),
                               "spearman")
            missing = int(group["measured_rounds"].isna().sum())
            axis.set_title(f"target {target:g}: Spearman {rho:.2f}"
                           + (f" ({missing} runs never reached)" if missing else ""), fontsize=9)
            axis.set_xlabel(x_label)
            axis.set_ylabel(y_label)
            if row == 0 and column == 0 and len(reached):
                axis.legend(fontsize=7, loc="best")
    return figure


@styled
def accuracy_time_figure(
    curves: pd.DataFrame,
    *,
    panel: str | None = None,
    hue: str = "topology",
    time_scale: float = 3600.0,
    time_label: str = "physical time (h)",
    labels: dict | None = None,
) -> Figure:
    """Averaged accuracy against physical time, mean over trials, one line per ``hue``.

    Parameters
    ----------
    curves : DataFrame
        Columns ``round``, ``time`` (seconds), ``mean_accuracy``, ``hue`` and
        optionally ``panel`` (as :attr:`topokit.validation.ValidationResult.curves`,
        with extra columns added by the caller).
    panel : str, optional
        A column whose values get one subplot each (three per row).
    hue : str, default "topology"
    time_scale : float, default 3600
        Seconds per unit of the x axis.
    labels : dict, optional
        Legend label of each ``hue`` value.
    """
    keys = [None] if panel is None else list(dict.fromkeys(curves[panel]))
    ncols = min(3, len(keys))
    nrows = -(-len(keys) // ncols)
    figure, grid = new_panels("accuracy", nrows=nrows, ncols=ncols)
    axes = grid.ravel()
    for axis, key in zip(axes, keys, strict=False):
        part = curves if key is None else curves[curves[panel] == key]
        for name, group in part.groupby(hue, sort=False):
            mean = group.groupby("round")[["time", "mean_accuracy"]].mean()
            axis.plot(mean["time"] / time_scale, mean["mean_accuracy"], lw=1.4,
                      label=(labels or {}).get(name, name))
        axis.set_xlabel(time_label)
        axis.set_ylabel("averaged test accuracy")
        if key is not None:
            axis.set_title(str(key), fontsize=9)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7, loc="lower right")
    for axis in axes[len(keys):]:
        axis.set_visible(False)
    return figure


@styled
def global_iterate_figure(frame: pd.DataFrame, planes: dict[str, tuple[float, float, float]],
                          *, rounds: str = "measured_rounds") -> Figure:
    """The paper's Fig. 4: measured global iterate against H and phi, with fitted planes.

    Left: the runs in (H, phi, rounds) space and every plane
    G = c_H H + c_phi phi + b as a wireframe.  Right: each plane's prediction
    against the measured rounds (the diagonal is a perfect fit).

    Parameters
    ----------
    frame : DataFrame
        Columns ``hitting_time``, ``phi`` and ``rounds``.
    planes : dict
        Label -> (c_H, c_phi, intercept), e.g. the fitted plane and eq. (15).
    """
    data = frame.dropna(subset=[rounds])
    H = data["hitting_time"].to_numpy(float)
    phi = data["phi"].to_numpy(float)
    G = data[rounds].to_numpy(float)
    figure = new_figure("surface", ncols=2)
    left = figure.add_subplot(1, 2, 1, projection="3d")
    right = figure.add_subplot(1, 2, 2)
    left.scatter(H, phi, G, s=8, c=COLORS["ink"], alpha=0.6, label="runs")
    grid_h, grid_phi = np.meshgrid(np.linspace(H.min(), H.max(), 8), np.linspace(0, 1, 8))
    colors = tuple(COLORS[name] for name in ("highlight", "primary", "secondary", "tertiary"))
    for (label, (c_h, c_phi, b)), color in zip(planes.items(), colors, strict=False):
        left.plot_wireframe(grid_h, grid_phi, c_h * grid_h + c_phi * grid_phi + b, color=color,
                            lw=0.7, alpha=0.7, label=label)
        right.scatter(c_h * H + c_phi * phi + b, G, s=8, color=color, alpha=0.6, label=label)
    low, high = float(G.min()), float(G.max())
    right.plot([low, high], [low, high], color=COLORS["reference"], lw=1, ls="--",
               label="measured = predicted")
    left.set_xlabel("hitting time H")
    left.set_ylabel("DP ratio phi")
    left.set_zlabel("global iterate G (rounds)")
    left.legend(fontsize=7, loc="upper left")
    right.set_xlabel("predicted global iterate G' (rounds)")
    right.set_ylabel("measured global iterate G (rounds)")
    right.legend(fontsize=7)
    return figure
