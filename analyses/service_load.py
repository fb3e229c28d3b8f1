"""The service issue's goals, measured: what ``topokit serve`` adds to the work, and how it
holds under load.

A ``topokit serve`` process is started on a free port of 127.0.0.1 with a fresh job store
(``--db`` in a temporary folder) and the server's default number of workers (no
``--workers``; the number, read from ``/v1/health``, is in the output).  Every request goes
to 127.0.0.1, as the node-link JSON of the bundled toy network (what ``save_network``
writes, the body the service tests send).

- **Throughput**: 40 ``topokit.optimize(load_example("toy"), seed=k)`` calls (k = 0..39)
  in this process, timed after one warm-up call (so that Numba's compilation counts on
  neither side); then, after one warm-up design through the server, 40
  ``POST /v1/designs`` with options ``{"seed": k}`` from one client, sent back to back,
  and ``GET /v1/designs/{id}`` of the oldest unfinished job until all are done: the wall
  time from the first POST to the last job seen done.  Goal: the API's time at most
  1.5x the in-process time.  Every API result's topology must equal the in-process
  design of its seed (a difference is a failure, printed).  A design job also computes
  what ``topokit design -o`` writes (the baselines' metrics and the stranger audit), so
  the ratio counts that work as the service's; to tell it apart from what HTTP and the
  queue add, the same 40 jobs are also run in this process as a worker runs them
  (``topokit.service.worker.run_job``, no server; after one warm-up), a reference
  outside the goal.  The server runs each job in a worker process, so that its HTTP
  loop and the job do not share one GIL: the two can use two cores where the
  in-process loop uses one.  The CPU seconds of both sides are printed beside the wall
  times (the server's: its process and its worker processes, from psutil), so that
  what the service costs in all is on the page too.
- **Held under load**: 20 concurrent clients (threads, one ``httpx.Client`` each), started
  together, submit 2 designs each (seeds 0..39, 40 jobs in all), then each polls its jobs
  with ``GET /v1/designs/{id}`` every 0.1 s until they end.  Every GET's latency is
  recorded.  Goals: no error (a non-2xx answer or an exception), GET latency p95 under
  100 ms, all 40 jobs done with 40 distinct ids (and their topologies those of the
  in-process designs).

Every request has a timeout and the whole run an overall deadline; the server process is
always ended (its log's tail is printed if something fails).

Run (from the repository root): python -m analyses.service_load [--quick]
About half a minute on 2 cores (--quick: 8 designs and 4 clients, about 10 s).  Writes
analyses/out/service_load.{json,png} (--quick: service_load_quick.{json,png}).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from analyses._common import machine, out_path, run_quick, write_json
from topokit import __version__, load_example, optimize
from topokit._io import dumps_json
from topokit.testing.processes import free_port, topokit_command

#: (designs, concurrent clients) of a full run and of --quick.
FULL = (40, 20)
QUICK = (8, 4)
#: The API may take at most this many times the in-process time.
SLOWER_AT_MOST = 1.5
#: The goal for the GET latency's 95th percentile under load, in ms.
P95_GOAL_MS = 100.0
#: Seconds a client waits for one answer.
REQUEST_TIMEOUT = 10.0
#: Seconds the server has to answer /v1/health after it starts.
START_SECONDS = 60.0
#: Seconds the whole run may take (start, warm-ups, both measurements).
DEADLINE_SECONDS = {False: 900.0, True: 100.0}
#: Seconds between two polls of the throughput client (one GET at a time) and of each
#: client under load.
THROUGHPUT_POLL = 0.02
LOAD_POLL = 0.1
HOST = "127.0.0.1"
ENDED = ("done", "failed", "cancelled")


class DeadlineExceeded(RuntimeError):
    """The run passed its overall deadline."""


class Deadline:
    """The overall deadline of the run."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def check(self, doing: str) -> None:
        if self.remaining() <= 0:
            raise DeadlineExceeded(f"service_load: gave up after {self.seconds:g} s (the overall "
                                   f"deadline) while {doing}")


class Server:
    """A ``topokit serve`` process on a free port of 127.0.0.1 with its default workers."""

    def __init__(self, folder: Path, deadline: Deadline):
        import httpx

        self.port = free_port(HOST)
        self.base = f"http://{HOST}:{self.port}"
        self.log_path = folder / "server.log"
        self.args = ["serve", "--host", HOST, "--port", str(self.port),
                     "--db", str(folder / "jobs.sqlite")]
        self._log = open(self.log_path, "ab")  # closed in stop
        self.process = subprocess.Popen([*topokit_command(), *self.args],
                                        stdout=self._log, stderr=subprocess.STDOUT)
        self.health = self._wait_healthy(httpx, deadline)

    def _wait_healthy(self, httpx, deadline: Deadline) -> dict[str, Any]:
        until = time.monotonic() + min(START_SECONDS, max(deadline.remaining(), 0.0))
        with httpx.Client(base_url=self.base, timeout=REQUEST_TIMEOUT) as client:
            while time.monotonic() < until:
                if self.process.poll() is not None:
                    raise RuntimeError(f"topokit serve ended with code {self.process.returncode} "
                                       "before it answered /v1/health")
                try:
                    response = client.get("/v1/health")
                    if response.status_code == 200:
                        return response.json()
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
        deadline.check("waiting for topokit serve to start")
        raise RuntimeError(f"topokit serve did not answer /v1/health within {START_SECONDS:g} s")

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no server log)"

    def stop(self) -> int | None:
        """End the process (SIGTERM, then SIGKILL after 10 s); its exit code."""
        try:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(10)
        finally:
            self._log.close()
        return self.process.returncode


def toy_body(folder: Path) -> dict[str, Any]:
    """The toy network as node-link JSON, as ``save_network`` writes it (the tests' body)."""
    from topokit.network.formats import save_network

    path = save_network(load_example("toy"), folder / "toy.json")
    return json.loads(path.read_text())


def plain(value: Any) -> Any:
    """``value`` as the service's JSON gives it back (strict JSON, decoded)."""
    return json.loads(dumps_json(value))


# ---------------------------------------------------------------------------------------------
# Throughput
# ---------------------------------------------------------------------------------------------


def in_process(n: int, deadline: Deadline
               ) -> tuple[float, float, list[float], dict[int, Any]]:
    """(wall seconds of the n calls, their CPU seconds, each call's seconds, seed -> topology
    as JSON)."""
    optimize(load_example("toy"), seed=0)  # warm-up: Numba's compilation and first imports
    topologies, each = {}, []
    cpu = time.process_time()
    started = time.perf_counter()
    for k in range(n):
        deadline.check(f"running optimize in process (seed {k})")
        t = time.perf_counter()
        topologies[k] = optimize(load_example("toy"), seed=k).to_dict()["topology"]
        each.append(time.perf_counter() - t)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    return wall, cpu, each, {k: plain(topology) for k, topology in topologies.items()}


def jobs_in_process(network: dict[str, Any], n: int, deadline: Deadline) -> float:
    """Wall seconds of the n design jobs run here as a worker runs them (no server)."""
    from topokit.service.worker import run_job

    def job(seed: int) -> None:
        _, error = run_job("design", {"network": network, "options": {"seed": seed}})
        if error is not None:
            raise RuntimeError(f"the design job of seed {seed} failed in process: {error}")

    job(0)  # warm-up
    started = time.perf_counter()
    for k in range(n):
        deadline.check(f"running the design jobs in process (seed {k})")
        job(k)
    return time.perf_counter() - started


def _checked_json(response, what: str) -> dict[str, Any]:
    if not response.is_success:
        raise RuntimeError(f"{what}: HTTP {response.status_code}: {response.text[:300]}")
    return response.json()


def _submit(client, network: dict[str, Any], seed: int) -> str:
    response = client.post("/v1/designs", json={"network": network, "options": {"seed": seed}})
    return _checked_json(response, f"POST /v1/designs (seed {seed})")["id"]


def _wait_all(client, ids: list[str], deadline: Deadline, what: str) -> dict[str, dict]:
    """Poll the oldest unfinished job until every job of ``ids`` has ended; id -> its view."""
    views: dict[str, dict] = {}
    pending = list(ids)
    while pending:
        deadline.check(f"waiting for {what} ({len(pending)} of {len(ids)} not done)")
        view = _checked_json(client.get(f"/v1/designs/{pending[0]}"), f"GET {what}")
        if view["status"] in ENDED:
            views[pending.pop(0)] = view
        else:
            time.sleep(THROUGHPUT_POLL)
    return views


def server_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of the server process and its worker processes so far."""
    import psutil

    server = psutil.Process(pid)
    total = sum(server.cpu_times()[:2])
    for child in server.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return total


def memory_mb(pid: int) -> dict[str, Any]:
    """Resident and unique megabytes of the server process and of each worker process."""
    import psutil

    def of(process) -> dict[str, float]:
        full = process.memory_full_info()
        return {"rss_mb": full.rss / 1e6, "uss_mb": full.uss / 1e6}

    server = psutil.Process(pid)
    workers = [child for child in server.children(recursive=True)
               if "spawn_main" in " ".join(child.cmdline())]
    return {"server": of(server), "workers": [of(worker) for worker in workers]}


def through_api(base: str, pid: int, network: dict[str, Any], n: int,
                deadline: Deadline) -> tuple[float, float, float, dict[int, dict]]:
    """(warm-up seconds, wall seconds of the n designs, the server's CPU seconds in them,
    seed -> the job's final view)."""
    import httpx

    with httpx.Client(base_url=base, timeout=REQUEST_TIMEOUT) as client:
        started = time.perf_counter()
        warm = _submit(client, network, 0)
        view = _wait_all(client, [warm], deadline, "the warm-up design")[warm]
        if view["status"] != "done":
            raise RuntimeError(f"the warm-up design ended {view['status']}: {view.get('error')}")
        warm_up = time.perf_counter() - started
        cpu = server_cpu_seconds(pid)
        started = time.perf_counter()
        ids = [_submit(client, network, k) for k in range(n)]
        views = _wait_all(client, ids, deadline, "the throughput designs")
        wall = time.perf_counter() - started
        cpu = server_cpu_seconds(pid) - cpu
    return warm_up, wall, cpu, {k: views[job_id] for k, job_id in enumerate(ids)}


def mismatches(views: dict[int, dict], expected: dict[int, Any], what: str) -> list[str]:
    """One line per job that did not end done with the in-process topology of its seed."""
    found = []
    for seed, view in sorted(views.items()):
        if view.get("status") != "done":
            found.append(f"{what}: seed {seed}, job {view.get('id')}: {view.get('status')} "
                         f"({view.get('error')})")
        elif view["result"].get("topology") != expected[seed]:
            got = view["result"].get("topology") or {}
            found.append(f"{what}: seed {seed}, job {view['id']}: topology differs from "
                         f"optimize's (API edges {got.get('edges')}, dp {got.get('dp_devices')}; "
                         f"in process edges {expected[seed]['edges']}, "
                         f"dp {expected[seed]['dp_devices']})")
    return found


# ---------------------------------------------------------------------------------------------
# Held under load
# ---------------------------------------------------------------------------------------------


@dataclass
class ClientRecord:
    """What one load client saw: its jobs (seed -> id), final views, latencies, errors."""

    jobs: dict[int, str] = field(default_factory=dict)
    views: dict[int, dict] = field(default_factory=dict)
    get_ms: list[float] = field(default_factory=list)
    post_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _timed(call, record: ClientRecord, latencies: list[float], what: str):
    """``call()``'s JSON (None after an error, which is recorded), its latency recorded."""
    import httpx

    started = time.perf_counter()
    try:
        response = call()
    except httpx.HTTPError as exc:
        record.errors.append(f"{what}: {type(exc).__name__}: {exc}")
        return None
    finally:
        latencies.append(1000 * (time.perf_counter() - started))
    if not response.is_success:
        record.errors.append(f"{what}: HTTP {response.status_code}: {response.text[:200]}")
        return None
    try:
        return response.json()
    except ValueError as exc:
        record.errors.append(f"{what}: not JSON: {exc}")
        return None


def load_client(base: str, network: dict[str, Any], seeds: list[int], start: threading.Barrier,
                deadline: Deadline, record: ClientRecord) -> None:
    """Submit a design per seed, then poll them every LOAD_POLL seconds until they end."""
    import httpx

    try:
        with httpx.Client(base_url=base, timeout=REQUEST_TIMEOUT) as client:
            start.wait(timeout=max(deadline.remaining(), 0.0))
            for seed in seeds:
                body = {"network": network, "options": {"seed": seed}}
                view = _timed(lambda body=body: client.post("/v1/designs", json=body), record,
                              record.post_ms, f"POST seed {seed}")
                if view is not None:
                    record.jobs[seed] = view["id"]
            pending = dict(record.jobs)
            while pending and deadline.remaining() > 0:
                for seed, job_id in list(pending.items()):
                    view = _timed(lambda job_id=job_id: client.get(f"/v1/designs/{job_id}"),
                                  record, record.get_ms, f"GET seed {seed}")
                    if view is not None and view.get("status") in ENDED:
                        record.views[seed] = view
                        del pending[seed]
                if pending:
                    time.sleep(LOAD_POLL)
            if pending:
                record.errors.append(f"deadline passed with {len(pending)} job(s) not ended")
    except Exception as exc:  # a client's failure is counted, not lost in its thread
        record.errors.append(f"client: {type(exc).__name__}: {exc}")


def under_load(base: str, network: dict[str, Any], n: int, clients: int,
               deadline: Deadline) -> tuple[float, list[ClientRecord]]:
    """(wall seconds from the start to the last client's end, each client's record)."""
    per_client = n // clients
    records = [ClientRecord() for _ in range(clients)]
    start = threading.Barrier(clients + 1)
    threads = [threading.Thread(target=load_client, daemon=True, name=f"load-client-{c}",
                                args=(base, network,
                                      list(range(c * per_client, (c + 1) * per_client)),
                                      start, deadline, record))
               for c, record in enumerate(records)]
    for thread in threads:
        thread.start()
    start.wait(timeout=max(deadline.remaining(), 1.0))
    started = time.perf_counter()
    for thread in threads:
        thread.join(max(deadline.remaining(), 0.0) + 2 * REQUEST_TIMEOUT)
    alive = sum(thread.is_alive() for thread in threads)
    if alive:
        raise DeadlineExceeded(f"service_load: {alive} load client(s) still running after the "
                               f"overall deadline of {deadline.seconds:g} s")
    return time.perf_counter() - started, records


def percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


def figure(get_ms: list[float], p95: float | None, inproc: float, jobs: float, api: float):
    """GET latencies under load (p95 and the goal marked); in-process against API time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8),
                                      gridspec_kw={"width_ratios": [2.2, 1]})
    if get_ms:
        left.hist(get_ms, bins=min(60, max(10, len(get_ms) // 20)), color="tab:blue")
    if p95 is not None:
        left.axvline(p95, color="k", lw=1.2, label=f"p95 {p95:.1f} ms")
    left.axvline(P95_GOAL_MS, color="r", lw=1.2, ls="--", label=f"goal p95 < {P95_GOAL_MS:g} ms")
    left.set_xlabel("GET /v1/designs/{id} latency under load (ms)")
    left.set_ylabel("requests")
    left.legend(fontsize=8)
    right.bar(["optimize\nin process", "API", "design jobs\nin process"], [inproc, api, jobs],
              color=["tab:gray", "tab:blue", "silver"])
    right.axhline(SLOWER_AT_MOST * inproc, color="r", lw=1.2, ls="--",
                  label=f"{SLOWER_AT_MOST:g}x in process")
    right.set_ylabel("wall time of the designs (s)")
    right.set_ylim(0, 1.3 * max(inproc * SLOWER_AT_MOST, jobs, api))
    right.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def main(quick: bool) -> None:
    import httpx  # noqa: F401  (the serve extra: fail here, before anything runs)

    started = time.perf_counter()
    n, clients = QUICK if quick else FULL
    deadline = Deadline(DEADLINE_SECONDS[quick])
    load_before = os.getloadavg()
    print(f"in process: {n} optimize calls on the toy network ...", flush=True)
    inproc_wall, inproc_cpu, inproc_each, expected = in_process(n, deadline)
    with tempfile.TemporaryDirectory(prefix="topokit-service-load-") as folder:
        network = toy_body(Path(folder))
        print(f"in process: {n} design jobs as a worker runs them (a reference) ...", flush=True)
        jobs_wall = jobs_in_process(network, n, deadline)
        server = Server(Path(folder), deadline)
        try:
            workers = server.health["workers"]
            print(f"server: {server.base}, {workers} worker(s) (the default)", flush=True)
            print(f"through the API: {n} designs ...", flush=True)
            warm_up, api_wall, api_cpu, api_views = through_api(
                server.base, server.process.pid, network, n, deadline)
            print(f"under load: {clients} clients, {n} designs ...", flush=True)
            load_wall, records = under_load(server.base, network, n, clients, deadline)
            health = httpx.get(f"{server.base}/v1/health", timeout=REQUEST_TIMEOUT).json()
            memory = memory_mb(server.process.pid)
        except BaseException:
            print(f"server log (tail):\n{server.log_tail()}", file=sys.stderr)
            raise
        finally:
            exit_code = server.stop()
    load_after = os.getloadavg()

    ratio = api_wall / inproc_wall
    throughput_failures = mismatches(api_views, expected, "throughput")
    load_views = {seed: view for record in records for seed, view in record.views.items()}
    load_ids = [job_id for record in records for job_id in record.jobs.values()]
    load_failures = mismatches(load_views, expected, "under load")
    missing = sorted(set(range(n)) - set(load_views))
    errors = [error for record in records for error in record.errors]
    get_ms = [ms for record in records for ms in record.get_ms]
    post_ms = [ms for record in records for ms in record.post_ms]
    p50, p95, worst = percentile(get_ms, 50), percentile(get_ms, 95), max(get_ms, default=None)
    all_done = (len(load_views) == n and not missing
                and all(view["status"] == "done" for view in load_views.values()))
    goals = {
        "throughput_ratio_at_most": SLOWER_AT_MOST,
        "throughput_ratio_met": bool(ratio <= SLOWER_AT_MOST),
        "throughput_topologies_match": not throughput_failures,
        "load_no_errors": not errors,
        "load_p95_under_ms": P95_GOAL_MS,
        "load_p95_met": p95 is not None and p95 < P95_GOAL_MS,
        "load_all_done": all_done,
        "load_distinct_ids": len(load_ids) == n and len(set(load_ids)) == n,
        "load_topologies_match": not load_failures,
    }
    goals["all_met"] = all(value for key, value in goals.items() if key.endswith(
        ("_met", "_match", "_errors", "_done", "_ids")))

    stem = "service_load_quick" if quick else "service_load"
    figure(get_ms, p95, inproc_wall, jobs_wall, api_wall).savefig(out_path(f"{stem}.png"), dpi=120)
    round_ms = lambda values: [round(v, 3) for v in values]  # noqa: E731
    write_json(f"{stem}.json", {
        "command": f"python -m analyses.service_load{' --quick' if quick else ''}",
        "topokit_version": __version__, "date": date.today().isoformat(),
        "machine": machine(),
        "load_average": {"before": list(load_before), "after": list(load_after)},
        "server": {"command": ["topokit", *server.args[:-1], "<temporary folder>/jobs.sqlite"],
                   "workers": workers,
                   "workers_source": "the server's default (topokit serve without --workers)",
                   "host": HOST, "exit_code": exit_code, "final_health": health,
                   "memory_after_load": memory},
        "settings": {"designs": n, "clients": clients, "designs_per_client": n // clients,
                     "network": "toy (node-link JSON, as save_network writes it)",
                     "options": "{'seed': k}, k = 0 .. designs - 1",
                     "throughput_poll_seconds": THROUGHPUT_POLL,
                     "load_poll_seconds": LOAD_POLL, "request_timeout_seconds": REQUEST_TIMEOUT,
                     "deadline_seconds": deadline.seconds},
        "throughput": {"in_process_seconds": inproc_wall,
                       "in_process_cpu_seconds": inproc_cpu,
                       "api_server_cpu_seconds": api_cpu,
                       "cpu_note": "CPU seconds (user + system) of this process in the "
                                   "optimize calls, and of the server process with its "
                                   "worker processes in the API's designs (psutil)",
                       "in_process_call_seconds": inproc_each,
                       "api_warm_up_seconds": warm_up, "api_seconds": api_wall,
                       "ratio": ratio, "failures": throughput_failures,
                       "reference_jobs_in_process_seconds": jobs_wall,
                       "reference_note": "the same design jobs run in this process as a worker "
                                         "runs them (run_job: parsing, optimize with its "
                                         "references, the baselines' metrics, the stranger "
                                         "audit), no HTTP, no queue; not part of the goal",
                       "api_over_jobs_in_process": api_wall / jobs_wall},
        "load": {"seconds": load_wall, "jobs": len(load_ids), "distinct_ids": len(set(load_ids)),
                 "done": sum(view["status"] == "done" for view in load_views.values()),
                 "not_ended": missing, "errors": len(errors), "error_messages": errors[:50],
                 "gets": len(get_ms), "get_p50_ms": p50, "get_p95_ms": p95, "get_max_ms": worst,
                 "get_mean_ms": float(np.mean(get_ms)) if get_ms else None,
                 "posts": len(post_ms), "post_p50_ms": percentile(post_ms, 50),
                 "post_p95_ms": percentile(post_ms, 95),
                 "post_max_ms": max(post_ms, default=None),
                 "failures": load_failures, "get_latencies_ms": round_ms(get_ms),
                 "post_latencies_ms": round_ms(post_ms)},
        "goals": goals, "seconds": round(time.perf_counter() - started, 1)})

    print(f"server workers: {workers} (the default of topokit serve)")
    print(f"throughput: in process {inproc_wall:.3f} s, API {api_wall:.3f} s "
          f"(warm-up design {warm_up:.2f} s) for {n} designs; ratio API / in process "
          f"{ratio:.2f} -> {'<=' if goals['throughput_ratio_met'] else '>'} {SLOWER_AT_MOST:g}: "
          f"{'met' if goals['throughput_ratio_met'] else 'NOT met'}")
    print(f"  reference: the same design jobs in process (run_job, no HTTP) {jobs_wall:.3f} s; "
          f"API / those {api_wall / jobs_wall:.2f}")
    print(f"  CPU seconds: in process {inproc_cpu:.3f}, the server and its worker processes "
          f"{api_cpu:.3f} ({api_cpu / inproc_cpu:.2f}x; the server's HTTP loop and the jobs "
          "run on two cores)")
    for line in throughput_failures + load_failures:
        print("FAILURE", line)
    print(f"topologies equal to optimize's: throughput {n - len(throughput_failures)}/{n}, "
          f"under load {len(load_views) - len(load_failures)}/{n}")
    print(f"under load ({clients} clients, {n} designs, {load_wall:.2f} s): {len(get_ms)} GETs, "
          f"{len(errors)} errors; GET latency p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
          f"max {worst:.1f} ms (goal p95 < {P95_GOAL_MS:g} ms: "
          f"{'met' if goals['load_p95_met'] else 'NOT met'})" if get_ms else
          f"under load: no GET answered; {len(errors)} errors")
    for error in errors[:10]:
        print("ERROR", error)
    for k, worker in enumerate(memory["workers"]):
        print(f"memory after the load: server {memory['server']['rss_mb']:.0f} MB resident; "
              f"worker process {k} {worker['rss_mb']:.0f} MB resident, "
              f"{worker['uss_mb']:.0f} MB its own")
    print(f"jobs under load: {len(load_ids)} submitted, {len(set(load_ids))} distinct ids, "
          f"{sum(v['status'] == 'done' for v in load_views.values())} done"
          f"{f', not ended: seeds {missing}' if missing else ''}")
    print(f"all goals met: {goals['all_met']}; wrote {out_path(stem + '.json')} and "
          f"{out_path(stem + '.png')} ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    try:
        run_quick(main)
    except DeadlineExceeded as exc:
        sys.exit(str(exc))
