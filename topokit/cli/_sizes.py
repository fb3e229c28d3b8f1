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
    A stored n x n delay matrix: about 100 n^2 above the interpreter
    (resident: 117 n^2 at 2,000 devices, 95 at 4,000, 87 at 8,000; SIoT files,
    6-20 % of the pairs social; the JSON's Python floats, the social graph and
    the arrays built from them; 100 n^2 for random delays at 2,000 devices),
    the same for the one-value-a-line and the compact layout of
    :func:`topokit.network.save_network`.  Delays computed from positions (a
    file that stores none): loading keeps the positions and the radio model,
    and the n x n delays are computed, a block of rows at a time, when the
    command first reads them, as ``analyze`` and ``design`` do: the matrix
    and a block's temporaries, 10 n^2, and the social links about 600 bytes
    each in JSON (peak resident above the interpreter after reading the
    delays, SIoT files of 2,000, 5,000 and 10,000 devices with 0.41, 1.39 and
    2.38 million links: 294, 1,010 and 2,159 MiB), 650, and about 1,070 in
    GraphML (1,614 MiB at 5,000 devices, its peak while the XML is parsed),
    1,050.  Sparse delays (a default and the pairs that differ, built into an
    n x n matrix that the network checks in a copy): 26 n^2, 350 bytes a
    link, and 192 bytes per listed pair (SIoT files of 1,000 and 2,000 devices
    with 125,000 and 525,000 listed pairs), 200.  ``analyze``'s metrics stay
    below the loading peak (``--audit-rounds 0``: 0.63 GB resident at 1,500
    devices, 1.15 GB at 3,000).
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
    The network keeps its positions and radio model, not its n x n delays
    (they are computed when first read, and generating reads none), and its
    file stores no delays: the peak is the social graph, the generator's
    link lists and the network's index arrays of the links, about 400 bytes
    a link (resident peak above the command's 189 MiB at 16 devices: 148,
    530, 916 and 1,912 MiB at 2,000, 5,000, 10,000 and 20,000 devices, with
    0.41, 1.39, 2.38 and 4.90 million links: 380-410 bytes a link), 450.
    The file grows with the devices and links: about 150 bytes a device and
    33-35 a link in JSON (a node-link record a line), 43 a link in GraphML
    (whose writer holds an XML element per link: 1,451 MiB at 5,000
    devices, about 700 bytes more a link).  The SIoT generator's links per device grow,
    then level off as its synthetic city grows with the devices at a constant
    density: 85, 126, 203, 278 and 225 at 500, 1,000, 2,000, 5,000 and 16,000
    devices (3.8, 4.0, 4.6, 3.9 and 1.8 n^1.5 links); a smaller
    ``--metres-per-unit`` links more, 1.2 to 1.5 times as many at half the
    default.  Estimate: the smaller of 4.6 n^1.5 and 300 n links, times the
    default scale over the given one, at most every pair.  Files: 4.3 MB at
    1,000 devices, 14.5 MB at 2,000, 49.3 MB at 5,000 (GraphML: 5.3, 17.8 and
    61 MB).  When the network was built from its n x n delays (25 n^2 more at
    the peak) the peaks were 203 and 955 MiB at 2,000 and 5,000 devices, and
    20,000 devices needed about 10 GB.  ``generate`` refuses a network that
    it, or loading its file (``analyze``, ``design``, which read the delays),
    cannot hold.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import re
import shutil
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NamedTuple, NoReturn

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
    "siot_links",
    "siot_memory",
    "siot_file_bytes",
    "SIOT_BYTES_PER_LINK",
    "SIOT_GRAPHML_BYTES_PER_LINK",
    "SIOT_FILE_BYTES_PER_DEVICE",
    "SIOT_FILE_BYTES_PER_LINK",
    "SIOT_GRAPHML_FILE_BYTES_PER_LINK",
    "SIOT_GZIP_RATIO",
    "SIOT_LINKS_PER_N15",
    "SIOT_LINKS_PER_DEVICE",
]

#: Peak bytes of ``topokit generate siot`` per social link: the social graph, the generator's
#: link lists and the network's link arrays (it holds no n x n delays).
SIOT_BYTES_PER_LINK = 450.0
#: More per link with a GraphML ``--output``: its writer's XML element of each link.
SIOT_GRAPHML_BYTES_PER_LINK = 700.0
#: Bytes of a written network file (it stores no delays) per device.
SIOT_FILE_BYTES_PER_DEVICE = 150.0
#: The same per social link, in JSON (a node-link record a line) and in GraphML.
SIOT_FILE_BYTES_PER_LINK = 34.0
SIOT_GRAPHML_FILE_BYTES_PER_LINK = 45.0
#: How many times smaller a generated network's ``.json.gz`` or ``.graphml.gz`` file is
#: than the uncompressed one (JSON: 10.6, 10.7 and 10.3 at 1,000, 2,000 and 5,000 devices).
SIOT_GZIP_RATIO = 10.0
#: Social links of a generated SIoT network at the default scale, estimated: per n^1.5 (3.8-4.6
#: measured up to 5,000 devices) and, at most, per device (at most 278 measured).
SIOT_LINKS_PER_N15 = 4.6
SIOT_LINKS_PER_DEVICE = 300.0

# topokit design, per n^2 and per finite-delay pair (see the module docstring).
_NETWORK = 9.0
_OBJECTIVE = 9.0
_REFERENCE_TEMPORARIES = 25.0
_REFERENCE_PEAK_PER_PAIR = 480.0
_REFERENCE_HELD_PER_PAIR = 150.0
_SEARCH_PER_THREAD = 80.0
# Loading a network file: per n^2 (a stored matrix; a sparse form), per social link (JSON,
# GraphML) and per listed pair of the sparse form; a file of the model's delays: per n^2 (the
# delays once read) and per link in JSON (GraphML: as above).
_LOAD_DELAYS = 100.0
_LOAD_POSITIONS = 26.0
_LOAD_LINK = 350.0
_LOAD_GRAPHML_LINK = 1050.0
_LOAD_LISTED = 200.0
_LOAD_MODEL = 10.0
_LOAD_MODEL_LINK = 650.0
# A network file of fewer devices stores the n x n delays one value a line (bytes per n^2,
# links as node-link records).
_SMALL_FILE_PER_PAIR = 30.0
_SMALL_FILE_PER_LINK = 45.0
_COMPACT_FROM_DEVICES = 200  # topokit.network.formats.COMPACT_FROM_DEVICES, without numpy

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
    says whether the file stores delays (else they are computed from
    positions when it is loaded), ``sparse`` whether as a default and the
    ``listed`` pairs that differ (else the n x n matrix); ``links`` counts the
    social links and ``graphml`` says the format.
    """

    n_devices: int
    min_pairs: int
    delays: bool
    sparse: bool = False
    links: int = 0
    listed: int = 0
    graphml: bool = False

    @property
    def loading_bytes(self) -> float:
        """The peak memory of loading the file."""
        n2 = float(self.n_devices) ** 2
        if self.delays and not self.sparse:  # measured with the links of SIoT files
            return _LOAD_DELAYS * n2
        if not self.delays:  # the model's: the matrix computed when the command reads it
            per_link = _LOAD_GRAPHML_LINK if self.graphml else _LOAD_MODEL_LINK
            return _LOAD_MODEL * n2 + per_link * self.links
        per_link = _LOAD_GRAPHML_LINK if self.graphml else _LOAD_LINK
        return _LOAD_POSITIONS * n2 + per_link * self.links + _LOAD_LISTED * self.listed


_JSON_DEVICE = re.compile(rb'"compute_time"')
_GRAPHML_DEVICE = re.compile(rb"<node[\s/>]")
_NULL = re.compile(rb"null")
_JSON_DELAY = re.compile(rb'"delay"\s*:\s*[\[{]')
_GRAPHML_DELAY = re.compile(rb'attr\.name="delay"')
# The sparse form of the delays, {"default": d, "pairs": [[i, j, d_ij], ...]}: its key, a
# default null (no link: the finite pairs are then the listed ones) and a listed pair (its
# delay a float as JSON writes one, so that three whole numbers, such as a device's class
# counts or links, are not taken for one).
_SPARSE = re.compile(rb'(?:"|&quot;)pairs(?:"|&quot;)\s*:')
_NO_LINK_DEFAULT = re.compile(rb'(?:"|&quot;)default(?:"|&quot;)\s*:\s*null')
_LISTED_PAIR = re.compile(
    rb"\[\s*\d+\s*,\s*\d+\s*,\s*(?:null|-?\d+(?:\.\d*(?:[eE][-+]?\d+)?|[eE][-+]?\d+))\s*\]")
# Social links: a node-link record, a GraphML <edge>.
_JSON_LINK = re.compile(rb'"target"\s*:')
_GRAPHML_LINK = re.compile(rb"<edge[\s/>]")
# A range beyond which pairs cannot connect: the count of finite pairs is then unknown.
_MAX_RANGE = re.compile(rb'max_range_m(?:"|&quot;)\s*:\s*[-+.0-9]')


def _cut(data: bytes) -> int:
    """Where to cut a chunk so that no token spans the cut: after its last line, else
    after its last separator; 0: nowhere."""
    return (data.rfind(b"\n") + 1) or max(data.rfind(b","), data.rfind(b">")) + 1


def _json_links(data: bytes) -> int:
    """The social links of node-link text: its edge records."""
    return len(_JSON_LINK.findall(data))


def _suffixes(path: Path) -> tuple[bool, bool]:
    """Whether ``path`` names a GraphML file, and whether a gzip-compressed one (.gz), as
    :func:`topokit.network.load_network` reads it (without importing it: no numpy)."""
    name = path.name.lower()
    compressed = name.endswith(".gz")
    return name.removesuffix(".gz").endswith(".graphml"), compressed


@contextlib.contextmanager
def _content(path: Path) -> Iterator[IO[bytes]]:
    """The file's bytes, decompressed as they are read when its name ends in .gz."""
    with (gzip.open(path, "rb") if _suffixes(path)[1] else open(path, "rb")) as handle:
        yield handle


def network_file_size(path: Path) -> NetworkFileSize | None:
    """How many devices (and finite-delay pairs, at least, and links) the network file
    ``path`` holds.

    One pass over the file in chunks, counting tokens (a JSON node's
    ``"compute_time"`` key, a GraphML ``<node>`` element, the ``null`` entries
    of the delays, the social links, the listed pairs of sparse delays), so
    that a file too large for the memory is refused before it is parsed (a
    ``.gz`` file decompressed as it is read).  None when ``path`` is not a
    readable file (or gzip stream) or holds no device (its loader then says
    what is wrong).
    """
    path = Path(path)
    graphml = _suffixes(path)[0]
    device = _GRAPHML_DEVICE if graphml else _JSON_DEVICE
    delay = _GRAPHML_DELAY if graphml else _JSON_DELAY
    devices = nulls = links = listed = 0
    has_delay = has_range = sparse = no_link_default = False
    try:
        with _content(path) as handle:
            carry = b""
            while True:
                chunk = handle.read(_CHUNK)
                data = carry + chunk
                if chunk:  # cut after the last line or separator: no token spans it
                    cut = _cut(data)
                    data, carry = (data[:cut], data[cut:]) if cut else (b"", data)
                devices += len(device.findall(data))
                nulls += len(_NULL.findall(data))
                links += len(_GRAPHML_LINK.findall(data)) if graphml else _json_links(data)
                listed += len(_LISTED_PAIR.findall(data))
                has_delay = has_delay or delay.search(data) is not None
                has_range = has_range or _MAX_RANGE.search(data) is not None
                sparse = sparse or _SPARSE.search(data) is not None
                no_link_default = no_link_default or _NO_LINK_DEFAULT.search(data) is not None
                if not chunk:
                    break
    except (OSError, EOFError, zlib.error):  # gzip's damaged streams among them
        return None
    if devices == 0:
        return None
    all_pairs = devices * (devices - 1) // 2
    sparse = has_delay and sparse
    if sparse:  # each null may be an unreachable listed pair (listed once)
        min_pairs = 0 if no_link_default else max(0, all_pairs - nulls)
    elif has_delay:  # every null may be an unreachable pair (each is listed twice)
        min_pairs = max(0, devices * (devices - 1) - nulls) // 2
    else:  # delays from positions: every pair is reachable unless a range is set
        min_pairs = 0 if has_range else all_pairs
    return NetworkFileSize(devices, min_pairs, has_delay, sparse=sparse, links=links,
                           listed=listed if sparse else 0, graphml=graphml)


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


def siot_links(n_devices: int, *, closer: float = 1.0) -> float:
    """The social links of a generated SIoT network of ``n_devices``, estimated: the
    smaller of :data:`SIOT_LINKS_PER_N15` n^1.5 and :data:`SIOT_LINKS_PER_DEVICE` n,
    times ``closer`` (the default ``--metres-per-unit`` over the given one) when
    above 1, at most every pair.

    >>> f"{siot_links(2000):,.0f}", f"{siot_links(5000):,.0f}", f"{siot_links(10):,.0f}"
    ('411,437', '1,500,000', '45')
    """
    n = float(n_devices)
    typical = min(SIOT_LINKS_PER_N15 * n**1.5, SIOT_LINKS_PER_DEVICE * n)
    return min(n * (n - 1) / 2, typical * max(1.0, closer))


def siot_memory(n_devices: int, *, graphml: bool = False, closer: float = 1.0) -> float:
    """Peak bytes of ``topokit generate siot`` on ``n_devices`` (see the module docstring)."""
    per_link = SIOT_BYTES_PER_LINK + (SIOT_GRAPHML_BYTES_PER_LINK if graphml else 0.0)
    return per_link * siot_links(n_devices, closer=closer)


def siot_file_bytes(n_devices: int, *, graphml: bool = False, closer: float = 1.0,
                    compressed: bool = False) -> float:
    """Bytes of the file ``topokit generate siot`` writes: its devices and links (and,
    below 200 devices, the n x n delays one value a line); ``compressed``: as .gz."""
    links = siot_links(n_devices, closer=closer)
    if n_devices < _COMPACT_FROM_DEVICES:
        size = _SMALL_FILE_PER_PAIR * float(n_devices) ** 2 + _SMALL_FILE_PER_LINK * links
    else:
        per_link = SIOT_GRAPHML_FILE_BYTES_PER_LINK if graphml else SIOT_FILE_BYTES_PER_LINK
        size = SIOT_FILE_BYTES_PER_DEVICE * n_devices + per_link * links
    return size / SIOT_GZIP_RATIO if compressed else size


def _siot_loading(n_devices: int, *, graphml: bool, closer: float) -> float:
    """Peak bytes of loading the file of a generated network (``analyze``, ``design``)."""
    return NetworkFileSize(n_devices, 0, False, links=int(siot_links(n_devices, closer=closer)),
                           graphml=graphml).loading_bytes


def siot_devices_help() -> str:
    """``topokit generate siot --devices``'s help: what a count costs, from the estimates."""
    def need(n: int) -> float:
        return max(siot_memory(n), _siot_loading(n, graphml=False, closer=1.0))

    fits = _largest_fitting(lambda n: need(n) <= 20 * 2**30, 10**6) // 1000 * 1000
    return (f"Number of devices.  The file stores the devices, their positions and social "
            f"links, not the delays (the radio model gives them): about "
            f"{siot_file_bytes(5000) / 1e6:.0f} MB at 5,000 devices (.json; "
            f"{siot_file_bytes(5000, compressed=True) / 1e6:.0f} MB as .json.gz).  Generating "
            f"it holds the social graph (about {SIOT_BYTES_PER_LINK:g} bytes of memory a "
            f"link); loading it later, to design or analyze, also the n x n delays "
            f"({_LOAD_MODEL:g} bytes a pair): {_gib(need(5000))} at 5,000 devices.  A count "
            f"beyond the memory available "
            f"(about {fits:,} devices with 20 GiB) or the disk is refused up front.")


def check_siot_size(n_devices: int, output: Path, *, closer: float = 1.0) -> None:
    """Refuse, before generating, a network that cannot be generated and written here, or
    whose file could not be loaded here (by ``analyze``, ``design``).

    Generating holds :func:`siot_memory`; loading the file its
    :class:`NetworkFileSize` estimate; the file takes :func:`siot_file_bytes`
    of disk.  ``closer``: the default ``--metres-per-unit`` over the given one
    (closer devices, more links).  The one line gives the estimate, what is
    available and the largest ``--devices`` that fits.
    """
    graphml, compressed = _suffixes(Path(output))

    def memory(n: int) -> tuple[float, float]:
        return (siot_memory(n, graphml=graphml, closer=closer),
                _siot_loading(n, graphml=graphml, closer=closer))

    def disk(n: int) -> float:
        return siot_file_bytes(n, graphml=graphml, closer=closer, compressed=compressed)

    available, free = available_memory(), _free_disk(output)
    generating, loading = memory(n_devices)
    if max(generating, loading) <= available and disk(n_devices) <= free:
        return
    fits = _largest_fitting(lambda n: max(memory(n)) <= available and disk(n) <= free,
                            n_devices)
    fits = max(1, fits - fits % 100 if fits > 1000 else fits)
    links = f"about {siot_links(n_devices, closer=closer):,.0f} social links"
    if max(generating, loading) > available:
        doing, holds = (("generating it", links) if generating >= loading else
                        ("loading its file (analyze, design)",
                         f"its {n_devices:,} x {n_devices:,} delays and {links}"))
        what = (f"{doing} needs about {_gib(max(generating, loading))} of memory (an estimate: "
                f"{holds}), more than the {_gib(available)} available")
    else:
        what = (f"its file (the devices and {links}) needs about {_gib(disk(n_devices))} of "
                f"disk, more than the {_gib(free)} free where --output goes")
    raise InvalidInputError(f"--devices {n_devices}: {what}; use --devices {fits} or fewer")
