"""Helpers shared by the analysis scripts: output folder, machine description, JSON dump."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from topokit._io import atomic_write_text

OUT = Path(__file__).resolve().parent / "out"


def out_path(name: str) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    return OUT / name


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    import numpy as np

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
    }


def write_json(name: str, payload: dict[str, Any]) -> Path:
    return atomic_write_text(out_path(name), json.dumps(payload, indent=2, default=float) + "\n")
