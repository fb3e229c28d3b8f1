"""Privacy-audit jobs of ``topokit serve``: a real server process, a real client."""

from __future__ import annotations

import json
import signal
import sqlite3
import time

import pytest
from serve_helpers import (
    AUTH,
    VERSION_0_SCHEMA,
    assert_one_line_error,
    dead_owner,
    wait_ended,
)

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")



def _as_json(value):
    """``value`` as a client reads it back from JSON (NaN and inf already null)."""
    from topokit._io import dumps_json

    return json.loads(dumps_json(value))


def _library_message(call) -> str:
    """The one-line message of the TopokitError ``call()`` raises."""
    from topokit.errors import TopokitError

    with pytest.raises(TopokitError) as caught:
        call()
    return " ".join(str(caught.value).split())


def _post_audit(server, body, headers=AUTH):
    return server.client.post("/v1/audits", headers=headers, json=body)


def _ended_audit(server, job_id: str) -> dict:
    return wait_ended(server.client, job_id, AUTH, collection="audits")


def _without_topology(network: dict) -> dict:
    """Node-link JSON of ``network`` with no stored topology."""
    graph = {key: value for key, value in network["graph"].items() if key != "topology"}
    return {**network, "graph": graph}


def test_audit_of_the_stored_topology_equals_privacy_audit(server, toy_json):
    from topokit import load_example, privacy_audit

    options = {"rounds": 30, "noise_multiplier": {"C": 1, "D": 2, "E": 1}, "delta": 1e-5}
    response = _post_audit(server, {"network": toy_json, "options": options})
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["status"] == "queued"
    assert job["links"] == {"self": f"/v1/audits/{job['id']}"}
    assert response.headers["location"] == f"/v1/audits/{job['id']}"
    view = _ended_audit(server, job["id"])
    assert view["status"] == "done", view
    result = view["result"]
    expected = privacy_audit(load_example("toy"), rounds=30,
                             noise_multiplier={"C": 1.0, "D": 2.0, "E": 1.0}, delta=1e-5)
    assert result["network"] == "toy" and result["topology_source"] == "stored topology"
    assert result["mu"] == _as_json(expected.to_dict()["mu"])
    assert result["summary"] == _as_json(expected.summary())
    assert {key: value for key, value in result.items()
            if key not in ("network", "topology_source")} == _as_json(expected.to_dict())
    # A finished audit cannot be cancelled.
    assert_one_line_error(server.client.delete(f"/v1/audits/{job['id']}", headers=AUTH), 409)


def test_dsgd_audit_of_a_given_topology_equals_privacy_audit(server, toy_json):
    from topokit import Topology, load_example, privacy_audit

    net = load_example("toy")
    topology = {"edges": [list(edge) for edge in net.social.edges], "dp_devices": ["B", "D"]}
    body = {"network": _without_topology(toy_json), "topology": topology,
            "options": {"rounds": 12, "model": "dsgd", "noise_multiplier": 1.5}}
    response = _post_audit(server, body)
    assert response.status_code == 202, response.text
    view = _ended_audit(server, response.json()["id"])
    assert view["status"] == "done", view
    expected = privacy_audit(net, Topology.from_dict(topology), rounds=12, model="dsgd",
                             noise_multiplier=1.5)
    result = view["result"]
    assert result["topology_source"] == "given topology"
    assert result["mu"] == _as_json(expected.to_dict()["mu"])
    assert result["mu_lower"] == _as_json(expected.to_dict()["mu_lower"])
    assert result["summary"] == _as_json(expected.summary())


def test_default_rounds_are_those_designs_audit(server, toy_json):
    from topokit.design.metrics import DEFAULT_AUDIT_ROUNDS

    response = _post_audit(server, {"network": toy_json})
    assert response.status_code == 202, response.text
    view = _ended_audit(server, response.json()["id"])
    assert view["status"] == "done", view
    assert view["result"]["rounds"] == DEFAULT_AUDIT_ROUNDS
    assert view["result"]["model"] == "gossip"


def test_idempotency_key_returns_the_same_audit(server, toy_json):
    body = {"network": toy_json, "options": {"rounds": 20}}
    headers = {**AUTH, "Idempotency-Key": "audit-key-1"}
    first = _post_audit(server, body, headers)
    again = server.client.post("/v1/audits", headers=headers,
                               content=json.dumps(dict(reversed(body.items()))))
    assert first.status_code == again.status_code == 202
    assert first.json()["id"] == again.json()["id"]
    other = {"network": toy_json, "options": {"rounds": 21}}
    conflict = assert_one_line_error(_post_audit(server, other, headers), 409, "Idempotency-Key")
    assert "was used for a different request" in conflict["error"]
    assert _ended_audit(server, first.json()["id"])["status"] == "done"


def test_one_key_never_names_a_design_and_an_audit(server, toy_json):
    # {"network": ...} alone is a valid request of both kinds.
    headers = {**AUTH, "Idempotency-Key": "audit-key-2"}
    audit = _post_audit(server, {"network": toy_json}, headers)
    assert audit.status_code == 202, audit.text
    design = server.client.post("/v1/designs", headers=headers, json={"network": toy_json})
    assert_one_line_error(design, 409, "Idempotency-Key")
    assert _ended_audit(server, audit.json()["id"])["status"] == "done"


def test_refused_audits_give_the_librarys_one_line_errors(server, toy_json):
    from topokit import load_example, privacy_audit
    from topokit.audit.core import check_audit_rounds

    toy = load_example("toy")
    post = lambda body: _post_audit(server, body)  # noqa: E731
    unknown = assert_one_line_error(post({"network": toy_json, "options": {"roundz": 5}}),
                                    422, "options.roundz")
    assert "'roundz'" in unknown["error"] and "did you mean 'rounds'" in unknown["error"]
    started = time.monotonic()
    huge = assert_one_line_error(post({"network": toy_json, "options": {"rounds": 10**9}}),
                                 422, "options.rounds")
    assert time.monotonic() - started < 5  # refused at once, nothing queued or run
    assert huge["error"] == _library_message(
        lambda: check_audit_rounds(10**9, "gossip", "options.rounds"))
    dsgd = assert_one_line_error(
        post({"network": toy_json, "options": {"rounds": 3000, "model": "dsgd"}}), 422,
        "options.rounds")
    assert dsgd["error"] == _library_message(
        lambda: check_audit_rounds(3000, "dsgd", "options.rounds"))
    stranger = assert_one_line_error(
        post({"network": toy_json, "topology": {"edges": [["A", "Z"]], "dp_devices": []}}),
        422, "topology")
    assert "'Z'" in stranger["error"]
    missing = assert_one_line_error(post({"network": _without_topology(toy_json)}), 422,
                                    "topology")
    assert "give one" in missing["error"]
    noise = {"C": 1, "D": 1, "E": 1, "Q": 1}
    wrong_device = assert_one_line_error(
        post({"network": toy_json, "options": {"noise_multiplier": noise}}), 422,
        "options.noise_multiplier")
    assert wrong_device["error"] == _library_message(
        lambda: privacy_audit(toy, rounds=5, noise_multiplier=noise))
    assert_one_line_error(post({"network": toy_json, "options": {"model": "sgd"}}), 422,
                          "options.model")
    assert_one_line_error(post({"network": toy_json, "options": {"delta": 2}}), 422,
                          "options.delta")
    assert_one_line_error(post({"network": toy_json, "method": "audit"}), 422, "method")
    for verb in (server.client.get, server.client.delete):
        assert_one_line_error(verb("/v1/audits/no-such-job", headers=AUTH), 404, "id")
    assert_one_line_error(server.client.get("/v1/audits/x"), 401, "Authorization")


def test_kinds_stay_apart_and_survive_a_killed_server(start_server, tmp_path, toy_json):
    db = tmp_path / "jobs.sqlite"
    paused = start_server(db, "--workers", "0")
    post = paused.client.post
    audits = [post("/v1/audits", json={"network": toy_json, "options": {"rounds": k}}).json()
              ["id"] for k in (10, 20)]
    design = post("/v1/designs", json={"network": toy_json, "method": "autotag"}).json()["id"]
    cancelled = post("/v1/audits", json={"network": toy_json}).json()["id"]
    assert paused.client.delete(f"/v1/audits/{cancelled}").json()["status"] == "cancelled"
    # Each kind under its own path only; a DELETE under the other kind's path cancels nothing.
    for path in (f"/v1/designs/{audits[0]}", f"/v1/audits/{design}"):
        assert_one_line_error(paused.client.get(path), 404, "id")
        assert_one_line_error(paused.client.delete(path), 404, "id")
    assert paused.client.get(f"/v1/audits/{audits[0]}").json()["status"] == "queued"
    assert paused.client.get(f"/v1/designs/{design}").json()["status"] == "queued"
    paused.kill(signal.SIGKILL)
    # The second audit was running when its server was killed.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE jobs SET status = 'running', attempts = 1, owner = ? WHERE id = ?",
                     (dead_owner(), audits[1]))
    restarted = start_server(db, "--workers", "1")
    for job_id, rounds in zip(audits, (10, 20), strict=True):
        view = wait_ended(restarted.client, job_id, collection="audits")
        assert view["status"] == "done", view
        assert view["result"]["rounds"] == rounds and "mu" in view["result"]
    designed = wait_ended(restarted.client, design)
    assert designed["status"] == "done", designed
    assert designed["result"]["method"] == "autotag"  # the worker ran a design, not an audit
    assert restarted.client.get(f"/v1/audits/{cancelled}").json()["status"] == "cancelled"
    counts = restarted.client.get("/v1/health").json()["jobs"]
    assert counts["running"] == counts["queued"] == 0


def test_a_store_from_before_audits_keeps_its_designs(tmp_path):
    """The jobs table already had ``kind``: a store written before audits opens as it is."""
    from topokit.service.store import JobStore

    db = tmp_path / "jobs.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(VERSION_0_SCHEMA)
        conn.execute("INSERT INTO jobs (id, kind, status, request, request_digest, "
                     "idempotency_key, created, updated) VALUES ('old', 'design', 'queued', "
                     "'{}', 'd', 'k', 1.0, 1.0)")
    store = JobStore(db)
    assert store.get("old", "design").status == "queued"
    assert store.get("old", "audit") is None
    assert store.cancel("old", "audit") is None
    assert store.get("old").status == "queued"
    audit, new = store.submit("audit", {"a": 1}, digest="e")
    assert new and store.get(audit.id, "audit").kind == "audit"
    assert store.claim("me").id == "old"  # one queue for every kind, oldest first
