"""Exceptions raised by topokit.

Every error a user can cause derives from :class:`TopokitError`, so the CLI can
turn it into one clear line and exit status 2.  Subclasses also derive from the
built-in exception a caller would expect (``ValueError``, ``FileNotFoundError``),
so ``except ValueError`` keeps working in user code.
"""

from __future__ import annotations

__all__ = [
    "TopokitError",
    "InvalidInputError",
    "DisconnectedGraphError",
    "InvalidTopologyError",
    "NodeNotFoundError",
    "NetworkFileError",
    "NetworkFileNotFoundError",
    "NotFittedError",
    "EncodingOverflowError",
    "MissingShareError",
]


class TopokitError(Exception):
    """Base class of every error caused by the user's input."""


class InvalidInputError(TopokitError, ValueError):
    """An argument has the wrong shape, type or value (NaN, negative, ...)."""


class DisconnectedGraphError(InvalidInputError):
    """A graph that must be connected is not."""


class InvalidTopologyError(InvalidInputError):
    """A communication topology breaks one of the DeepPrivacy rules."""


class NodeNotFoundError(InvalidInputError, KeyError):
    """A node id that is not in the network."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class NetworkFileError(InvalidInputError):
    """A network, topology or configuration file cannot be parsed."""


class NetworkFileNotFoundError(TopokitError, FileNotFoundError):
    """A file the user named does not exist."""


class NotFittedError(TopokitError, ValueError, AttributeError):
    """An estimator was used before ``fit``."""


class EncodingOverflowError(InvalidInputError):
    """A value does not fit the fixed-point ring of secure aggregation."""


class MissingShareError(TopokitError, RuntimeError):
    """A secure-aggregation participant's message or key is missing or wrong."""
