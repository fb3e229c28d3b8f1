"""Jobs run in worker processes of the server: a process that dies fails its job and the
server goes on; a server killed while a job runs leaves no worker process behind, and the
next server on its store runs every job it held.  Real servers, real processes (psutil
finds them), real kills."""

from __future__ import annotations

import json
import signal
import time

import psutil  # installed with dask[distributed], a dependency of topokit
import pytest
from serve_helpers import wait_ended

#: Seconds a test waits for a job to run, or for processes to end.
WAIT_SECONDS = 60.0


@pytest.fixture(scope="module")
def long_audit(tmp_path_factory):
    """An audit request that runs for seconds: 100 devices, a random topology, 150 rounds."""
    from topokit.design.baselines import random_topology
    from topokit.network.formats import save_network
    from topokit.network.siot import siot

    net = siot(100, seed=1, colocation_range_m=100.0)
    topology = random_topology(net, seed=1, n_dp=50)
    path = save_network(net, tmp_path_factory.mktemp("net") / "siot100.json")
    return {"network": json.loads(path.read_text()), "topology": topology.to_dict(),
            "options": {"rounds": 150}}


def _worker_processes(server) -> list:
    """The server's worker processes (spawned by multiprocessing; not its resource tracker)."""
    found = []
    for child in psutil.Process(server.process.pid).children(recursive=True):
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def _running_with_progress(server, job_id: str) -> dict:
    """The job's view once its worker process has reported progress (it is computing)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        view = server.client.get(f"/v1/audits/{job_id}").json()
        if view["status"] == "running" and view["progress"] is not None:
            return view
        assert view["status"] in ("queued", "running"), view
        time.sleep(0.1)
    pytest.fail(f"audit {job_id} did not report progress within {WAIT_SECONDS:g} s")


def test_a_worker_process_that_dies_fails_its_job_and_the_server_goes_on(
        start_server, tmp_path, long_audit, toy_json):
    server = start_server(tmp_path / "jobs.sqlite", "--workers", "1")
    job_id = server.client.post("/v1/audits", json=long_audit).json()["id"]
    _running_with_progress(server, job_id)
    workers = _worker_processes(server)
    assert len(workers) == 1
    workers[0].send_signal(signal.SIGKILL)
    view = wait_ended(server.client, job_id, collection="audits")
    assert view["status"] == "failed", view
    assert "worker process" in view["error"] and "\n" not in view["error"]
    # New worker processes run the next job.
    design = server.client.post("/v1/designs", json={"network": toy_json}).json()["id"]
    assert wait_ended(server.client, design)["status"] == "done"
    assert server.client.get("/v1/health").json()["status"] == "ok"


def test_a_server_killed_mid_run_leaves_no_process_and_loses_no_job(
        start_server, tmp_path, long_audit, toy_json):
    db = tmp_path / "jobs.sqlite"
    server = start_server(db, "--workers", "1")
    running = server.client.post("/v1/audits", json=long_audit).json()["id"]
    queued = [server.client.post("/v1/designs", json={"network": toy_json}).json()["id"]
              for _ in range(2)]
    _running_with_progress(server, running)
    workers = _worker_processes(server)
    assert workers
    server.kill(signal.SIGKILL)
    _, alive = psutil.wait_procs(workers, timeout=WAIT_SECONDS)
    assert not alive, f"worker processes still running after their server was killed: {alive}"
    restarted = start_server(db, "--workers", "1")
    audit = wait_ended(restarted.client, running, collection="audits")
    assert audit["status"] == "done" and audit["attempts"] == 2, audit
    for job_id in queued:
        design = wait_ended(restarted.client, job_id)
        assert design["status"] == "done" and design["attempts"] == 1, design
