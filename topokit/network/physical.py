"""The physical model of DeepPrivacy's simulations (Ching et al., Sec. VI-A).

Devices closer than ``wifi_range_m`` (100 m) talk over Wi-Fi 802.11n at its
peak rate of 72.2 Mb/s; farther pairs use LTE-M.  The paper gives LTE-M only as
the bottlenecks of its two example networks (Table I: 37.6 s and 9.4 s per
round, "derived from different LTE-M releases").  topokit reads them as a 4 MB
model sent over Cat-M1 and Cat-M2 respectively, i.e. 0.851 and 3.404 Mb/s:
**this reading is our assumption**, not a statement of the paper.  Each device
has an LTE-M category and a pair uses the slower of its two ends.

Computation times per training round follow the paper's Raspberry Pi classes:
RPi2 770 s, RPi3 312 s, RPi4 114 s.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import check_choice, check_nonnegative, check_positive, shown
from ..errors import InvalidInputError

__all__ = [
    "WIFI_RATE_MBPS",
    "WIFI_RANGE_M",
    "REFERENCE_MODEL_MB",
    "LTE_ROUND_SECONDS",
    "LTE_RATE_MBPS",
    "DEVICE_COMPUTE_SECONDS",
    "transfer_seconds",
    "pairwise_delays",
    "pairwise_delay_blocks",
    "pair_delays",
    "compute_seconds",
]

#: Wi-Fi 802.11n peak rate in Mb/s, of every pair closer than :data:`WIFI_RANGE_M` (Sec. VI-A).
WIFI_RATE_MBPS = 72.2
#: Distance in metres below which a pair talks over Wi-Fi rather than LTE-M (Sec. VI-A).
WIFI_RANGE_M = 100.0
#: Size in MB of the model the LTE-M rates are read from (Table I; our assumption).
REFERENCE_MODEL_MB = 4.0
#: Table I bottlenecks for a 4 MB model, read as Cat-M1 / Cat-M2 (our assumption).
LTE_ROUND_SECONDS = {"cat-m1": 37.6, "cat-m2": 9.4}
#: LTE-M rate in Mb/s of each category: :data:`REFERENCE_MODEL_MB` over its Table I time.
LTE_RATE_MBPS = {
    category: REFERENCE_MODEL_MB * 8.0 / seconds for category, seconds in LTE_ROUND_SECONDS.items()
}
#: Seconds of computation per training round of each Raspberry Pi class (Sec. VI-A).
DEVICE_COMPUTE_SECONDS = {"rpi2": 770.0, "rpi3": 312.0, "rpi4": 114.0}


def transfer_seconds(model_size_mb: float, rate_mbps: float) -> float:
    """Seconds to send a model of ``model_size_mb`` megabytes at ``rate_mbps`` megabits/s."""
    return model_size_mb * 8.0 / rate_mbps


def _lte_rates(lte: str | Sequence[str], n: int) -> NDArray[np.float64]:
    categories = [lte] * n if isinstance(lte, str) else list(lte)
    if len(categories) != n:
        raise InvalidInputError(
            f"lte must name one category per device ({n}); got {len(categories)}"
        )
    for category in dict.fromkeys(categories):  # each distinct category once, in order
        check_choice(category, "lte (the LTE-M category)", sorted(LTE_RATE_MBPS))
    return np.array([LTE_RATE_MBPS[c] for c in categories])


def pairwise_delays(
    positions: NDArray[np.float64],
    *,
    model_size_mb: float = REFERENCE_MODEL_MB,
    lte: str | Sequence[str] = "cat-m1",
    wifi_range_m: float = WIFI_RANGE_M,
    max_range_m: float | None = None,
) -> NDArray[np.float64]:
    """Communication time d_ij (seconds per round) of every pair from positions in metres.

    Parameters
    ----------
    positions : ndarray of shape (n, 2)
        Device positions in metres.
    model_size_mb : float
        Size of the exchanged model in megabytes (the paper's 4 MB).
    lte : str or sequence of str
        LTE-M category ("cat-m1" or "cat-m2") of all devices or of each device;
        a pair uses the slower end.
    wifi_range_m : float
        Pairs closer than this use Wi-Fi at 72.2 Mb/s.
    max_range_m : float, optional
        Pairs farther apart cannot communicate (``inf``); default: no limit.

    Returns
    -------
    ndarray of shape (n, n)
        Symmetric, zero diagonal, ``inf`` for unreachable pairs.
    """
    return _ModelDelays(positions, model_size_mb=model_size_mb, lte=lte,
                        wifi_range_m=wifi_range_m, max_range_m=max_range_m).matrix()


def pairwise_delay_blocks(
    positions: NDArray[np.float64],
    *,
    model_size_mb: float = REFERENCE_MODEL_MB,
    lte: str | Sequence[str] = "cat-m1",
    wifi_range_m: float = WIFI_RANGE_M,
    max_range_m: float | None = None,
) -> Iterator[tuple[int, NDArray[np.float64]]]:
    """The rows of :func:`pairwise_delays`, a block of rows at a time (the same floats).

    For comparing a delay matrix with the model without a second n x n array
    (a network file stores no delays when they are the model's).  The
    settings are checked before the first block.

    Yields
    ------
    start : int
        The first row of the block.
    block : ndarray of shape (rows, n)
        The delays of rows ``start`` to ``start + rows - 1``.

    Examples
    --------
    >>> positions = np.array([[0.0, 0.0], [50.0, 0.0], [500.0, 0.0]])
    >>> rows = np.vstack([block for _, block in pairwise_delay_blocks(positions)])
    >>> bool(np.array_equal(rows, pairwise_delays(positions)))
    True
    """
    return _ModelDelays(positions, model_size_mb=model_size_mb, lte=lte,
                        wifi_range_m=wifi_range_m, max_range_m=max_range_m).blocks()


def pair_delays(
    positions: NDArray[np.float64],
    rows: ArrayLike,
    cols: ArrayLike,
    *,
    model_size_mb: float = REFERENCE_MODEL_MB,
    lte: str | Sequence[str] = "cat-m1",
    wifi_range_m: float = WIFI_RANGE_M,
    max_range_m: float | None = None,
) -> NDArray[np.float64]:
    """The entries ``[rows[k], cols[k]]`` of :func:`pairwise_delays`, without the n x n matrix.

    The same floats bit for bit, computed pair by pair (what the delays of a
    network's social links cost: their count, not n^2).

    Parameters
    ----------
    positions : ndarray of shape (n, 2)
        Device positions in metres.
    rows, cols : array-like of int
        The pairs' ends, positions in ``positions``.
    model_size_mb, lte, wifi_range_m, max_range_m
        As :func:`pairwise_delays` takes them.

    Returns
    -------
    ndarray of shape (len(rows),)

    Examples
    --------
    >>> positions = np.array([[0.0, 0.0], [50.0, 0.0], [500.0, 0.0]])
    >>> pair_delays(positions, [0, 0, 2], [1, 2, 2]).tolist()
    [0.44321329639889195, 37.6, 0.0]
    >>> bool(pairwise_delays(positions)[0, 2] == pair_delays(positions, [0], [2])[0])
    True
    """
    return _ModelDelays(positions, model_size_mb=model_size_mb, lte=lte,
                        wifi_range_m=wifi_range_m, max_range_m=max_range_m).at(rows, cols)


class _ModelDelays:
    """The delays of the physical model at given positions, its settings checked as
    :func:`pairwise_delays` checks them, computed only when asked: as the matrix, a block
    of rows at a time or at given pairs, every way the same floats.

    What a :class:`~topokit.network.Network` built from positions keeps instead of its
    n x n delays until they are read.  Holds n positions and n per-device LTE-M delays.
    """

    def __init__(self, positions: ArrayLike, *, model_size_mb: float, lte: str | Sequence[str],
                 wifi_range_m: float, max_range_m: float | None):
        model_size_mb = check_positive(model_size_mb, "model_size_mb")
        wifi_range_m = check_nonnegative(wifi_range_m, "wifi_range_m")
        if max_range_m is not None:
            max_range_m = check_nonnegative(max_range_m, "max_range_m")
        self.positions = np.asarray(positions, dtype=np.float64)  # as pdist reads them
        rates = _lte_rates(lte, self.positions.shape[0])
        # A pair's LTE-M delay is its slower end's: model_size_mb * 8 / rate of each device.
        self.device_delay = model_size_mb * 8.0 / rates
        self.wifi_delay = transfer_seconds(model_size_mb, WIFI_RATE_MBPS)
        self.wifi_range_m = wifi_range_m
        self.max_range_m = max_range_m

    @property
    def n(self) -> int:
        return self.positions.shape[0]

    def blocks(self) -> Iterator[tuple[int, NDArray[np.float64]]]:
        """The rows of the matrix, a block at a time (:func:`pairwise_delay_blocks`)."""
        return _delay_blocks(self.positions, self.device_delay, self.wifi_delay,
                             self.wifi_range_m, self.max_range_m)

    def matrix(self) -> NDArray[np.float64]:
        """The n x n delays (:func:`pairwise_delays`)."""
        delay = np.empty((self.n, self.n))  # the only n x n array: the rest is a block at a time
        for start, block in self.blocks():
            delay[start:start + block.shape[0]] = block
        return delay

    def at(self, rows: ArrayLike, cols: ArrayLike) -> NDArray[np.float64]:
        """The delays of the pairs (rows[k], cols[k]): the matrix's entries, bit for bit."""
        rows = np.asarray(rows, dtype=np.intp).ravel()
        cols = np.asarray(cols, dtype=np.intp).ravel()
        if rows.shape != cols.shape:
            raise InvalidInputError(f"rows and cols must be as long; got {len(rows)} and "
                                    f"{len(cols)}")
        delays = np.empty(len(rows))
        for start in range(0, len(rows), _PAIRS):  # a million pairs at a time: bounded memory
            stop = start + _PAIRS
            delays[start:stop] = _pair_block(self, rows[start:stop], cols[start:stop])
        return delays

    def largest(self) -> float:
        """A bound on the largest finite delay: the Wi-Fi delay or an end's LTE-M delay."""
        candidates = np.append(self.device_delay, self.wifi_delay)
        return float(candidates[np.isfinite(candidates)].max(initial=0.0))

    def same(self, other: _ModelDelays) -> bool:
        """Whether ``other`` gives the same delays by construction: the same positions,
        per-device and Wi-Fi delays and ranges, bit for bit."""
        def bits(value: Any) -> bytes:
            return np.ascontiguousarray(value, dtype=np.float64).tobytes()

        mine = (self.positions, self.device_delay, self.wifi_delay, self.wifi_range_m)
        theirs = (other.positions, other.device_delay, other.wifi_delay, other.wifi_range_m)
        return (self.positions.shape == other.positions.shape
                and all(bits(a) == bits(b) for a, b in zip(mine, theirs, strict=True))
                and (self.max_range_m is None) == (other.max_range_m is None)
                and (self.max_range_m is None or bits(self.max_range_m) == bits(other.max_range_m)))


# Pairs whose delays :meth:`_ModelDelays.at` computes at once (a few arrays of 8 MB).
_PAIRS = 1 << 20


def _pair_block(model: _ModelDelays, rows: NDArray[np.intp],
                cols: NDArray[np.intp]) -> NDArray[np.float64]:
    """:meth:`_ModelDelays.at` of one block of pairs: the operations of :func:`_delay_blocks`
    on each pair, in the same order (the same floats)."""
    device_delay, positions = model.device_delay, model.positions
    delays = np.maximum(device_delay[rows], device_delay[cols])
    total = np.zeros(len(rows))
    for k in range(positions.shape[1]):  # row minus column, as _distances subtracts
        difference = positions[rows, k] - positions[cols, k]
        total += difference * difference
    distance = np.sqrt(total)
    delays[distance < model.wifi_range_m] = model.wifi_delay
    if model.max_range_m is not None:
        delays[distance > model.max_range_m] = np.inf
    delays[rows == cols] = 0.0
    return delays


def _delay_blocks(positions: NDArray[np.float64], device_delay: NDArray[np.float64],
                  wifi_delay: float, wifi_range_m: float,
                  max_range_m: float | None) -> Iterator[tuple[int, NDArray[np.float64]]]:
    """:func:`pairwise_delay_blocks` once its settings are checked."""
    n = positions.shape[0]
    for start in range(0, n, _ROWS):  # blocks of rows: no n x n temporary
        stop = min(start + _ROWS, n)
        # A pair uses its slower end: x / min(a, b) == max(x / a, x / b) exactly (IEEE
        # division is monotone), so one outer maximum stands for a pair-rate matrix and its
        # division.
        block = np.maximum.outer(device_delay[start:stop], device_delay)
        distance = _distances(positions[start:stop], positions)
        block[distance < wifi_range_m] = wifi_delay
        if max_range_m is not None:
            block[distance > max_range_m] = np.inf
        rows = np.arange(stop - start)
        block[rows, start + rows] = 0.0
        yield start, block


# Rows of distances computed at once: 512 x n floats (32 MB at 8,000 devices).
_ROWS = 512


def _distances(rows: NDArray[np.float64], positions: NDArray[np.float64]) -> NDArray[np.float64]:
    """Euclidean distances of ``rows`` to every position, summed coordinate by coordinate in
    order then rooted, as scipy's ``pdist`` computes them (the same floats, bit for bit)."""
    total = np.zeros((rows.shape[0], positions.shape[0]))
    for k in range(positions.shape[1]):
        difference = rows[:, k, None] - positions[None, :, k]
        total += difference * difference
    return np.sqrt(total)


def compute_seconds(values: Sequence | Mapping, nodes: list) -> NDArray[np.float64]:
    """Per-device computation times in node order; accepts numbers or class names ("rpi3")."""
    if isinstance(values, Mapping):
        missing = [node for node in nodes if node not in values]
        if missing:
            raise InvalidInputError(
                f"compute_time has no entry for node {missing[0]!r} ({len(missing)} missing)"
            )
        raw = [values[node] for node in nodes]
    elif isinstance(values, str):
        raw = [values] * len(nodes)
    else:
        raw = list(np.atleast_1d(np.asarray(values, dtype=object)))
        if len(raw) == 1 and len(nodes) > 1:
            raw = raw * len(nodes)
    if len(raw) != len(nodes):
        raise InvalidInputError(
            f"compute_time must have one value per node ({len(nodes)}); got {len(raw)}"
        )
    seconds = [_seconds(node, value) for node, value in zip(nodes, raw, strict=True)]
    return np.array(seconds, dtype=np.float64)


def _seconds(node, value) -> float:
    """One device's computation time: a finite number of seconds >= 0, or a class name."""
    if isinstance(value, str):
        key = value.lower().replace(" ", "").replace("-", "")
        if key not in DEVICE_COMPUTE_SECONDS:
            raise InvalidInputError(
                f"unknown device class {value!r} for node {node!r}; expected a number of "
                f"seconds or one of {sorted(DEVICE_COMPUTE_SECONDS)}"
            )
        return DEVICE_COMPUTE_SECONDS[key]
    expected = (f"compute_time of node {node!r} must be a number of seconds or a device class "
                f"({', '.join(sorted(DEVICE_COMPUTE_SECONDS))})")
    if isinstance(value, (bool, np.bool_)) or value is None:
        raise InvalidInputError(f"{expected}; got {shown(value)}")
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond the float range
        seconds = float("inf")
    except (TypeError, ValueError):
        raise InvalidInputError(f"{expected}; got {value!r}") from None
    if np.isnan(seconds):
        raise InvalidInputError(f"compute_time of node {node!r} is NaN; give seconds per round")
    if np.isinf(seconds):
        raise InvalidInputError(
            f"compute_time of node {node!r} is {seconds}: too large or infinite; give a finite "
            "number of seconds per round"
        )
    if seconds < 0:
        raise InvalidInputError(f"compute_time of node {node!r} must be >= 0; got {seconds}")
    return seconds
