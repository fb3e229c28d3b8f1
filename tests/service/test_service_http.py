"""``topokit serve`` as a user runs it: a real server process on 127.0.0.1, a real client."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
START_SECONDS = 30
JOB_SECONDS = 90  # the first design of a fresh server may compile its Numba kernels


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _topokit_command() -> list[str]:
    """The ``topokit`` console script of this Python (its -c twin if none is installed)."""
    script = Path(sys.executable).with_name("topokit")
    if script.exists():
        return [str(script)]
    found = shutil.which("topokit")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from topokit.cli import main; sys.exit(main())"]


class Server:
    """A ``topokit serve`` process and a client for it; :meth:`kill` ends it."""

    def __init__(self, db: Path, log: Path, *extra: str):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self._log = open(log, "ab")  # closed in kill
        self.process = subprocess.Popen(
            [*_topokit_command(), "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--db", str(db), *extra],
            stdout=self._log, stderr=subprocess.STDOUT)
        self.client = httpx.Client(base_url=self.base, timeout=10)
        self._wait_healthy(log)

    def _wait_healthy(self, log: Path) -> None:
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


@pytest.fixture
def start_server(tmp_path):
    """Start ``topokit serve`` processes; each is ended when the test ends."""
    servers: list[Server] = []

    def start(db: Path, *extra: str) -> Server:
        server = Server(db, tmp_path / "server.log", *extra)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill()


@pytest.fixture(scope="module")
def toy_json(tmp_path_factory):
    """The bundled toy network as node-link JSON, as ``save_network`` writes it."""
    from topokit.network.examples import load_example
    from topokit.network.formats import save_network

    path = save_network(load_example("toy"), tmp_path_factory.mktemp("net") / "toy.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the request tests: a token, small limits, one worker."""
    folder = tmp_path_factory.mktemp("serve")
    running = Server(folder / "jobs.sqlite", folder / "server.log", "--workers", "1",
                     "--token", TOKEN, "--max-body-mb", "0.05", "--max-devices", "10")
    yield running
    running.kill()


def _wait_ended(client, job_id: str, headers=None) -> dict:
    """Poll a design until it ends (bounded in count and time)."""
    deadline = time.monotonic() + JOB_SECONDS
    for _ in range(900):
        view = client.get(f"/v1/designs/{job_id}", headers=headers).json()
        if view["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return view
        time.sleep(0.1)
    return view


def _assert_one_line_error(response, status: int, field=None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "field"}
    assert body["error"] and "\n" not in body["error"] and "Traceback" not in body["error"]
    if field is not None:
        assert body["field"] == field
    return body


def test_design_of_toy_equals_optimize(server, toy_json):
    from topokit import load_example, optimize

    response = server.client.post("/v1/designs", headers=AUTH,
                                  json={"network": toy_json, "options": {"seed": 3}})
    assert response.status_code == 202
    job = response.json()
    assert job["status"] == "queued"
    assert job["links"] == {"self": f"/v1/designs/{job['id']}"}
    view = _wait_ended(server.client, job["id"], AUTH)
    assert view["status"] == "done", view
    result = view["result"]
    assert result["network"] == "toy" and result["method"] == "optimize"
    assert {"baselines", "stranger_audit", "metrics", "predictor"} <= set(result)
    expected = optimize(load_example("toy"), seed=3).to_dict()["topology"]
    assert result["topology"] == json.loads(json.dumps(expected))
    # A finished job cannot be cancelled.
    _assert_one_line_error(server.client.delete(f"/v1/designs/{job['id']}", headers=AUTH), 409)


def test_idempotency_key_returns_the_same_job(server, toy_json):
    body = {"network": toy_json, "method": "autotag"}
    headers = {**AUTH, "Idempotency-Key": "key-1"}
    first = server.client.post("/v1/designs", headers=headers, json=body)
    again = server.client.post("/v1/designs", headers=headers,
                               content=json.dumps(dict(reversed(body.items()))))
    assert first.status_code == again.status_code == 202
    assert first.json()["id"] == again.json()["id"]
    other = {"network": toy_json, "method": "optimize"}
    _assert_one_line_error(server.client.post("/v1/designs", headers=headers, json=other),
                           409, "Idempotency-Key")
    assert _wait_ended(server.client, first.json()["id"], AUTH)["status"] == "done"


def test_refused_requests_give_one_line_errors(server, toy_json):
    client = server.client
    post = lambda **kwargs: client.post("/v1/designs", headers=AUTH, **kwargs)  # noqa: E731
    _assert_one_line_error(post(content=b'{"network": '), 422, "body")
    empty = _assert_one_line_error(post(json={"network": {"nodes": [], "edges": []}}), 422,
                                   "network")
    assert empty["error"] == "network: 'nodes' is empty; the social graph has no nodes"
    _assert_one_line_error(post(json={"network": toy_json, "method": "magic"}), 422, "method")
    _assert_one_line_error(post(json={"network": toy_json, "options": {"sed": 1}}), 422,
                           "options.sed")
    _assert_one_line_error(post(json={"network": toy_json, "options": {"mixing": "x"}}), 422,
                           "options.mixing")
    big_network = {"nodes": [{"id": k, "compute_time": 1} for k in range(11)], "edges": []}
    _assert_one_line_error(post(json={"network": big_network}), 422, "network")
    _assert_one_line_error(post(content=b" " * 60_000), 413, "body")
    _assert_one_line_error(client.get("/v1/designs/no-such-job", headers=AUTH), 404)
    _assert_one_line_error(client.delete("/v1/designs/no-such-job", headers=AUTH), 404)
    _assert_one_line_error(client.get("/v1/designs/x"), 401, "Authorization")
    _assert_one_line_error(client.get("/v1/version", headers={"Authorization": "Bearer no"}),
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
    _assert_one_line_error(
        server.client.post("/v1/evaluations", headers=AUTH,
                           json={"network": toy_json, "topology": {"edges": [["A", "Z"]]}}),
        422, "topology")


def _dead_owner() -> str:
    """The owner name of a server process that has ended (as a SIGKILLed one has)."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait(10)
    return f"{socket.gethostname()}:{ended.pid}"


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
                     (_dead_owner(), queued[1]))
    assert os.path.exists(db)
    restarted = start_server(db, "--workers", "1")
    for job_id in queued:
        view = _wait_ended(restarted.client, job_id)
        assert view["status"] == "done", view
    assert restarted.client.get(f"/v1/designs/{cancelled}").json()["status"] == "cancelled"
    counts = restarted.client.get("/v1/health").json()["jobs"]
    assert counts["running"] == counts["queued"] == 0
