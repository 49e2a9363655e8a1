"""Edge policy middleware: response security headers, optional API keys with per-key rate
limits. Health, metrics, the docs and the web page stay open; the API (``/v1/...``) needs a
key once ``gateway.api_keys`` lists any (none = open, the embedded default)."""

from __future__ import annotations

import hmac
import math
import threading
import time

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import error_response

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
API_PREFIX = "/v1/"
WINDOW_S = 60.0


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)


class TypedCORS(CORSMiddleware):
    """Starlette's CORS middleware with a refused preflight in the typed error shape (it
    answers plain text), its CORS headers kept."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 400:
            return response
        cors = {k: v for k, v in response.headers.items() if k.startswith("access-control-") or k == "vary"}
        return error_response(400, "cors_rejected", f"{response.body.decode()}.", headers=cors)


class RateWindow:
    """Requests per caller in fixed one-minute windows (thread-safe, one process)."""

    def __init__(self, per_minute: int, clock=time.monotonic) -> None:  # noqa: ANN001
        self.per_minute, self._clock = per_minute, clock
        self._windows: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def admit(self, caller: str) -> float | None:
        """None when admitted (and counted), else the seconds until the caller's window reopens."""
        return self._take(caller, count=True)

    def full(self, caller: str) -> float | None:
        """The seconds until the caller's window reopens when it is full, else None (counts nothing)."""
        return self._take(caller, count=False)

    def _take(self, caller: str, count: bool) -> float | None:
        if self.per_minute <= 0:
            return None
        now = self._clock()
        with self._lock:
            if len(self._windows) > 10_000:  # drop finished windows of callers gone quiet
                self._windows = {k: v for k, v in self._windows.items() if now - v[0] < WINDOW_S}
            started, used = self._windows.get(caller, (now, 0))
            if now - started >= WINDOW_S:
                started, used = now, 0
            if used >= self.per_minute:
                return WINDOW_S - (now - started)
            if count:
                self._windows[caller] = (started, used + 1)
            return None


class ApiKeys:
    """401 without a listed key (``X-API-Key`` or ``Authorization: Bearer``) when keys are
    configured; 429 with Retry-After past the caller's (key's, or address's) rate limit. Keys
    that do not match count against their address (``guesses_per_minute``): past it, every
    request from that address is a 429 until its minute is over, its key not even compared (so
    a guess learns nothing)."""

    def __init__(self, app: ASGIApp, keys: list[str], per_minute: int, guesses_per_minute: int = 0) -> None:
        self.app, self.keys = app, [k.encode() for k in keys if k]
        self.window, self.guesses = RateWindow(per_minute), RateWindow(guesses_per_minute)

    def _key(self, scope: Scope) -> bytes | None:
        headers = dict(scope["headers"])
        given = headers.get(b"x-api-key")
        if given is None and headers.get(b"authorization", b"").lower().startswith(b"bearer "):
            given = headers[b"authorization"][7:].strip()
        return given

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(API_PREFIX):
            return await self.app(scope, receive, send)
        caller = (scope.get("client") or ("unknown", 0))[0]
        if self.keys:
            wait_s = self.guesses.full(caller)
            if wait_s is not None:
                return await _limited(self.guesses.per_minute, "failed key attempts", wait_s)(scope, receive, send)
            given = self._key(scope)
            matched = next((k for k in self.keys if given is not None and hmac.compare_digest(k, given)), None)
            if matched is None:
                self.guesses.admit(caller)
                response = error_response(
                    401, "unauthorized", "This API needs a key: send it as X-API-Key or Authorization: Bearer.",
                    headers={"WWW-Authenticate": "Bearer"},
                )
                return await response(scope, receive, send)
            caller = "key:" + hmac.new(b"taxnav", matched, "sha256").hexdigest()[:16]  # never the key itself
        wait_s = self.window.admit(caller)
        if wait_s is not None:
            return await _limited(self.window.per_minute, "requests", wait_s)(scope, receive, send)
        await self.app(scope, receive, send)


def _limited(per_minute: int, what: str, wait_s: float) -> JSONResponse:
    return error_response(
        429, "rate_limited", f"Over {per_minute} {what} a minute for this caller.", headers={"Retry-After": str(max(1, math.ceil(wait_s)))}
    )
