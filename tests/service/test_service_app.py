"""The service app in process: a bug is a one-line 500, never a traceback."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")


def test_a_bug_is_a_one_line_500_and_the_app_keeps_serving(tmp_path):
    import httpx

    from topokit.service.app import create_app

    db = tmp_path / "jobs.sqlite"
    app = create_app(db, workers=0)
    with sqlite3.connect(db) as conn:  # a row no server writes: its request is not JSON
        conn.execute("INSERT INTO jobs (id, kind, status, request, request_digest, created, "
                     "updated) VALUES ('bad', 'design', 'queued', '{', 'd', ?, ?)",
                     (time.time(), time.time()))

    async def requests():
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.get(path)
                    for path in ("/v1/designs/bad", "/v1/health", "/openapi.json")]

    bug, health, openapi = asyncio.run(requests())
    assert bug.status_code == 500
    assert set(bug.json()) == {"error", "field"}
    assert "\n" not in bug.json()["error"] and "Traceback" not in bug.json()["error"]
    assert health.json()["status"] == "ok"
    assert openapi.json()["info"]["title"] == "topokit"
