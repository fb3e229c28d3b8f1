"""The figure of a network-privacy audit (:func:`topokit.audit.privacy_audit`).

Built without pyplot in the style of :mod:`topokit.plotting._style`; save it
with :func:`~topokit.plotting._style.save_figure`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._style import COLORS, new_panels, styled

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..audit.core import PrivacyAudit

__all__ = ["audit_figure"]

#: Up to this many devices the axes name every device.
_LABELLED_DEVICES = 40


def _draw_mu(axis, audit: PrivacyAudit):
    """Finite mu on a colour scale; exposed pairs in one flat colour; the rest blank."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    mu = audit.mu
    finite = np.ma.masked_invalid(mu)
    image = axis.imshow(finite, cmap="viridis", vmin=0.0, interpolation="nearest")
    exposed = np.ma.masked_where(~np.isinf(mu), np.ones_like(mu))
    axis.imshow(exposed, cmap=ListedColormap([COLORS["highlight"]]), vmin=0, vmax=1,
                interpolation="nearest")
    return image, Patch(color=COLORS["highlight"], label="exposed (mu = inf)")


def _mark_social(axis, audit: PrivacyAudit):
    """A dot on every audited social pair (small when there are many devices)."""
    owners, observers = np.nonzero(audit.social & audit.audited)
    size = float(np.clip(2000.0 / max(len(audit.nodes), 1) ** 2 * 20, 0.5, 16.0))
    return axis.scatter(observers, owners, s=size, c=COLORS["paper"],
                        edgecolors=COLORS["ink"], linewidths=0.4, label="social pair")


@styled
def audit_figure(audit: PrivacyAudit, *, title: str | None = None) -> Figure:
    """Heat map of mu_ik: owner i (rows) against observer k (columns).

    Finite mu on the viridis scale, exposed pairs (mu = inf) in red, social
    pairs dotted, the diagonal and unaudited observers blank.

    Parameters
    ----------
    audit : PrivacyAudit
    title : str, optional
        Default: the rounds, the noise and the exposed stranger count.

    Examples
    --------
    >>> from topokit import load_example
    >>> from topokit.audit import privacy_audit
    >>> figure = audit_figure(privacy_audit(load_example("toy"), rounds=30))
    >>> figure.axes[0].get_xlabel()
    'observer k'
    """
    figure, axes = new_panels("surface")
    axis = axes[0, 0]
    image, exposed = _draw_mu(axis, audit)
    social = _mark_social(axis, audit)
    figure.colorbar(image, ax=axis, label="$\\mu_{ik}$ (Gaussian DP)")
    n = len(audit.nodes)
    if n <= _LABELLED_DEVICES:
        labels = [str(node) for node in audit.nodes]
        axis.set_xticks(range(n), labels, rotation=90, fontsize=7)
        axis.set_yticks(range(n), labels, fontsize=7)
    axis.set_xlabel("observer k")
    axis.set_ylabel("owner i")
    summary = audit.summary()
    axis.set_title(title or (
        f"T = {audit.rounds}: {summary['exposed_stranger_pairs']} of "
        f"{summary['stranger_pairs']} stranger pairs exposed"))
    figure.legend(handles=[exposed, social], loc="outside lower center", ncols=2,
                  frameon=False)
    return figure
