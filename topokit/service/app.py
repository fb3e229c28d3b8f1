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
``GET /openapi.json``          the contract: every body, answer and error
``GET /docs``, ``GET /redoc``  the contract to read (Swagger UI, ReDoc; offline)
=============================  ================================================

Every error is a JSON object ``{"error": one line, "field": ...}``: 422 for a
request the library refuses (with the library's message), 413 for a body over
the limit, 415 for a body not sent as ``application/json``, 404 for an
unknown job, 405 (with ``Allow``) for a method a path does not take, 401 for a
missing or wrong bearer token, and 500 with one line (the traceback goes to
the log) for a bug.  ``/openapi.json`` names every request body and every
status an operation can answer, with its schema (:mod:`.contract`).
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
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from .._version import __version__
from ..errors import TopokitError
from .contract import components, error_response, examples, ref
from .schema import JOB_PARSERS, RequestError, parse_evaluation, parse_json, request_digest
from .store import IdempotencyConflict, Job, JobStore
from .worker import WorkerPool

__all__ = ["create_app", "DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_DEVICES"]

logger = logging.getLogger("topokit.service")

DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_DEVICES = 2000
#: Paths anyone may read, token or not.
_OPEN_PATHS = ("/v1/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")
#: Where the pages of /docs and /redoc load their scripts and styles from: this server, so
#: that they show with no internet (static/ holds Swagger UI's and ReDoc's files and licences).
_ASSETS = "/docs-assets"
_STATIC = Path(__file__).parent / "static"
#: The one media type of request bodies.
JSON_MEDIA_TYPE = "application/json"


def _error(status: int, message: str, field: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split()), "field": field}, status_code=status,
                        headers=headers)


def _check_media_type(request: Request) -> None:
    """A body sent as anything but JSON is refused with 415; one sent with no type is read as
    JSON (as clients that send ``content=`` bytes do)."""
    given = request.headers.get("content-type")
    if given is None:
        return
    media = given.split(";", 1)[0].strip().lower()
    if media != JSON_MEDIA_TYPE:
        raise RequestError(f"the body must be JSON sent with 'Content-Type: {JSON_MEDIA_TYPE}'; "
                           f"got {given[:80]!r}", field="Content-Type", status=415)


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
        headers = exc.headers
        if exc.status_code == 405:  # Allow: the methods of every route of the path
            headers = {**(headers or {}), "Allow": ", ".join(_methods(app, request.url.path))}
        return _error(exc.status_code, str(exc.detail), headers=headers)

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        logger.error("internal error on %s %s", request.method, request.url.path,
                     exc_info=exc)
        return _error(500, f"internal error ({type(exc).__name__}); see the server log")


def _methods(app: FastAPI, path: str) -> list[str]:
    """The methods that the routes of ``path`` take (a path may have one route a method)."""
    methods = {method for route in app.router.routes
               if getattr(route, "path_regex", None) is not None and route.path_regex.match(path)
               for method in getattr(route, "methods", None) or ()}
    return sorted(methods)


def _install_auth(app: FastAPI, token: str | None) -> None:
    if token is None:
        return
    expected = f"Bearer {token}".encode()

    @app.middleware("http")
    async def bearer(request: Request, call_next):
        path = request.url.path
        if path not in _OPEN_PATHS and not path.startswith(f"{_ASSETS}/"):
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
                  description=_DESCRIPTION, docs_url=None, redoc_url=None)
    app.state.store, app.state.pool = store, pool
    _install_error_handlers(app)
    _install_auth(app, token)
    _add_routes(app, store, pool, max_body_bytes=max_body_bytes, max_devices=max_devices,
                auth=token is not None)
    _add_docs(app)
    app.openapi = lambda: _openapi(app, max_devices=max_devices, auth=token is not None)
    return app


_DESCRIPTION = (
    "Design and check communication topologies for private decentralized learning. "
    "Designs and audits are jobs: a POST answers 202 with the job, which a client polls "
    "until it is done. Request bodies are JSON (`Content-Type: application/json`); every "
    "error is one line of JSON, `{\"error\": ..., \"field\": ...}`.")


def _openapi(app: FastAPI, *, max_devices: int | None, auth: bool) -> dict[str, Any]:
    """The OpenAPI document of ``app``: its operations, with the contract's schemas
    (:mod:`.contract`) as its components; built once."""
    if app.openapi_schema is None:
        document = get_openapi(title=app.title, version=app.version,
                               description=app.description, routes=app.routes)
        # FastAPI's own validation error is never answered: this server's 422 is an Error.
        for operation in (op for item in document["paths"].values() for op in item.values()):
            answer = operation["responses"].get("422", {})
            if "HTTPValidationError" in str(answer):
                del operation["responses"]["422"]
        document.setdefault("components", {})["schemas"] = components(max_devices)
        samples = examples()
        for operation in (op for item in document["paths"].values() for op in item.values()):
            body = operation.get("requestBody", {}).get("content", {}).get(JSON_MEDIA_TYPE)
            if body is not None:
                body["example"] = samples[body["schema"]["$ref"].rpartition("/")[2]]
        if auth:
            document["components"]["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "The server's --token."}}
            document["security"] = [{"bearer": []}]
            document["paths"]["/v1/health"]["get"]["security"] = []
        app.openapi_schema = document
    return app.openapi_schema


def _add_docs(app: FastAPI) -> None:
    """/docs (Swagger UI) and /redoc (ReDoc) with their files served from this server."""
    app.mount(_ASSETS, StaticFiles(directory=_STATIC), name="docs-assets")
    favicon = f"{_ASSETS}/favicon-32x32.png"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{app.title} API",
            oauth2_redirect_url="/docs/oauth2-redirect",
            swagger_js_url=f"{_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{_ASSETS}/swagger-ui.css", swagger_favicon_url=favicon,
            # No badge from the public validator: the page asks nothing of the internet.
            swagger_ui_parameters={"validatorUrl": None})

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=app.openapi_url, title=f"{app.title} API",
                              redoc_js_url=f"{_ASSETS}/redoc.standalone.js",
                              redoc_favicon_url=favicon, with_google_fonts=False)


async def _submit(request: Request, kind: str, store: JobStore, pool: WorkerPool, *,
                  max_body_bytes: int, max_devices: int | None) -> JSONResponse:
    """Check a job request of ``kind`` as its parser does, then queue it (202)."""
    _check_media_type(request)
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


def _responses(*statuses: int, auth: bool, **answers: dict[str, Any]) -> dict[Any, Any]:
    """The responses of an operation: its answers (by status) and its error statuses (500,
    and 401 on a server with a token, always)."""
    errors = sorted({*statuses, 500, *((401,) if auth else ())})
    return {**{int(status): answer for status, answer in answers.items()},
            **{status: error_response(status) for status in errors}}


def _answer(description: str, schema: str, **extra: Any) -> dict[str, Any]:
    return {"description": description,
            "content": {JSON_MEDIA_TYPE: {"schema": ref(schema)}}, **extra}


def _body_of(schema: str, description: str) -> dict[str, Any]:
    """The ``openapi_extra`` of an operation whose JSON body is component ``schema``."""
    return {"requestBody": {"required": True, "description": description,
                            "content": {JSON_MEDIA_TYPE: {"schema": ref(schema)}}}}


def _job_operations(kind: str, body: str, auth: bool) -> dict[str, dict[str, Any]]:
    """The OpenAPI details of POST, GET and DELETE of ``kind`` jobs."""
    collection = f"{kind}s"
    location = {"Location": {"description": f"The job's link, /v1/{collection}/{{id}}.",
                             "required": True, "schema": {"type": "string"}}}
    key = {"name": "Idempotency-Key", "in": "header", "required": False,
           "description": "The same key with the same body returns the same job; with "
                          "another body, 409.",
           "schema": {"type": "string"}}
    job_id = {"parameters": {"job_id": "$response.body#/id"}}
    links = {f"Get{kind.title()}": {"operationId": f"get_{kind}", **job_id},
             f"Cancel{kind.title()}": {"operationId": f"cancel_{kind}", **job_id}}
    return {
        "post": {
            "operation_id": f"submit_{kind}", "status_code": 202,
            "openapi_extra": {**_body_of(body, f"The {kind} to queue."), "parameters": [key]},
            "responses": _responses(409, 413, 415, 422, auth=auth, **{"202": _answer(
                f"The queued {kind} job.", "Job", headers=location,
                links=links)}),
        },
        "get": {"operation_id": f"get_{kind}",
                "responses": _responses(404, auth=auth, **{"200": _answer(
                    f"The {kind} job: its result when done, its error when failed.", "Job")})},
        "delete": {"operation_id": f"cancel_{kind}",
                   "responses": _responses(404, 409, auth=auth, **{"200": _answer(
                       f"The cancelled {kind} job.", "Job")})},
    }


def _add_routes(app: FastAPI, store: JobStore, pool: WorkerPool, *, max_body_bytes: int,
                max_devices: int | None, auth: bool) -> None:
    limits = {"max_body_bytes": max_body_bytes, "max_devices": max_devices}
    design = _job_operations("design", "DesignRequest", auth)
    audit = _job_operations("audit", "AuditRequest", auth)

    @app.post("/v1/designs", **design["post"])
    async def submit_design(request: Request) -> JSONResponse:
        """Queue a design: ``{"network": <node-link JSON>, "method", "options"}``."""
        return await _submit(request, "design", store, pool, **limits)

    @app.get("/v1/designs/{job_id}", **design["get"])
    def design_status(job_id: str) -> JSONResponse:
        """A design's status, with its result when done and its error when failed."""
        return _status(store, "design", job_id)

    @app.delete("/v1/designs/{job_id}", **design["delete"])
    def cancel_design(job_id: str) -> JSONResponse:
        """Cancel a queued design (409 once it runs or has ended)."""
        return _cancel(store, "design", job_id)

    @app.post("/v1/audits", **audit["post"])
    async def submit_audit(request: Request) -> JSONResponse:
        """Queue a privacy audit: ``{"network": <node-link JSON>, "topology", "options"}``.

        ``topology`` defaults to the network's stored one; ``options``:
        ``rounds``, ``noise_multiplier`` (a number, or an object device ->
        number), ``model`` (``gossip`` or ``dsgd``), ``delta``.
        """
        return await _submit(request, "audit", store, pool, **limits)

    @app.get("/v1/audits/{job_id}", **audit["get"])
    def audit_status(job_id: str) -> JSONResponse:
        """An audit's status, with its result (``topokit audit --json``) when done."""
        return _status(store, "audit", job_id)

    @app.delete("/v1/audits/{job_id}", **audit["delete"])
    def cancel_audit(job_id: str) -> JSONResponse:
        """Cancel a queued audit (409 once it runs or has ended)."""
        return _cancel(store, "audit", job_id)

    @app.post("/v1/evaluations", operation_id="evaluate",
              openapi_extra=_body_of("EvaluationRequest", "The network and the topology."),
              responses=_responses(413, 415, 422, auth=auth, **{"200": _answer(
                  "The topology's metrics.", "Evaluation")}))
    async def evaluation(request: Request) -> JSONResponse:
        """Metrics of a topology or design: ``{"network", "topology" or "design",
        "predictor"}`` (synchronous); a design is judged by its own predictor."""
        _check_media_type(request)
        data = parse_json(await _body(request, max_body_bytes))
        return JSONResponse(await run_in_threadpool(_evaluate, data, max_devices))

    @app.get("/v1/health", operation_id="health",
             responses=_responses(auth=False, **{"200": _answer("The server is up.", "Health")}))
    def health() -> dict[str, Any]:
        """Liveness, the number of workers, the Dask scheduler's address and whether it is
        connected (both null without one), and the jobs by status (no token needed)."""
        return {"status": "ok", "workers": pool.workers, "scheduler": pool.scheduler,
                "scheduler_connected": pool.scheduler_connected, "jobs": store.counts()}

    @app.get("/v1/version", operation_id="version",
             responses=_responses(auth=auth, **{"200": _answer("The versions.", "Version")}))
    def version() -> dict[str, Any]:
        """topokit's version and the API's."""
        return {"topokit": __version__, "api": "v1"}


def _evaluate(data: Any, max_devices: int | None) -> dict[str, Any]:
    from .._io import jsonable
    from ..design.metrics import evaluate
    from ..design.time_predictor import load_predictor

    net, topology, predictor, own = parse_evaluation(data, max_devices=max_devices)
    if predictor is not None:
        model, judged = load_predictor(predictor), predictor
    elif own is not None:  # the design's own predictor, at the settings it judged at
        model, judged = own
    else:
        model, judged = None, "paper"
    metrics = evaluate(net, topology, model).to_dict()
    return jsonable({"network": net.name, "predictor": judged, "metrics": metrics})
