"""The SQLite job store of ``topokit serve``: transitions, claims, recovery."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest

from topokit.service.store import IdempotencyConflict, JobStore, this_owner


def _dead_owner() -> str:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait(10)
    return f"{socket.gethostname()}:{ended.pid}"


def test_a_job_goes_queued_running_done(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    job, new = store.submit("design", {"a": 1}, digest="d")
    assert new and job.status == "queued" and job.attempts == 0
    claimed = store.claim("me")
    assert claimed.id == job.id and claimed.status == "running" and claimed.attempts == 1
    assert store.claim("me") is None
    assert not store.finish(job.id, "someone else", result='{"x": 1}')
    assert store.finish(job.id, "me", result='{"x": 1}')
    done = store.get(job.id)
    assert done.status == "done" and done.result == {"x": 1} and done.request == {"a": 1}
    assert store.get("missing") is None


def test_a_failed_job_keeps_its_error(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    job, _ = store.submit("design", {}, digest="d")
    store.claim("me")
    store.finish(job.id, "me", error="network: 'nodes' is empty")
    assert store.get(job.id).status == "failed"
    assert store.get(job.id).error == "network: 'nodes' is empty"


def test_only_a_queued_job_is_cancelled(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    first, _ = store.submit("design", {}, digest="1")
    second, _ = store.submit("design", {}, digest="2")
    assert store.cancel(second.id).status == "cancelled"
    assert store.claim("me").id == first.id
    assert store.cancel(first.id).status == "running"
    assert store.cancel("missing") is None
    assert store.counts() == {"queued": 0, "running": 1, "done": 0, "failed": 0,
                              "cancelled": 1}


def test_an_idempotency_key_names_one_request(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    job, new = store.submit("design", {"a": 1}, digest="d", idempotency_key="k")
    again, new_again = store.submit("design", {"a": 1}, digest="d", idempotency_key="k")
    assert new and not new_again and again.id == job.id
    with pytest.raises(IdempotencyConflict, match="'k' was used for a different request"):
        store.submit("design", {"a": 2}, digest="e", idempotency_key="k")


def test_two_stores_on_one_file_never_claim_one_job_twice(tmp_path):
    path = tmp_path / "jobs.sqlite"
    stores = [JobStore(path), JobStore(path)]
    for k in range(20):
        stores[0].submit("design", {"k": k}, digest=str(k))
    claimed: list[list[str]] = [[], []]

    def drain(k: int) -> None:
        for _ in range(40):
            job = stores[k].claim(f"owner-{k}")
            if job is None:
                return
            claimed[k].append(job.id)

    threads = [threading.Thread(target=drain, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    ids = claimed[0] + claimed[1]
    assert len(ids) == len(set(ids)) == 20


def test_recovery_requeues_a_dead_servers_jobs_then_gives_up(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite", max_attempts=2)
    job, _ = store.submit("design", {}, digest="d")
    alive, _ = store.submit("design", {}, digest="e")
    store.claim(_dead_owner())
    store.claim(this_owner())  # this process runs it: left alone
    assert store.recover() == {"requeued": 1, "failed": 0}
    assert store.get(job.id).status == "queued"
    assert store.get(alive.id).status == "running"
    assert store.claim(_dead_owner()).id == job.id  # attempt 2, and its server dies too
    assert store.recover() == {"requeued": 0, "failed": 1}
    failed = store.get(job.id)
    assert failed.status == "failed" and "2 times" in failed.error
