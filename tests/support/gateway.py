"""Helpers for tests that drive the gateway app."""

from __future__ import annotations

import time

import httpx
from fastapi.testclient import TestClient


def wait_ready(client: TestClient, timeout_s: float = 60) -> httpx.Response:
    """/readyz once the start-up warm-up (a question through the pipeline) is over, as a
    client would wait; fails on any other reason for not being ready."""
    deadline = time.monotonic() + timeout_s
    while (response := client.get("/readyz")).status_code != 200 and time.monotonic() < deadline:
        assert response.json()["checks"].get("warm_up") == "warming up", response.text
        time.sleep(0.2)
    return response
