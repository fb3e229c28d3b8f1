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
Loading a network file (every command that reads one, before it is read)
    Parsing a stored n x n delay matrix: about 100 n^2 above the interpreter
    (resident: 117 n^2 at 2,000 devices, 95 at 4,000, 87 at 8,000; SIoT files,
    6-20 % of the pairs social; the JSON's Python floats, the social graph and
    the arrays built from them), the same for the one-value-a-line and the
    compact layout of :func:`topokit.network.save_network`.  Computing the delays
    from positions: 25 n^2 at 4,000 and 8,000 devices; 26 n^2.  ``analyze``'s
    metrics stay below the loading peak (``--audit-rounds 0``: 0.63 GB resident
    at 1,500 devices, 1.15 GB at 3,000).
``topokit audit`` (and the stranger audits of ``analyze`` and ``validate``)
    The loaded network, the audit's five (n, n) arrays (40 n^2) and, per
    ``--n-jobs`` thread, the largest workspace of an observer as the audit bounds
    it itself (:func:`topokit.audit.audit_memory_needed`: for gossip the larger
    of the batch method's (T d)^2 + 2 T n d floats, d the observer's neighbours,
    and the Kalman filter's about 8 n^2; D-SGD adds its owners' solves).  That
    bound was above the ``tracemalloc`` peak of the audit in every case
    measured: the toy example, D-SGD, T = 200 / 500 / 1,000: 14 / 61 / 230 MB
    (bound 28 / 176 / 321 MB); siot16 and siot32 with a random topology, D-SGD,
    T = 100 / 200 / 400: 3.7 / 14 / 57 MB (17 / 67 / 213) and 27 / 107 / 426 MB
    (145 / 276 / 524); gossip over 50 rounds on siot100: 23 MB (50), on 300
    devices: 9.9 MB (12.4).  Before the file is read the topology is unknown:
    the bound then takes one neighbour per observer and no noise (a lower
    bound); once it is loaded, the busiest observer and the devices that add
    noise.  Time is bounded by :data:`topokit.audit.MAX_AUDIT_ROUNDS` (D-SGD:
    10 s at 1,000 rounds on the toy example, 50 s at 400 rounds on siot32 with
    a random topology, 3.5 s for its slowest observer); ``topokit audit``
    shows its bar of observers from the start.
``topokit probe`` and ``topokit validate``
    The designs they make (``design_memory``: optimize for ``probe`` and the
    optimize spec, exact AutoTag on one thread for the autotag and erg specs).
``topokit generate siot``
    The network and its writer.  JSON (each delay row and social link on one
    line from 200 devices on): 0.28 GB resident at 1,000 devices, 0.54 at
    2,000, 1.01 at 4,000, 2.78 at 8,000 (43 n^2): 50 n^2.  GraphML, whose writer
    holds every delay as a Python float: 0.75 / 1.43 / 4.59 GB at 2,000 / 4,000 /
    8,000 devices (72 n^2): 75 n^2.  The file: 10.9, 10.0, 7.8 and 6.9 bytes per
    n^2 at 1,000 to 8,000 devices (GraphML 7.1 at 8,000): 10 n^2.  One value a
    line, as before: 1.21 GB, 60.1 MB and 5.8 s at 2,000 devices, 3.16 GB,
    197 MB and 18.6 s at 4,000 (now 0.54 GB, 40.1 MB, 4.1 s and 1.01 GB, 125 MB,
    10.4 s).
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, NoReturn

from .._checks import available_memory
from ..errors import InvalidInputError

__all__ = [
    "NetworkFileSize",
    "network_file_size",
    "design_memory",
    "check_design_memory",
    "check_siot_size",
    "siot_devices_help",
    "check_network_file",
    "audit_memory",
    "check_audit_memory",
    "Run",
    "audit_run",
    "design_run",
    "SIOT_BYTES_PER_PAIR",
    "SIOT_GRAPHML_BYTES_PER_PAIR",
    "SIOT_FILE_BYTES_PER_PAIR",
]

#: Peak bytes of ``topokit generate siot`` per n^2 (network and JSON writer).
SIOT_BYTES_PER_PAIR = 50.0
#: The same with a GraphML ``--output`` (its writer holds every delay as a Python float).
SIOT_GRAPHML_BYTES_PER_PAIR = 75.0
#: Bytes of the written network file per n^2 (its delay matrix and social links).
SIOT_FILE_BYTES_PER_PAIR = 10.0

# topokit design, per n^2 and per finite-delay pair (see the module docstring).
_NETWORK = 9.0
_OBJECTIVE = 9.0
_REFERENCE_TEMPORARIES = 25.0
_REFERENCE_PEAK_PER_PAIR = 480.0
_REFERENCE_HELD_PER_PAIR = 150.0
_SEARCH_PER_THREAD = 80.0
# Loading a network file, per n^2.
_LOAD_DELAYS = 100.0
_LOAD_POSITIONS = 26.0

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


def _pairs_at(n_devices: int, n_pairs: int) -> Callable[[int], int]:
    """The finite-delay pairs of a network of m devices as dense as this one (n_pairs of
    n_devices' pairs), for sizing smaller networks."""
    all_pairs = n_devices * (n_devices - 1) / 2
    share = n_pairs / all_pairs if all_pairs else 1.0
    return lambda m: int(share * m * (m - 1) / 2)


def _fewer_devices(fits: int) -> str:
    """The way out of a refusal by size: the largest network that fits."""
    return (f"use a network of at most {fits:,} devices" if fits >= 2
            else "free memory (not even 2 devices fit now)")


def _refuse(what: str, needed: float, available: float, fixes: Sequence[str],
            why: str = "") -> NoReturn:
    """The one line of a refusal: ``what`` needs the estimate, more than is available, and
    the ``fixes`` (``why``: what holds the memory at the peak)."""
    estimate = f"an estimate; at the peak {why}" if why else "an estimate"
    raise InvalidInputError(
        f"{what} needs about {_gib(needed)} of memory ({estimate}), more than the "
        f"{_gib(available)} available; " + ", or ".join(fixes)
    )


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


class Run(NamedTuple):
    """A command's work on a loaded network, sized for :func:`check_network_file`."""

    #: What it is, as the message continues "loading it": " and auditing them over 50 rounds".
    doing: str
    #: Its peak on n devices with ``pairs`` finite-delay pairs (the loaded network included).
    peak: Callable[[int, int], float]
    #: What holds the memory at its peak.
    why: str
    #: The options that alone make it fit on n devices in ``available`` bytes.
    fixes: Callable[[int, float], list[str]] = lambda n, available: []


def check_network_file(path: Path | None, run: Run | None = None, *,
                       example: str | None = None) -> None:
    """Refuse, before it is read, a network file too large for the memory available now:
    loading it, and the command's ``run`` on it.

    The message gives the estimate, what is available, the largest network of
    the same density that fits and the options that make the run fit.  Nothing
    for no path, an ``example`` (the command's --example) or a file that cannot
    be sized (its loader then says what is wrong).
    """
    size = None if path is None or example is not None else network_file_size(path)
    if size is None:
        return
    n = size.n_devices
    per_load, pairs_at = size.loading_bytes / float(n) ** 2, _pairs_at(n, size.min_pairs)

    def need(m: int) -> float:
        return max(per_load * float(m) ** 2, 0.0 if run is None else run.peak(m, pairs_at(m)))

    needed, available = need(n), available_memory()
    if needed <= available:
        return
    fixes = [_fewer_devices(_largest_fitting(lambda m: need(m) <= available, n))]
    loading = needed <= size.loading_bytes
    if run is not None and size.loading_bytes <= available:
        fixes += run.fixes(n, available)
    _refuse(f"{path} holds {n:,} devices: loading it{'' if run is None else run.doing}",
            needed, available, fixes,
            "loading its n x n delays" if loading or run is None else run.why)


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
    pairs_at = _pairs_at(n_devices, n_pairs)
    per_load = loading_bytes / max(1.0, float(n_devices) ** 2)

    def need(n: int, **changed) -> float:
        options = {"method": method, "workers": workers, "trace": trace, "exact": exact,
                   **changed}
        return max(per_load * float(n) ** 2, design_memory(n, pairs_at(n), **options))

    needed, available = need(n_devices), available_memory()
    if needed <= available:
        return
    phases = _design_phases(n_devices, n_pairs, method=method, workers=workers, trace=trace,
                            exact=exact)
    if loading_bytes > max(phases.values()):
        why = "loading the network file's n x n delays"
    else:
        why = max(phases, key=phases.__getitem__)
    fixes = [_fewer_devices(_largest_fitting(lambda n: need(n) <= available, n_devices))]
    # The options that alone make this network fit.
    if method == "autotag" and need(n_devices, method="optimize") <= available:
        fixes.append("use --method optimize")
    if method == "autotag" and exact and need(n_devices, exact=False) <= available:
        fixes.append("add --nep-patience 10 (AutoTag then keeps no snapshot per pair)")
    if method == "autotag" and trace and need(n_devices, trace=False) <= available:
        fixes.append("drop --plot (it keeps AutoTag's trace)")
    if workers > 1 and need(n_devices, workers=1) <= available:
        fixes.append("use fewer --n-jobs (each thread holds its own n x n arrays)")
    _refuse(f"designing for {n_devices:,} devices (--method {method})", needed, available,
            fixes, why)


# ---------------------------------------------------------------------------------------------
# topokit audit (and the stranger audit of analyze)
# ---------------------------------------------------------------------------------------------

def audit_memory(n_devices: int, rounds: int, *, model: str, workers: int = 1,
                 degree: int = 1, noisy: int = 0) -> float:
    """Peak bytes of a privacy audit of ``n_devices`` over ``rounds`` (the loaded network
    included; see the module docstring for the measurements).

    The audit's (n, n) arrays, and for each of ``workers`` threads the largest
    workspace of an observer (:func:`topokit.audit.audit_memory_needed`, the
    bound the audit checks itself) hearing ``degree`` devices, ``noisy`` of the
    network's devices adding noise.  With the defaults (before the topology is
    known) a lower bound: every observer hears at least one device.
    """
    from ..audit import audit_memory_needed

    return _NETWORK * float(n_devices) ** 2 + audit_memory_needed(
        n_devices, rounds, model=model, threads=workers, degree=degree, noisy=noisy)


def _audit_fixes(n_devices: int, rounds: int, available: float, *, model: str, workers: int,
                 degree: int = 1, noisy: int = 0, rounds_option: str = "--rounds") -> list[str]:
    """The options that alone make an audit fit in ``available`` bytes: fewer rounds (the
    most that fit), fewer threads."""
    size = {"model": model, "degree": degree, "noisy": noisy}
    fits = _largest_fitting(
        lambda t: audit_memory(n_devices, t, workers=workers, **size) <= available, rounds)
    fixes = [f"use {rounds_option} {fits} or fewer"] if fits >= 1 else []
    if workers > 1 and audit_memory(n_devices, rounds, **size) <= available:
        fixes.append("use fewer --n-jobs (each thread holds an observer's workspace)")
    return fixes


def check_audit_memory(n_devices: int, rounds: int, *, model: str, workers: int,
                       degree: int, noisy: int, rounds_option: str = "--rounds") -> None:
    """Refuse, before it starts, an audit of the loaded network that cannot fit in the
    memory available now, with the estimate, the largest ``rounds_option`` that fits and
    fewer --n-jobs where that alone fits (else the largest network)."""
    size = {"model": model, "degree": degree, "noisy": noisy}
    needed, available = audit_memory(n_devices, rounds, workers=workers, **size), \
        available_memory()
    if needed <= available:
        return
    fixes = _audit_fixes(n_devices, rounds, available, workers=workers,
                         rounds_option=rounds_option, **size) or [_fewer_devices(
        _largest_fitting(lambda m: audit_memory(m, rounds, workers=workers, **size)
                         <= available, n_devices))]
    _refuse(f"auditing {n_devices:,} devices over {rounds:,} rounds (--model {model})",
            needed, available, fixes,
            f"each of {workers} thread(s) holds an observer's workspace, the busiest observer "
            f"hearing {degree} devices")


def audit_run(rounds: int, *, model: str, workers: int = 1,
              rounds_option: str = "--rounds") -> Run | None:
    """A command's audit over ``rounds`` (None for 0: no audit), for
    :func:`check_network_file`: :func:`audit_memory`'s bound before the topology is
    known."""
    if rounds == 0:
        return None
    return Run(f" and auditing them over {rounds:,} rounds of {model}",
               lambda n, pairs: audit_memory(n, rounds, model=model, workers=workers),
               "each thread holds an observer's workspace",
               lambda n, available: _audit_fixes(n, rounds, available, model=model,
                                                 workers=workers, rounds_option=rounds_option))


def design_run(methods: Sequence[str], *, audit_rounds: int = 0) -> Run | None:
    """A command that designs on the network with each of ``methods`` ("optimize",
    "autotag": exact, one thread) and audits its topologies over ``audit_rounds`` gossip
    rounds (0: none), for :func:`check_network_file`."""
    audit = audit_run(audit_rounds, model="gossip", rounds_option="--audit-rounds")
    if not methods:
        return audit

    def peak(n: int, pairs: int) -> float:
        designs = (design_memory(n, pairs, method=method) for method in methods)
        return max(0.0 if audit is None else audit.peak(n, pairs), *designs)

    return Run(f" and designing on it with {' and '.join(methods)}", peak,
               "the designs' arrays")


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


def siot_devices_help() -> str:
    """``topokit generate siot --devices``'s help: what a count costs, from the estimates."""
    at = 4000.0**2
    fits = math.sqrt(20 * 2**30 / SIOT_BYTES_PER_PAIR) // 1000 * 1000
    return (f"Number of devices.  The file stores the n x n delay matrix (about "
            f"{SIOT_FILE_BYTES_PER_PAIR:g} bytes a pair: {SIOT_FILE_BYTES_PER_PAIR * at / 1e6:.0f} "
            f"MB at 4,000 devices) and writing it takes about {SIOT_BYTES_PER_PAIR:g} bytes of "
            f"memory a pair ({_gib(SIOT_BYTES_PER_PAIR * at)} at 4,000; "
            f"{SIOT_GRAPHML_BYTES_PER_PAIR:g} for GraphML): a count beyond the memory available "
            f"(about {fits:,.0f} devices with 20 GiB) or the disk is refused up front.")


def check_siot_size(n_devices: int, output: Path) -> None:
    """Refuse, before generating, a network whose file cannot be written here.

    A network file stores the n x n delay matrix: writing it takes about
    :data:`SIOT_BYTES_PER_PAIR` bytes of memory per n^2 (GraphML:
    :data:`SIOT_GRAPHML_BYTES_PER_PAIR`) and the file about
    :data:`SIOT_FILE_BYTES_PER_PAIR` per n^2 on disk.
    """
    n2 = float(n_devices) ** 2
    per_pair = (SIOT_GRAPHML_BYTES_PER_PAIR if Path(output).suffix.lower() == ".graphml"
                else SIOT_BYTES_PER_PAIR)
    memory, available = per_pair * n2, available_memory()
    size, free = SIOT_FILE_BYTES_PER_PAIR * n2, _free_disk(output)
    if memory <= available and size <= free:
        return
    limit = min(available / per_pair, free / SIOT_FILE_BYTES_PER_PAIR)
    fits = int(math.sqrt(limit))
    fits = max(1, fits - fits % 100 if fits > 1000 else fits)
    what = (f"{_gib(memory)} of memory to write, more than the {_gib(available)} available"
            if memory > available else
            f"{_gib(size)} of disk, more than the {_gib(free)} free where --output goes")
    raise InvalidInputError(
        f"--devices {n_devices}: the network file stores the {n_devices:,} x {n_devices:,} "
        f"delay matrix (a file of about {_gib(size)}), which needs about {what}; use "
        f"--devices {fits} or fewer"
    )
