"""A real local HTTP server replaying ../shared/corpus in the GOV.UK Content API URL layout.

    /api/content/hmrc-internal-manuals/<manual>             -> <corpus>/<manual>/_manual.json
    /api/content/hmrc-internal-manuals/<manual>/<section>   -> <corpus>/<manual>/<section>.json

Used by the crawler tests and the ingest benchmark. Faults (500s, 429s, slow responses, 404s,
truncated JSON) are injected per path, and pages can be overridden, modified or removed while
the server runs, so re-ingest tests see a manual that changed between two crawls.
"""

from __future__ import annotations

import argparse
import copy
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

API_PREFIX = "/api/content/hmrc-internal-manuals/"

FaultKind = Literal["status", "slow", "truncate"]


@dataclass
class Fault:
    """One injected fault on a page. ``section`` is a section id (any case) or None for the
    manual's root page; ``times`` is how many requests it hits (None: every request)."""

    manual: str
    section: str | None
    kind: FaultKind
    status: int = 500  # for kind="status" (500, 503, 429, 404, 410, ...)
    delay_s: float = 0.0  # for kind="slow"
    retry_after: int | None = None  # Retry-After header on 429/503
    times: int | None = None

    def key(self) -> tuple[str, str | None]:
        return self.manual, self.section.lower() if self.section else None


class ReplayServer:
    """Threaded HTTP server over a corpus directory; use as a context manager.

    >>> with ReplayServer(corpus_dir) as server:
    ...     server.base_url  # http://127.0.0.1:<port>
    """

    def __init__(self, corpus_dir: str | Path, faults: list[Fault] | None = None, host: str = "127.0.0.1", port: int = 0):
        self.corpus_dir = Path(corpus_dir)
        if not self.corpus_dir.is_dir():
            raise FileNotFoundError(f"corpus directory not found: {self.corpus_dir}")
        self._lock = threading.Lock()
        self._faults: list[Fault] = list(faults or [])
        self._overrides: dict[tuple[str, str | None], dict[str, Any] | None] = {}  # None = removed
        self._bytes: dict[Path, bytes] = {}  # corpus files as read (served as is: no JSON round trip)
        self.hits: Counter[str] = Counter()  # request path -> count
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ReplayServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="replay-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- faults and page changes -------------------------------------------------------------
    def add_fault(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def override(self, manual: str, section: str | None, document: dict[str, Any]) -> None:
        """Serve ``document`` for this page instead of the corpus file."""
        with self._lock:
            self._overrides[(manual, section.lower() if section else None)] = copy.deepcopy(document)

    def modify(self, manual: str, section: str | None, change: Callable[[dict[str, Any]], None]) -> None:
        """Change the page as currently served (``change`` edits the document in place)."""
        document = self.document(manual, section)
        if document is None:
            raise KeyError(f"no page {manual}/{section}")
        change(document)
        self.override(manual, section, document)

    def remove(self, manual: str, section: str) -> None:
        """The page answers 404 from now on."""
        with self._lock:
            self._overrides[(manual, section.lower())] = None

    def reset(self) -> None:
        """Drop all faults and page changes; serve the corpus as it is on disk."""
        with self._lock:
            self._faults.clear()
            self._overrides.clear()
            self.hits.clear()

    def document(self, manual: str, section: str | None) -> dict[str, Any] | None:
        """The page as currently served (a copy), or None when it is absent or removed."""
        key = (manual, section.lower() if section else None)
        with self._lock:
            if key in self._overrides:
                found = self._overrides[key]
                return copy.deepcopy(found) if found is not None else None
        path = self._file(manual, section)
        if path is None or not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    # -- request handling --------------------------------------------------------------------
    def _file(self, manual: str, section: str | None) -> Path | None:
        if "/" in manual or manual.startswith(".") or (section and ("/" in section or section.startswith("."))):
            return None
        return self.corpus_dir / manual / (f"{section.lower()}.json" if section else "_manual.json")

    def _body(self, manual: str, section: str | None) -> bytes | None:
        key = (manual, section.lower() if section else None)
        with self._lock:
            if key in self._overrides:
                found = self._overrides[key]
                return json.dumps(found).encode() if found is not None else None
        path = self._file(manual, section)
        if path is None:
            return None
        cached = self._bytes.get(path)
        if cached is None:
            if not path.is_file():
                return None
            cached = self._bytes[path] = path.read_bytes()
        return cached

    def _take_fault(self, key: tuple[str, str | None]) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.key() == key and (fault.times is None or fault.times > 0):
                    if fault.times is not None:
                        fault.times -= 1
                    return fault
        return None

    def _respond(self, path: str) -> tuple[int, dict[str, str], bytes]:
        if not path.startswith(API_PREFIX):
            return 404, {}, b'{"error": "not found"}'
        parts = [p for p in path[len(API_PREFIX) :].split("/") if p]
        if not 1 <= len(parts) <= 2:
            return 404, {}, b'{"error": "not found"}'
        manual, section = parts[0], (parts[1] if len(parts) == 2 else None)
        key = (manual, section.lower() if section else None)
        fault = self._take_fault(key)
        truncate = False
        if fault is not None:
            if fault.kind == "slow":
                time.sleep(fault.delay_s)
            elif fault.kind == "status":
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                return fault.status, headers, json.dumps({"error": f"injected {fault.status}"}).encode()
            elif fault.kind == "truncate":
                truncate = True
        body = self._body(manual, section)
        if body is None:
            return 404, {}, b'{"error": "not found"}'
        if truncate:
            body = body[: len(body) // 2]
        return 200, {}, body

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes; with Nagle on, each response would wait
            # for the client's delayed ACK (~40 ms) on a keep-alive connection.
            disable_nagle_algorithm = True

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.hits[path] += 1
                status, headers, body = server._respond(path)
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test); nothing to do

            def log_message(self, *args: object) -> None:
                pass  # quiet: tests and benchmarks would drown in access logs

        return Handler


def main(argv: list[str] | None = None) -> int:
    """``python -m taxnav.replay_server --corpus ../shared/corpus --port 8765`` (manual runs)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="../shared/corpus")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    server = ReplayServer(args.corpus, host=args.host, port=args.port)
    print(f"serving {args.corpus} at {server.base_url}{API_PREFIX}<manual>", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
