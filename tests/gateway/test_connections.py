"""Connections against a real server built as `taxnav serve` builds it (gateway/cli.py
``build_server``), over raw loopback sockets: headers that trickle or never come, headers too
large, idle kept-alive connections, and what h11 cannot parse, each answered in the typed
error shape or closed, within its limit."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings
from tests.support.gateway import served

HEADER_TIMEOUT_S = 1.0
KEEP_ALIVE_S = 1.0


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory, settings_for: Callable[..., Settings]) -> Iterator[tuple[str, int]]:
    settings = settings_for(tmp_path_factory.mktemp("connections-data"))  # no index: these requests never need one
    settings.gateway.header_read_timeout_s = HEADER_TIMEOUT_S
    settings.gateway.keep_alive_timeout_s = KEEP_ALIVE_S
    with served(create_app(settings), settings.gateway) as url:
        parts = urlsplit(url)
        yield parts.hostname, parts.port


def until_closed(sock: socket.socket, limit_s: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and how long that took (fails past ``limit_s``)."""
    sock.settimeout(limit_s)
    started, received = time.monotonic(), b""
    with contextlib.suppress(ConnectionResetError):  # a close with our request unread resets, after the reply
        while chunk := sock.recv(65536):
            received += chunk
    return received, time.monotonic() - started


def typed(reply: bytes) -> tuple[int, dict, str]:
    """(status, JSON body, lower-cased head) of one raw HTTP reply."""
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body), head.decode().lower()


def exchange(address: tuple[str, int], data: bytes, limit_s: float = 5.0) -> bytes:
    with socket.create_connection(address) as sock:
        sock.sendall(data)
        return until_closed(sock, limit_s)[0]


def test_headers_that_trickle_get_a_typed_408_and_the_connection_closed(address):
    with socket.create_connection(address) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Slow: ")
        reply, seconds = until_closed(sock, limit_s=HEADER_TIMEOUT_S + 3)
    status, body, head = typed(reply)
    assert status == 408 and body["error"]["type"] == "header_timeout", reply
    assert "connection: close" in head and "x-content-type-options: nosniff" in head
    assert HEADER_TIMEOUT_S - 0.2 < seconds < HEADER_TIMEOUT_S + 2


def test_a_connection_that_sends_nothing_is_closed(address):
    with socket.create_connection(address) as sock:
        reply, seconds = until_closed(sock, limit_s=HEADER_TIMEOUT_S + 3)
    assert reply == b"" and seconds < HEADER_TIMEOUT_S + 2


def test_a_kept_alive_connection_is_closed_when_idle_and_its_next_request_must_not_trickle(address):
    with socket.create_connection(address) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n")
        sock.settimeout(3)
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200"), first
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # the next request starts, then stalls
        reply, seconds = until_closed(sock, limit_s=HEADER_TIMEOUT_S + 3)
    assert typed(reply)[0] == 408 and seconds < HEADER_TIMEOUT_S + 2
    with socket.create_connection(address) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n")
        reply, seconds = until_closed(sock, limit_s=KEEP_ALIVE_S + 3)
    assert reply.startswith(b"HTTP/1.1 200") and seconds < KEEP_ALIVE_S + 2


@pytest.mark.parametrize("size", [1_000_000, 20_000], ids=["arriving-in-pieces", "in-one-packet"])
def test_headers_over_the_limit_are_a_typed_431(address, size):
    with socket.create_connection(address) as sock:
        replies: list[bytes] = []
        reader = threading.Thread(target=lambda: replies.append(until_closed(sock, limit_s=5)[0]))
        reader.start()  # reading meanwhile: the server answers and closes before all is sent
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Big: " + b"a" * size + b"\r\n\r\n")
        reader.join(6)
    status, body, _ = typed(replies[0])
    assert status == 431 and body["error"]["type"] == "headers_too_large", replies[0][:300]


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"G(T /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n",  # not a method token
        b"POST /v1/questions HTTP/1.1\r\nHost: gateway\r\nContent-Length: abc\r\n\r\n",
        b"POST /v1/questions HTTP/1.1\r\nHost: gateway\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Bad: a\x01b\r\n\r\n",  # a control character
        b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nBad Header: x\r\n\r\n",
    ],
    ids=["bad-method", "bad-content-length", "length-and-chunked", "control-character", "bad-header-name"],
)
def test_what_h11_cannot_parse_is_a_typed_400(address, request_bytes):
    status, body, head = typed(exchange(address, request_bytes))
    assert status == 400 and body["error"]["type"] == "invalid_http", body
    assert body["error"]["message"].startswith("The request is not valid HTTP/1.1")
    assert "content-type: application/json" in head and "x-content-type-options: nosniff" in head


def test_an_unknown_but_well_formed_method_is_a_typed_405(address):
    status, body, head = typed(exchange(address, b"BREW /healthz HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n"))
    assert status == 405 and body["error"]["type"] == "method_not_allowed" and "allow: get" in head


def test_a_disallowed_cors_preflight_is_a_typed_400(tmp_path: Path, settings_for: Callable[..., Settings]):
    settings = settings_for(tmp_path)
    settings.gateway.cors_origins = ["https://allowed.example"]
    with TestClient(create_app(settings)) as client:
        preflight = {"Access-Control-Request-Method": "DELETE"}
        refused = client.options("/v1/questions", headers={"Origin": "https://elsewhere.example", **preflight})
        allowed = client.options("/v1/questions", headers={"Origin": "https://allowed.example", "Access-Control-Request-Method": "POST"})
    assert refused.status_code == 400 and refused.json()["error"] == {
        "type": "cors_rejected", "message": "Disallowed CORS origin, method.", "detail": None,
    }  # fmt: skip
    assert refused.headers["access-control-allow-methods"] == "GET, POST"
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "https://allowed.example"
