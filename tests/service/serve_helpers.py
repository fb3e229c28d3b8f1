"""What the tests of a real ``topokit serve`` process share: the server, its client, polling.

httpx is imported only where a server is started: the store's tests, which
share this folder's conftest, do not need the ``serve`` extra.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topokit.testing.processes import free_port, topokit_command

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
START_SECONDS = 30
JOB_SECONDS = 90  # the first design of a fresh server may compile its Numba kernels

#: The jobs table as topokit serve created it before audit jobs and progress reports (schema
#: version 0, ``PRAGMA user_version`` 0).  Frozen: it stands for stores already on disk, so it must
#: never be edited to follow the code.
VERSION_0_SCHEMA = """
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
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, created);
"""


class Server:
    """A ``topokit serve`` process and a client for it; :meth:`kill` ends it."""

    def __init__(self, db: Path, log: Path, *extra: str):
        import httpx

        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self._log = open(log, "ab")  # closed in kill
        self.process = subprocess.Popen(
            [*topokit_command(), "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--db", str(db), *extra],
            stdout=self._log, stderr=subprocess.STDOUT)
        self.client = httpx.Client(base_url=self.base, timeout=10)
        self._wait_healthy(log)

    def _wait_healthy(self, log: Path) -> None:
        import httpx

        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if self.client.get("/v1/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.kill()
        pytest.fail(f"topokit serve did not become healthy:\n{log.read_text()[-2000:]}")

    def kill(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.client.close()
        self._log.close()


def wait_ended(client, job_id: str, headers=None, *, collection: str = "designs") -> dict:
    """Poll a job of ``/v1/<collection>`` until it ends (bounded in count and time)."""
    deadline = time.monotonic() + JOB_SECONDS
    for _ in range(900):
        view = client.get(f"/v1/{collection}/{job_id}", headers=headers).json()
        if view["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return view
        time.sleep(0.1)
    return view


def assert_one_line_error(response, status: int, field=None) -> dict:
    """The error body of ``response``: ``status``, one line, no traceback, about ``field``."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "field"}
    assert body["error"] and "\n" not in body["error"] and "Traceback" not in body["error"]
    if field is not None:
        assert body["field"] == field
    return body


def dead_owner() -> str:
    """The owner name of a server process that has ended (as a SIGKILLed one has)."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait(10)
    return f"{socket.gethostname()}:{ended.pid}"
