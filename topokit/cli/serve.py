"""``topokit serve``: the design service over HTTP (needs the ``serve`` extra)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import InvalidInputError
from ._common import handles_user_errors

__all__ = ["serve_command"]


@handles_user_errors
def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    db: Path = typer.Option(
        Path("topokit-jobs.sqlite"), "--db",
        help="SQLite job store (created if absent; jobs survive restarts; several servers "
             "may share it)."),
    workers: int = typer.Option(
        1, "--workers", help="Jobs run at once, each in a worker process (0: queue jobs, run "
                             "none); with --scheduler, the most jobs on the cluster at once."),
    scheduler: str = typer.Option(
        None, "--scheduler",
        help="Dask scheduler address (tcp://host:8786): run the jobs on that cluster."),
    token: str = typer.Option(
        None, "--token", envvar="TOPOKIT_SERVE_TOKEN",
        help="Require 'Authorization: Bearer TOKEN' on every request but /v1/health "
             "(or set TOPOKIT_SERVE_TOKEN)."),
    max_body_mb: float = typer.Option(
        10.0, "--max-body-mb", help="Refuse request bodies over this many megabytes (413)."),
    max_devices: int = typer.Option(
        2000, "--max-devices", help="Refuse networks with more devices than this (422)."),
) -> None:
    """Serve topology design over HTTP: POST /v1/designs, GET /v1/designs/ID, ...

    Design jobs are kept in --db and run by --workers worker processes (on a
    Dask cluster with --scheduler); a job left running by a killed server runs
    again when a server starts on the same --db.  The API is described at
    /openapi.json.
    """
    from .._checks import check_int, check_real
    from .._jobs import check_scheduler

    check_int(port, "--port", low=0, high=65535)
    check_int(workers, "--workers", low=0)
    check_real(max_body_mb, "--max-body-mb", low=0, closed="neither")
    check_int(max_devices, "--max-devices", low=1)
    if token is not None and not token.strip():
        raise InvalidInputError("--token must not be empty")
    scheduler = check_scheduler(scheduler)
    try:
        import uvicorn

        from ..service.app import create_app
    except ImportError as exc:
        raise InvalidInputError(f"topokit serve needs the serve extra ({exc.name} is missing): "
                                'pip install "topokit[serve]"') from None
    app = create_app(db, token=token, max_body_bytes=int(max_body_mb * 1024 * 1024),
                     max_devices=max_devices, workers=workers, scheduler=scheduler)
    uvicorn.run(app, host=host, port=port, log_level="info")
