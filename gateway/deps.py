"""Request dependencies (``Annotated`` aliases): the app's settings, question store, metrics
and the serving corpus index. The app-state getters are ``async``: FastAPI would run plain
functions on its thread pool, a thread hop per dependency per request."""

from __future__ import annotations

from typing import Annotated, TypeVar

from fastapi import Depends, Query, Request

from gateway.errors import ApiError
from gateway.metrics import GatewayMetrics
from services.api import QuestionStore
from shared.config import Settings
from shared.contracts.api import QuestionRequest
from shared.generation import (
    MANUAL_REQUEST,
    MAX_MANUAL_CHARS,
    InvalidManualName,
    UnknownManual,
    canonical_manual,
    ingested_manuals,
    requested_manual,
)
from shared.index import CorpusIndex  # every route module loads the pipeline, and the index with it


async def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_store(request: Request) -> QuestionStore:
    return request.app.state.store


async def get_metrics(request: Request) -> GatewayMetrics:
    return request.app.state.metrics


# ``?wait=``, overriding the body's: bool, not bool | None, so the schema has no null (sent as "null")
WaitQuery = Annotated[bool, Query(description="overrides the body's `wait`")]
# ``?manual=``: documented with the pattern the gateway checks (a typed 422 invalid_manual, valid_manual)
ManualQuery = Annotated[
    str, Query(description="default: the configured manual", json_schema_extra={"pattern": MANUAL_REQUEST, "maxLength": MAX_MANUAL_CHARS})
]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
StoreDep = Annotated[QuestionStore, Depends(get_store)]
MetricsDep = Annotated[GatewayMetrics, Depends(get_metrics)]


def valid_manual(settings: Settings, manual: str | None) -> str:
    """The canonical name of a requested manual (shared/generation.py ``requested_manual``, as
    `taxnav ask` reads it), or a typed 422 (not a manual's name) / 404 (not ingested) listing
    the ingested ones; no manual named: the configured one (its index may still be missing: a
    503 later)."""
    try:
        canonical_manual(settings.manual)
    except InvalidManualName as exc:  # a deployment mistake, not the client's
        raise ApiError(503, "index_unavailable", "The configured manual is not a manual's name (TAXNAV_MANUAL).") from exc
    try:
        return requested_manual(settings, manual)
    except InvalidManualName as exc:
        raise ApiError(422, "invalid_manual", str(exc), {"manuals": ingested_manuals(settings)}) from exc
    except UnknownManual as exc:
        raise ApiError(404, "unknown_manual", str(exc), {"manuals": exc.available}) from exc


def valid_focus(settings: Settings, manual: str, focus: str | None) -> str | None:
    """A page the question is to be answered from first (an alternative the reader chose), or a
    typed 404 when the manual has no such page (the id is well formed: its schema says so; what
    exists is the server's to say, as for ``unknown_manual``)."""
    if focus is not None and focus not in open_index(settings, manual).pages:
        raise ApiError(404, "unknown_page", f"{focus} is not a page of {manual}.", {"focus": focus})
    return focus


Asked = TypeVar("Asked", bound=QuestionRequest)


def with_valid_manual(settings: Settings, body: Asked) -> Asked:
    """A question's request (``/v1/questions`` or a conversation's turn) naming its manual by
    its canonical name, and any page it focuses on, checked here at the edge before anything is
    dispatched (``valid_manual``, ``valid_focus``)."""
    body = body.model_copy(update={"manual": valid_manual(settings, body.manual)})
    valid_focus(settings, body.manual, body.focus)
    return body


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
