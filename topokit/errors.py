"""Exceptions and warnings raised by topokit.

Every error a user can cause derives from :class:`TopokitError`, so the CLI can
turn it into one clear line and exit status 2.  Subclasses also derive from the
built-in exception a caller would expect (``ValueError``, ``FileNotFoundError``),
so ``except ValueError`` keeps working in user code.

================================  ================================================
class                             raised when
================================  ================================================
:class:`InvalidInputError`        an argument has the wrong type, shape or value
:class:`DisconnectedGraphError`   a graph that must be connected is not
:class:`InvalidTopologyError`     a topology breaks one of the DeepPrivacy rules
:class:`NodeNotFoundError`        a node id is not in the network
:class:`InputFileError`           an input file (network, topology, predictor, config,
                                  runs table, data) cannot be parsed or holds bad values
:class:`InputFileNotFoundError`   a file the user named does not exist
:class:`NotFittedError`           an estimator is used before ``fit``
:class:`EncodingOverflowError`    a value leaves secure aggregation's fixed-point ring
:class:`MissingShareError`        a secure-aggregation message, key or share is missing
================================  ================================================

``NetworkFileError`` and ``NetworkFileNotFoundError`` are the old names of
:class:`InputFileError` and :class:`InputFileNotFoundError` (they were raised for
every kind of input file, not only networks); they remain as aliases.
"""

from __future__ import annotations

__all__ = [
    "TopokitError",
    "InvalidInputError",
    "DisconnectedGraphError",
    "InvalidTopologyError",
    "NodeNotFoundError",
    "InputFileError",
    "InputFileNotFoundError",
    "NetworkFileError",
    "NetworkFileNotFoundError",
    "NotFittedError",
    "EncodingOverflowError",
    "MissingShareError",
    "TopokitWarning",
    "NotAFormalGuaranteeWarning",
    "StrangersExposedWarning",
    "InsecureKeysWarning",
    "UnusableSocialLinksWarning",
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


class InputFileError(InvalidInputError):
    """An input file cannot be parsed, or holds values of the wrong type or range.

    The message names the file and, where it can, the field.
    """


class InputFileNotFoundError(TopokitError, FileNotFoundError):
    """A file the user named does not exist."""


#: Old name of :class:`InputFileError`.
NetworkFileError = InputFileError
#: Old name of :class:`InputFileNotFoundError`.
NetworkFileNotFoundError = InputFileNotFoundError


class NotFittedError(TopokitError, ValueError, AttributeError):
    """An estimator was used before ``fit``."""


class EncodingOverflowError(InvalidInputError):
    """A value does not fit the fixed-point ring of secure aggregation."""


class MissingShareError(TopokitError, RuntimeError):
    """A secure-aggregation participant's message or key is missing or wrong."""


class TopokitWarning(UserWarning):
    """Base class of topokit's warnings."""


class NotAFormalGuaranteeWarning(TopokitWarning):
    """A result uses a paper's shortcut that is not a formal privacy guarantee."""


class StrangersExposedWarning(TopokitWarning):
    """A design told an epsilon has no DP device: its stranger pairs see data unprotected."""


class InsecureKeysWarning(TopokitWarning):
    """Secret keys or masks were derived from a seeded generator (tests only)."""


class UnusableSocialLinksWarning(TopokitWarning):
    """A network has social links with infinite delay: no topology can use them."""
