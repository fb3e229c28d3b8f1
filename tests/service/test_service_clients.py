"""Twenty concurrent clients against two real servers sharing one store: 40 designs, all
done, each run once, each equal to ``topokit.optimize`` of its seed."""

from __future__ import annotations

import json
import threading
import time

import httpx
from serve_helpers import JOB_SECONDS

from topokit import load_example, optimize
from topokit._io import dumps_json

CLIENTS = 20
DESIGNS_PER_CLIENT = 2
#: Seconds between two polls of one client.
POLL_SECONDS = 0.1


def _client(base: str, network: dict, seeds: list[int], start: threading.Barrier,
            views: dict[int, dict], errors: list[str]) -> None:
    """Submit a design per seed, then poll them until they end (bounded in time)."""
    try:
        with httpx.Client(base_url=base, timeout=10) as client:
            start.wait(30)
            jobs = {}
            for seed in seeds:
                response = client.post("/v1/designs",
                                       json={"network": network, "options": {"seed": seed}})
                if response.status_code != 202:
                    errors.append(f"POST seed {seed}: {response.status_code} {response.text}")
                    return
                jobs[seed] = response.json()["id"]
            deadline = time.monotonic() + JOB_SECONDS
            while jobs and time.monotonic() < deadline:
                for seed, job_id in list(jobs.items()):
                    view = client.get(f"/v1/designs/{job_id}").json()
                    if view["status"] not in ("queued", "running"):
                        views[seed] = view
                        del jobs[seed]
                time.sleep(POLL_SECONDS)
            if jobs:
                errors.append(f"seeds {sorted(jobs)} not ended within {JOB_SECONDS} s")
    except Exception as exc:  # counted, not lost in the thread
        errors.append(f"{type(exc).__name__}: {exc}")


def test_twenty_clients_two_servers_one_store(start_server, tmp_path, toy_json):
    db = tmp_path / "jobs.sqlite"
    servers = [start_server(db, "--workers", "1") for _ in range(2)]
    views: dict[int, dict] = {}
    errors: list[str] = []
    start = threading.Barrier(CLIENTS)
    threads = [threading.Thread(
        target=_client, daemon=True,
        args=(servers[c % 2].base, toy_json,
              list(range(c * DESIGNS_PER_CLIENT, (c + 1) * DESIGNS_PER_CLIENT)),
              start, views, errors)) for c in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOB_SECONDS + 60)
    assert not errors, errors
    n = CLIENTS * DESIGNS_PER_CLIENT
    assert sorted(views) == list(range(n))
    assert len({view["id"] for view in views.values()}) == n
    assert all(view["status"] == "done" for view in views.values()), views
    # Run once: neither server claimed a job the other ran, and none was run again.
    assert all(view["attempts"] == 1 for view in views.values())
    net = load_example("toy")
    for seed, view in views.items():
        expected = optimize(net, seed=seed).to_dict()["topology"]
        assert view["result"]["topology"] == json.loads(dumps_json(expected)), seed
