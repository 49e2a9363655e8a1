"""Helpers for tests that drive the gateway app."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn
from fastapi.testclient import TestClient
from starlette.types import ASGIApp

from gateway.server import build_server
from shared.config import GatewaySettings


def wait_ready(client: TestClient, timeout_s: float = 60) -> httpx.Response:
    """/readyz once the start-up warm-up (a question through the pipeline) is over, as a
    client would wait; fails on any other reason for not being ready."""
    deadline = time.monotonic() + timeout_s
    while (response := client.get("/readyz")).status_code != 200 and time.monotonic() < deadline:
        assert response.json()["checks"].get("warm_up") == "warming up", response.text
        time.sleep(0.2)
    return response


@contextmanager
def served(app: ASGIApp, gateway: GatewaySettings | None = None) -> Iterator[str]:
    """``app`` on a free port over real HTTP (uvicorn in a thread); yields its base URL. With
    ``gateway``: the server `taxnav serve` builds (its protocol, limits and timeouts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    if gateway is None:
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    else:
        server = build_server(app, gateway, "127.0.0.1", port)
    thread = threading.Thread(target=server.run, name="served-gateway", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the gateway did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
