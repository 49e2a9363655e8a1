"""Recording ingest runs in the run log (shared/contracts/ingest_runs.py holds the records and
the log, which the gateway serves)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from shared.contracts.ingest_runs import SUMMARY_FIELDS, DateMove, IngestRun, RunStart, RunStatus, record_run

if TYPE_CHECKING:
    from ingest_worker.ingest import IngestSummary
    from shared.config import Settings


def finish_run(
    start: RunStart, data_dir: Path, status: RunStatus, message: str = "", summary: IngestSummary | None = None, moved: list[DateMove] | None = None
) -> IngestRun:
    """The run's record, appended to the log."""
    finished_at = datetime.now(UTC)
    from_summary = {} if summary is None else {name: getattr(summary, name) for name in SUMMARY_FIELDS}
    run = IngestRun(
        **start.model_dump(), status=status, message=message, finished_at=finished_at,
        seconds=round((finished_at - start.started_at).total_seconds(), 3), dates_moved=moved or [], **from_summary,
    )  # fmt: skip
    record_run(data_dir, run)
    return run


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
        finish_run(start, settings.data_dir, "failed", f"{type(exc).__name__}: {exc}")
        raise
    moved = dates_moved(before, serving_page_dates(settings, start.manual))
    return finish_run(start, settings.data_dir, "ok", summary=summary, moved=moved), summary
