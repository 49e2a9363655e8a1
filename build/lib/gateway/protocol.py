"""The gateway's HTTP/1.1 connections: uvicorn's h11 protocol with a deadline for a request's
headers and the typed error shape for what uvicorn answers itself, before the app sees a
request.

uvicorn bounds the size of a request's head (``h11_max_incomplete_event_size``) and an idle
kept-alive connection (``timeout_keep_alive``), but nothing bounds how long headers take to
arrive: a client sending a byte at a time held a connection for good. And its own replies to
what h11 cannot parse (bad Content-Length, Content-Length with Transfer-Encoding, control
characters in a header, a head over the limit) were plain text.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol
from uvicorn.server import ServerState

from gateway.errors import error_response
from gateway.security import SECURITY_HEADERS


def raw_error(status: int, type_: str, message: str) -> bytes:
    """A complete HTTP/1.1 reply in the one error shape (gateway/errors.py), closing the
    connection: written to the socket as is, where no request is there to answer through h11."""
    response = error_response(status, type_, message)
    headers = [*response.raw_headers, *((k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()), (b"connection", b"close")]
    head = b"".join(b"%s: %s\r\n" % header for header in headers)
    return b"HTTP/1.1 %d %s\r\n%s\r\n%s" % (status, STATUS_PHRASES[status], head, response.body)


class _Connection(h11.Connection):
    """h11's connection, keeping the protocol error it raised (uvicorn's reply drops it)."""

    error: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:  # noqa: ANN401  (h11's own union of events and sentinels)
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.error = exc
            raise


class GatewayProtocol(H11Protocol):
    """``H11Protocol`` plus ``header_timeout_s``: a request whose headers have not all arrived
    that long after its first byte (or after the connection opened) gets a typed 408 and the
    connection is closed."""

    header_timeout_s = 10.0

    @classmethod
    def configured(cls, header_timeout_s: float) -> type[GatewayProtocol]:
        """The protocol class for one server (uvicorn makes one instance per connection)."""
        return type(cls.__name__, (cls,), {"header_timeout_s": header_timeout_s})

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any], _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.conn = _Connection(h11.SERVER, self.conn._max_incomplete_event_size)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm_header_timer()  # (still) waiting for a request's headers
        else:
            self._disarm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            return  # a request is being answered (an idle kept-alive connection has its own timer)
        if self.conn.trailing_data[0]:  # part of a request came
            self.transport.write(raw_error(408, "header_timeout", f"The request's headers did not arrive within {self.header_timeout_s:g} s."))
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """What h11 could not parse, in the typed shape: 431 for a head over the size limit
        (h11's hint), else 400 with h11's reason (it quotes no part of the request)."""
        error = self.conn.error
        status = error.error_status_hint if error is not None and error.error_status_hint in (400, 431) else 400
        kind = "headers_too_large" if status == 431 else "invalid_http"
        reason = str(error) if error is not None else msg
        self.transport.write(raw_error(status, kind, f"The request is not valid HTTP/1.1: {reason}."))
        self.transport.close()
