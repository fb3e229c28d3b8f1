"""How large a run the machine can hold, checked by the CLI before the run's work starts.

A network too large for the memory available used to be refused only by the
catch-all ``MemoryError`` line, after tens of seconds of loading and designing.
These checks estimate the memory a command needs from the number of devices
(read cheaply from the network file, before it is loaded) and refuse with one
line: the estimate, what is available and how to make the run smaller.

The estimates are the peaks measured with ``tracemalloc`` and the resident set
size on networks of 300 to 8,000 devices (Python 3.11, numpy 2), in bytes:

``topokit design`` (optimize, and the reference designs of every method)
    The loaded network holds about 9 n^2 (its delays and their masks), the
    search objective 9 n^2.  DLFDP links every pair with a finite delay and ERG
    draws from them, as Python objects: about 480 bytes per finite-delay pair
    at the peak while they are built (plus 25 n^2 of dense temporaries), 150
    held afterwards.  Each search thread scores topologies with about ten dense
    n x n float64 arrays (the eigendecomposition of W, the hitting-time solve):
    80 n^2 per ``--n-jobs`` thread.  At 3,000 devices (4.5 million pairs) this
    predicts 2.46 GB above the interpreter's 0.4 GB; the resident peak was 2.74 GB.
``--method autotag``
    AutoTag's own estimate (:func:`topokit.design.autotag_memory`): ten n x n arrays per
    running budget and, without ``--nep-patience``, a snapshot per pair for
    every budget, (n + 1) x pairs x 48 bytes (24 GB at 1,000 devices).
Loading a network file
    Parsing a stored n x n delay matrix peaks at about 70 n^2 (the text and
    its Python floats); computing the delays from positions at about 34 n^2.
``topokit generate siot``
    The network (its n x n delays) and the JSON writer, which holds every
    delay as a Python float and as text: about 160 n^2 at the peak (1.2 GB
    resident at 2,000 devices, 3.2 GB at 4,000); the file takes about 12 n^2
    bytes (197 MB at 4,000 devices).
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .._checks import available_memory
from ..errors import InvalidInputError

__all__ = [
    "NetworkFileSize",
    "network_file_size",
    "design_memory",
    "check_design_memory",
    "check_siot_size",
    "SIOT_BYTES_PER_PAIR",
    "SIOT_FILE_BYTES_PER_PAIR",
]

#: Peak bytes of ``topokit generate siot`` per n^2 (network and JSON writer).
SIOT_BYTES_PER_PAIR = 160.0
#: Bytes of the written network file per n^2 (its delay matrix as JSON).
SIOT_FILE_BYTES_PER_PAIR = 12.0

# topokit design, per n^2 and per finite-delay pair (see the module docstring).
_NETWORK = 9.0
_OBJECTIVE = 9.0
_REFERENCE_TEMPORARIES = 25.0
_REFERENCE_PEAK_PER_PAIR = 480.0
_REFERENCE_HELD_PER_PAIR = 150.0
_SEARCH_PER_THREAD = 80.0
# Loading a network file, per n^2.
_LOAD_DELAYS = 70.0
_LOAD_POSITIONS = 34.0

_CHUNK = 1 << 24


def _gib(n_bytes: float) -> str:
    """``n_bytes`` in GiB (MiB below one), three significant digits or whole ones."""
    unit, size = ("GiB", 2**30) if n_bytes >= 2**30 else ("MiB", 2**20)
    value = n_bytes / size
    return f"{value:,.0f} {unit}" if value >= 100 else f"{value:.3g} {unit}"


def _largest_fitting(fits: Callable[[int], bool], n: int) -> int:
    """The largest m in [0, n] with ``fits(m)`` (``fits`` grows no easier with m)."""
    low, high = 0, n
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


# ---------------------------------------------------------------------------------------------
# A network file's size, before it is loaded
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NetworkFileSize:
    """What a network file holds, read without loading it.

    ``n_devices`` counts the device entries; ``min_pairs`` is a lower bound on
    the pairs with a finite delay (0 when the file does not tell); ``delays``
    says whether the file stores the n x n delay matrix (else the delays are
    computed from positions when it is loaded).
    """

    n_devices: int
    min_pairs: int
    delays: bool

    @property
    def loading_bytes(self) -> float:
        """The peak memory of loading the file."""
        per_pair = _LOAD_DELAYS if self.delays else _LOAD_POSITIONS
        return per_pair * float(self.n_devices) ** 2


_JSON_DEVICE = re.compile(rb'"compute_time"')
_GRAPHML_DEVICE = re.compile(rb"<node[\s/>]")
_NULL = re.compile(rb"null")
_JSON_DELAY = re.compile(rb'"delay"\s*:\s*\[')
_GRAPHML_DELAY = re.compile(rb'attr\.name="delay"')
# A range beyond which pairs cannot connect: the count of finite pairs is then unknown.
_MAX_RANGE = re.compile(rb'max_range_m(?:"|&quot;)\s*:\s*[-+.0-9]')


def network_file_size(path: Path) -> NetworkFileSize | None:
    """How many devices (and finite-delay pairs, at least) the network file ``path`` holds.

    One pass over the file in chunks, counting tokens (a JSON node's
    ``"compute_time"`` key, a GraphML ``<node>`` element, the ``null`` entries
    of the delay matrix), so that a file too large for the memory is refused
    before it is parsed.  None when ``path`` is not a readable file or holds
    no device (its loader then says what is wrong).
    """
    path = Path(path)
    graphml = path.suffix.lower() == ".graphml"
    device = _GRAPHML_DEVICE if graphml else _JSON_DEVICE
    delay = _GRAPHML_DELAY if graphml else _JSON_DELAY
    devices = nulls = 0
    has_delay = has_range = False
    try:
        with open(path, "rb") as handle:
            carry = b""
            while True:
                chunk = handle.read(_CHUNK)
                data = carry + chunk
                if chunk:  # cut after the last separator: no token spans it
                    cut = max(data.rfind(b","), data.rfind(b">")) + 1
                    data, carry = (data[:cut], data[cut:]) if cut else (b"", data)
                devices += len(device.findall(data))
                nulls += len(_NULL.findall(data))
                has_delay = has_delay or delay.search(data) is not None
                has_range = has_range or _MAX_RANGE.search(data) is not None
                if not chunk:
                    break
    except OSError:
        return None
    if devices == 0:
        return None
    all_pairs = devices * (devices - 1) // 2
    if has_delay:  # every null may be an unreachable pair (each is listed twice)
        min_pairs = max(0, devices * (devices - 1) - nulls) // 2
    else:  # delays from positions: every pair is reachable unless a range is set
        min_pairs = 0 if has_range else all_pairs
    return NetworkFileSize(devices, min_pairs, has_delay)


# ---------------------------------------------------------------------------------------------
# topokit design
# ---------------------------------------------------------------------------------------------

def design_memory(n_devices: int, n_pairs: int, *, method: str, workers: int = 1,
                  trace: bool = False, exact: bool = True) -> float:
    """Peak bytes of ``topokit design`` on ``n_devices`` devices with ``n_pairs`` finite-delay
    pairs (the loaded network included; see the module docstring for the measurements).

    ``method`` is "optimize" or "autotag"; ``workers`` the threads of ``--n-jobs``;
    ``trace`` (``--plot`` with autotag) and ``exact`` (autotag without
    ``--nep-patience``) as :func:`topokit.autotag` takes them.
    """
    return max(_design_phases(n_devices, n_pairs, method=method, workers=workers, trace=trace,
                              exact=exact).values())


def _design_phases(n_devices: int, n_pairs: int, *, method: str, workers: int, trace: bool,
                   exact: bool) -> dict[str, float]:
    """The peak of each phase of a design, by what holds the memory (in the words of the
    refusal)."""
    from ..design import MAX_AUTOTAG_DEVICES, autotag_memory

    n2, pairs = float(n_devices) ** 2, float(n_pairs)
    network = _NETWORK * n2
    listed = "all " if n_pairs >= n_devices * (n_devices - 1) // 2 else ""
    phases = {
        f"the reference designs list {listed}{n_pairs:,} device pairs":
            network + _REFERENCE_TEMPORARIES * n2 + _REFERENCE_PEAK_PER_PAIR * pairs,
        f"each of {workers} search thread(s) holds n x n arrays":
            network + _OBJECTIVE * n2 + _REFERENCE_HELD_PER_PAIR * pairs
            + workers * _SEARCH_PER_THREAD * n2,
    }
    if method == "autotag" or n_devices <= MAX_AUTOTAG_DEVICES:  # optimize starts from it
        kept = (f"AutoTag keeps a snapshot of each of the {n_pairs:,} pairs for every budget"
                if exact else "AutoTag holds n x n arrays for every running budget")
        phases[kept] = network + (
            autotag_memory(n_devices, n_pairs, workers=workers, trace=trace, exact=exact)
            if method == "autotag" else autotag_memory(n_devices, n_pairs, workers=workers))
    return phases


def check_design_memory(n_devices: int, n_pairs: int, *, method: str, workers: int,
                        trace: bool, nep_patience: int | None,
                        loading_bytes: float = 0.0) -> None:
    """Refuse, before any work, a design that cannot fit in the memory available now.

    ``loading_bytes``: the peak of loading the network file, when it is not
    loaded yet (:class:`NetworkFileSize`).  The message gives the estimate, the
    memory available and how to shrink the run: how many devices fit, and the
    options that need less (``--nep-patience``, no ``--plot``, fewer ``--n-jobs``).
    """
    exact = nep_patience is None
    all_pairs = n_devices * (n_devices - 1) / 2
    share = n_pairs / all_pairs if all_pairs else 1.0
    per_load = loading_bytes / max(1.0, float(n_devices) ** 2)

    def need(n: int, **changed) -> float:
        options = {"method": method, "workers": workers, "trace": trace, "exact": exact,
                   **changed}
        pairs = int(share * n * (n - 1) / 2)
        return max(per_load * float(n) ** 2, design_memory(n, pairs, **options))

    needed, available = need(n_devices), available_memory()
    if needed <= available:
        return
    phases = _design_phases(n_devices, n_pairs, method=method, workers=workers, trace=trace,
                            exact=exact)
    if loading_bytes > max(phases.values()):
        why = "loading the network file's n x n delays"
    else:
        why = max(phases, key=phases.__getitem__)
    fits = _largest_fitting(lambda n: need(n) <= available, n_devices)
    fixes = [f"use a network of at most {fits:,} devices" if fits >= 2
             else "free memory (not even 2 devices fit now)"]
    # The options that alone make this network fit.
    if method == "autotag" and need(n_devices, method="optimize") <= available:
        fixes.append("use --method optimize")
    if method == "autotag" and exact and need(n_devices, exact=False) <= available:
        fixes.append("add --nep-patience 10 (AutoTag then keeps no snapshot per pair)")
    if method == "autotag" and trace and need(n_devices, trace=False) <= available:
        fixes.append("drop --plot (it keeps AutoTag's trace)")
    if workers > 1 and need(n_devices, workers=1) <= available:
        fixes.append("use fewer --n-jobs (each thread holds its own n x n arrays)")
    raise InvalidInputError(
        f"designing for {n_devices:,} devices (--method {method}) needs about "
        f"{_gib(needed)} of memory (an estimate; at the peak {why}), more than the "
        f"{_gib(available)} available; " + ", or ".join(fixes)
    )


# ---------------------------------------------------------------------------------------------
# topokit generate siot
# ---------------------------------------------------------------------------------------------

def _free_disk(path: Path) -> float:
    """Bytes free on the file system where ``path`` would be written (inf if unknown)."""
    folder = next((parent for parent in Path(path).absolute().parents if parent.exists()),
                  Path("."))
    try:
        return float(shutil.disk_usage(folder).free)
    except OSError:
        return math.inf


def check_siot_size(n_devices: int, output: Path) -> None:
    """Refuse, before generating, a network whose file cannot be written here.

    A network file stores the n x n delay matrix: writing it takes about
    :data:`SIOT_BYTES_PER_PAIR` bytes of memory per n^2 and the file about
    :data:`SIOT_FILE_BYTES_PER_PAIR` per n^2 on disk.
    """
    n2 = float(n_devices) ** 2
    memory, available = SIOT_BYTES_PER_PAIR * n2, available_memory()
    size, free = SIOT_FILE_BYTES_PER_PAIR * n2, _free_disk(output)
    if memory <= available and size <= free:
        return
    limit = min(available / SIOT_BYTES_PER_PAIR, free / SIOT_FILE_BYTES_PER_PAIR)
    fits = int(math.sqrt(limit))
    fits = max(1, fits - fits % 100 if fits > 1000 else fits)
    what = (f"{_gib(memory)} of memory to write, more than the {_gib(available)} available"
            if memory > available else
            f"{_gib(size)} of disk, more than the {_gib(free)} free where --output goes")
    raise InvalidInputError(
        f"--devices {n_devices}: the network file stores the {n_devices:,} x {n_devices:,} "
        f"delay matrix (about {_gib(size)} of JSON), which needs about {what}; use "
        f"--devices {fits} or fewer"
    )
