"""The SQLite job store of ``topokit serve``: transitions, claims, recovery."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from serve_helpers import VERSION_0_SCHEMA

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



def _run_as(store: JobStore, owner: str, updated: float) -> str:
    """A job running on ``owner`` since its last renewal at ``updated`` (seconds since epoch)."""
    job, _ = store.submit("design", {}, digest=owner)
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE jobs SET status = 'running', owner = ?, attempts = 1, "
                     "updated = ? WHERE id = ?", (owner, updated, job.id))
    return job.id


def test_a_job_whose_owner_stops_renewing_is_recovered_whoever_the_owner_is(tmp_path):
    # Another host's server cannot be asked whether it runs; nor can a process id the
    # system has given to another program since: their lease tells.
    store = JobStore(tmp_path / "jobs.sqlite", lease_seconds=60)
    now = time.time()
    lapsed = {_run_as(store, "elsewhere.example:4242", now - 61),
              _run_as(store, this_owner(), now - 61)}  # this pid, but no renewal
    renewed = {_run_as(store, "elsewhere.example:4343", now - 30),
               _run_as(store, this_owner(), now - 30)}
    assert store.recover() == {"requeued": 2, "failed": 0}
    assert {job for job in lapsed | renewed if store.get(job).status == "queued"} == lapsed
    assert all(store.get(job).status == "running" for job in renewed)


def test_a_heartbeat_renews_only_its_owners_running_jobs(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite", lease_seconds=60)
    old = time.time() - 61
    mine, theirs = _run_as(store, "me:1", old), _run_as(store, "elsewhere.example:1", old)
    queued, _ = store.submit("design", {}, digest="q")
    assert store.heartbeat("me:1") == 1
    assert store.get(mine).updated > old + 60 and store.get(theirs).updated == old
    assert store.get(queued.id).updated == queued.updated
    assert store.recover() == {"requeued": 1, "failed": 0}  # theirs, not mine
    assert store.get(mine).status == "running" and store.get(theirs).status == "queued"


def test_a_serving_pool_renews_its_claim_while_it_runs(tmp_path):
    from topokit.service.worker import WorkerPool

    store = JobStore(tmp_path / "jobs.sqlite", lease_seconds=60)
    pool = WorkerPool(store, 1, heartbeat_seconds=0.05)
    held = _run_as(store, pool.owner, time.time() - 59)  # as if its worker ran it
    pool.start()
    try:
        deadline = time.monotonic() + 30
        while store.get(held).updated < time.time() - 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.get(held).updated >= time.time() - 5
        assert store.recover() == {"requeued": 0, "failed": 0}
    finally:
        pool.stop()
    assert not any(thread.is_alive() for thread in pool._threads)


def _columns(path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[1] for row in conn.execute("PRAGMA table_info(jobs)")]


def _user_version(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def test_progress_is_recorded_only_while_its_owner_runs_the_job(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    job, _ = store.submit("design", {}, digest="d")
    report = {"done": 1, "total": 3, "phase": "search"}
    assert store.get(job.id).progress is None
    assert not store.record_progress(job.id, "me", report)  # queued: nothing runs yet
    store.claim("me")
    assert not store.record_progress(job.id, "someone else", report)
    assert store.get(job.id).progress is None
    assert store.record_progress(job.id, "me", report)
    assert store.get(job.id).progress == report
    assert store.finish(job.id, "me", result="{}")  # no final report given: the last stays
    assert store.get(job.id).progress == report
    assert not store.record_progress(job.id, "me", {"done": 2, "total": 3, "phase": "search"})
    assert store.get(job.id).progress == report
    assert not store.record_progress("missing", "me", report)


def test_the_final_report_replaces_a_throttled_one_and_a_new_run_starts_afresh(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    job, _ = store.submit("design", {}, digest="d")
    store.claim("me")
    store.record_progress(job.id, "me", {"done": 1, "total": 3, "phase": "search"})
    final = {"done": 3, "total": 3, "phase": "search"}
    assert store.finish(job.id, "me", result="{}", progress=final)
    assert store.get(job.id).progress == final
    # A job of a killed server runs again from the start: its old report is gone.
    dead = _dead_owner()
    again, _ = store.submit("design", {"k": 1}, digest="e")
    store.claim(dead)
    store.record_progress(again.id, dead, {"done": 2, "total": 3, "phase": "search"})
    assert store.recover() == {"requeued": 1, "failed": 0}
    assert store.get(again.id).progress is None
    store.record_progress(again.id, dead, {"done": 2, "total": 3, "phase": "search"})
    assert store.claim("me").progress is None


def test_a_version_0_store_gains_progress_and_keeps_its_jobs(tmp_path):
    db = tmp_path / "jobs.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(VERSION_0_SCHEMA)
        for job_id, status, result in (("q", "queued", None), ("r", "running", None),
                                       ("d", "done", '{"x": 1}')):
            conn.execute("INSERT INTO jobs (id, kind, status, request, request_digest, "
                         "result, owner, attempts, created, updated) "
                         "VALUES (?, 'design', ?, '{}', ?, ?, 'me', 1, 1.0, 1.0)",
                         (job_id, status, job_id, result))
    assert "progress" not in _columns(db) and _user_version(db) == 0
    store = JobStore(db)
    assert _columns(db)[-1] == "progress" and _user_version(db) == 1
    assert store.get("d").result == {"x": 1} and store.get("d").progress is None
    assert store.get("q").status == "queued"
    report = {"done": 1, "total": 2, "phase": "search"}
    assert store.record_progress("r", "me", report)
    assert JobStore(db).get("r").progress == report  # opening again changes nothing
    assert _columns(db).count("progress") == 1


def test_old_stores_open_from_two_servers_at_once_and_new_ones_open_as_they_are(tmp_path):
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as conn:
        conn.executescript(VERSION_0_SCHEMA)
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            JobStore(old)
        except BaseException as exc:  # a second ALTER TABLE would be "duplicate column"
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and _columns(old).count("progress") == 1
    # A store this code wrote opens; a newer topokit's version number is kept.
    new = tmp_path / "new.sqlite"
    JobStore(new)
    assert "progress" in _columns(new) and _user_version(new) == 1
    with sqlite3.connect(new) as conn:
        conn.execute("PRAGMA user_version = 7")
    JobStore(new).submit("design", {}, digest="d")
    assert _user_version(new) == 7


def test_progress_reports_are_throttled_and_a_short_job_sends_none():
    from topokit.service.worker import ProgressThrottle

    sent: list[dict] = []
    short = ProgressThrottle(sent.append, "search", seconds=60)
    for done in range(1, 101):
        short(done, 100)
    assert sent == []  # the worker records the final report when the job finishes
    assert short.last == {"done": 100, "total": 100, "phase": "search"}

    throttle = ProgressThrottle(sent.append, "search", seconds=0.5)
    time.sleep(0.6)  # a job running longer than the throttle's interval
    for done in range(1, 101):
        throttle(done, 100)
    # The first report once the interval has passed, then nothing until the phase completes.
    assert [report["done"] for report in sent] == [1, 100]

    def broken(report: dict) -> None:
        raise OSError("disk full")

    failing = ProgressThrottle(broken, "audit", seconds=0)
    failing(1, 2)  # logged, not raised: a report never fails its job
    assert failing.last == {"done": 1, "total": 2, "phase": "audit"}


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux's /proc")
def test_a_killed_server_not_yet_reaped_counts_as_dead(tmp_path):
    """A SIGKILLed server is a zombie until its parent reaps it; its jobs are recovered."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # ended, and not waited for: a zombie
            stat = open(f"/proc/{ended.pid}/stat").read()
            if stat.rpartition(")")[2].split()[0] == "Z":
                break
            time.sleep(0.05)
        store = JobStore(tmp_path / "jobs.sqlite")
        job, _ = store.submit("design", {}, digest="d")
        store.claim(f"{socket.gethostname()}:{ended.pid}")
        assert store.recover() == {"requeued": 1, "failed": 0}
        assert store.get(job.id).status == "queued"
    finally:
        ended.wait(10)


def test_a_serving_pool_recovers_the_jobs_of_a_server_that_dies_later(tmp_path, toy_json):
    """Recovery is not only at start: a server sharing the store may die at any time."""
    from topokit.service.worker import WorkerPool

    store = JobStore(tmp_path / "jobs.sqlite")
    pool = WorkerPool(store, 1, recover_seconds=0.2)
    pool.start()
    try:
        # Another server on the store took this job from the queue, then was killed.
        request = json.dumps({"network": toy_json, "method": "autotag"})
        with sqlite3.connect(store.path) as conn:
            conn.execute("INSERT INTO jobs (id, kind, status, request, request_digest, owner, "
                         "attempts, created, updated) VALUES ('theirs', 'design', 'running', "
                         "?, 'd', ?, 1, 1.0, 1.0)", (request, _dead_owner()))
        deadline = time.monotonic() + 90
        while store.get("theirs").status != "done" and time.monotonic() < deadline:
            time.sleep(0.1)
        done = store.get("theirs")
        assert done.status == "done" and done.attempts == 2, done.error
    finally:
        pool.stop()


def test_a_pool_without_processes_runs_its_jobs_in_its_threads(tmp_path, toy_json):
    from topokit.service.worker import WorkerPool

    store = JobStore(tmp_path / "jobs.sqlite")
    pool = WorkerPool(store, 1, processes=False)
    job, _ = store.submit("design", {"network": toy_json}, digest="d")
    pool.start()
    try:
        deadline = time.monotonic() + 90
        while store.get(job.id).status in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.05)
        done = store.get(job.id)
        assert done.status == "done", done.error
        assert pool._executor is None  # no worker process was started
    finally:
        pool.stop()
