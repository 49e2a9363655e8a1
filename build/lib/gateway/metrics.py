"""Prometheus metrics, one registry per app (so several apps in one process stay apart)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.errors import PipelineError
from shared.contracts.api import QuestionResult

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.4, 0.6, 1.0, 2.5, 5.0, 10.0, 30.0)


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "taxnav_http_requests", "HTTP requests by route and status", ["method", "route", "status"], registry=self.registry
        )
        self.questions = Counter(
            "taxnav_questions", "Questions by outcome (answered, refused or an error type)", ["outcome"], registry=self.registry
        )
        self.refusals = Counter("taxnav_refusals", "Refusals by category", ["category"], registry=self.registry)
        self.stage_seconds = Histogram(
            "taxnav_stage_seconds", "Time spent in each pipeline stage", ["stage"], buckets=_LATENCY_BUCKETS, registry=self.registry
        )
        self.question_seconds = Histogram(
            "taxnav_question_seconds", "Question end-to-end time seen by the gateway", buckets=_LATENCY_BUCKETS, registry=self.registry
        )

    def record(self, outcome: QuestionResult | PipelineError, seconds: float) -> None:
        self.question_seconds.observe(seconds)
        if isinstance(outcome, PipelineError):
            self.questions.labels(outcome.kind).inc()
            return
        self.questions.labels(outcome.status).inc()
        if outcome.refusal is not None:
            self.refusals.labels(outcome.refusal.category).inc()
        for trace in outcome.trace:
            self.stage_seconds.labels(trace.stage).observe(trace.ms / 1000)


def _routes(router: Any) -> Iterator[BaseRoute]:
    """Every route under a router, those of included routers too (FastAPI keeps each
    ``include_router`` as one route holding the router, with no path of its own)."""
    for route in router.routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes(included)
        else:
            yield route


def _template(scope: Scope) -> str:
    """The template of the route or mount that serves ``scope``: FastAPI's own routes put
    themselves in the scope; plain Starlette routes, mounts and the replies the middleware
    sends before routing (401, 429, 413, 408) are matched here."""
    for route in _routes(scope["app"].router):
        path = getattr(route, "path", None)
        if path is not None and route.matches(scope)[0] == Match.FULL:
            return path + "/{path}" if isinstance(route, Mount) else path
    return "unmatched"


class RequestCounter:
    """Counts every response by its route template (not the raw path: ids would explode it).
    Routes Starlette itself adds (/openapi.json) and files under a mount (the page's /static,
    Swagger UI's /docs/assets, as ``/static/{path}``) count by template too; only requests that
    match nothing are "unmatched"."""

    def __init__(self, app: ASGIApp, metrics: GatewayMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        status = 500
        before_routing = dict(scope)  # routing rewrites root_path for mounts

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            route = getattr(scope.get("route"), "path", None) or _template(before_routing)
            self.metrics.requests.labels(scope["method"], route, str(status)).inc()
