"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from gateway.deps import MetricsDep, SettingsDep, StoreDep, open_index
from gateway.errors import ApiError, redact
from services.api import StallWatch, queue_states
from shared.config import Settings

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, str]  # check -> "ok" or why not


@router.get("/healthz", response_model=Health, summary="The process is up")
async def healthz() -> Health:
    # async: a plain function would hop to a pool thread, which under load waits for the GIL
    # behind the pipeline's threads (twice: there and back).
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}}, summary="Ready to answer questions")
def readyz(settings: SettingsDep, store: StoreDep, request: Request) -> JSONResponse:
    checks: dict[str, str] = {"warm_up": "ok" if request.app.state.warm.is_set() else "warming up"}
    try:
        index = open_index(settings)
        checks["index"] = f"ok: {len(index.pages)} pages, generation {index.generation}" if index.pages else "empty index"
    except ApiError as exc:
        checks["index"] = redact(exc.message)
    if settings.mode == "distributed":
        trouble = store.writable()  # never the URL: it may carry a password
        checks["redis"] = "ok" if trouble is None else trouble
        if trouble is None:
            checks.update(queue_checks(settings, request.app.state))
    ready = all(value.startswith("ok") for value in checks.values())
    return JSONResponse(Readiness(ready=ready, checks=checks).model_dump(), status_code=200 if ready else 503)


def queue_checks(settings: Settings, state: object) -> dict[str, str]:
    """One check per stage queue: a worker consumes it, and takes its messages (not stalled for
    ``stall_after_s``). The broadcast takes up to a second, so one answer is reused for
    ``readiness_cache_s``."""
    now = time.monotonic()
    cached = getattr(state, "queue_checks", None)
    if cached is None or now - cached[0] > settings.gateway.readiness_cache_s:
        watch = getattr(state, "stall_watch", None) or StallWatch(settings.gateway.stall_after_s)
        state.stall_watch = watch
        try:
            checks = {f"queue {q}": watch.check(q, queue, now) for q, queue in queue_states(settings).items()}
        except Exception as exc:  # noqa: BLE001  (the broker's error text carries its address)
            checks = {"queues": f"cannot ask the workers ({type(exc).__name__})"}
        cached = (now, checks)
        state.queue_checks = cached
    return cached[1]


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(gateway_metrics: MetricsDep) -> Response:
    return Response(generate_latest(gateway_metrics.registry), media_type=CONTENT_TYPE_LATEST)
