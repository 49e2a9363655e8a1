"""The ingest app's schedule as data: its queue, the task beat enqueues, and one beat entry
per manual in ``settings.ingest.manuals``, all on ``settings.ingest.schedule_cron`` (UTC)."""

from __future__ import annotations

from celery.schedules import crontab

from shared.config import Settings

INGEST_QUEUE = "ingest"
INGEST_TASK = "ingest_worker.tasks.scheduled_ingest"


def parse_cron(expr: str) -> crontab:
    """A five-field cron string (minute hour day-of-month month day-of-week) as a crontab;
    ValueError with the offending string when it is not one."""
    if len(expr.split()) != 5:
        raise ValueError(f"schedule_cron {expr!r}: expected 5 fields (minute hour day month weekday)")
    try:
        return crontab.from_string(expr)
    except ValueError as exc:
        raise ValueError(f"schedule_cron {expr!r}: {exc}") from exc


def beat_schedule(settings: Settings) -> dict[str, dict]:
    schedule = parse_cron(settings.ingest.schedule_cron)
    return {
        f"ingest:{manual}": {
            "task": INGEST_TASK,
            "schedule": schedule,
            "kwargs": {"manual": manual, "trigger": "schedule"},
            "options": {"queue": INGEST_QUEUE},
        }
        for manual in settings.ingest.manuals
    }
