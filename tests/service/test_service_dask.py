"""``topokit serve --scheduler``: jobs computed on a real Dask cluster started by the test.

The cluster's one worker runs in this test process (``processes=False``) and
listens on TCP at 127.0.0.1; the server is a ``topokit serve`` subprocess that
reaches it as any client does.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from serve_helpers import wait_ended

from topokit.testing.processes import free_port, topokit_command

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
distributed = pytest.importorskip("distributed")


def _cluster(port: int = 0):
    """A one-worker, one-thread Dask cluster on 127.0.0.1 (its scheduler on ``port``)."""
    return distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                    protocol="tcp", host="127.0.0.1", scheduler_port=port,
                                    dashboard_address=None)


@pytest.fixture
def cluster():
    with _cluster() as running:
        yield running


def _until(check, seconds: float = 60):
    """Call ``check`` every 0.2 s until it returns something true (bounded); return that."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_design_on_the_cluster_equals_one_in_process(start_server, tmp_path, cluster,
                                                       toy_json):
    from topokit.service.worker import run_job

    address = cluster.scheduler_address
    server = start_server(tmp_path / "jobs.sqlite", "--scheduler", address, "--workers", "1")
    health = server.client.get("/v1/health").json()
    assert health["scheduler"] == address and health["scheduler_connected"] is True
    assert health["workers"] == 1
    body = {"network": toy_json, "options": {"seed": 3}}
    job = server.client.post("/v1/designs", json=body).json()
    view = wait_ended(server.client, job["id"])
    assert view["status"] == "done", view
    here, error = run_job("design", body)
    assert error is None and view["result"] == json.loads(here)
    assert view["progress"]["done"] == view["progress"]["total"] >= 1
    # The cluster ran it: its scheduler's log has the job's task.
    seen = {str(entry[0]) for entry in cluster.scheduler.transition_log}
    assert any(key.startswith(f"topokit-design-{job['id']}-") for key in seen), seen


def test_an_unreachable_scheduler_stops_serve_at_once_in_one_line(tmp_path):
    address = f"tcp://127.0.0.1:{free_port()}"
    db = tmp_path / "jobs.sqlite"
    ended = subprocess.run([*topokit_command(), "serve", "--port", str(free_port()), "--db",
                            str(db), "--scheduler", address], capture_output=True, text=True,
                           timeout=120)
    assert ended.returncode == 2, ended.stderr
    lines = ended.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in ended.stderr
    assert f"cannot reach the Dask scheduler at {address}" in lines[0]
    assert not db.exists()  # refused before the store is opened


def test_jobs_wait_for_a_lost_cluster_and_run_when_it_is_back(start_server, tmp_path,
                                                             toy_json):
    port = free_port()
    first = _cluster(port)
    server = start_server(tmp_path / "jobs.sqlite", "--scheduler", f"tcp://127.0.0.1:{port}")
    first.close()
    # Dask gives up on the lost scheduler after its connect timeout (10 s).
    health = lambda: server.client.get("/v1/health").json()  # noqa: E731
    assert _until(lambda: health()["scheduler_connected"] is False)
    job = server.client.post("/v1/designs", json={"network": toy_json}).json()["id"]
    time.sleep(1)
    assert server.client.get(f"/v1/designs/{job}").json()["status"] == "queued"
    with _cluster(port):
        assert wait_ended(server.client, job)["status"] == "done"
        assert health()["scheduler_connected"] is True
