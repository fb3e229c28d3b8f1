"""The ASGI app of ``topokit serve``: design and audit jobs, and evaluations, over HTTP.

=============================  ================================================
endpoint                       does
=============================  ================================================
``POST /v1/designs``           queue a design (202; ``Idempotency-Key`` honoured)
``GET /v1/designs/{id}``       its status, progress, result (done) or error (failed)
``DELETE /v1/designs/{id}``    cancel a queued design
``POST /v1/audits``            queue a privacy audit (as designs)
``GET /v1/audits/{id}``        its status, progress, result (done) or error (failed)
``DELETE /v1/audits/{id}``     cancel a queued audit
``POST /v1/evaluations``       metrics of a topology (synchronous)
``GET /v1/health``             liveness and the queue's counts (no token needed)
``GET /v1/version``            topokit's version
=============================  ================================================

Every error is a JSON object ``{"error": one line, "field": ...}``: 422 for a
request the library refuses (with the library's message), 413 for a body over
the limit, 404 for an unknown job, 401 for a missing or wrong bearer token,
and 500 with one line (the traceback goes to the log) for a bug.
"""

from __future__ import annotations

import hmac
import logging
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .._version import __version__
from ..errors import TopokitError
from .schema import JOB_PARSERS, RequestError, parse_evaluation, parse_json, request_digest
from .store import IdempotencyConflict, Job, JobStore
from .worker import WorkerPool

__all__ = ["create_app", "DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_DEVICES"]

logger = logging.getLogger("topokit.service")

DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_DEVICES = 2000
#: Paths anyone may read, token or not.
_OPEN_PATHS = ("/v1/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")


def _error(status: int, message: str, field: str | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split()), "field": field}, status_code=status)


async def _body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it passes ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(f"the body has {int(declared)} bytes; this server accepts at most "
                           f"{limit} (its --max-body-mb)", field="body", status=413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(f"the body passes {limit} bytes, the most this server accepts "
                               "(its --max-body-mb)", field="body", status=413)
        chunks.append(chunk)
    return b"".join(chunks)


def _job_path(kind: str, job_id: str) -> str:
    """The URL path of job ``job_id`` of ``kind``: ``/v1/designs/ID``, ``/v1/audits/ID``."""
    return f"/v1/{kind}s/{job_id}"


def _job_view(job: Job) -> dict[str, Any]:
    """The JSON of a job: id, status, links, progress, and its result or error when it has one.

    ``progress`` is the last report of the job's run (``{"done", "total", "phase"}``;
    for a done job the final one), or None while none is known (queued, just
    started, or a kind of job that reports none).
    """
    view: dict[str, Any] = {"id": job.id, "status": job.status,
                            "links": {"self": _job_path(job.kind, job.id)},
                            "attempts": job.attempts, "progress": job.progress}
    if job.status == "done":
        view["result"] = job.result
    if job.status == "failed":
        view["error"] = job.error
    return view


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError) -> JSONResponse:
        return JSONResponse(exc.to_dict(), status_code=exc.status)

    @app.exception_handler(TopokitError)
    async def user_error(request: Request, exc: TopokitError) -> JSONResponse:
        return _error(422, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        return _error(422, f"{where}: {first.get('msg', 'invalid request')}", where or None)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        logger.error("internal error on %s %s", request.method, request.url.path,
                     exc_info=exc)
        return _error(500, f"internal error ({type(exc).__name__}); see the server log")


def _install_auth(app: FastAPI, token: str | None) -> None:
    if token is None:
        return
    expected = f"Bearer {token}".encode()

    @app.middleware("http")
    async def bearer(request: Request, call_next):
        if request.url.path not in _OPEN_PATHS:
            given = request.headers.get("authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return _error(401, "missing or wrong token: send 'Authorization: Bearer <token>'",
                              "Authorization")
        return await call_next(request)


def create_app(db_path: str | Path, *, token: str | None = None,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               max_devices: int | None = DEFAULT_MAX_DEVICES, workers: int = 1,
               scheduler: str | None = None, processes: bool = True) -> FastAPI:
    """The ASGI app of ``topokit serve``, its jobs kept in the SQLite file ``db_path``.

    Parameters
    ----------
    db_path : str or Path
        The job store (created if absent; several servers may share it).
    token : str, optional
        When given, every request but ``/v1/health`` and the API description
        needs ``Authorization: Bearer <token>``.
    max_body_bytes : int
        Larger request bodies are refused with 413.
    max_devices : int or None
        Networks with more devices are refused with 422 (None: no limit).
    workers : int, default 1
        Design and audit jobs run at once, each in a worker process; 0 only
        queues them.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``): each job's
        computation runs on that cluster, ``workers`` of them at a time; the
        store, its queue and its recovery stay in this server.
    processes : bool, default True
        False runs the jobs in this process's worker threads instead
        (:class:`~topokit.service.worker.WorkerPool`).

    Raises
    ------
    InvalidInputError
        ``scheduler`` cannot be reached or is not a Dask scheduler (before
        the store is opened).
    """
    client = None
    if scheduler is not None:
        from .._jobs import check_scheduler, dask_client

        # Refused now, in one line, rather than by every job later.
        client = dask_client(check_scheduler(scheduler))
    try:
        store = JobStore(db_path)
    except BaseException:
        if client is not None:
            client.close()
        raise
    pool = WorkerPool(store, workers, client=client, processes=processes)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        pool.start()
        try:
            yield
        finally:
            pool.stop()

    app = FastAPI(title="topokit", version=__version__, lifespan=lifespan,
                  description="Design and check communication topologies for private "
                              "decentralized learning.")
    app.state.store, app.state.pool = store, pool
    _install_error_handlers(app)
    _install_auth(app, token)
    _add_routes(app, store, pool, max_body_bytes=max_body_bytes, max_devices=max_devices)
    return app


async def _submit(request: Request, kind: str, store: JobStore, pool: WorkerPool, *,
                  max_body_bytes: int, max_devices: int | None) -> JSONResponse:
    """Check a job request of ``kind`` as its parser does, then queue it (202)."""
    data = parse_json(await _body(request, max_body_bytes))
    # Every refusal comes now, with its 422, never later from a worker.
    await run_in_threadpool(JOB_PARSERS[kind], data, max_devices=max_devices)
    key = request.headers.get("idempotency-key")
    try:
        job, _ = await run_in_threadpool(store.submit, kind, data,
                                         digest=request_digest(data), idempotency_key=key)
    except IdempotencyConflict as exc:
        return _error(409, str(exc), "Idempotency-Key")
    pool.wake()
    return JSONResponse(_job_view(job), status_code=202,
                        headers={"Location": _job_path(kind, job.id)})


def _status(store: JobStore, kind: str, job_id: str) -> JSONResponse:
    """The view of job ``job_id`` of ``kind``; 404 for no such job or one of another kind."""
    job = store.get(job_id, kind)
    if job is None:
        return _error(404, f"no {kind} job {job_id!r}", "id")
    return JSONResponse(_job_view(job))


def _cancel(store: JobStore, kind: str, job_id: str) -> JSONResponse:
    """Cancel job ``job_id`` of ``kind`` if queued; 404 as :func:`_status`, 409 once it runs."""
    job = store.cancel(job_id, kind)
    if job is None:
        return _error(404, f"no {kind} job {job_id!r}", "id")
    if job.status != "cancelled":
        return _error(409, f"{kind} job {job_id} is {job.status}; only a queued job can be "
                           "cancelled", "id")
    return JSONResponse(_job_view(job))


def _add_routes(app: FastAPI, store: JobStore, pool: WorkerPool, *, max_body_bytes: int,
                max_devices: int | None) -> None:
    limits = {"max_body_bytes": max_body_bytes, "max_devices": max_devices}

    @app.post("/v1/designs", status_code=202)
    async def submit_design(request: Request) -> JSONResponse:
        """Queue a design: ``{"network": <node-link JSON>, "method", "options"}``."""
        return await _submit(request, "design", store, pool, **limits)

    @app.get("/v1/designs/{job_id}")
    def design_status(job_id: str) -> JSONResponse:
        """A design's status, with its result when done and its error when failed."""
        return _status(store, "design", job_id)

    @app.delete("/v1/designs/{job_id}")
    def cancel_design(job_id: str) -> JSONResponse:
        """Cancel a queued design (409 once it runs or has ended)."""
        return _cancel(store, "design", job_id)

    @app.post("/v1/audits", status_code=202)
    async def submit_audit(request: Request) -> JSONResponse:
        """Queue a privacy audit: ``{"network": <node-link JSON>, "topology", "options"}``.

        ``topology`` defaults to the network's stored one; ``options``:
        ``rounds``, ``noise_multiplier`` (a number, or an object device ->
        number), ``model`` (``gossip`` or ``dsgd``), ``delta``.
        """
        return await _submit(request, "audit", store, pool, **limits)

    @app.get("/v1/audits/{job_id}")
    def audit_status(job_id: str) -> JSONResponse:
        """An audit's status, with its result (``topokit audit --json``) when done."""
        return _status(store, "audit", job_id)

    @app.delete("/v1/audits/{job_id}")
    def cancel_audit(job_id: str) -> JSONResponse:
        """Cancel a queued audit (409 once it runs or has ended)."""
        return _cancel(store, "audit", job_id)

    @app.post("/v1/evaluations")
    async def evaluation(request: Request) -> JSONResponse:
        """Metrics of a topology: ``{"network", "topology", "predictor"}`` (synchronous)."""
        data = parse_json(await _body(request, max_body_bytes))
        return JSONResponse(await run_in_threadpool(_evaluate, data, max_devices))

    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        """Liveness, the number of workers, the Dask scheduler's address and whether it is
        connected (both null without one), and the jobs by status."""
        return {"status": "ok", "workers": pool.workers, "scheduler": pool.scheduler,
                "scheduler_connected": pool.scheduler_connected, "jobs": store.counts()}

    @app.get("/v1/version")
    def version() -> dict[str, Any]:
        """topokit's version and the API's."""
        return {"topokit": __version__, "api": "v1"}


def _evaluate(data: Any, max_devices: int | None) -> dict[str, Any]:
    from .._io import jsonable
    from ..design.metrics import evaluate
    from ..design.time_predictor import load_predictor

    net, topology, predictor = parse_evaluation(data, max_devices=max_devices)
    model = None if predictor is None else load_predictor(predictor)
    metrics = evaluate(net, topology, model).to_dict()
    return jsonable({"network": net.name, "predictor": predictor or "paper",
                     "metrics": metrics})
