"""The ingest run log's records (``<data_dir>/ingest_runs.jsonl``): written by the ingest
worker (ingest_worker/runs.py), served by the gateway (``GET /v1/ingest/runs``).

Every ingest run appends one record, whether it finished, failed or (scheduled and queued
runs) was refused because another run of the manual held the lock.
"""

from __future__ import annotations

import fcntl
import logging
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

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
    """A run as it begins; ingest_worker/runs.py ``finish_run`` turns it into its record."""

    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    manual: str
    source: str
    trigger: RunTrigger
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


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


def _newest_first(path: Path) -> Iterator[tuple[int, str]]:
    """The log's non-empty lines with their line numbers, newest first."""
    for number, line in reversed(list(enumerate(path.read_text(encoding="utf-8").splitlines(), start=1))):
        if line.strip():
            yield number, line


def _parsed(path: Path, number: int, line: str) -> IngestRun | None:
    """A line's record; None (with a warning) for a line that does not parse (a write cut
    short by a crash): one torn record must not hide the rest of the history."""
    try:
        return IngestRun.model_validate_json(line)
    except ValidationError:
        log.warning("%s:%d is not an ingest run record; skipped", path, number)
        return None


def read_runs(
    data_dir: Path, limit: int = 50, manual: str | None = None, status: RunStatus | None = None
) -> list[IngestRun]:
    """The latest ``limit`` records, newest first, optionally of one manual / status."""
    path = runs_path(data_dir)
    if not path.exists():
        return []
    runs: list[IngestRun] = []
    for number, line in _newest_first(path):
        run = _parsed(path, number, line)
        if run is not None and (manual is None or run.manual == manual) and (status is None or run.status == status):
            runs.append(run)
            if len(runs) >= limit:
                break
    return runs


def find_run(data_dir: Path, run_id: str) -> IngestRun | None:
    """One run's record, or None; only lines that contain its id are parsed (a record lists
    every changed page, so parsing the whole log for one run would be the cost of all)."""
    path = runs_path(data_dir)
    if not path.exists():
        return None
    for number, line in _newest_first(path):
        if run_id in line:
            run = _parsed(path, number, line)
            if run is not None and run.run_id == run_id:
                return run
    return None
