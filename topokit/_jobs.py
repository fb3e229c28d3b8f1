"""The resumable-job runner: pieces of work -> Parquet part files -> tables, atomically.

A job is a list of tasks and a worker that turns one task into one DataFrame
per table (``batch`` has one table, ``validate`` two: runs and curves).
:func:`run_resumable` runs the tasks in this process, with joblib workers or on
a Dask cluster, and concatenates each table in task order.

The part files and the tables are written here, in the client, beside the
outputs the user named: the workers only turn tasks into frames.  A Dask worker
runs in its own working directory, perhaps on another machine, where a relative
path means something else (so a task that reads files names them absolutely).

Given output paths, a long job survives interruption:

- every finished piece is written under ``OUTPUT.parts/`` (``OUTPUT`` the first
  table's path) as ``{table}-{k:06d}.parquet``, each file atomically and the
  first table's file last, so that it marks piece ``k`` as done;
- ``OUTPUT.parts/manifest.json`` holds the job description: a later call with
  the same description skips the finished pieces, one with another description
  is refused (:func:`topokit._io.claim_parts_dir`);
- the tables are written (atomically, the first one last) only when every
  piece is done, and only then is the parts folder removed.

A run that fails before finishing any piece leaves no parts folder behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from ._checks import check_int
from ._io import atomic_path, atomic_paths, claim_parts_dir
from .errors import InvalidInputError

if TYPE_CHECKING:  # pandas loads when a job runs: worker_count is on import topokit's path
    import pandas as pd

__all__ = ["JobResult", "run_resumable", "parts_dir_of", "part_path", "check_n_jobs",
           "worker_count", "check_scheduler"]

Task = TypeVar("Task")
Progress = Callable[[int, int], Any]
#: One DataFrame per table, in the order of ``tables``.
Frames = tuple["pd.DataFrame", ...]


@dataclass(frozen=True, eq=False)
class JobResult:
    """What :func:`run_resumable` returns.

    Attributes
    ----------
    tables : dict
        Table name -> the concatenation of every piece's frame, in task order.
    n_run : int
        Pieces computed by this call.
    n_resumed : int
        Pieces read back from an interrupted run of the same job.
    """

    tables: dict[str, pd.DataFrame]
    n_run: int
    n_resumed: int


def check_n_jobs(n_jobs: Any) -> int:
    """Return ``n_jobs`` as an int; raise unless it is a non-zero integer (-1: all cores)."""
    value = check_int(n_jobs, "n_jobs")
    if value == 0:
        raise InvalidInputError(
            f"n_jobs must be a non-zero integer (-1 = all cores); got {n_jobs!r}"
        )
    return value


def worker_count(n_jobs: Any) -> int:
    """:func:`check_n_jobs`, with joblib's negative counts resolved: -1 all cores, -2 all
    but one, ... (at least 1), for code that starts its own threads."""
    value = check_n_jobs(n_jobs)
    cores = os.cpu_count() or 1
    return max(1, cores + 1 + value) if value < 0 else value


def parts_dir_of(output: str | os.PathLike) -> Path:
    """The folder of the finished pieces of the job writing ``output``: ``OUTPUT.parts``."""
    output = Path(output)
    return output.with_name(output.name + ".parts")


def part_path(parts_dir: Path, table: str, k: int) -> Path:
    """The part file of piece ``k`` of ``table``: ``{table}-{k:06d}.parquet``."""
    return parts_dir / f"{table}-{k:06d}.parquet"


class _Parts(NamedTuple):
    """The parts folder of a job and, for each piece, its part files (one per table)."""

    folder: Path
    paths: list[tuple[Path, ...]]


def _claim_parts(outputs: Sequence[Path], tables: Sequence[str], n_tasks: int,
                 description: Mapping | None, resume: bool) -> _Parts:
    """Create (or, without ``resume``, empty) the parts folder and claim it for the job."""
    if len(outputs) != len(tables) or description is None:
        raise ValueError("outputs needs one path per table and a job description")
    folder = parts_dir_of(outputs[0])
    if folder.exists() and not folder.is_dir():
        raise InvalidInputError(
            f"{folder} is a file, where this run keeps its resumable pieces (beside "
            f"{outputs[0]}); move or delete it, or choose another output path")
    if folder.exists() and not resume:
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    claim_parts_dir(folder, dict(description))
    paths = [tuple(part_path(folder, table, k) for table in tables) for k in range(n_tasks)]
    return _Parts(folder, paths)


def _read_piece(paths: tuple[Path, ...]) -> Frames | None:
    """A finished piece's frames, or None if a part is missing or unreadable.

    Parts are written atomically, so an unreadable one was damaged after the
    fact (a full disk, a copy cut short): it is deleted and its piece runs again.
    """
    import pandas as pd

    if not all(path.exists() for path in paths):
        return None
    try:
        return tuple(pd.read_parquet(path) for path in paths)
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        for path in paths:
            path.unlink(missing_ok=True)
        return None


def _read_finished(piece_paths: Sequence[tuple[Path, ...]]) -> dict[int, Frames]:
    """The frames of the pieces whose part files are all present and readable."""
    pieces = {k: _read_piece(paths) for k, paths in enumerate(piece_paths)}
    return {k: frames for k, frames in pieces.items() if frames is not None}


def _run_piece(worker: Callable[[Task], Sequence[pd.DataFrame]], task: Task) -> Frames:
    """Run one task (in a worker): its frames, one per table."""
    import pandas as pd

    result = worker(task)
    if isinstance(result, pd.DataFrame):  # a tuple of it would be its column names
        raise TypeError("the worker must return a sequence of DataFrames, one per table")
    return tuple(result)


def _indexed_piece(k: int, worker, task) -> tuple[int, Frames]:
    return k, _run_piece(worker, task)


def _write_piece(frames: Frames, paths: tuple[Path, ...]) -> None:
    """Write a finished piece's part files (in the client, as soon as the piece is back)."""
    if len(frames) != len(paths):
        raise ValueError(f"the worker returned {len(frames)} table(s); expected {len(paths)}")
    # The first table's file marks the piece as done, so it is written last.
    for frame, path in reversed(list(zip(frames, paths, strict=True))):
        with atomic_path(path) as tmp:
            frame.to_parquet(tmp, index=False)


def check_scheduler(scheduler: Any) -> str | None:
    """A Dask scheduler address (``tcp://host:8786`` or ``host:8786``), or None."""
    if scheduler is None:
        return None
    if not isinstance(scheduler, str) or not scheduler.strip() or any(
            c.isspace() for c in scheduler.strip()):
        raise InvalidInputError(
            f"scheduler must be a Dask scheduler address such as tcp://host:8786; got "
            f"{scheduler!r}"
        )
    return scheduler.strip()


#: Seconds to wait for a scheduler's TCP connection and for its first bytes.
SCHEDULER_TIMEOUT = 5.0


def _probe_scheduler(scheduler: str, timeout: float = SCHEDULER_TIMEOUT) -> None:
    """Refuse, within ``timeout`` seconds each, an address where nothing listens or where
    what listens is not a Dask scheduler.

    A Dask scheduler writes its handshake as soon as a connection opens; an HTTP server
    (or any other) waits for a request, and ``Client`` then waits for good.  TLS and other
    transports are left to ``Client``.
    """
    import socket
    from urllib.parse import urlsplit

    address = scheduler if "://" in scheduler else f"tcp://{scheduler}"
    parts = urlsplit(address)
    if parts.scheme != "tcp":
        return
    try:
        host, port = parts.hostname, parts.port or 8786
    except ValueError:  # a port that is not a number
        raise InvalidInputError(f"scheduler {scheduler!r} has no valid port; give an address "
                                "such as tcp://host:8786") from None
    try:
        connection = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:  # refused, unknown host, or no answer (a TimeoutError)
        reason = exc.strerror or f"no answer within {timeout:g} s"
        raise InvalidInputError(f"cannot reach the Dask scheduler at {scheduler} ({reason}); "
                                "start one (dask scheduler) or run without a scheduler"
                                ) from None
    with connection:
        try:
            greeted = bool(connection.recv(1))
        except OSError:  # the timeout set above, or a reset
            greeted = False
    if not greeted:
        raise InvalidInputError(f"{scheduler} answers but is not a Dask scheduler (no "
                                f"handshake within {timeout:g} s); give the address "
                                "dask scheduler prints")


def dask_client(scheduler: str):
    """A client of the scheduler; a scheduler that cannot be reached is the user's to fix."""
    from dask.distributed import Client

    _probe_scheduler(scheduler)
    try:
        return Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise InvalidInputError(
            f"cannot reach the Dask scheduler at {scheduler} ({type(exc).__name__}: {exc}); "
            "start one (dask scheduler) or run without a scheduler"
        ) from None


#: Seconds a scheduler may take to have a worker before a run on it is refused.
WORKER_TIMEOUT = 10.0


def _wait_for_workers(client, scheduler: str) -> None:
    """Refuse a cluster without workers (its tasks would wait for good), in one line."""
    try:
        client.wait_for_workers(1, timeout=WORKER_TIMEOUT)
    except TimeoutError:
        raise InvalidInputError(
            f"the Dask scheduler at {scheduler} has no workers (none within "
            f"{WORKER_TIMEOUT:g} s); start one (dask worker {scheduler}) or run without a "
            "scheduler") from None


def _result_of(future, scheduler: str) -> tuple[int, Frames]:
    """A finished task's result; a worker that cannot import the task's code is the user's
    to fix (topokit, or what a trainer needs, is missing where the workers run)."""
    try:
        return future.result()
    except ImportError as exc:
        reason = " ".join(str(exc).split())
        raise InvalidInputError(
            f"the Dask workers of {scheduler} cannot import what the tasks need ({reason}); "
            "install it in the workers' Python environment") from None


def _on_cluster(calls: Iterator[tuple], scheduler: str) -> Iterator[tuple]:
    """Yield ``(k, frames)`` for every call, each computed by a worker of the cluster.

    Every call is a task of its own (``Client.submit``), whatever the cluster's
    size: joblib's Dask backend would run them all in this process when the
    cluster has one thread in all, and say nothing.
    """
    import uuid

    from distributed import as_completed

    calls = list(calls)
    if not calls:  # every piece resumed: nothing for the cluster to do
        return
    job = uuid.uuid4().hex[:8]  # keys of their own: a second run is never taken for the first
    with dask_client(scheduler) as client:
        _wait_for_workers(client, scheduler)
        running = as_completed()
        for call in calls:
            running.add(client.submit(_indexed_piece, *call,
                                      key=f"topokit-piece-{job}-{call[0]}"))
        # Closing the client (an error, Ctrl-C) cancels the tasks not yet done.
        for future in running:
            yield _result_of(future, scheduler)


def _execute(calls: Iterator[tuple], n_jobs: int, scheduler: str | None) -> Iterator[tuple]:
    """Yield ``(k, frames)`` for every call, in the order they finish."""
    import joblib

    if scheduler:
        yield from _on_cluster(calls, scheduler)
    elif n_jobs == 1:  # in this process: no pickling, and monkeypatching works in tests
        yield from (_indexed_piece(*call) for call in calls)
    else:
        jobs = (joblib.delayed(_indexed_piece)(*call) for call in calls)
        yield from joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs)


def _write_tables(frames: Sequence[pd.DataFrame], outputs: Sequence[Path]) -> None:
    """Write every table, then replace the outputs together (a failure keeps the old ones)."""
    with atomic_paths(*outputs) as temps:
        for frame, tmp in zip(frames, temps, strict=True):
            frame.to_parquet(tmp, index=False)


def run_resumable(
    tasks: Sequence[Task],
    worker: Callable[[Task], Sequence[pd.DataFrame]],
    *,
    tables: Sequence[str] = ("part",),
    outputs: Sequence[str | os.PathLike] | None = None,
    description: Mapping[str, Any] | None = None,
    n_jobs: int = 1,
    scheduler: str | None = None,
    progress: Progress | None = None,
    resume: bool = True,
) -> JobResult:
    """Run ``worker`` on every task and concatenate the results into tables, resumably.

    Parameters
    ----------
    tasks : sequence
        One item per piece of work (the unit of resumption).  Must pickle when
        ``n_jobs != 1`` or with ``scheduler``.
    worker : callable
        ``worker(task)`` returns one DataFrame per table, in the order of
        ``tables``.  A module-level function (or a partial of one), so that it
        pickles.
    tables : sequence of str, default ("part",)
        Table names; they name the part files (``{table}-{k:06d}.parquet``)
        and the keys of :attr:`JobResult.tables`.  The first is the job's main
        table.
    outputs : sequence of path, optional
        Where to write each table (one path per table).  None keeps everything
        in memory: no part files, no resumption.
    description : mapping, optional
        The job description stored in the parts folder's manifest (JSON-able);
        required with ``outputs``.  Everything that decides the results
        belongs in it.
    n_jobs : int, default 1
        joblib workers (-1: all cores); 1 runs in this process.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``): every piece runs as
        a task on that cluster's workers, however few (``n_jobs`` is then
        unused); the part files and tables are written here all the same.
    progress : callable, optional
        ``progress(done, total)`` once at the start and after every piece.
    resume : bool, default True
        False discards the pieces of an interrupted run first.

    Returns
    -------
    JobResult

    Raises
    ------
    InvalidInputError
        A bad ``n_jobs``, or a parts folder that holds another job's pieces; a
        scheduler that cannot be reached, has no worker within
        :data:`WORKER_TIMEOUT` seconds, or whose workers cannot import the
        tasks' code.
    """
    tables = tuple(tables)
    n_jobs = check_n_jobs(n_jobs)
    parts = None
    if outputs is not None:
        outputs = [Path(path) for path in outputs]
        parts = _claim_parts(outputs, tables, len(tasks), description, resume)

    results = _read_finished(parts.paths) if parts is not None else {}
    n_resumed, total = len(results), len(tasks)
    if progress:
        progress(n_resumed, total)
    calls = ((k, worker, tasks[k]) for k in range(total) if k not in results)
    try:
        with contextlib.closing(_execute(calls, n_jobs, scheduler)) as finished:
            for k, frames in finished:
                if parts is not None:
                    _write_piece(frames, parts.paths[k])
                results[k] = frames
                if progress:
                    progress(len(results), total)
    except BaseException:
        # Keep finished pieces for a resumed run; leave no empty folder behind.
        if parts is not None and not any(parts.folder.glob(f"{tables[0]}-*.parquet")):
            shutil.rmtree(parts.folder, ignore_errors=True)
        raise

    import pandas as pd

    frames = [pd.concat([results[k][i] for k in range(total)], ignore_index=True)
              for i in range(len(tables))]
    if parts is not None:
        _write_tables(frames, outputs)
        shutil.rmtree(parts.folder)
    return JobResult(tables=dict(zip(tables, frames, strict=True)), n_run=total - n_resumed,
                     n_resumed=n_resumed)
