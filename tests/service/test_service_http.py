"""``topokit serve`` as a user runs it: a real server process on 127.0.0.1, a real client."""

from __future__ import annotations

import json
import os
import signal
import sqlite3

import pytest
from serve_helpers import AUTH, assert_one_line_error, dead_owner, wait_ended

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


def test_design_of_toy_equals_optimize(server, toy_json):
    from topokit import load_example, optimize

    response = server.client.post("/v1/designs", headers=AUTH,
                                  json={"network": toy_json, "options": {"seed": 3}})
    assert response.status_code == 202
    job = response.json()
    assert job["status"] == "queued"
    assert job["links"] == {"self": f"/v1/designs/{job['id']}"}
    view = wait_ended(server.client, job["id"], AUTH)
    assert view["status"] == "done", view
    result = view["result"]
    assert result["network"] == "toy" and result["method"] == "optimize"
    assert {"baselines", "stranger_audit", "metrics", "predictor"} <= set(result)
    expected = optimize(load_example("toy"), seed=3).to_dict()["topology"]
    assert result["topology"] == json.loads(json.dumps(expected))
    # A finished job cannot be cancelled.
    assert_one_line_error(server.client.delete(f"/v1/designs/{job['id']}", headers=AUTH), 409)


def test_a_workload_design_is_the_cli_s_and_its_evaluation_its_own_time(server, toy_json,
                                                                        tmp_path):
    """The service is the CLI over HTTP: the same workload gives topokit design's design
    (the predictor picked alike, the same noise), and evaluating that design judges it by
    its own predictor: one predicted time."""
    from typer.testing import CliRunner

    from topokit.cli import app

    options = {"workload": {"epsilon": 0.5, "target": 0.85}, "max_stranger_mu": 0.5}
    response = server.client.post("/v1/designs", headers=AUTH,
                                  json={"network": toy_json, "options": options})
    assert response.status_code == 202, response.text
    view = wait_ended(server.client, response.json()["id"], AUTH)
    assert view["status"] == "done", view
    served = view["result"]
    path = tmp_path / "design.json"
    ran = CliRunner().invoke(app, ["design", "--example", "toy", "--epsilon", "0.5",
                                   "--target", "0.85", "--max-stranger-mu", "0.5", "-o",
                                   str(path)])
    assert ran.exit_code == 0, ran.output
    cli = json.loads(path.read_text())
    for key in ("topology", "noise", "predictor", "metrics"):
        assert served[key] == cli[key], key
    assert served["predictor"]["name"] == "workload"
    evaluated = server.client.post("/v1/evaluations", headers=AUTH,
                                   json={"network": toy_json, "design": served})
    assert evaluated.status_code == 200, evaluated.text
    assert evaluated.json()["predictor"] == "workload"
    assert evaluated.json()["metrics"]["pseudo_time"] == pytest.approx(
        served["metrics"]["pseudo_time"], rel=1e-9)
    unknown = {"network": toy_json, "options": {"workload": {"epsilom": 0.5}}}
    refused = assert_one_line_error(server.client.post("/v1/designs", headers=AUTH,
                                                       json=unknown), 422, "options.workload")
    assert "unknown workload field 'epsilom'" in refused["error"]


def test_idempotency_key_returns_the_same_job(server, toy_json):
    body = {"network": toy_json, "method": "autotag"}
    headers = {**AUTH, "Idempotency-Key": "key-1"}
    first = server.client.post("/v1/designs", headers=headers, json=body)
    again = server.client.post("/v1/designs", headers=headers,
                               content=json.dumps(dict(reversed(body.items()))))
    assert first.status_code == again.status_code == 202
    assert first.json()["id"] == again.json()["id"]
    other = {"network": toy_json, "method": "optimize"}
    assert_one_line_error(server.client.post("/v1/designs", headers=headers, json=other),
                           409, "Idempotency-Key")
    assert wait_ended(server.client, first.json()["id"], AUTH)["status"] == "done"


def test_refused_requests_give_one_line_errors(server, toy_json):
    client = server.client
    post = lambda **kwargs: client.post("/v1/designs", headers=AUTH, **kwargs)  # noqa: E731
    assert_one_line_error(post(content=b'{"network": '), 422, "body")
    empty = assert_one_line_error(post(json={"network": {"nodes": [], "edges": []}}), 422,
                                   "network")
    assert empty["error"] == "network: 'nodes' is empty; the social graph has no nodes"
    assert_one_line_error(post(json={"network": toy_json, "method": "magic"}), 422, "method")
    assert_one_line_error(post(json={"network": toy_json, "options": {"sed": 1}}), 422,
                           "options.sed")
    assert_one_line_error(post(json={"network": toy_json, "options": {"mixing": "x"}}), 422,
                           "options.mixing")
    big_network = {"nodes": [{"id": k, "compute_time": 1} for k in range(11)], "edges": []}
    assert_one_line_error(post(json={"network": big_network}), 422, "network")
    assert_one_line_error(post(content=b" " * 60_000), 413, "body")
    assert_one_line_error(client.get("/v1/designs/no-such-job", headers=AUTH), 404)
    assert_one_line_error(client.delete("/v1/designs/no-such-job", headers=AUTH), 404)
    assert_one_line_error(client.get("/v1/designs/x"), 401, "Authorization")
    assert_one_line_error(client.get("/v1/version", headers={"Authorization": "Bearer no"}),
                           401)
    assert client.get("/v1/health").json()["status"] == "ok"  # open, and still serving
    assert client.get("/v1/version", headers=AUTH).json()["api"] == "v1"


def test_evaluation_gives_the_metrics_of_evaluate(server, toy_json):
    from topokit import evaluate, load_example

    net = load_example("toy")
    topology = {"edges": [list(edge) for edge in net.social.edges], "dp_devices": []}
    response = server.client.post("/v1/evaluations", headers=AUTH,
                                  json={"network": toy_json, "topology": topology})
    assert response.status_code == 200, response.text
    expected = evaluate(net).to_dict()
    assert response.json()["metrics"]["hitting_time"] == pytest.approx(expected["hitting_time"])
    assert_one_line_error(
        server.client.post("/v1/evaluations", headers=AUTH,
                           json={"network": toy_json, "topology": {"edges": [["A", "Z"]]}}),
        422, "topology")


def test_jobs_survive_a_killed_server(start_server, tmp_path, toy_json):
    db = tmp_path / "jobs.sqlite"
    paused = start_server(db, "--workers", "0")
    queued = [paused.client.post("/v1/designs", json={"network": toy_json}).json()["id"]
              for _ in range(2)]
    cancelled = paused.client.post("/v1/designs", json={"network": toy_json}).json()["id"]
    assert paused.client.delete(f"/v1/designs/{cancelled}").json()["status"] == "cancelled"
    paused.kill(signal.SIGKILL)
    # The second job was running when its server was killed.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE jobs SET status = 'running', attempts = 1, owner = ? WHERE id = ?",
                     (dead_owner(), queued[1]))
    assert os.path.exists(db)
    restarted = start_server(db, "--workers", "1")
    for job_id in queued:
        view = wait_ended(restarted.client, job_id)
        assert view["status"] == "done", view
    assert restarted.client.get(f"/v1/designs/{cancelled}").json()["status"] == "cancelled"
    counts = restarted.client.get("/v1/health").json()["jobs"]
    assert counts["running"] == counts["queued"] == 0
