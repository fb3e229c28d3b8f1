"""Helpers shared by the analysis scripts: output folder, machine description, JSON and table
dumps, the ``--quick`` command line."""

from __future__ import annotations

import argparse
import json
import os
import platform
from collections.abc import Callable, Sequence
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


def write_table(name: str, frame, columns: Sequence[tuple[str, str, str]]) -> str:
    """Write ``frame`` to out/<name>.csv and a Markdown table to out/<name>.md; print the table.

    ``columns`` lists (header, frame column, format spec) of the Markdown table,
    e.g. ``("F", "F", ".3f")``; an empty spec prints the value as it is.
    """
    atomic_write_text(out_path(f"{name}.csv"), frame.to_csv(index=False))
    lines = ["| " + " | ".join(header for header, _, _ in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(format(row[column], spec) for _, column, spec in columns) + " |"
              for row in frame.to_dict("records")]
    text = "\n".join(lines) + "\n"
    atomic_write_text(out_path(f"{name}.md"), text)
    print(text, end="")
    return text


def run_quick(main: Callable[[bool], Any]) -> None:
    """Call ``main(quick)`` with the script's ``--quick`` flag."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer instances, a shorter run")
    OUT.mkdir(parents=True, exist_ok=True)
    main(parser.parse_args().quick)
