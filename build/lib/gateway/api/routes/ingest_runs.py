"""The ingest run log (shared/contracts/ingest_runs.py): what each scheduled or manual re-ingest did.

A run's record lists every changed, removed and re-dated page (a first ingest: all of them),
so the list of runs carries only their counts; one run's pages are a separate, paginated
request.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, Literal, TypeVar
from urllib.parse import urlsplit

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel

from gateway.deps import SettingsDep
from gateway.errors import ApiError, documented, redact
from shared.contracts.ingest_runs import DateMove, IngestRun, RunStatus, find_run, read_runs

router = APIRouter(prefix="/v1/ingest", tags=["ingest"])

PageList = Literal["changed", "removed", "dates_moved"]
RunId = Annotated[str, Path(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_-]+$")]
Limit = Annotated[int, Query(ge=1, le=1000, description="at most this many items")]
Offset = Annotated[int, Query(ge=0, le=1_000_000, description="skip this many items (the previous page's `next_offset`)")]
T = TypeVar("T")


def shown_source(source: str) -> str:
    """Where a run crawled, fit for a response: a URL's host and path (no credentials, port or
    query), a directory as "local directory" and its own name (never its path)."""
    url = urlsplit(source)
    if url.scheme in ("http", "https"):
        return f"{url.hostname or ''}{url.path}"
    name = next((part for part in reversed(PurePath(source).parts) if part not in (".", "..", "/")), None)
    return f"local directory {name}" if name else "local directory"


class IngestRunCounts(IngestRun):
    """A run's record with its page lists as counts, its source and message as a response
    may show them (the log keeps the operator's own path)."""

    changed_pages: int = 0  # type: ignore[assignment]  (the list's length in place of the list)
    removed_pages: int = 0  # type: ignore[assignment]
    dates_moved: int = 0  # type: ignore[assignment]

    @classmethod
    def of(cls, run: IngestRun) -> IngestRunCounts:
        lists = {"changed_pages": len(run.changed_pages), "removed_pages": len(run.removed_pages), "dates_moved": len(run.dates_moved)}
        shown = {"source": shown_source(run.source), "message": redact(run.message)}
        return cls(**run.model_dump(exclude={*lists, *shown}), **lists, **shown)


def _window(items: list[T], offset: int, limit: int) -> tuple[list[T], int | None]:
    """One page of ``items`` and the next page's offset (None: this is the last page)."""
    return items[offset : offset + limit], offset + limit if len(items) > offset + limit else None


class IngestRunsView(BaseModel):
    runs: list[IngestRunCounts]  # newest first
    offset: int
    next_offset: int | None  # None: this is the last page


class RunPagesView(BaseModel):
    run_id: str
    kind: PageList
    total: int
    offset: int
    next_offset: int | None
    pages: list[str]  # section ids (changed, removed)
    dates_moved: list[DateMove]  # for list=dates_moved


@router.get(
    "/runs",
    response_model=IngestRunsView,
    responses=documented(422),
    summary="Recent ingest runs, newest first: pages changed and removed (counts), time taken",
)
def list_ingest_runs(
    settings: SettingsDep,
    limit: Limit = 50,
    offset: Offset = 0,
    manual: Annotated[str | None, Query(max_length=100, examples=["employment-income-manual"])] = None,
    status: Annotated[RunStatus | None, Query(description="only runs that ended so")] = None,
) -> IngestRunsView:
    runs = read_runs(settings.data_dir, limit=offset + limit + 1, manual=manual, status=status)
    page, next_offset = _window(runs, offset, limit)
    return IngestRunsView(runs=[IngestRunCounts.of(r) for r in page], offset=offset, next_offset=next_offset)


@router.get(
    "/runs/{run_id}",
    response_model=IngestRunCounts,
    responses=documented(404, 422),
    summary="One ingest run (page lists as counts)",
)
def get_ingest_run(settings: SettingsDep, run_id: RunId) -> IngestRunCounts:
    return IngestRunCounts.of(_find(settings, run_id))


@router.get(
    "/runs/{run_id}/pages",
    response_model=RunPagesView,
    responses=documented(404, 422),
    summary="One ingest run's changed, removed or re-dated pages, paginated",
)
def get_ingest_run_pages(
    settings: SettingsDep,
    run_id: RunId,
    kind: Annotated[PageList, Query(description="which of the run's page lists")] = "changed",
    limit: Limit = 200,
    offset: Offset = 0,
) -> RunPagesView:
    run = _find(settings, run_id)
    items: list = {"changed": run.changed_pages, "removed": run.removed_pages, "dates_moved": run.dates_moved}[kind]
    page, next_offset = _window(items, offset, limit)
    return RunPagesView(
        run_id=run.run_id, kind=kind, total=len(items), offset=offset, next_offset=next_offset,
        pages=[] if kind == "dates_moved" else page, dates_moved=page if kind == "dates_moved" else [],
    )  # fmt: skip


def _find(settings: SettingsDep, run_id: str) -> IngestRun:
    run = find_run(settings.data_dir, run_id)
    if run is None:
        raise ApiError(404, "not_found", f"No ingest run {run_id}.")
    return run
