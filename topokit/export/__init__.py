"""A design in the formats of the runtimes that train with it.

==========================  ============================================================
module                      what it holds
==========================  ============================================================
:mod:`.core`                :func:`export_design` and :data:`EXPORT_FORMATS`: the mixing
                            matrix (CSV, ``.npy``), decentralizepy's edge file, node-link
                            JSON, and each device's DP-SGD plan
==========================  ============================================================

It sits above :mod:`topokit.design` (it writes a :class:`~topokit.design.Design`,
or predicts what a runtime's own weights make of it) and below the CLI's
``topokit export``.  Before version 0.2 it was ``topokit.design.export``, a path
that still imports.
"""

from __future__ import annotations

from .core import DECENTRALIZEPY_READER, EXPORT_FORMATS, export_design, export_files

__all__ = ["export_design", "export_files", "EXPORT_FORMATS", "DECENTRALIZEPY_READER"]
