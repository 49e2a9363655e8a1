"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from gateway.deps import MetricsDep, SettingsDep, StoreDep, open_index
from gateway.errors import ApiError

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, str]  # check -> "ok" or why not


@router.get("/healthz", response_model=Health, summary="The process is up")
def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}}, summary="Ready to answer questions")
def readyz(settings: SettingsDep, store: StoreDep, request: Request) -> JSONResponse:
    checks: dict[str, str] = {"warm_up": "ok" if request.app.state.warm.is_set() else "warming up"}
    try:
        index = open_index(settings)
        checks["index"] = f"ok: {len(index.pages)} pages, generation {index.generation}" if index.pages else "empty index"
    except ApiError as exc:
        checks["index"] = exc.message
    if settings.mode == "distributed":
        checks["redis"] = "ok" if store.ping() else f"unreachable at {settings.redis_url}"
    ready = all(value.startswith("ok") for value in checks.values())
    return JSONResponse(Readiness(ready=ready, checks=checks).model_dump(), status_code=200 if ready else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(gateway_metrics: MetricsDep) -> Response:
    return Response(generate_latest(gateway_metrics.registry), media_type=CONTENT_TYPE_LATEST)
