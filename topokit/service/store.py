"""A durable job store in one SQLite file, shared safely by several servers.

Every change is one transaction (``BEGIN IMMEDIATE``), so a job is never seen
half-written.  A job moves ``queued -> running -> done | failed``, or
``queued -> cancelled``.  :meth:`JobStore.claim` is one atomic
``UPDATE ... WHERE status = 'queued'``: two servers on one store never run the
same job.  A running job records its owner (host and process id), and the
owner renews its claim on its running jobs (:meth:`JobStore.heartbeat`, every
few seconds while it serves).  :meth:`JobStore.recover` puts back in the queue
the jobs whose owner has stopped, or fails them with a reason once they have
been tried ``max_attempts`` times, so that no job stays ``running`` forever.
An owner has stopped when it is a process of this host that no longer runs (a
killed server: recovered at once), or when it has not renewed its claim for
``lease_seconds`` (a server of another host, whose processes this one cannot
see, or a process id the system has since given to another program).
Every job has a ``kind`` (``"design"`` or ``"audit"``); :meth:`JobStore.get`
and :meth:`JobStore.cancel` given a kind never see a job of another, and the
queue, its claims and its recovery treat every kind alike.  A running job's
owner may record its ``progress`` (:meth:`JobStore.record_progress`); a job
keeps its last report when it ends.

Every store a version of topokit has written opens: a file opened by this code
gains the columns added since it was created (:data:`ADDED_COLUMNS`) in one
transaction, and its ``PRAGMA user_version`` becomes :data:`SCHEMA_VERSION`.

Nothing but a store is ever written: an existing file is first read, read-only
(:func:`check_store_path`), and opened only when it is topokit's store (its
``PRAGMA application_id`` is :data:`APPLICATION_ID`, which every store this code
creates or opens carries; or, for a store of an earlier version, which carries
none, its ``jobs`` table has every column of the first version), or an empty
file (0 bytes: SQLite's empty database, and what a second server starting on a
new store at the same moment finds).  A folder, a missing folder, a place that
takes no file, a file that is not an SQLite database and another application's
database are refused in one line, before anything is written.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .._checks import check_output_path
from ..errors import InputFileError, InvalidInputError

__all__ = ["Job", "JobStore", "IdempotencyConflict", "STATUSES", "FINAL_STATUSES",
           "SCHEMA_VERSION", "ADDED_COLUMNS", "LEASE_SECONDS", "APPLICATION_ID",
           "check_store_path"]

STATUSES = ("queued", "running", "done", "failed", "cancelled")
FINAL_STATUSES = ("done", "failed", "cancelled")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    request TEXT NOT NULL,
    request_digest TEXT NOT NULL,
    idempotency_key TEXT UNIQUE,
    result TEXT,
    error TEXT,
    owner TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    progress TEXT
);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, created);
"""

#: The columns added to the jobs table since its first version, oldest first: name and
#: declaration.  Each is nullable, so that ``ALTER TABLE ... ADD COLUMN`` gives old rows
#: a value (NULL: unknown) and older servers, which never name it, keep working on the file.
ADDED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("progress", "TEXT"),  # version 1: the last progress report of a job, JSON
)
#: ``PRAGMA user_version`` of a store with every column of :data:`ADDED_COLUMNS`
#: (0: the first version, or one written before the store kept a version).
SCHEMA_VERSION = len(ADDED_COLUMNS)

#: ``PRAGMA application_id`` of a topokit job store (the bytes ``tpkj``), set when a
#: store is created and on the first opening of a store an earlier version wrote: the
#: mark by which an existing file is known to be a store before anything is written.
APPLICATION_ID = 0x74706B6A

#: The columns of the jobs table of the first version: a file without them (and without
#: :data:`APPLICATION_ID`) is not a store, whatever its tables are called.
_FIRST_COLUMNS = ("id", "kind", "status", "request", "request_digest", "idempotency_key",
                  "result", "error", "owner", "attempts", "created", "updated")

#: The first 16 bytes of every SQLite database file.
_SQLITE_MAGIC = b"SQLite format 3\x00"

#: A condition on the kind of a job, bound to (kind, kind): any kind when kind is None.
_KIND_IS = "(? IS NULL OR kind = ?)"


class IdempotencyConflict(Exception):
    """An idempotency key already names a job made from another request."""

    def __init__(self, key: str, job_id: str):
        super().__init__(f"Idempotency-Key {key!r} was used for a different request (job "
                         f"{job_id}); send a new key for a new request")
        self.job_id = job_id


@dataclass(frozen=True)
class Job:
    """One row of the store; ``request`` and ``result`` decoded from JSON."""

    id: str
    kind: str
    status: str
    request: dict[str, Any]
    result: Any
    error: str | None
    attempts: int
    created: float
    updated: float
    #: The last progress report of the job's owner (``{"done", "total", "phase"}``), or None.
    progress: dict[str, Any] | None = None

    @classmethod
    def _of(cls, row: sqlite3.Row) -> Job:
        return cls(id=row["id"], kind=row["kind"], status=row["status"],
                   request=json.loads(row["request"]),
                   result=None if row["result"] is None else json.loads(row["result"]),
                   error=row["error"], attempts=row["attempts"], created=row["created"],
                   updated=row["updated"],
                   progress=None if row["progress"] is None else json.loads(row["progress"]))


def this_owner() -> str:
    """The owner name of this process's running jobs: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_dead(owner: str | None) -> bool:
    """Whether ``owner`` (``host:pid``) is a process of this host that no longer runs."""
    if not owner:
        return True
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another host's server: its lease tells (JobStore.recover)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _is_zombie(int(pid))


def _is_zombie(pid: int) -> bool:
    """Whether process ``pid`` has ended but not been reaped (Linux; False where unknown).

    A killed server stays a zombie until its parent reaps it, and ``kill(pid, 0)``
    still finds it; a parent that never reaps (a detached server under a
    container's init) would keep its jobs ``running`` for good.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # "pid (command) state ...": the command may hold spaces and parentheses.
    fields = stat.rpartition(")")[2].split()
    return bool(fields) and fields[0] in ("Z", "X")


#: Seconds after its owner's last renewal that a running job counts as abandoned.  Owners
#: renew every few seconds (``topokit.service.worker.HEARTBEAT_SECONDS``); the lease is
#: long enough that a busy store or a paused machine does not take a live server's jobs.
LEASE_SECONDS = 300.0

#: Seconds to keep trying to switch a store to WAL while another server holds it.
_WAL_SECONDS = 30.0


def _use_wal(conn: sqlite3.Connection) -> None:
    """Put the store in WAL mode (readers never wait for the writer).

    Switching needs the file to itself, and SQLite answers "database is locked"
    at once, without its busy timeout, when another connection has it open in
    the meantime (two servers starting on a new store, or on one that is not yet
    WAL); so the switch is tried again for up to :data:`_WAL_SECONDS`.
    """
    deadline = time.monotonic() + _WAL_SECONDS
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _not_a_store(name: str, path: Path, what: str) -> InputFileError:
    return InputFileError(
        f"{name}: {path} is not a topokit job store ({what}); give the store file topokit "
        "serve created, or the name of a new file (it is created)")


def _header(path: Path, name: str) -> bytes:
    """The first 100 bytes of ``path`` (SQLite's database header), read without writing."""
    try:
        with open(path, "rb") as handle:
            return handle.read(100)
    except OSError as exc:
        raise InvalidInputError(f"{name}: cannot read {path} ({exc.strerror}); choose "
                                "another path") from None


def _read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to ``path`` that writes nothing beside it either.

    Without a ``-wal`` file every page is in the file itself, which is then read as
    immutable (a plain read-only connection to a WAL database would leave ``-wal`` and
    ``-shm`` files beside another application's database).
    """
    uri = "file:" + quote(str(path.absolute())) + "?mode=ro"
    if not Path(f"{path}-wal").exists():
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True, timeout=30)


def _recognise(path: Path, name: str) -> None:
    """Raise unless the existing file ``path`` is a topokit store (or an empty file).

    Read from its header and, for a store of an earlier version (no application id),
    its jobs table's columns, through a read-only connection.
    """
    header = _header(path, name)
    if not header:
        return  # SQLite's empty database: a new store (another server may be creating it)
    if not header.startswith(_SQLITE_MAGIC):
        raise _not_a_store(name, path, "it is not an SQLite database")
    application_id = int.from_bytes(header[68:72], "big")
    if application_id == APPLICATION_ID:
        return
    if application_id != 0:
        raise _not_a_store(name, path, f"it is another application's SQLite database, "
                                       f"application id {application_id:#010x}")
    try:
        conn = _read_only(path)
        try:  # the application id again: a change not yet copied from the -wal file
            if conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID:
                return
            columns = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise _not_a_store(name, path, f"it is an SQLite database topokit cannot read: {exc}") \
            from None
    if not columns:
        raise _not_a_store(name, path, "it is an SQLite database without a jobs table")
    missing = [column for column in _FIRST_COLUMNS if column not in columns]
    if missing:
        raise _not_a_store(name, path, f"it is another application's SQLite database: its "
                                       f"jobs table has no column {missing[0]!r}")


def check_store_path(path: str | os.PathLike, name: str = "path") -> Path:
    """Return ``path`` as a Path; raise unless a job store can be kept there.

    Checked before anything is written: ``path`` is an existing topokit store
    (or an empty file) in a folder that takes new files (SQLite writes its
    ``-wal`` and ``-shm`` files beside the store), or a new file in an existing
    folder that does.  A folder, a missing folder, a path under a file, a place
    that takes no file, a file that is not an SQLite database and another
    application's database raise, naming ``name`` (the option) and the path.

    Raises
    ------
    InputFileError
        The file is not a topokit job store.
    InvalidInputError
        No store can be kept at ``path``.
    """
    if Path(path).is_dir():
        raise InvalidInputError(f"{name}: {path} is a directory; give the job store's file, "
                                f"e.g. {Path(path) / 'topokit-jobs.sqlite'}")
    target = check_output_path(path, name)  # no file as a folder; a folder that takes files
    if not target.parent.is_dir():
        raise InvalidInputError(
            f"{name}: the folder {target.parent} of {target} does not exist; create it first "
            "(mkdir -p) or choose another path")
    if target.exists():
        _recognise(target, name)
        if not os.access(target, os.R_OK | os.W_OK):
            raise InvalidInputError(f"{name}: cannot write the job store {target} (no "
                                    "permission, or a read-only file system); choose another "
                                    "path")
    return target


def _create(conn: sqlite3.Connection) -> None:
    """Mark the file a store and create its jobs table (if absent), in one transaction: a
    new store is never seen with a table and without the mark, and a store of an earlier
    version gains the mark."""
    conn.executescript(f"BEGIN IMMEDIATE; PRAGMA application_id = {APPLICATION_ID};"
                       f"{_SCHEMA} COMMIT;")


class JobStore:
    """The jobs table of the SQLite file ``path`` (created if absent).

    Parameters
    ----------
    path : str or Path
        The database file.  Several processes may share it.
    max_attempts : int, default 3
        How many times a job may be started before :meth:`recover` fails it
        instead of queueing it again.
    lease_seconds : float, default LEASE_SECONDS
        A running job whose owner has not renewed its claim for this long is
        recovered whoever the owner is.

    Raises
    ------
    InputFileError, InvalidInputError
        ``path`` is not a topokit store, or no store can be kept there
        (:func:`check_store_path`); nothing is written then.
    """

    def __init__(self, path: str | os.PathLike, *, max_attempts: int = 3,
                 lease_seconds: float = LEASE_SECONDS):
        self.path = check_store_path(path)
        self.max_attempts = max_attempts
        self.lease_seconds = float(lease_seconds)
        try:
            conn = self._connect()
            try:
                _create(conn)
                _use_wal(conn)
            finally:
                conn.close()
            self._migrate()
        except sqlite3.OperationalError as exc:  # e.g. a full disk, a store locked for 30 s
            raise InvalidInputError(f"cannot open the job store {self.path}: {exc}") from None

    def _migrate(self) -> None:
        """Add the columns of :data:`ADDED_COLUMNS` that the jobs table lacks.

        Inside ``BEGIN IMMEDIATE``, so that two servers opening one old store
        at once do not both add a column (the second finds it there).
        """
        with self._transaction() as db:
            present = {row["name"] for row in db.execute("PRAGMA table_info(jobs)")}
            for name, declaration in ADDED_COLUMNS:
                if name not in present:
                    db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {declaration}")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            # A store a newer topokit wrote keeps its version: its columns are still there.
            if version < SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE``: committed on success, else rolled back."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    def submit(self, kind: str, request: dict[str, Any], *, digest: str,
               idempotency_key: str | None = None) -> tuple[Job, bool]:
        """Queue a job; return it and whether it is new.

        With ``idempotency_key``, a key seen before returns its job (same
        ``kind`` and ``digest``) or raises :class:`IdempotencyConflict` (another
        kind or digest: one body can be both a design and an audit request).
        """
        now = time.time()
        with self._transaction() as db:
            if idempotency_key is not None:
                row = db.execute("SELECT * FROM jobs WHERE idempotency_key = ?",
                                 (idempotency_key,)).fetchone()
                if row is not None:
                    if row["kind"] != kind or row["request_digest"] != digest:
                        raise IdempotencyConflict(idempotency_key, row["id"])
                    return Job._of(row), False
            job_id = uuid.uuid4().hex
            db.execute(
                "INSERT INTO jobs (id, kind, status, request, request_digest, idempotency_key, "
                "created, updated) VALUES (?, ?, 'queued', ?, ?, ?, ?, ?)",
                (job_id, kind, json.dumps(request), digest, idempotency_key, now, now))
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return Job._of(row), True

    def get(self, job_id: str, kind: str | None = None) -> Job | None:
        """The job ``job_id`` (of ``kind``, when given), or None."""
        conn = self._connect()
        try:
            row = conn.execute(f"SELECT * FROM jobs WHERE id = ? AND {_KIND_IS}",
                               (job_id, kind, kind)).fetchone()
        finally:
            conn.close()
        return None if row is None else Job._of(row)

    def claim(self, owner: str) -> Job | None:
        """Take the oldest queued job for ``owner`` (now ``running``), or None if none is queued."""
        with self._transaction() as db:
            row = db.execute("SELECT id FROM jobs WHERE status = 'queued' "
                             "ORDER BY created LIMIT 1").fetchone()
            if row is None:
                return None
            # A job re-queued from a dead server starts its progress again.
            claimed = db.execute(
                "UPDATE jobs SET status = 'running', owner = ?, attempts = attempts + 1, "
                "progress = NULL, updated = ? WHERE id = ? AND status = 'queued'",
                (owner, time.time(), row["id"])).rowcount
            if claimed != 1:
                return None
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (row["id"],)).fetchone()
        return Job._of(row)

    def finish(self, job_id: str, owner: str, *, result: Any = None,
               error: str | None = None, progress: dict[str, Any] | None = None) -> bool:
        """Record a running job's ``result`` (done) or ``error`` (failed) in one transaction.

        ``result`` is JSON text.  ``progress``, when given, replaces the job's last
        progress report (the final one, which throttled reports may have skipped);
        None keeps the last one recorded.  Returns False if ``owner`` no longer
        holds the job.
        """
        status = "failed" if error is not None else "done"
        report = None if progress is None else json.dumps(progress)
        with self._transaction() as db:
            changed = db.execute(
                "UPDATE jobs SET status = ?, result = ?, error = ?, "
                "progress = COALESCE(?, progress), updated = ? "
                "WHERE id = ? AND status = 'running' AND owner = ?",
                (status, result, error, report, time.time(), job_id, owner)).rowcount
        return changed == 1

    def record_progress(self, job_id: str, owner: str, progress: dict[str, Any]) -> bool:
        """Record ``progress`` (a JSON object) as the last report of a running job.

        Only while the job runs and ``owner`` holds it: a report that arrives
        after the job ended, or from a server it was taken from, changes
        nothing.  Returns whether it was recorded.
        """
        with self._transaction() as db:
            changed = db.execute(
                "UPDATE jobs SET progress = ?, updated = ? "
                "WHERE id = ? AND status = 'running' AND owner = ?",
                (json.dumps(progress), time.time(), job_id, owner)).rowcount
        return changed == 1

    def cancel(self, job_id: str, kind: str | None = None) -> Job | None:
        """Cancel ``job_id`` if it is queued; return the job as it now is.

        None: no such job, or (with ``kind``) one of another kind, which is left alone.
        """
        with self._transaction() as db:
            db.execute(f"UPDATE jobs SET status = 'cancelled', updated = ? "
                       f"WHERE id = ? AND status = 'queued' AND {_KIND_IS}",
                       (time.time(), job_id, kind, kind))
            row = db.execute(f"SELECT * FROM jobs WHERE id = ? AND {_KIND_IS}",
                             (job_id, kind, kind)).fetchone()
        return None if row is None else Job._of(row)

    def heartbeat(self, owner: str) -> int:
        """Renew ``owner``'s claim on its running jobs; returns how many it holds.

        ``updated`` of each becomes now: :meth:`recover` leaves a job alone while
        its owner renews it within ``lease_seconds``.
        """
        with self._transaction() as db:
            return db.execute("UPDATE jobs SET updated = ? WHERE status = 'running' "
                              "AND owner = ?", (time.time(), owner)).rowcount

    def recover(self) -> dict[str, int]:
        """Queue again (or fail, after ``max_attempts``) the running jobs of stopped servers.

        A job's server has stopped when it was a process of this host that no
        longer runs, or when it has not renewed the job (:meth:`heartbeat`) for
        ``lease_seconds``.  Returns how many jobs were re-queued and failed.
        """
        counts = {"requeued": 0, "failed": 0}
        with self._transaction() as db:
            rows = db.execute("SELECT id, owner, attempts, updated FROM jobs "
                              "WHERE status = 'running'").fetchall()
            expired = time.time() - self.lease_seconds
            for row in rows:
                if not (_owner_dead(row["owner"]) or row["updated"] < expired):
                    continue
                if row["attempts"] >= self.max_attempts:
                    db.execute(
                        "UPDATE jobs SET status = 'failed', error = ?, owner = NULL, "
                        "updated = ? WHERE id = ? AND status = 'running'",
                        (f"the server stopped while running this job {row['attempts']} times; "
                         "not trying again", time.time(), row["id"]))
                    counts["failed"] += 1
                else:
                    db.execute("UPDATE jobs SET status = 'queued', owner = NULL, "
                               "progress = NULL, updated = ? WHERE id = ? AND status = 'running'",
                               (time.time(), row["id"]))
                    counts["requeued"] += 1
        return counts

    def counts(self) -> dict[str, int]:
        """How many jobs have each status."""
        conn = self._connect()
        try:
            rows = conn.execute("SELECT status, COUNT(*) AS n FROM jobs GROUP BY status")
            found = {row["status"]: row["n"] for row in rows}
        finally:
            conn.close()
        return {status: found.get(status, 0) for status in STATUSES}
