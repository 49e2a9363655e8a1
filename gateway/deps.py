"""Request dependencies (``Annotated`` aliases): the app's settings, question store, metrics
and the serving corpus index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from gateway.errors import ApiError
from gateway.metrics import GatewayMetrics
from services.results import QuestionStore
from shared.config import Settings

if TYPE_CHECKING:
    from shared.index import CorpusIndex


def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_store(request: Request) -> QuestionStore:
    return request.app.state.store


def get_metrics(request: Request) -> GatewayMetrics:
    return request.app.state.metrics


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
StoreDep = Annotated[QuestionStore, Depends(get_store)]
MetricsDep = Annotated[GatewayMetrics, Depends(get_metrics)]


def open_index(settings: Settings, manual: str | None = None) -> CorpusIndex:
    """The serving generation of a manual's index, or a typed 503 when there is none yet."""
    from shared.index import CorpusIndex  # noqa: PLC0415  (heavy: loads the stores)

    try:
        return CorpusIndex.open(settings, manual)
    except (FileNotFoundError, LookupError, ValueError) as exc:
        raise ApiError(
            503, "index_unavailable", f"No serving index for {manual or settings.manual}: run `taxnav ingest` first ({exc})"
        ) from exc


def get_index(settings: SettingsDep) -> CorpusIndex:
    return open_index(settings)


IndexDep = Annotated["CorpusIndex", Depends(get_index)]
