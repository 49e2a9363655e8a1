"""Request dependencies (``Annotated`` aliases): the app's settings, question store, metrics
and the serving corpus index. The app-state getters are ``async``: FastAPI would run plain
functions on its thread pool, a thread hop per dependency per request."""

from __future__ import annotations

from typing import Annotated, TypeVar

from fastapi import Depends, Request

from gateway.errors import ApiError
from gateway.metrics import GatewayMetrics
from services.results import QuestionStore
from shared.config import Settings
from shared.contracts.api import QuestionRequest
from shared.generation import InvalidManualName, canonical_manual, ingested_manuals
from shared.index import CorpusIndex  # every route module loads the pipeline, and the index with it


async def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_store(request: Request) -> QuestionStore:
    return request.app.state.store


async def get_metrics(request: Request) -> GatewayMetrics:
    return request.app.state.metrics


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
StoreDep = Annotated[QuestionStore, Depends(get_store)]
MetricsDep = Annotated[GatewayMetrics, Depends(get_metrics)]


def valid_manual(settings: Settings, manual: str | None) -> str:
    """The canonical name of a requested manual: the configured one when none is named (its
    index may still be missing: a 503 later), else one of the ingested manuals, or a typed
    422 (not a manual's name) / 404 (not ingested) listing the ingested ones."""
    try:
        configured = canonical_manual(settings.manual)
    except InvalidManualName as exc:  # a deployment mistake, not the client's
        raise ApiError(503, "index_unavailable", "The configured manual is not a manual's name (TAXNAV_MANUAL).") from exc
    if manual is None:
        return configured
    try:
        name = canonical_manual(manual)
    except InvalidManualName as exc:
        raise ApiError(422, "invalid_manual", str(exc), {"manuals": ingested_manuals(settings)}) from exc
    if name == configured:
        return name
    available = ingested_manuals(settings)
    if name not in available:
        raise ApiError(404, "unknown_manual", f"No ingested manual {name}; ingested: {', '.join(available) or 'none'}.", {"manuals": available})
    return name


Asked = TypeVar("Asked", bound=QuestionRequest)


def with_valid_manual(settings: Settings, body: Asked) -> Asked:
    """A question's request (``/v1/questions`` or a conversation's turn) naming its manual by
    its canonical name, checked here at the edge before anything is dispatched (``valid_manual``)."""
    return body.model_copy(update={"manual": valid_manual(settings, body.manual)})


def open_index(settings: Settings, manual: str | None = None) -> CorpusIndex:
    """The serving generation of a manual's index, or a typed 503 when there is none yet."""
    name = valid_manual(settings, manual)
    try:
        return CorpusIndex.open(settings, name)
    except (FileNotFoundError, LookupError, ValueError) as exc:
        # Not the exception's text: it may name the data directory.
        raise ApiError(503, "index_unavailable", f"No serving index for {name}: run `taxnav ingest` first.") from exc


def get_index(settings: SettingsDep) -> CorpusIndex:
    return open_index(settings)


IndexDep = Annotated[CorpusIndex, Depends(get_index)]
