"""One vocabulary of input checks, shared by every public function.

Public functions validate here and hand contiguous float64 arrays to kernels
that never validate.  Messages say what was expected, what was received and,
where it helps, how to fix it.  The scalar checks follow scikit-learn's
``check_scalar``: a name, a type and an interval.

=========================  ====================================================
check                      accepts
=========================  ====================================================
:func:`check_int`          an integer (bools refused) within optional bounds
:func:`check_real`         a finite real number within an optional interval
:func:`check_choice`       one of a fixed set of values
:func:`check_finite_array` a numeric array with no NaN or inf
:func:`as_matrix_stack`    an (n, n) matrix or (k, n, n) stack of weights
:func:`check_connected`    a connected networkx graph
:func:`check_output_path`  a path a file can be written to (no file where a
                           folder should be, not a folder itself)
:func:`check_fits_in_memory` an allocation no larger than the machine's memory
=========================  ====================================================

:func:`available_memory` is what a new allocation can have now (for checks
that refuse a run the machine cannot hold at the moment).

:func:`check_positive`, :func:`check_nonnegative`, :func:`check_probability`,
:func:`check_in_open_unit_interval` and :func:`check_int_at_least` are the
common intervals, spelled out.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from numbers import Integral, Real
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .errors import DisconnectedGraphError, InvalidInputError

if TYPE_CHECKING:
    # networkx loads with the network model, numpy with the array checks, not with the
    # scalar checks: the command line's help uses those, and loads neither.
    import networkx as nx
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "check_int",
    "check_real",
    "check_choice",
    "check_int_at_least",
    "as_matrix_stack",
    "check_finite_array",
    "check_symmetric",
    "check_row_stochastic",
    "check_positive",
    "check_nonnegative",
    "check_probability",
    "check_in_open_unit_interval",
    "check_connected",
    "check_output_path",
    "check_fits_in_memory",
    "available_memory",
    "graph_adjacency",
]


def check_finite_array(values: ArrayLike, name: str, *, ndim: int | None = None) -> NDArray:
    """Return ``values`` as a C-contiguous float64 array with no NaN or inf.

    Complex values are refused: casting them would silently drop the imaginary part.
    """
    import numpy as np

    if np.iscomplexobj(values):
        raise InvalidInputError(f"{name} must be real numbers; got complex values")
    try:
        array = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be numeric; {exc}") from None
    if ndim is not None and array.ndim != ndim:
        raise InvalidInputError(f"{name} must be {ndim}-dimensional; got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        bad = "NaN" if np.isnan(array).any() else "inf"
        raise InvalidInputError(f"{name} contains {bad} values; remove or impute them first")
    return array


def as_matrix_stack(
    matrix: Any, name: str = "A", *, allow_inf: bool = False
) -> tuple[NDArray[np.float64], bool]:
    """Validate an (n, n) matrix or a (k, n, n) stack of them.

    Returns the stack as a contiguous float64 array of shape (k, n, n) and
    whether the input was a single matrix (so callers can squeeze the result).
    """
    import numpy as np

    networkx = sys.modules.get("networkx")  # a graph exists only once networkx is loaded
    if networkx is not None and isinstance(matrix, networkx.Graph):
        raise InvalidInputError(
            f"{name} must be an array; got a networkx graph. "
            "Use topokit.lazy_metropolis(G) to build its transition matrix."
        )
    try:
        array = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a numeric array; {exc}") from None
    if array.ndim not in (2, 3) or array.shape[-1] != array.shape[-2]:
        raise InvalidInputError(
            f"{name} must be a square matrix of shape (n, n) or a stack (k, n, n); "
            f"got shape {array.shape}"
        )
    if array.shape[-1] == 0:
        raise InvalidInputError(f"{name} must have at least one node; got shape {array.shape}")
    if np.isnan(array).any():
        raise InvalidInputError(f"{name} contains NaN values")
    if not allow_inf and np.isinf(array).any():
        raise InvalidInputError(f"{name} contains infinite values")
    if (array < 0).any():
        raise InvalidInputError(f"{name} has negative entries; weights must be >= 0")
    single = array.ndim == 2
    stack = np.ascontiguousarray(array[None] if single else array)
    return stack, single


def check_symmetric(stack: NDArray, name: str = "A", atol: float = 1e-10) -> None:
    """Raise if any matrix of the stack is not symmetric."""
    import numpy as np

    if np.array_equal(stack, np.swapaxes(stack, -1, -2)):
        return  # the common case, in one pass without temporaries
    gap = np.abs(stack - np.swapaxes(stack, -1, -2)).max(initial=0.0)
    if gap > atol:
        raise InvalidInputError(
            f"{name} must be symmetric; largest |a_ij - a_ji| is {gap:.3g}"
        )


def check_row_stochastic(stack: NDArray, name: str = "A", atol: float = 1e-8) -> None:
    """Raise if a row of any matrix does not sum to one."""
    import numpy as np

    gap = np.abs(stack.sum(axis=-1) - 1.0).max(initial=0.0)
    if gap > atol:
        raise InvalidInputError(
            f"{name} must be row-stochastic (every row sums to 1); largest row-sum error is "
            f"{gap:.3g}. Build it with topokit.lazy_metropolis."
        )


Closed = Literal["both", "left", "right", "neither"]


def _bounds_text(low: float | None, high: float | None, closed: Closed) -> str:
    """The interval in words: 'be > 0', 'be >= 1', 'lie in (0, 1]'."""
    left_closed = closed in ("both", "left")
    right_closed = closed in ("both", "right")
    if low is not None and high is not None:
        return f"lie in {'[' if left_closed else '('}{low}, {high}{']' if right_closed else ')'}"
    if low is not None:
        return f"be {'>=' if left_closed else '>'} {low}"
    if high is not None:
        return f"be {'<=' if right_closed else '<'} {high}"
    return ""


def _outside(value: float, low: float | None, high: float | None, closed: Closed) -> bool:
    left_closed = closed in ("both", "left")
    right_closed = closed in ("both", "right")
    below = low is not None and (value < low if left_closed else value <= low)
    above = high is not None and (value > high if right_closed else value >= high)
    return below or above


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    closed: Closed = "both",
) -> float:
    """Return ``value`` as a float; raise unless it is a finite real in the interval.

    Parameters
    ----------
    value : object
        The argument to check; bools are refused.
    name : str
        The argument's name, as the user wrote it (used in the message).
    low, high : float, optional
        Bounds of the interval; None leaves that side open-ended.
    closed : {"both", "left", "right", "neither"}
        Which bounds belong to the interval.

    Raises
    ------
    InvalidInputError
        If ``value`` is not a real number, is NaN or infinite, or lies outside
        the interval.

    Examples
    --------
    >>> check_real(0.5, "q", low=0, high=1, closed="right")
    0.5
    >>> check_real(0, "q", low=0, high=1, closed="right")
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: q must lie in (0, 1]; got 0.0
    """
    # numpy registers its floating and integer scalars as numbers.Real.
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidInputError(f"{name} must be a real number; got {shown(value)}")
    try:
        value = float(value)
    except OverflowError:  # an integer beyond the float range
        digits = int(int(value).bit_length() * 0.30103) + 1
        raise InvalidInputError(
            f"{name} is too large (above 1.8e308); got an integer of about {digits} digits"
        ) from None
    if not math.isfinite(value):
        raise InvalidInputError(f"{name} must be finite; got {value}")
    if _outside(value, low, high, closed):
        raise InvalidInputError(f"{name} must {_bounds_text(low, high, closed)}; got {value}")
    return value


def check_int(
    value: Any,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
) -> int:
    """Return ``value`` as an int; raise unless it is an integer in [low, high].

    Python and numpy integers are accepted; bools and integral floats are not
    (``2.0`` where a count is expected is usually a mistake upstream).

    Examples
    --------
    >>> check_int(3, "rounds", low=1)
    3
    >>> check_int(0, "rounds", low=1)
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: rounds must be an integer >= 1; got 0
    """
    bounds = _bounds_text(low, high, "both").removeprefix("be ").replace("lie in", "in")
    expected = f"an integer {bounds}".rstrip()
    # numpy registers its integer scalars as numbers.Integral.
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise InvalidInputError(f"{name} must be {expected}; got {shown(value)}")
    if _outside(int(value), low, high, "both"):
        raise InvalidInputError(f"{name} must be {expected}; got {shown(value)}")
    return int(value)


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """Return ``value``; raise unless it is one of ``choices``.

    Examples
    --------
    >>> check_choice("pld", "accountant", ("rdp", "pld"))
    'pld'
    >>> check_choice("gdp", "accountant", ("rdp", "pld"))
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: accountant must be one of 'rdp', 'pld'; got 'gdp'
    """
    options = tuple(choices)
    try:
        known = value in options
    except TypeError:  # an unhashable value against a set-like
        known = False
    if not known:
        raise InvalidInputError(
            f"{name} must be one of {', '.join(map(shown, options))}; got {shown(value)}"
        )
    return value


def check_positive(value: Any, name: str) -> float:
    """Return ``value`` as float; raise unless it is finite and > 0."""
    return check_real(value, name, low=0, closed="neither")


def check_int_at_least(value: Any, name: str, minimum: int = 1) -> int:
    """Return ``value`` as int; raise unless it is an integer >= ``minimum`` (bools refused)."""
    return check_int(value, name, low=minimum)


def check_nonnegative(value: Any, name: str) -> float:
    """Return ``value`` as float; raise unless it is finite and >= 0."""
    return check_real(value, name, low=0)


def check_probability(value: Any, name: str) -> float:
    """Return ``value`` as float; raise unless it lies in (0, 1]."""
    return check_real(value, name, low=0, high=1, closed="right")


def check_in_open_unit_interval(value: Any, name: str) -> float:
    """Return ``value`` as float; raise unless it lies in (0, 1)."""
    return check_real(value, name, low=0, high=1, closed="neither")


def check_connected(graph: nx.Graph, what: str = "the social graph") -> None:
    """Raise :class:`DisconnectedGraphError` naming the components if ``graph`` is not connected."""
    import networkx as nx

    if graph.number_of_nodes() == 0:
        raise InvalidInputError(f"{what} has no nodes")
    if not nx.is_connected(graph):
        components = sorted(nx.connected_components(graph), key=len, reverse=True)
        sample = ", ".join(repr(sorted(c, key=str)[0]) for c in components[:4])
        raise DisconnectedGraphError(
            f"{what} must be connected; it has {len(components)} components "
            f"(e.g. containing {sample}). Add links joining them or analyse each component."
        )


def check_output_path(path: str | os.PathLike, name: str = "output") -> Path:
    """Return ``path`` as a Path; raise unless a file can be written there.

    Checked before any work starts, so a long run never ends in "File exists"
    or "Is a directory": no component of the folder may be a regular file,
    and the path itself may not be a folder.  Missing folders are fine (the
    atomic writers create them).

    Examples
    --------
    >>> check_output_path("results/design.json", "--output")
    PosixPath('results/design.json')
    """
    target = Path(path)
    if target.is_dir():
        raise InvalidInputError(
            f"{name}: {target} is a directory; give a file name, e.g. {target / 'out'}"
        )
    for parent in reversed(target.parents):
        if parent.exists() and not parent.is_dir():
            raise InvalidInputError(
                f"{name}: cannot write {target}: {parent} is a file, not a folder; "
                "choose another path"
            )
    _check_writable_folder(target, name)
    return target


def _check_writable_folder(target: Path, name: str) -> None:
    """Refuse ``target`` when its nearest existing folder takes no new file (read-only, a
    pseudo file system such as /proc): tried by creating and removing a scratch file,
    which permission bits alone do not tell (root ignores them)."""
    import tempfile

    folder = next((parent for parent in target.parents if parent.exists()), Path("."))
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise InvalidInputError(f"{name}: cannot write {target}: {folder} takes no new file "
                                f"({exc.strerror}); choose another path") from None


def _physical_memory() -> float:
    """Bytes of physical memory of this machine (inf where the OS does not say)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return float("inf")


def available_memory() -> float:
    """Bytes of memory available to a new allocation now (Linux's MemAvailable; else the
    free pages; inf where the OS does not say).

    The one reading of it: :func:`topokit.kernels.available_memory` is this function
    (the large-network kernels check it before allocating), importable without loading
    the compiled kernels (numba) for checks made before a command's work starts.
    """
    try:
        with open("/proc/meminfo") as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except (OSError, ValueError, IndexError):
        pass
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return float("inf")


def _bytes_text(n_bytes: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n_bytes >= size:
            return f"{n_bytes / size:.3g} {unit}"
    return f"{n_bytes:.0f} bytes"


def check_fits_in_memory(n_bytes: float, what: str, fix: str) -> None:
    """Raise unless ``n_bytes`` fit in this machine's physical memory.

    Called before a large allocation, so a size that cannot fit is one clear
    error naming the culprit instead of a ``MemoryError`` (or the system
    swapping for minutes).

    Parameters
    ----------
    n_bytes : float
        What the allocation would take (Python ints do not overflow).
    what : str
        What is being sized, naming the argument: "n_devices=10**9 devices".
    fix : str
        How to fix it: "use fewer devices".
    """
    limit = _physical_memory()
    if n_bytes > limit:
        raise InvalidInputError(
            f"{what} would need {_bytes_text(n_bytes)} of memory, more than this machine's "
            f"{_bytes_text(limit)}: too large; {fix}"
        )


def graph_adjacency(graph: nx.Graph, nodelist: list | None = None) -> NDArray[np.float64]:
    """0/1 float64 adjacency of ``graph`` in ``nodelist`` order (default ``list(graph)``).

    No self-loops.
    """
    import networkx as nx
    import numpy as np

    if graph.is_directed():
        raise InvalidInputError("expected an undirected graph; got a directed one")
    nodes = list(graph) if nodelist is None else nodelist
    adjacency = nx.to_numpy_array(graph, nodelist=nodes, weight=None, dtype=np.float64)
    np.fill_diagonal(adjacency, 0.0)
    return np.ascontiguousarray((adjacency > 0).astype(np.float64))


def shown(value: Any) -> str:
    """``repr(value)`` as a user reads it in a message: a numpy scalar as the Python value it
    holds (``-5.0``, ``7``, ``'a'``, ``True``; not ``np.float64(-5.0)``).

    Examples
    --------
    >>> import numpy as np
    >>> shown(np.float64(-5.0)), shown(np.int64(7)), shown(np.str_("a")), shown("a")
    ('-5.0', '7', "'a'", "'a'")
    """
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()
    return repr(value)


def brief(value: Any, limit: int = 60) -> str:
    """:func:`shown` ``value``, cut to ``limit`` characters (a message is one line)."""
    text = shown(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_collection(values: Any, name: str, expected: str) -> Iterable:
    """``values`` if it is a collection of items; a string is refused.

    A string is iterable, but ``dp_devices="AB"`` meaning devices "A" and "B"
    is a guess topokit does not make.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{name} must be {expected}; got {brief(values)}")
    return values
