"""``topokit serve``: the design service over HTTP (needs the ``serve`` extra).

Before the server starts, the job store (``--db``) is recognised read-only
(:func:`topokit.service.store.check_store_path`: nothing but topokit's store is
ever opened for writing) and the address is tried by binding it as the server
will (:func:`check_listen_address`): a port in use is one line, not uvicorn's
log of a failed start.
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import typer

from ..errors import InvalidInputError
from ._common import handles_user_errors

__all__ = ["serve_command", "check_listen_address"]


def _bind_error(exc: OSError, host: str, port: int) -> InvalidInputError:
    """Why ``host:port`` cannot be listened on, as one line naming the option to change."""
    if exc.errno == errno.EADDRINUSE:
        return InvalidInputError(
            f"--port {port}: the port is in use on {host} (another topokit serve, or another "
            "program, listens there); stop it, or choose another --port")
    if exc.errno == errno.EACCES:
        return InvalidInputError(
            f"--port {port}: no permission to listen on it on {host} (ports below 1024 need "
            "administrator rights); choose another --port, e.g. 8000")
    if exc.errno == errno.EADDRNOTAVAIL:
        return InvalidInputError(
            f"--host {host}: not an address of this machine; give one of its addresses, "
            "127.0.0.1 (this machine only) or 0.0.0.0 (every interface)")
    return InvalidInputError(f"cannot listen on --host {host} --port {port}: "
                             f"{exc.strerror or exc}; choose another --host or --port")


def check_listen_address(host: str, port: int) -> None:
    """Refuse an address the server cannot listen on, by binding it as uvicorn will.

    Each address ``host`` resolves to is bound (and released at once) with the
    options of asyncio's server: ``SO_REUSEADDR`` on POSIX (a port left in
    TIME_WAIT by a stopped server is free), IPv6 sockets IPv6-only.  A port in
    use, one that needs privileges or a host that is not this machine's raise
    :class:`~topokit.errors.InvalidInputError` naming the option.
    """
    try:
        addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InvalidInputError(f"--host {host}: cannot resolve it ({exc.strerror}); give an "
                                "address of this machine, e.g. 127.0.0.1 or 0.0.0.0") from None
    for family, kind, protocol, _, address in dict.fromkeys(addresses):
        with socket.socket(family, kind, protocol) as sock:
            if os.name == "posix":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                raise _bind_error(exc, host, port) from None


@handles_user_errors
def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    db: Path = typer.Option(
        Path("topokit-jobs.sqlite"), "--db",
        help="SQLite job store (created if absent, in an existing folder; an existing file "
             "must be a topokit store; jobs survive restarts; several servers may share it)."),
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
    from ..service.store import check_store_path

    check_store_path(db, "--db")  # read-only: nothing is written before both checks pass
    check_listen_address(host, port)
    app = create_app(db, token=token, max_body_bytes=int(max_body_mb * 1024 * 1024),
                     max_devices=max_devices, workers=workers, scheduler=scheduler)
    uvicorn.run(app, host=host, port=port, log_level="info")
