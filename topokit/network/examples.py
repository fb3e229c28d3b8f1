"""Bundled example networks: ``load_example(name)``.

The files live in the repository's top-level ``datasets/`` folder (with their
provenance in ``datasets/README.md``) and ship inside the wheel as
``topokit/_data``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputFileNotFoundError, InvalidInputError
from .core import Network
from .formats import load_network

__all__ = ["load_example", "list_examples", "data_dir"]


def data_dir() -> Path:
    """The folder holding the bundled data (installed wheel or source checkout)."""
    package = Path(__file__).resolve().parents[1]  # topokit/
    for candidate in (package / "_data", package.parent / "datasets"):
        if candidate.is_dir():
            return candidate
    raise InputFileNotFoundError(
        f"topokit's bundled datasets are missing (looked in {package / '_data'} and "
        f"{package.parent / 'datasets'}); reinstall topokit"
    )


#: Bundled JSON files that are not networks (fitted predictors live beside the examples).
_NOT_NETWORKS = "predictor*.json"


def list_examples() -> list[str]:
    """Names accepted by :func:`load_example`: the bundled network files."""
    folder = data_dir()
    others = set(folder.glob(_NOT_NETWORKS))
    return sorted(path.stem for path in folder.glob("*.json") if path not in others)


def load_example(name: str) -> Network:
    """Load a bundled network by name (e.g. ``"toy"``, the paper's Fig. 2).

    Examples
    --------
    >>> net = load_example("toy")
    >>> net.n_devices, sorted(net.topology.dp_devices)
    (6, ['C', 'D', 'E'])
    """
    names = list_examples()
    if name not in names:
        raise InvalidInputError(f"unknown example {name!r}; bundled examples: {', '.join(names)}")
    return load_network(data_dir() / f"{name}.json")
