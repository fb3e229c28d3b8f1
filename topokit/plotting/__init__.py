"""Figures of every system: matplotlib only, one style, one save helper.

=====================================  ==========================================================
module                                 figures
=====================================  ==========================================================
:mod:`topokit.plotting.design`         System 1: a designed topology and its trade-off, degree
                                       deviation (Fig. 3), global iterate planes (Fig. 4),
                                       predicted against measured, accuracy against time
:mod:`topokit.plotting.gfl`            System 2: MSD learning curves, sweeps, test error
:mod:`topokit.plotting.learn`          System 3: adjacency heat maps, a learned graph
:mod:`topokit.plotting._style`         the rc settings, colour cycle, named colours and panel
                                       sizes every figure uses, and :func:`save_figure`
=====================================  ==========================================================

Every figure function returns a :class:`matplotlib.figure.Figure` built without
pyplot, so plotting never chooses or changes the user's backend.
:func:`save_figure` (``.png``, ``.pdf`` or ``.svg``) writes it atomically and
closes it.  Importing this package does not import matplotlib.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["save_figure", "check_figure_path"]


def __getattr__(name: str) -> Any:
    # Lazy, so that ``import topokit.plotting`` stays cheap.
    if name in __all__:
        return getattr(importlib.import_module("._style", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
