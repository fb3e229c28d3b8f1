"""Fixtures of the service tests: ``topokit serve`` processes and the toy network's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from serve_helpers import TOKEN, Server


@pytest.fixture
def start_server(tmp_path):
    """Start ``topokit serve`` processes; each is ended when the test ends."""
    servers: list[Server] = []

    def start(db: Path, *extra: str) -> Server:
        server = Server(db, tmp_path / "server.log", *extra)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill()


@pytest.fixture(scope="module")
def toy_json(tmp_path_factory):
    """The bundled toy network as node-link JSON, as ``save_network`` writes it."""
    from topokit.network.examples import load_example
    from topokit.network.formats import save_network

    path = save_network(load_example("toy"), tmp_path_factory.mktemp("net") / "toy.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server per test module: a token, small limits, one worker."""
    folder = tmp_path_factory.mktemp("serve")
    running = Server(folder / "jobs.sqlite", folder / "server.log", "--workers", "1",
                     "--token", TOKEN, "--max-body-mb", "0.05", "--max-devices", "10")
    yield running
    running.kill()
