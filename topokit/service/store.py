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

__all__ = ["Job", "JobStore", "IdempotencyConflict", "STATUSES", "FINAL_STATUSES",
           "SCHEMA_VERSION", "ADDED_COLUMNS", "LEASE_SECONDS"]

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
    """

    def __init__(self, path: str | os.PathLike, *, max_attempts: int = 3,
                 lease_seconds: float = LEASE_SECONDS):
        self.path = Path(path)
        self.max_attempts = max_attempts
        self.lease_seconds = float(lease_seconds)
        conn = self._connect()
        try:
            _use_wal(conn)
            conn.executescript(_SCHEMA)
        finally:
            conn.close()
        self._migrate()

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
