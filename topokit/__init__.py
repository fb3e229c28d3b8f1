"""topokit: design and check communication topologies for private decentralized learning."""

from __future__ import annotations

from .errors import (
    DisconnectedGraphError,
    InvalidInputError,
    InvalidTopologyError,
    TopokitError,
)
from .kernels import (
    hitting_times,
    lazy_metropolis,
    max_hitting_time,
    metropolis,
    spectral_gap,
)

__version__ = "0.1.0"

__all__ = [
    "TopokitError",
    "InvalidInputError",
    "InvalidTopologyError",
    "DisconnectedGraphError",
    "lazy_metropolis",
    "metropolis",
    "hitting_times",
    "max_hitting_time",
    "spectral_gap",
]
