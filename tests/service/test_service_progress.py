"""Progress of running jobs in ``GET /v1/designs/{id}`` and ``/v1/audits/{id}``: a real server.

The design runs on the bundled 32-device SIoT network: its three searches take a
couple of seconds, long enough for a client polling ten times a second to see
the job running with a report.
"""

from __future__ import annotations

import json
import time

import pytest
from serve_helpers import JOB_SECONDS

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def siot32_json(tmp_path_factory):
    """The bundled 32-device SIoT network as node-link JSON."""
    from topokit.network.examples import load_example
    from topokit.network.formats import save_network

    folder = tmp_path_factory.mktemp("net")
    return json.loads(save_network(load_example("siot32"), folder / "siot32.json").read_text())


def _watch(client, path: str) -> tuple[list[dict], dict]:
    """Poll ``path`` until its job ends (bounded): the views seen while it ran, and the last."""
    running: list[dict] = []
    deadline = time.monotonic() + JOB_SECONDS
    for _ in range(3000):
        view = client.get(path).json()
        if view["status"] == "running":
            running.append(view)
        if view["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return running, view
        time.sleep(0.05)
    return running, view


def test_a_running_design_reports_its_searches(start_server, tmp_path, siot32_json, toy_json):
    server = start_server(tmp_path / "jobs.sqlite", "--workers", "1")
    # Warm the kernels up on the toy network first, so that the big design's time is its
    # searches rather than a first compilation.
    warm = server.client.post("/v1/designs", json={"network": toy_json}).json()
    submitted = server.client.post("/v1/designs",
                                   json={"network": siot32_json, "options": {"seed": 1}})
    assert submitted.status_code == 202
    assert submitted.json()["progress"] is None  # queued: nothing known yet
    job = submitted.json()["id"]
    assert _watch(server.client, f"/v1/designs/{warm['id']}")[1]["status"] == "done"
    running, ended = _watch(server.client, f"/v1/designs/{job}")
    assert ended["status"] == "done", ended
    reports = [view["progress"] for view in running if view["progress"] is not None]
    assert reports, f"no progress seen in {len(running)} views of the running job"
    for report in reports:
        assert set(report) == {"done", "total", "phase"} and report["phase"] == "search"
        assert 1 <= report["done"] <= report["total"]
    assert [report["done"] for report in reports] == sorted(r["done"] for r in reports)
    final = ended["progress"]
    assert final["phase"] == "search" and final["done"] == final["total"] >= 1
    assert final["total"] == reports[-1]["total"]


def test_a_finished_audit_keeps_its_final_report(start_server, tmp_path, toy_json):
    server = start_server(tmp_path / "jobs.sqlite", "--workers", "1")
    submitted = server.client.post("/v1/audits", json={"network": toy_json})
    assert submitted.status_code == 202 and submitted.json()["progress"] is None
    _, ended = _watch(server.client, f"/v1/audits/{submitted.json()['id']}")
    assert ended["status"] == "done", ended
    n_devices = len(toy_json["nodes"])
    assert ended["progress"] == {"done": n_devices, "total": n_devices, "phase": "audit"}
    # An autotag design reports its DP budgets, |V| + 1 of them, as its search.
    autotag = server.client.post("/v1/designs", json={"network": toy_json,
                                                      "method": "autotag"}).json()
    _, ended = _watch(server.client, f"/v1/designs/{autotag['id']}")
    assert ended["status"] == "done"
    assert ended["progress"] == {"done": n_devices + 1, "total": n_devices + 1,
                                 "phase": "search"}
