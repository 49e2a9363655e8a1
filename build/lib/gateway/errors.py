"""One error shape for every 4xx/5xx the gateway sends, ``{"error": {"type", "message"}}``,
and the handlers and body-size guard that keep bad requests from ever becoming a 500."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.errors import PipelineError
from shared.contracts.api import clean_text

log = logging.getLogger(__name__)

# What an error message must never show a client: credentials in a URL, an address and port,
# a file-system path (a store's or a library's exception text often carries them).
_SECRETS = (
    (re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+"), "<url>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<address>"),
    (re.compile(r"\[[0-9a-fA-F:]+\](?::\d+)?"), "<address>"),
    (re.compile(r"\blocalhost(?::\d+)?\b", re.IGNORECASE), "<address>"),
    (re.compile(r"\b[\w.-]+:\d{2,5}\b"), "<address>"),
    (re.compile(r"(?<![\w/.])/(?!v1/)(?:[\w.@+~-]+/)+[\w.@+~-]*"), "<path>"),
    (re.compile(r"(?<![\w/])\.{1,2}/(?:[\w.@+~-]+/?)+"), "<path>"),
)


def redact(text: str) -> str:
    """``text`` fit for a response: no secrets (see _SECRETS) and encodable as UTF-8."""
    text = clean_text(text)
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {_redacted(k): _redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(v) for v in value]
    return value


class ErrorBody(BaseModel):
    type: str  # machine-readable: invalid_request, invalid_json, body_too_large, not_found, timeout, ...
    message: str
    detail: Any = None


class ErrorResponse(BaseModel):
    error: ErrorBody


class ApiError(Exception):
    def __init__(self, status: int, type_: str, message: str, detail: Any = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.type, self.message, self.detail, self.headers = status, type_, message, detail, headers


def error_response(status: int, type_: str, message: str, detail: Any = None, headers: dict[str, str] | None = None) -> JSONResponse:
    """The one error shape; message and detail redacted (they may quote the request or a
    library's exception)."""
    body = ErrorResponse(error=ErrorBody(type=type_, message=redact(message), detail=_redacted(_plain(detail))))
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


def pipeline_error_response(exc: PipelineError, retry_after_s: int) -> JSONResponse:
    """A failed question's error; one that passes (Redis back, the index swapped) says when to
    ask again."""
    headers = {"Retry-After": str(retry_after_s)} if exc.retriable else None
    return error_response(exc.http_status, exc.kind, str(exc), headers=headers)


def documented(*statuses: int, media_type: str | None = None) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entry for routes that may answer with the error shape; with
    ``media_type`` under that type (FastAPI files an extra response under the route's own
    type: an event stream's would be text/event-stream)."""
    if media_type is None:
        return {status: {"model": ErrorResponse} for status in statuses}
    schema = {"$ref": "#/components/schemas/ErrorResponse"}  # a component: other routes' errors list it
    return {status: {"description": "Error", "content": {media_type: {"schema": schema}}} for status in statuses}


_STATUS_TYPES = {400: "invalid_request", 404: "not_found", 405: "method_not_allowed", 408: "body_timeout", 413: "body_too_large"}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.type, exc.message, exc.detail, exc.headers)

    @app.exception_handler(PipelineError)
    async def _pipeline_error(request: Request, exc: PipelineError) -> JSONResponse:
        return pipeline_error_response(exc, request.app.state.settings.gateway.retry_after_s)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(400, "invalid_json", "The request body is not valid JSON.", _plain(errors))
        where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in errors)
        return error_response(422, "invalid_request", f"The request does not match the API: {where}", _plain(errors))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # exc.headers carries 405's Allow.
        return error_response(exc.status_code, _STATUS_TYPES.get(exc.status_code, "http_error"), str(exc.detail), headers=exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return error_response(500, "internal", f"{type(exc).__name__}: the gateway failed on this request")


def _plain(errors: Any) -> Any:
    """Validation errors as JSON (they may hold the offending input: bytes, exceptions)."""
    return json.loads(json.dumps(errors, default=str))


_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # CTLs but HTAB: no header field may hold one (RFC 9110 5.5)


class WellFormedHead:
    """A typed error, closing the connection, for a request head h11 lets through: one over
    ``max_bytes`` (h11 bounds only a head still arriving), Content-Length together with
    Transfer-Encoding (how requests are smuggled past a proxy, RFC 9112 6.1), a control
    character in a header."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (refusal := self._refusal(scope)) is not None:
            return await refusal(scope, receive, send)
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        close = {"Connection": "close"}
        if sum(len(name) + len(value) + 4 for name, value in headers) + len(scope["raw_path"]) + len(scope["query_string"]) > self.max_bytes:
            return error_response(431, "headers_too_large", f"The request's headers are over {self.max_bytes} bytes.", headers=close)
        names = {name for name, _ in headers}
        if b"content-length" in names and b"transfer-encoding" in names:
            return error_response(400, "invalid_http", "The request is not valid HTTP/1.1: Content-Length with Transfer-Encoding.", headers=close)
        if any(_CONTROL.search(value) for _, value in headers):
            return error_response(400, "invalid_http", "The request is not valid HTTP/1.1: a control character in a header.", headers=close)
        return None


class BodyLimit:
    """413 for bodies over ``max_bytes`` and 408 for bodies that take longer than
    ``timeout_s`` to arrive, before anything parses them. A declared length over the limit
    is refused up front; any body is read whole (it is small) under the deadline and replayed."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float = 10.0) -> None:
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                return await error_response(400, "invalid_request", "Content-Length is not a number.")(scope, receive, send)
            if int(declared) > self.max_bytes:
                return await self._too_large(scope, receive, send)
            if int(declared) == 0:
                return await self.app(scope, receive, send)
        elif b"chunked" not in headers.get(b"transfer-encoding", b""):
            return await self.app(scope, receive, send)
        body, more = b"", True
        try:
            async with asyncio.timeout(self.timeout_s):
                while more:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # client went away
                    body += message.get("body", b"")
                    more = message.get("more_body", False)
                    if len(body) > self.max_bytes:
                        return await self._too_large(scope, receive, send)
        except TimeoutError:
            response = error_response(408, "body_timeout", f"The request body did not arrive within {self.timeout_s:g} s.", headers={"Connection": "close"})
            return await response(scope, receive, send)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, "body_too_large", f"The request body is over {self.max_bytes} bytes.")
        await response(scope, receive, send)
