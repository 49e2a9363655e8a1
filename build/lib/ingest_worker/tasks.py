"""Scheduled re-ingest: the Celery task on the ``ingest`` queue (its app and beat schedule:
ingest_worker/celery_app.py, ingest_worker/beat_schedule.py).

A run takes a per-manual Redis lock first: a run started while another holds it is refused,
not queued behind it, and every run (ok, failed, refused) is recorded in
``<data_dir>/ingest_runs.jsonl`` (shared/contracts/ingest_runs.py). ``taxnav ingest`` takes the same
lock when the stores are servers (several machines may write to them); every run also holds
the data directory's file lock (ingest_worker/ingest.py).
"""

from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path

import redis

from ingest_worker.beat_schedule import INGEST_QUEUE, INGEST_TASK
from ingest_worker.celery_app import celery_app, configure
from ingest_worker.ingest import IngestSummary
from ingest_worker.runs import finish_run, recorded_ingest
from shared.config import Settings
from shared.contracts.ingest_runs import IngestRun, RunStart, RunTrigger

log = logging.getLogger(__name__)

BEAT_SCHEDULE_FILE = "celerybeat-schedule"  # under the data dir, for `taxnav ingest --schedule`


def lock_key(settings: Settings, manual: str) -> str:
    return f"{settings.celery.key_prefix}taxnav:ingest-lock:{manual}"


class _LockKeeper:
    """Holds the run's lock for as long as the run lasts: renews its TTL every third of it, so
    a killed worker's lock expires soon while a long ingest keeps it."""

    def __init__(self, lock: redis.lock.Lock, ttl_s: float):
        self._lock = lock
        self._interval = ttl_s / 3
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="ingest-lock-keeper", daemon=True)

    def _renew(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._lock.reacquire()
            except redis.exceptions.LockError:
                log.error("ingest lock %s was lost while the run held it", self._lock.name)
                return
            except redis.RedisError as exc:  # Redis away for a moment: try again next interval
                log.warning("could not renew ingest lock %s: %s", self._lock.name, exc)

    def __enter__(self) -> _LockKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_locked_ingest(
    settings: Settings, manual: str, trigger: RunTrigger, source: str | None = None, **ingest_options: object
) -> IngestRun:
    """Run the incremental ingest of one manual under its Redis lock and record the run.

    Refused (recorded, returned) when another run holds the lock; a failing ingest is recorded
    as failed and its exception re-raised. ``ingest_options`` go to ``run_ingest`` (limit, sections).
    """
    start = RunStart(manual=manual, source=source or settings.ingest.source, trigger=trigger)
    return locked_recorded_ingest(settings, start, **ingest_options)[0]


def locked_recorded_ingest(settings: Settings, start: RunStart, **ingest_options: object) -> tuple[IngestRun, IngestSummary | None]:
    """``recorded_ingest`` under the manual's Redis lock; (the refused run, None) when another
    run, on any machine, holds it."""
    manual = start.manual
    holder = f"{start.run_id} {socket.gethostname()}"
    client = redis.Redis.from_url(settings.redis_url)
    lock = client.lock(lock_key(settings, manual), timeout=settings.ingest.lock_ttl_s, thread_local=False)
    if not lock.acquire(blocking=False, token=holder):
        other = client.get(lock.name)
        busy = other.decode() if other else "another run"
        run = finish_run(start, settings.data_dir, "refused", f"an ingest of {manual} is already in progress (run {busy}); not started twice")
        log.warning("ingest run %s refused: %s", start.run_id, run.message)
        return run, None
    try:
        with _LockKeeper(lock, settings.ingest.lock_ttl_s):
            run, summary = recorded_ingest(settings, start, **ingest_options)
    finally:
        try:
            lock.release()
        except redis.exceptions.LockError:
            log.error("ingest lock %s had expired before run %s ended", lock.name, start.run_id)
    log.info("ingest run %s of %s: %d pages, %d changed", run.run_id, manual, run.pages, len(run.changed_pages))
    return run, summary


# shared=False: the task belongs to the ingest app only, not to every app this process makes.
@celery_app.task(name=INGEST_TASK, acks_late=False, shared=False)
def scheduled_ingest(manual: str | None = None, trigger: RunTrigger = "schedule") -> dict:
    """The beat entry's task. acks_late off: an ingest runs for minutes, longer than the
    broker's visibility timeout, and must not be handed to a second worker meanwhile."""
    settings: Settings = celery_app.conf.taxnav_settings
    return run_locked_ingest(settings, manual or settings.manual, trigger).model_dump(mode="json")


def serve_schedule(settings: Settings) -> int:
    """`taxnav ingest --schedule`: an ingest worker with beat embedded, in the foreground.
    One such process per deployment (compose runs beat and the worker as two services)."""
    argv = [
        "worker",
        "--beat",
        "--schedule",
        str(Path(settings.data_dir) / BEAT_SCHEDULE_FILE),
        "-Q",
        INGEST_QUEUE,
        "-n",
        "ingest@%h",
        "--concurrency",
        "2",  # a run started during another is refused at once instead of waiting its turn
        "--loglevel",
        "INFO",
    ]
    Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    configure(celery_app, settings)  # this command's settings (its --data-dir), not the environment's
    celery_app.worker_main(argv)
    return 0

