"""The background workers: threads that claim queued jobs from the store and run them.

A design job runs :func:`topokit.optimize` or :func:`topokit.autotag` with its
request's options, and its result is the JSON ``topokit design -o`` writes; an
audit job runs :func:`topokit.privacy_audit`, and its result is the JSON
``topokit audit --json`` prints.  A result is recorded in one transaction with
the job's new status.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .._io import dumps_json
from ..errors import TopokitError
from .schema import JOB_PARSERS, AuditRequest, DesignRequest, RequestError
from .store import JobStore, this_owner

__all__ = ["WorkerPool", "design_payload", "audit_payload", "run_job"]

logger = logging.getLogger("topokit.service")

#: Seconds an idle worker waits before looking at the queue again (a submit wakes it sooner).
POLL_SECONDS = 0.5


def design_payload(request: DesignRequest) -> dict[str, Any]:
    """The design of ``request``, as the JSON ``topokit design -o`` writes."""
    from ..design import autotag, optimize_with_references
    from ..design.features import DEFAULT_NOISE_MULTIPLIER
    from ..design.metrics import DEFAULT_AUDIT_ROUNDS
    from ..design.report import StrangerAudit, baseline_topologies, metric_columns
    from ..design.time_predictor import load_predictor

    net, workload = request.net, request.workload
    z = DEFAULT_NOISE_MULTIPLIER if workload is None else workload.resolved_noise_multiplier
    audit = StrangerAudit(DEFAULT_AUDIT_ROUNDS, float(z), "gossip")
    if request.method == "autotag":
        model = None if request.predictor is None else load_predictor(request.predictor)
        chosen = autotag(net, model)
        topologies = {"AutoTag": chosen.topology,
                      **baseline_topologies(net, chosen, seed=request.seed)}
    else:
        chosen, references = optimize_with_references(
            net, predictor=request.predictor, seed=request.seed,
            max_stranger_mu=request.max_stranger_mu, audit_rounds=audit.rounds,
            audit_model=audit.model, mixing=request.mixing, workload=workload)
        labels = {"ndlf": "NDLF", "dlfdp": "DLFDP", "erg": "ERG", "autotag": "AutoTag"}
        topologies = {"optimize": chosen.topology,
                      **{labels[name]: topology for name, topology in references.items()}}
        model = load_predictor(request.predictor)
    columns = metric_columns(net, topologies, model, audit=audit, chosen=chosen)
    return {"network": net.name, "method": request.method, **chosen.to_dict(),
            "baselines": columns, "stranger_audit": audit.settings()}


def audit_payload(request: AuditRequest) -> dict[str, Any]:
    """The privacy audit of ``request``, as the JSON ``topokit audit --json`` prints."""
    from ..audit.core import privacy_audit

    # Absent, the library's default noise applies, as with topokit audit.
    noise = ({} if request.noise_multiplier is None
             else {"noise_multiplier": request.noise_multiplier})
    audit = privacy_audit(request.net, request.topology, rounds=request.rounds,
                          delta=request.delta, model=request.model, **noise)
    return {"network": request.net.name, "topology_source": request.topology_source,
            **audit.to_dict()}


#: What each kind of job computes from its parsed request.
_PAYLOADS = {"design": design_payload, "audit": audit_payload}


def run_job(kind: str, request: dict[str, Any]) -> tuple[str | None, str | None]:
    """Run one job; return its result as JSON text, or its error as one line."""
    if kind not in _PAYLOADS:
        return None, f"unknown job kind {kind!r}"
    try:
        return dumps_json(_PAYLOADS[kind](JOB_PARSERS[kind](request))), None
    except (TopokitError, RequestError) as exc:
        return None, " ".join(str(exc).split())
    except Exception as exc:  # a bug: the job fails, the worker keeps serving
        logger.exception("%s job failed", kind)
        return None, f"internal error ({type(exc).__name__}); see the server log"


class WorkerPool:
    """``workers`` threads running the store's queued jobs until :meth:`stop`.

    Parameters
    ----------
    store : JobStore
    workers : int
        Threads; 0 runs no job (the server only queues them).
    """

    def __init__(self, store: JobStore, workers: int = 1):
        self.store = store
        self.workers = workers
        self.owner = this_owner()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Re-queue the jobs of dead servers, then start the threads."""
        recovered = self.store.recover()
        if any(recovered.values()):
            logger.warning("jobs of a stopped server: %(requeued)d re-queued, "
                           "%(failed)d failed", recovered)
        for k in range(self.workers):
            thread = threading.Thread(target=self._loop, name=f"topokit-worker-{k}",
                                      daemon=True)
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

    def _loop(self) -> None:
        while not self._stop.is_set():
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
            result, error = run_job(job.kind, job.request)
            if not self.store.finish(job.id, self.owner, result=result, error=error):
                logger.warning("job %s was taken from this server before it finished", job.id)

