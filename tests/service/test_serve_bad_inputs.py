"""Issue #43, ``topokit serve``: a --db that is not topokit's store, or cannot be one, and a
port already in use.

Every case: exit status 2, one ``error:`` line naming the option and the fix, no
traceback, and the file the user named byte-identical afterwards (nothing beside it
either: no ``-wal`` or ``-shm`` file, no store created).  A store written by an earlier
version, an empty file and a new path still open, and every store opened carries
topokit's application id.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest
from serve_helpers import VERSION_0_SCHEMA

from topokit.errors import InputFileError, InvalidInputError
from topokit.service.store import APPLICATION_ID, JobStore, check_store_path
from topokit.testing.processes import topokit_command

from cli_errors import check_one_line


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def foreign_database(path: Path, *, wal: bool = False, application_id: int = 0) -> Path:
    """Another application's SQLite file with a ``jobs`` table of its own."""
    conn = sqlite3.connect(path, isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    if application_id:
        conn.execute(f"PRAGMA application_id = {application_id}")
    conn.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT, done INTEGER)")
    conn.execute("INSERT INTO jobs (name, done) VALUES ('print invoices', 0)")
    conn.close()
    return path


def serve_line(db: Path | str, *keywords: str) -> str:
    return check_one_line(["serve", "--db", str(db), "--port", "0"], *keywords)


@pytest.mark.parametrize("kind", ["plain", "wal", "other-application-id"])
def test_another_applications_database_is_refused_and_left_as_it_was(tmp_path, kind):
    db = foreign_database(tmp_path / "app.sqlite", wal=kind == "wal",
                          application_id=0x1234 if kind == "other-application-id" else 0)
    before, files = digest(db), listing(tmp_path)
    line = serve_line(db, "--db", str(db), "not a topokit job store",
                      "another application's SQLite database", "name of a new file")
    assert ("0x00001234" in line) == (kind == "other-application-id")
    assert digest(db) == before and listing(tmp_path) == files  # no -wal, no -shm
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == \
            ("wal" if kind == "wal" else "delete")


def test_random_bytes_and_a_text_file_are_not_stores(tmp_path):
    for name, content in (("noise.bin", os.urandom(4096)), ("notes.txt", b"my notes\n")):
        path = tmp_path / name
        path.write_bytes(content)
        serve_line(path, "--db", name, "not a topokit job store", "not an SQLite database")
        assert path.read_bytes() == content
    assert listing(tmp_path) == ["noise.bin", "notes.txt"]


def test_an_sqlite_database_without_a_jobs_table_is_not_a_store(tmp_path):
    db = tmp_path / "empty-app.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    before = digest(db)
    serve_line(db, "not a topokit job store", "without a jobs table")
    assert digest(db) == before


def test_a_folder_a_missing_folder_and_a_file_as_folder_are_refused(tmp_path):
    serve_line(tmp_path, "--db", "is a directory", str(tmp_path / "topokit-jobs.sqlite"))
    serve_line(tmp_path / "missing" / "jobs.sqlite", "--db", "does not exist", "mkdir")
    plain = tmp_path / "some_file.txt"
    plain.write_text("a file, not a folder\n")
    serve_line(plain / "jobs.sqlite", "--db", "some_file.txt is a file, not a folder")
    assert plain.read_text() == "a file, not a folder\n"
    assert listing(tmp_path) == ["some_file.txt"]  # no store, no missing folder created


def test_a_read_only_folder_is_refused(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        try:  # root writes to a read-only folder anyway: nothing to refuse then
            (folder / "probe").touch()
        except OSError:
            pass
        else:
            pytest.skip("this user can write to a read-only folder (root)")
        serve_line(folder / "jobs.sqlite", "--db", "takes no new file", "choose another path")
        assert listing(folder) == []
    finally:
        folder.chmod(0o755)


def test_a_port_in_use_is_one_line_naming_it_and_the_store_is_not_created(tmp_path):
    """A real second server: a process, a socket listening on 127.0.0.1."""
    db = tmp_path / "jobs.sqlite"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(
            [*topokit_command(), "serve", "--host", "127.0.0.1", "--port", str(port), "--db",
             str(db)], capture_output=True, text=True, timeout=120,
            env={**os.environ, "COLUMNS": "400"})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: --port ") and str(port) in lines[0]
    assert "in use" in lines[0] and "choose another --port" in lines[0]
    assert not db.exists()


def test_a_host_that_is_not_this_machine_is_refused(tmp_path):
    check_one_line(["serve", "--host", "no-such-host.invalid", "--port", "0", "--db",
                    str(tmp_path / "jobs.sqlite")], "--host no-such-host.invalid")
    assert listing(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# The stores that do open
# ---------------------------------------------------------------------------------------------

def _application_id(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("PRAGMA application_id").fetchone()[0]


def test_a_new_store_and_an_empty_file_open_and_carry_the_mark(tmp_path):
    new, empty = tmp_path / "new.sqlite", tmp_path / "empty.sqlite"
    empty.touch()
    for db in (new, empty):
        JobStore(db).submit("design", {}, digest="d")
        assert _application_id(db) == APPLICATION_ID
        check_store_path(db)  # recognised from its header
        assert JobStore(db).counts()["queued"] == 1


def test_a_store_of_an_earlier_version_opens_and_gains_the_mark(tmp_path):
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(VERSION_0_SCHEMA)
        conn.execute("INSERT INTO jobs (id, kind, status, request, request_digest, attempts, "
                     "created, updated) VALUES ('q', 'design', 'queued', '{}', 'q', 0, 1, 1)")
    assert _application_id(db) == 0
    check_store_path(db)  # recognised by its jobs table
    assert JobStore(db).get("q").status == "queued"
    assert _application_id(db) == APPLICATION_ID


def test_the_library_refuses_as_the_command_does(tmp_path):
    db = foreign_database(tmp_path / "app.sqlite")
    before = digest(db)
    with pytest.raises(InputFileError, match="not a topokit job store"):
        JobStore(db)
    with pytest.raises(InvalidInputError, match="does not exist"):
        JobStore(tmp_path / "missing" / "jobs.sqlite")
    assert digest(db) == before and listing(tmp_path) == ["app.sqlite"]
