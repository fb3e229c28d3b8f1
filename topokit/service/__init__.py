"""``topokit serve``: topology design and privacy audits as an HTTP service with a durable
job queue.

=====================  ==========================================================
module                 holds
=====================  ==========================================================
:mod:`.app`            :func:`create_app`, the ASGI app and its ``/v1`` endpoints
:mod:`.schema`         the request bodies, checked with the library's checks
:mod:`.contract`       the bodies' JSON Schemas and responses of ``/openapi.json``
:mod:`.store`          :class:`JobStore`, the jobs in one SQLite file
:mod:`.worker`         :class:`WorkerPool`, the worker processes that run queued jobs
=====================  ==========================================================

Needs the ``serve`` extra (``pip install "topokit[serve]"``): FastAPI and uvicorn.
:mod:`.app` imports them; the other modules do not.
"""

from __future__ import annotations

__all__ = ["create_app"]


def create_app(*args, **kwargs):
    """:func:`topokit.service.app.create_app` (imported on first use: it needs FastAPI)."""
    from .app import create_app as _create_app

    return _create_app(*args, **kwargs)
