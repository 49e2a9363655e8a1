"""The ingest run log: one JSON line per run in ``<data_dir>/ingest_runs.jsonl``.

Every ingest run appends one record, whether it finished, failed or (scheduled and queued
runs, ingest_worker/tasks.py) was refused because another run of the manual held the lock.
The gateway serves them newest first (``GET /v1/ingest/runs``).
"""

from __future__ import annotations

import fcntl
import logging
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, ValidationError

if TYPE_CHECKING:
    from ingest_worker.ingest import IngestSummary
    from shared.config import Settings

log = logging.getLogger(__name__)

RUNS_FILE = "ingest_runs.jsonl"

RunStatus = Literal["ok", "failed", "refused"]
RunTrigger = Literal["schedule", "cli", "api"]


class DateMove(BaseModel):
    """A page whose ``public_updated_at`` differs from the previous serving generation's."""

    section_id: str
    before: datetime | None  # None: the page is new
    after: datetime | None  # None: the page was removed


class RunStart(BaseModel):
    """A run as it begins; ``finish`` turns it into its record and appends that."""

    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    manual: str
    source: str
    trigger: RunTrigger
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def finish(
        self, data_dir: Path, status: RunStatus, message: str = "", summary: IngestSummary | None = None, moved: list[DateMove] | None = None
    ) -> IngestRun:
        finished_at = datetime.now(UTC)
        from_summary = {} if summary is None else {name: getattr(summary, name) for name in SUMMARY_FIELDS}
        run = IngestRun(
            **self.model_dump(), status=status, message=message, finished_at=finished_at,
            seconds=round((finished_at - self.started_at).total_seconds(), 3), dates_moved=moved or [], **from_summary,
        )  # fmt: skip
        record_run(data_dir, run)
        return run


class IngestRun(RunStart):
    status: RunStatus
    finished_at: datetime
    seconds: float
    message: str = ""  # why a run failed or was refused
    # From the ingest's IngestSummary (empty unless status is "ok").
    pages: int = 0
    chunks: int = 0
    reembedded: int = 0
    generation: str | None = None
    changed_pages: list[str] = Field(default_factory=list)
    removed_pages: list[str] = Field(default_factory=list)
    dates_moved: list[DateMove] = Field(default_factory=list)


SUMMARY_FIELDS = ("pages", "chunks", "reembedded", "generation", "changed_pages", "removed_pages")


def runs_path(data_dir: Path) -> Path:
    return Path(data_dir) / RUNS_FILE


def record_run(data_dir: Path, run: IngestRun) -> None:
    """Append one record; a lock keeps concurrent writers' lines whole, fsync keeps it on disk."""
    path = runs_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = run.model_dump_json() + "\n"
    with path.open("a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_runs(
    data_dir: Path, limit: int = 50, manual: str | None = None, status: RunStatus | None = None
) -> list[IngestRun]:
    """The latest ``limit`` records, newest first, optionally of one manual / status.

    A line that does not parse (a write cut short by a crash) is skipped with a warning: one
    torn record must not hide the rest of the history.
    """
    path = runs_path(data_dir)
    if not path.exists():
        return []
    runs: list[IngestRun] = []
    for number, line in reversed(list(enumerate(path.read_text(encoding="utf-8").splitlines(), start=1))):
        if not line.strip():
            continue
        try:
            run = IngestRun.model_validate_json(line)
        except ValidationError:
            log.warning("%s:%d is not an ingest run record; skipped", path, number)
            continue
        if (manual is None or run.manual == manual) and (status is None or run.status == status):
            runs.append(run)
            if len(runs) >= limit:
                break
    return runs


def dates_moved(before: dict[str, datetime], after: dict[str, datetime]) -> list[DateMove]:
    """Pages whose ``public_updated_at`` changed between two generations (new and removed
    pages included), in section order."""
    return [
        DateMove(section_id=section, before=before.get(section), after=after.get(section))
        for section in sorted(before.keys() | after.keys())
        if before.get(section) != after.get(section)
    ]


def recorded_ingest(settings: Settings, start: RunStart, **ingest_options: object) -> tuple[IngestRun, IngestSummary]:
    """Run the ingest ``start`` describes and record it: ``ok`` with what changed (pages whose
    ``public_updated_at`` moved included), or ``failed`` with the error, which is re-raised."""
    from ingest_worker.ingest import run_ingest, serving_page_dates  # noqa: PLC0415 (heavy: embedder, stores)

    before = serving_page_dates(settings, start.manual)
    try:
        summary = run_ingest(settings, start.source, start.manual, **ingest_options)  # type: ignore[arg-type]
    except Exception as exc:
        start.finish(settings.data_dir, "failed", f"{type(exc).__name__}: {exc}")
        raise
    moved = dates_moved(before, serving_page_dates(settings, start.manual))
    return start.finish(settings.data_dir, "ok", summary=summary, moved=moved), summary
