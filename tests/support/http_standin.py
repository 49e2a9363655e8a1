"""A small threaded HTTP STAND-IN with a route table, for adapters whose server cannot run here.

Routes map (method, path regex) to a handler ``(match, body) -> (status, JSON-able reply)``;
every request is recorded as (method, path, query, JSON body) so a test can assert exactly
what an adapter sent on the wire.

    with HttpStandin({("PUT", r"/collections/(?P<name>[^/]+)"): lambda m, body: (200, {...})}) as server:
        client = SomeClient(url=server.base_url)
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Handler = Callable[[re.Match[str], Any], tuple[int, Any]]


class Recorded:
    def __init__(self, method: str, path: str, query: dict[str, list[str]], body: Any):
        self.method, self.path, self.query, self.body = method, path, query, body

    def __repr__(self) -> str:
        return f"{self.method} {self.path}"


class HttpStandin:
    def __init__(self, routes: dict[tuple[str, str], Handler] | None = None):
        self.routes: dict[tuple[str, re.Pattern[str]], Handler] = {}
        for (method, pattern), handler in (routes or {}).items():
            self.route(method, pattern, handler)
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        self.routes[(method.upper(), re.compile(pattern + r"$"))] = handler

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> HttpStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _dispatch(self, method: str, raw_path: str, raw_body: bytes) -> tuple[int, Any]:
        parts = urlsplit(raw_path)
        try:
            body = json.loads(raw_body) if raw_body else None
        except json.JSONDecodeError:
            body = raw_body.decode(errors="replace")
        with self._lock:
            self.requests.append(Recorded(method, parts.path, parse_qs(parts.query), body))
        for (route_method, pattern), handler in self.routes.items():
            match = pattern.match(parts.path)
            if route_method == method and match:
                return handler(match, body)
        return 404, {"status": {"error": f"stand-in: no route {method} {parts.path}"}}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                status, reply = standin._dispatch(self.command, self.path, self.rfile.read(length) if length else b"")
                payload = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve  # noqa: N815

        return Handler
