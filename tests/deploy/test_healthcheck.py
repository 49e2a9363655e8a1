"""deploy/healthcheck.py, the gateway's and beat's container healthcheck, against real servers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "healthcheck.py"


def healthcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=30, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200 if self.path == "/healthz" else 503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_http_healthy_when_the_url_answers_2xx(http_server: str) -> None:
    assert healthcheck("http", f"{http_server}/healthz").returncode == 0


def test_http_unhealthy_on_an_error_status_or_no_server(http_server: str) -> None:
    done = healthcheck("http", f"{http_server}/broken")
    assert done.returncode == 1 and "503" in done.stderr
    done = healthcheck("http", f"http://127.0.0.1:{closed_port()}/healthz")
    assert done.returncode == 1 and "unhealthy" in done.stderr


def test_redis_healthy_when_the_configured_redis_answers() -> None:
    assert healthcheck("redis", env={"TAXNAV_REDIS_URL": "redis://127.0.0.1:6379/0"}).returncode == 0


def test_redis_unhealthy_when_nothing_listens() -> None:
    done = healthcheck("redis", env={"TAXNAV_REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0"})
    assert done.returncode == 1 and "unhealthy" in done.stderr


def test_unknown_check_is_a_usage_error() -> None:
    done = healthcheck("disk")
    assert done.returncode == 2 and "healthcheck.py http URL" in done.stderr
