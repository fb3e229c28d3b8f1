"""A scheduler address that is not a Dask scheduler is refused in seconds, not waited on."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from topokit._jobs import SCHEDULER_TIMEOUT, _probe_scheduler
from topokit.errors import InvalidInputError
from topokit.testing.processes import free_port

from cli_errors import check_one_line


@pytest.fixture
def http_server():
    """A real HTTP server on 127.0.0.1 (it waits for a request; a scheduler speaks first)."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"tcp://127.0.0.1:{port}"
    server.terminate()
    server.wait(10)


def test_an_http_server_is_not_a_scheduler(http_server):
    started = time.monotonic()
    check_one_line(["validate", "--example", "toy", "-t", "ndlf", "--trials", "1", "--rounds",
                    "2", "--scheduler", http_server], "not a Dask scheduler", http_server)
    assert time.monotonic() - started < SCHEDULER_TIMEOUT + 20


def test_a_closed_port_cannot_be_reached():
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(InvalidInputError, match=f"cannot reach the Dask scheduler at {address}"):
        _probe_scheduler(address)


def test_a_dask_scheduler_passes_the_probe():
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, protocol="tcp",
                      dashboard_address=None) as cluster:
        _probe_scheduler(cluster.scheduler_address)  # no error
