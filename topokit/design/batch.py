"""Batch analysis: metrics of many networks or random topologies -> one Parquet table.

Work is cut into chunks whose results are written as Parquet part files next to
the output (``OUTPUT.parts/``), each atomically.  An interrupted run resumes
by skipping finished chunks; the final table replaces the output atomically
and the part files are removed.  Chunks run in parallel with joblib, locally
(``n_jobs``), or as tasks on a Dask cluster (``scheduler``).  The parts, the
resumption and the workers are :func:`topokit._jobs.run_resumable`'s job, shared
with :func:`topokit.validate`: the parts are written by this process, beside the
output, wherever the chunks run.  The chunks of a directory name its files by
absolute path, so that a Dask worker in another working directory reads the
same files.

Every item of a random ensemble draws from its own generator,
``topokit._random.keyed_rng(seed, index)``, so results do not depend on chunk
size, worker count or resumption.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._checks import check_fits_in_memory, check_int, check_output_path
from .._jobs import check_scheduler, run_resumable
from .._random import keyed_rng, sample_connected_edges
from ..errors import InputFileNotFoundError, InvalidInputError, TopokitError
from ..kernels import hitting_time_and_gap
from ..network.core import NETWORK_SUFFIXES, network_suffix

__all__ = ["RandomEnsemble", "batch_analyze", "random_connected_adjacency", "parse_ensemble"]

Progress = Callable[[int, int], None]
#: Draws :func:`random_connected_adjacency` makes before it gives up.
MAX_DRAWS = 10_000


@dataclass(frozen=True)
class RandomEnsemble:
    """``count`` random connected graphs with ``n`` nodes and ``m`` links (G(n, m), rejection).

    The ensemble of the paper's Fig. 3 is ``RandomEnsemble(n=16, m=32, count=10_000)``.

    Raises
    ------
    InvalidInputError
        Counts that are not integers in range; a table or graphs too large for
        this machine's memory; or so few links that hardly any such graph is
        connected (the sampler would draw in vain: see
        :func:`_connected_fraction_bound`).
    """

    n: int
    m: int
    count: int
    seed: int = 0

    def __post_init__(self) -> None:
        # Stored as plain ints: the fields go into the JSON manifest of the parts folder.
        for name, low in (("n", 2), ("m", None), ("count", 1), ("seed", 0)):
            object.__setattr__(self, name, check_int(getattr(self, name), name, low=low))
        if not self.n - 1 <= self.m <= self.n * (self.n - 1) // 2:
            raise InvalidInputError(
                f"a connected simple graph on n={self.n} nodes has between {self.n - 1} and "
                f"{self.n * (self.n - 1) // 2} links; got m={self.m}"
            )
        n_pairs = self.n * (self.n - 1) // 2
        # The candidate pairs (and their index arrays), then one dense adjacency per graph.
        check_fits_in_memory(48 * n_pairs + 8 * self.n**2, f"graphs of n={self.n} nodes",
                             "use fewer nodes")
        # One row of 8 numbers per graph, and a copy when the chunks are joined.
        check_fits_in_memory(128 * self.count, f"a table of count={self.count} graphs",
                             "use a smaller count, or several runs with different seeds")
        _check_likely_connected(self.n, self.m)


#: Refuse a G(n, m) whose chance of a connected draw within MAX_DRAWS draws is below this.
_HOPELESS = 1e-3


def _connected_fraction_bound(n: int, m: int) -> float:
    """An upper bound on the fraction of graphs with n nodes and m links that are connected.

    A connected graph contains a spanning tree (n^(n-2) of them, Cayley) plus
    m - n + 1 of the remaining N - n + 1 pairs, N = n(n-1)/2, so at most
    n^(n-2) C(N-n+1, m-n+1) of the C(N, m) graphs are connected.  Tight for
    m = n - 1 (trees), loose (above 1) once m is a few links more.
    """
    def log_binomial(a: int, b: int) -> float:
        return math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)

    pairs = n * (n - 1) // 2
    log_bound = ((n - 2) * math.log(n) + log_binomial(pairs - n + 1, m - n + 1)
                 - log_binomial(pairs, m))
    return math.exp(min(log_bound, 0.0))


def _check_likely_connected(n: int, m: int) -> None:
    """Refuse (n, m) for which the rejection sampler would almost surely find no connected graph."""
    bound = _connected_fraction_bound(n, m)
    if bound * MAX_DRAWS < _HOPELESS:
        raise InvalidInputError(
            f"n={n} nodes and m={m} links: at most {bound:.2g} of such random graphs are "
            f"connected, so {MAX_DRAWS} random draws would almost surely find none; use more "
            f"links (e.g. m >= {2 * n})"
        )


def parse_ensemble(spec: str) -> RandomEnsemble:
    """Parse ``"n=16,m=32,count=10000,seed=0"`` into a :class:`RandomEnsemble`."""
    fields = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        match = re.fullmatch(r"(n|m|count|seed)=(\d+)", part)
        if not match:
            raise InvalidInputError(
                f"cannot read {part!r} in the ensemble spec {spec!r}; "
                "expected e.g. n=16,m=32,count=10000,seed=0"
            )
        if match[1] in fields:
            raise InvalidInputError(
                f"{match[1]} is given twice in the ensemble spec {spec!r}; give it once"
            )
        fields[match[1]] = int(match[2])
    missing = [key for key in ("n", "m", "count") if key not in fields]
    if missing:
        raise InvalidInputError(f"the ensemble spec {spec!r} lacks {', '.join(missing)}")
    return RandomEnsemble(**fields)


def random_connected_adjacency(n: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Adjacency of a uniform random connected graph with n nodes and m links.

    Raises
    ------
    InvalidInputError
        If no connected graph turns up in :data:`MAX_DRAWS` draws (m close to
        n - 1 among many node pairs).
    """
    pairs = np.column_stack(np.triu_indices(n, 1))
    chosen = sample_connected_edges(n, pairs, m, rng, max_draws=MAX_DRAWS)
    if chosen is None:
        raise InvalidInputError(
            f"no connected graph with n={n} nodes and m={m} links in {MAX_DRAWS} random draws: "
            f"such sparse graphs are rarely connected; use more links (e.g. m >= {2 * n})"
        )
    adjacency = np.zeros((n, n))
    adjacency[pairs[chosen, 0], pairs[chosen, 1]] = 1.0
    return adjacency + adjacency.T


def _ensemble_chunk(ensemble: RandomEnsemble, start: int, stop: int) -> pd.DataFrame:
    indices = np.arange(start, stop)
    adjacency = np.stack([
        random_connected_adjacency(ensemble.n, ensemble.m, keyed_rng(ensemble.seed, i))
        for i in indices
    ])
    hitting, gap = hitting_time_and_gap(adjacency)
    degrees = adjacency.sum(axis=2)
    mean_degree = 2.0 * ensemble.m / ensemble.n
    return pd.DataFrame(
        {
            "index": indices,
            "n_devices": ensemble.n,
            "n_links": ensemble.m,
            "degree_deviation": np.abs(degrees - mean_degree).mean(axis=1),
            "hitting_time": hitting,
            "spectral_gap": gap,
        }
    )


def _file_rows(paths: Sequence[str]) -> pd.DataFrame:
    from ..network.formats import load_network
    from .metrics import evaluate

    rows = []
    for path in paths:
        row: dict[str, Any] = {"file": Path(path).name}
        try:
            net = load_network(path)
            row.update(evaluate(net, net.topology).to_dict())
            row["topology"] = "stored" if net.topology is not None else "social"
            row["error"] = None
        except TopokitError as exc:
            # One bad file must not sink a long batch: record why and go on.
            row["error"] = str(exc)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            # A mistake the file checks do not name yet: still this file's row, not the batch's.
            row["error"] = f"{path}: cannot read this network ({type(exc).__name__}: {exc})"
        rows.append(row)
    return pd.DataFrame(rows)


class _Span(NamedTuple):
    """Items ``start`` up to (not including) ``stop``: one chunk, the unit of resumption."""

    start: int
    stop: int


class _Plan(NamedTuple):
    """A batch cut into chunks: the job description, the chunks and the worker of one chunk."""

    description: dict[str, Any]
    spans: list[_Span]
    worker: Callable[[_Span], tuple[pd.DataFrame]]


def _chunks(total: int, chunk_size: int) -> list[_Span]:
    return [_Span(start, min(start + chunk_size, total)) for start in range(0, total, chunk_size)]


def _ensemble_part(ensemble: RandomEnsemble, span: _Span) -> tuple[pd.DataFrame]:
    return (_ensemble_chunk(ensemble, span.start, span.stop),)


def _files_part(files: list[str], span: _Span) -> tuple[pd.DataFrame]:
    return (_file_rows(files[span.start:span.stop]),)


def _network_files(source: str | Path) -> list[str]:
    """The network files of the folder ``source``, sorted, as absolute paths.

    Absolute, because a Dask worker reads them in its own working directory.
    """
    folder = Path(source)
    if not folder.exists():
        raise InputFileNotFoundError(f"no such directory: {folder}")
    if not folder.is_dir():
        raise InvalidInputError(f"{folder} is not a directory of network files")
    files = sorted(str(p) for p in folder.absolute().iterdir()
                   if network_suffix(p) is not None)
    if not files:
        raise InvalidInputError(f"{folder} holds no network files "
                                f"({', '.join(NETWORK_SUFFIXES)})")
    return files


def _digest(path: str) -> str:
    """SHA-256 of a file's bytes ("unreadable" if it cannot be read: its row will say why)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _plan(source: str | Path | RandomEnsemble, chunk_size: int) -> _Plan:
    """Cut ``source`` into chunks; the description names the job in the parts manifest."""
    if isinstance(source, RandomEnsemble):
        check_fits_in_memory(
            8 * min(chunk_size, source.count) * source.n**2,
            f"chunks of chunk_size={chunk_size} graphs of n={source.n} nodes",
            "use a smaller chunk_size",
        )
        description = {"kind": "random", **asdict(source), "chunk_size": chunk_size}
        return _Plan(description, _chunks(source.count, chunk_size),
                     functools.partial(_ensemble_part, source))
    if not isinstance(source, (str, Path)):
        raise InvalidInputError(
            f"source must be a directory of network files or a RandomEnsemble; got "
            f"{type(source).__name__}"
        )
    files = _network_files(source)
    # The contents, not only the names: a file edited since an interrupted run is a new job.
    description = {"kind": "files", "files": files, "digests": [_digest(f) for f in files],
                   "chunk_size": chunk_size}
    return _Plan(description, _chunks(len(files), chunk_size),
                 functools.partial(_files_part, files))


def batch_analyze(
    source: str | Path | RandomEnsemble,
    output: str | Path,
    *,
    n_jobs: int = 1,
    scheduler: str | None = None,
    chunk_size: int = 500,
    resume: bool = True,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Compute metrics for many graphs and write them to a Parquet table.

    Parameters
    ----------
    source : path to a directory, or RandomEnsemble
        A directory of network files (``.json``/``.graphml``; one row per file
        with the metrics of its stored topology, or of its social graph), or a
        random ensemble (one row per graph: degree deviation, H, gap).
    output : path
        The Parquet file to write.
    n_jobs : int
        joblib workers (-1: all cores).
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``); the chunks then run
        as tasks on that cluster's workers, however few (``n_jobs`` unused).
        They read a directory's files by absolute path: the workers must see
        them there (the same machine, or a shared filesystem).
    chunk_size : int
        Items per chunk (the unit of resumption).
    resume : bool
        Reuse finished chunks of an interrupted run of the same job.
    progress : callable, optional
        Called as ``progress(done_chunks, total_chunks)``.

    Returns
    -------
    pandas.DataFrame
        The table written to ``output``.  A file that cannot be read or
        analysed gets a row whose ``error`` column says why; the batch goes on
        (even when every row fails: the ``topokit batch`` command then exits 2).

    Raises
    ------
    InvalidInputError
        A bad ``chunk_size``, ``n_jobs`` or ``scheduler``, an ``output`` that cannot be
        written (a file where a folder belongs), chunks too large for memory,
        or a parts folder of another job (a directory batch is identified by
        its files' contents: an edited file makes a new job).
    InputFileNotFoundError
        ``source`` does not exist.

    Notes
    -----
    The chunks run through :func:`topokit._jobs.run_resumable`; finished
    chunks wait in ``OUTPUT.parts/part-NNNNNN.parquet`` (beside ``output``, in
    this process's filesystem, with or without ``scheduler``), removed once
    the table is written.
    """
    chunk_size = check_int(chunk_size, "chunk_size", low=1)
    check_output_path(output, "output")
    scheduler = check_scheduler(scheduler)
    plan = _plan(source, chunk_size)
    job = run_resumable(plan.spans, plan.worker, tables=("part",), outputs=(output,),
                        description=plan.description, n_jobs=n_jobs, scheduler=scheduler,
                        progress=progress, resume=resume)
    return job.tables["part"]
