"""The background workers: threads that claim queued jobs from the store and run them,
each job in a worker process.

A design job runs :func:`topokit.optimize` or :func:`topokit.autotag` with its
request's options, and its result is the JSON ``topokit design -o`` writes; an
audit job runs :func:`topokit.privacy_audit`, and its result is the JSON
``topokit audit --json`` prints.  A result is recorded in one transaction with
the job's new status.

A running job reports its progress, ``{"done", "total", "phase"}``: an
optimize design after each search and an autotag design after each DP budget
(phase ``"search"``), an audit after each observer (phase ``"audit"``).  Reports
are throttled (:class:`ProgressThrottle`) before they reach the store.

A worker thread claims a job, hands its computation to a process of the
pool's :class:`~concurrent.futures.ProcessPoolExecutor`
(:func:`run_job_in_process`, ``workers`` processes) and records its end.  A
job is Python-bound: in the server's own threads it would hold the GIL that
the HTTP loop needs, and ``workers`` threads would run one job at a time.  The
process writes its progress reports to the store itself, under the server's
claim; it ends when the server does (a watchdog, :data:`PARENT_POLL_SECONDS`).

With a Dask client (``topokit serve --scheduler``), each worker thread still
claims and finishes its jobs in the store, but the computation
(:func:`run_job`) runs on the cluster (:func:`run_job_on_worker`); its
progress comes back as Dask events on the topic :data:`PROGRESS_TOPIC`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from .._io import dumps_json
from ..errors import TopokitError
from .schema import JOB_PARSERS, AuditRequest, DesignRequest, RequestError
from .store import JobStore, this_owner

__all__ = ["WorkerPool", "design_payload", "audit_payload", "run_job", "run_job_on_worker",
           "run_job_in_process", "ProgressThrottle", "PROGRESS_SECONDS", "PROGRESS_TOPIC"]

logger = logging.getLogger("topokit.service")

#: Seconds an idle worker waits before looking at the queue again (a submit wakes it sooner).
POLL_SECONDS = 0.5
#: Least seconds between two progress reports of one job that reach the store (or the Dask
#: scheduler): a design may report many times a second, and each report is a write.
PROGRESS_SECONDS = 0.25
#: The Dask event topic that jobs run on a cluster send their progress reports on.
PROGRESS_TOPIC = "topokit-serve-progress"
#: Seconds a worker thread waits on a Dask job before looking for its progress again.
DASK_POLL_SECONDS = 0.2
#: Least seconds between two tries to connect again to a Dask scheduler that was lost.
RECONNECT_SECONDS = 5.0
#: Seconds between two looks for the running jobs of dead servers while serving (the
#: first is at start): a server on the same store may die while this one runs.
RECOVER_SECONDS = 30.0
#: Seconds between two renewals of this server's claim on its running jobs (the store
#: recovers a job whose owner has not renewed it for ``store.LEASE_SECONDS``).
HEARTBEAT_SECONDS = 10.0
#: Seconds between a worker process's looks at whether its server still runs: a killed
#: server's processes end within this rather than finish a job the next server re-runs.
PARENT_POLL_SECONDS = 1.0
#: Seconds a worker thread waits on its job's process before looking at whether the
#: server stops (the job's end wakes it at once).
STOP_POLL_SECONDS = 0.5

#: ``progress(done, total)``, as :func:`topokit.optimize` and :func:`topokit.privacy_audit`
#: call it.
Progress = Callable[[int, int], Any]


class ProgressThrottle:
    """A ``progress(done, total)`` callback that passes at most one report per ``seconds``.

    Each call makes the report ``{"done", "total", "phase"}`` and keeps it as
    :attr:`last`.  It goes to ``sink`` once ``seconds`` have passed since the
    last one sent (or, for the first, since the throttle was made: the job's
    start), or when it completes the phase of a job that has sent one already.
    A job shorter than ``seconds`` sends none, and costs the store no write: the
    worker records :attr:`last`, the final report, when the job finishes.

    Parameters
    ----------
    sink : callable
        ``sink(report)``; an exception it raises is logged, not raised: a report
        is advice, and a busy store must not fail the job.
    phase : str
        The ``"phase"`` of every report.
    seconds : float, default PROGRESS_SECONDS
    """

    def __init__(self, sink: Callable[[dict[str, Any]], Any], phase: str, *,
                 seconds: float = PROGRESS_SECONDS):
        self.sink = sink
        self.phase = phase
        self.seconds = seconds
        #: The last report made, sent or not (None before the first call).
        self.last: dict[str, Any] | None = None
        self._started = time.monotonic()
        self._sent_at: float | None = None

    def __call__(self, done: int, total: int) -> None:
        self.last = {"done": int(done), "total": int(total), "phase": self.phase}
        now = time.monotonic()
        due = now - (self._started if self._sent_at is None else self._sent_at) >= self.seconds
        # A client that saw 2 of 3 sees 3 of 3 at once, not only when the job ends.
        completes = done >= total and self._sent_at is not None
        if not (due or completes):
            return
        self._sent_at = now
        try:
            self.sink(self.last)
        except Exception:
            logger.warning("could not record a progress report", exc_info=True)


def design_payload(request: DesignRequest, progress: Progress | None = None) -> dict[str, Any]:
    """The design of ``request``, as the JSON ``topokit design -o`` writes.

    ``progress(done, total)`` is called after each search of an optimize design
    (:func:`topokit.optimize`'s ``progress``) and after each DP budget of an
    autotag design (:func:`topokit.autotag`'s).
    """
    from ..design import autotag, optimize_with_references
    from ..design.features import DEFAULT_NOISE_MULTIPLIER
    from ..design.metrics import DEFAULT_AUDIT_ROUNDS
    from ..design.report import (
        StrangerAudit,
        baseline_topologies,
        design_record,
        metric_columns,
        reference_judge,
    )
    from ..design.time_predictor import load_predictor

    net, workload = request.net, request.workload
    z = DEFAULT_NOISE_MULTIPLIER if workload is None else workload.resolved_noise_multiplier
    audit = StrangerAudit(DEFAULT_AUDIT_ROUNDS, float(z), "gossip")
    if request.method == "autotag":
        model = None if request.predictor is None else load_predictor(request.predictor)
        chosen = autotag(net, model, progress=progress)
        topologies = {"AutoTag": chosen.topology,
                      **baseline_topologies(net, chosen, seed=request.seed)}
    else:
        chosen, references = optimize_with_references(
            net, predictor=request.predictor, seed=request.seed,
            max_stranger_mu=request.max_stranger_mu, audit_rounds=audit.rounds,
            audit_model=audit.model, mixing=request.mixing, workload=workload,
            progress=progress)
        labels = {"ndlf": "NDLF", "dlfdp": "DLFDP", "erg": "ERG", "autotag": "AutoTag"}
        topologies = {"optimize": chosen.topology,
                      **{labels[name]: topology for name, topology in references.items()}}
        model = reference_judge(chosen, request.predictor)
    columns = metric_columns(net, topologies, model, audit=audit, chosen=chosen)
    return design_record(net, request.method, chosen, columns, audit)


def audit_payload(request: AuditRequest, progress: Progress | None = None) -> dict[str, Any]:
    """The privacy audit of ``request``, as the JSON ``topokit audit --json`` prints.

    ``progress(done, total)`` is called after each observer
    (:func:`topokit.privacy_audit`'s ``progress``).
    """
    from ..audit.core import privacy_audit

    # Absent, the library's default noise applies, as with topokit audit.
    noise = ({} if request.noise_multiplier is None
             else {"noise_multiplier": request.noise_multiplier})
    audit = privacy_audit(request.net, request.topology, rounds=request.rounds,
                          delta=request.delta, model=request.model, progress=progress,
                          **noise)
    return {"network": request.net.name, "topology_source": request.topology_source,
            **audit.to_dict()}


#: What each kind of job computes from its parsed request.
_PAYLOADS = {"design": design_payload, "audit": audit_payload}
#: The keys of a progress report.
_REPORT_KEYS = ("done", "total", "phase")
#: The ``"phase"`` of each kind's progress reports.
_PHASES = {"design": "search", "audit": "audit"}


def run_job(kind: str, request: dict[str, Any],
            progress: Progress | None = None) -> tuple[str | None, str | None]:
    """Run one job; return its result as JSON text, or its error as one line.

    ``progress(done, total)``, when given, is called as the job's library call
    calls it (see :func:`design_payload`, :func:`audit_payload`).
    """
    if kind not in _PAYLOADS:
        return None, f"unknown job kind {kind!r}"
    try:
        return dumps_json(_PAYLOADS[kind](JOB_PARSERS[kind](request), progress)), None
    except (TopokitError, RequestError) as exc:
        return None, " ".join(str(exc).split())
    except Exception as exc:  # a bug: the job fails, the worker keeps serving
        logger.exception("%s job failed", kind)
        return None, f"internal error ({type(exc).__name__}); see the server log"


#: How a job's run ends: its result (JSON text) or its error (one line), and its last
#: progress report (None if it made none).
Ended = tuple[str | None, str | None, dict[str, Any] | None]


def _run_reporting(kind: str, request: dict[str, Any],
                   sink: Callable[[dict[str, Any]], Any]) -> Ended:
    """:func:`run_job` with its progress reports throttled into ``sink``."""
    throttle = ProgressThrottle(sink, _PHASES.get(kind, kind))
    result, error = run_job(kind, request, throttle)
    return result, error, throttle.last


def run_job_on_worker(job_id: str, kind: str, request: dict[str, Any]) -> Ended:
    """:func:`run_job` as a task on a Dask worker: its result, error and last progress report.

    Progress reports (throttled) go out as Dask events on :data:`PROGRESS_TOPIC`,
    ``{"job": job_id, "done", "total", "phase"}``, which the server that
    submitted the job records; the last report comes back with the result, so
    that a done job's final progress never depends on an event's delivery.
    """
    from distributed import get_worker

    worker = get_worker()
    return _run_reporting(
        kind, request,
        lambda report: worker.log_event(PROGRESS_TOPIC, {"job": job_id, **report}))


#: The store a worker process records its jobs' progress in (set by :func:`_start_process`).
_PROCESS_STORE: JobStore | None = None


def _start_process(db_path: str, server_pid: int) -> None:
    """Initializer of a worker process: open the store, and end with the server."""
    global _PROCESS_STORE
    _PROCESS_STORE = JobStore(db_path)
    threading.Thread(target=_end_with_server, args=(server_pid,), daemon=True,
                     name="topokit-watchdog").start()


def _end_with_server(server_pid: int) -> None:
    """Exit this process once its server is gone (it is then another process's child)."""
    while os.getppid() == server_pid:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


def run_job_in_process(job_id: str, kind: str, request: dict[str, Any], owner: str) -> Ended:
    """:func:`run_job` in a worker process: its result, error and last progress report.

    Throttled progress reports go straight to the store, as ``owner``'s (the
    server's claim): :meth:`JobStore.record_progress` drops them once the job
    is no longer that server's.
    """
    store = _PROCESS_STORE
    return _run_reporting(kind, request,
                          lambda report: store.record_progress(job_id, owner, report))


class WorkerPool:
    """``workers`` threads running the store's queued jobs until :meth:`stop`.

    Parameters
    ----------
    store : JobStore
    workers : int
        Jobs at once: threads, each running its jobs in a worker process of
        the pool; 0 runs no job (the server only queues them).  With
        ``client``, the most jobs this server has on the cluster at once.
    client : distributed.Client, optional
        Run each job's computation on this Dask cluster; the threads claim,
        wait and record as without it.  Closed by :meth:`stop`.
    processes : bool, default True
        Run each job in a worker process; False runs it in the thread itself
        (for embedding the pool where starting processes is not wanted).
    recover_seconds : float, default RECOVER_SECONDS
        Seconds between two looks for the running jobs of dead servers.
    heartbeat_seconds : float, default HEARTBEAT_SECONDS
        Seconds between two renewals of the claim on this server's running jobs.
    """

    def __init__(self, store: JobStore, workers: int = 1, *, client: Any = None,
                 processes: bool = True, recover_seconds: float = RECOVER_SECONDS,
                 heartbeat_seconds: float = HEARTBEAT_SECONDS):
        self.store = store
        self.workers = workers
        self.client = client
        self.processes = bool(processes) and client is None
        self.recover_seconds = recover_seconds
        self.heartbeat_seconds = heartbeat_seconds
        #: The address of the Dask scheduler the jobs run on, or None (in this process).
        self.scheduler: str | None = None if client is None else client.scheduler.address
        self.owner = this_owner()
        # Replacing a client that Dask closed is done by one thread at a time, at most once
        # per RECONNECT_SECONDS.
        self._client_lock = threading.Lock()
        self._next_connect = 0.0
        self._recover_lock = threading.Lock()
        self._next_recover = 0.0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        # Job id -> its newest progress report from the cluster, for the jobs this server
        # waits on (other servers on one cluster get events of theirs too: they are dropped).
        self._reports: dict[str, dict[str, Any] | None] = {}
        self._reports_lock = threading.Lock()
        # The worker processes (made at start; made again if one of them dies).
        self._executor: Any = None
        self._executor_lock = threading.Lock()

    @property
    def scheduler_connected(self) -> bool | None:
        """Whether the Dask client is connected to its scheduler (None without one)."""
        return None if self.client is None else self.client.status == "running"

    def start(self) -> None:
        """Re-queue the jobs of dead servers, then start the threads."""
        self._recover()
        if self.client is not None:
            self.client.subscribe_topic(PROGRESS_TOPIC, self._on_progress_event)
        if self.processes and self.workers:
            self._executor = self._new_executor()
        loops = [(self._loop, f"topokit-worker-{k}") for k in range(self.workers)]
        if self.workers:  # a server that runs jobs renews its claim on them
            loops.append((self._renew_claims, "topokit-heartbeat"))
        for target, name in loops:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def wake(self) -> None:
        """Tell idle workers a job was queued."""
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop taking jobs; wait up to ``timeout`` seconds for the threads.

        A job still running when the process ends is re-queued by the next server.
        """
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout)
        if self._executor is not None:
            self._end_processes(self._executor)
        if self.client is not None:
            try:
                self.client.close()
            except Exception:  # a cluster already gone: nothing left to close
                logger.warning("could not close the Dask client", exc_info=True)

    def _recover(self) -> None:
        """Re-queue (or fail) the running jobs of dead servers, at most once per
        ``recover_seconds`` whichever thread asks."""
        with self._recover_lock:
            if time.monotonic() < self._next_recover:
                return
            self._next_recover = time.monotonic() + self.recover_seconds
            recovered = self.store.recover()
        if any(recovered.values()):
            logger.warning("jobs of a stopped server: %(requeued)d re-queued, "
                           "%(failed)d failed", recovered)

    def _renew_claims(self) -> None:
        """Renew the claim on this server's running jobs every ``heartbeat_seconds``."""
        while not self._stop.wait(self.heartbeat_seconds):
            try:
                self.store.heartbeat(self.owner)
            except Exception:  # a busy store: the lease outlasts many missed renewals
                logger.warning("could not renew the claim on running jobs", exc_info=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._recover()
            except Exception:  # a busy store: the next look comes soon enough
                logger.exception("could not look for the jobs of stopped servers")
            if self.client is not None and not self._cluster_ready():
                # No cluster to run on: the jobs wait in the queue rather than fail.
                self._stop.wait(POLL_SECONDS)
                continue
            try:
                job = self.store.claim(self.owner)
            except Exception:
                logger.exception("could not claim a job")
                job = None
            if job is None:
                self._wake.wait(POLL_SECONDS)
                self._wake.clear()
                continue
            logger.info("running %s job %s", job.kind, job.id)
            if self.client is not None:
                ended = self._run_on_cluster(job.id, job.kind, job.request)
            elif self.processes:
                ended = self._run_in_process(job.id, job.kind, job.request)
            else:
                ended = self._run_here(job.id, job.kind, job.request)
            if ended is None:  # stopping: the next server on this store runs the job again
                return
            result, error, progress = ended
            if not self.store.finish(job.id, self.owner, result=result, error=error,
                                     progress=progress):
                logger.warning("job %s was taken from this server before it finished", job.id)

    def _cluster_ready(self) -> bool:
        """Whether the Dask client is connected, after replacing it if Dask has closed it.

        Dask cancels the running tasks of a client that loses its scheduler and
        closes the client if the scheduler is not back within its timeout; a new
        client is then made when the scheduler answers again, so that a server
        outlives a restart of its cluster.
        """
        with self._client_lock:
            status = self.client.status
            if status == "running":
                return True
            if status not in ("closed", "closing") or time.monotonic() < self._next_connect:
                return False  # Dask is still connecting, or a try was made a moment ago
            self._next_connect = time.monotonic() + RECONNECT_SECONDS
            from .._jobs import dask_client

            try:
                client = dask_client(self.scheduler)
            except TopokitError as exc:
                logger.warning("%s; the jobs wait in the queue", exc)
                return False
            client.subscribe_topic(PROGRESS_TOPIC, self._on_progress_event)
            self.client = client
            logger.warning("connected again to the Dask scheduler at %s", self.scheduler)
            return True

    def _record_quietly(self, job_id: str, report: dict[str, Any]) -> None:
        """Record a report from the cluster; a failure is logged (a report is advice: a
        busy store must not fail the job)."""
        try:
            self.store.record_progress(job_id, self.owner, report)
        except Exception:
            logger.warning("could not record a progress report", exc_info=True)

    def _run_here(self, job_id: str, kind: str, request: dict[str, Any]) -> Ended:
        """Run a job in this thread: its result, error and last progress report."""
        return _run_reporting(
            kind, request, lambda report: self.store.record_progress(job_id, self.owner, report))

    def _new_executor(self) -> Any:
        """``workers`` worker processes, started fresh (not forked from this threaded server)."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(max_workers=self.workers,
                                   mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_process,
                                   initargs=(str(self.store.path), os.getpid()))

    @staticmethod
    def _end_processes(executor: Any) -> None:
        """Cancel what waits and end the processes now: a job they still run is re-queued
        by the next server on the store (its claim is this server's)."""
        # The executor has no public way to end a running task (3.14 adds one).
        processes = list((getattr(executor, "_processes", None) or {}).values())
        executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()

    def _run_in_process(self, job_id: str, kind: str, request: dict[str, Any]
                        ) -> Ended | None:
        """Run a job in a worker process and wait: its result, error and last report.

        None if the server stops first.  A process that dies (killed, out of
        memory) fails its job with the reason, and the pool gets new processes.
        """
        from concurrent.futures.process import BrokenProcessPool

        executor = self._executor
        ended = threading.Event()
        try:
            future = executor.submit(run_job_in_process, job_id, kind, request, self.owner)
            future.add_done_callback(lambda _: ended.set())
            while not ended.wait(STOP_POLL_SECONDS):
                if self._stop.is_set():
                    return None
            return future.result()
        except RuntimeError as exc:  # BrokenProcessPool is one, and so is a shut-down pool
            if self._stop.is_set():
                return None  # stop() ended the processes: the next server runs the job
            if not isinstance(exc, BrokenProcessPool):
                raise
            self._replace_executor(executor)
            logger.warning("the worker process of job %s ended unexpectedly", job_id,
                           exc_info=True)
            return None, ("the worker process running this job ended unexpectedly "
                          f"({' '.join(str(exc).split()) or 'no reason given'})"), None

    def _replace_executor(self, broken: Any) -> None:
        """New worker processes in place of ``broken`` (once, whichever thread sees it)."""
        with self._executor_lock:
            if self._executor is broken and not self._stop.is_set():
                self._end_processes(broken)
                self._executor = self._new_executor()

    def _on_progress_event(self, event: tuple[float, dict[str, Any]]) -> None:
        """Keep a cluster's progress report of a job this server waits on (Dask's loop runs
        this: it only stores the report; the job's thread writes it)."""
        _, message = event
        job_id = message.get("job") if isinstance(message, dict) else None
        with self._reports_lock:
            if job_id in self._reports:
                # Dask adds its own keys (the worker's address): a report keeps only its own.
                self._reports[job_id] = {key: message[key] for key in _REPORT_KEYS
                                         if key in message}

    def _run_on_cluster(self, job_id: str, kind: str, request: dict[str, Any]
                        ) -> Ended | None:
        """Run a job on the Dask cluster and wait, recording its progress as it comes.

        None if the server stops first (the job stays ``running`` and is recovered
        by the next server on the store).
        """
        with self._reports_lock:
            self._reports[job_id] = None
        try:
            # A key of its own for every attempt: a task of a killed server's attempt that
            # the scheduler still holds is never taken for this one.  The job id in it names
            # the task on Dask's dashboard.
            future = self.client.submit(run_job_on_worker, job_id, kind, request,
                                        key=f"topokit-{kind}-{job_id}-{uuid.uuid4().hex[:8]}")
            while not future.done():
                if self._stop.wait(DASK_POLL_SECONDS):
                    future.cancel()
                    return None
                with self._reports_lock:
                    report, self._reports[job_id] = self._reports[job_id], None
                if report is not None:
                    self._record_quietly(job_id, report)
            return future.result()
        except Exception as exc:  # distributed's FutureCancelledError is one too
            # The cluster lost the task (a worker died, the scheduler went away): the job
            # fails with the reason, and the server keeps serving.
            logger.warning("Dask could not run job %s", job_id, exc_info=True)
            reason = " ".join(str(exc).split()) or "no reason given"
            return None, (f"the Dask cluster could not run this job ({type(exc).__name__}: "
                          f"{reason})"), None
        finally:
            with self._reports_lock:
                self._reports.pop(job_id, None)

