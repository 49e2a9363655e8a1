"""The ingest worker's Celery app: the scheduled ingest task (ingest_worker/tasks.py) on the
``ingest`` queue and its beat schedule (ingest_worker/beat_schedule.py). It imports no
question stage.

    celery -A ingest_worker.celery_app worker -Q ingest     # runs ingests
    celery -A ingest_worker.celery_app beat                 # enqueues them on schedule
    taxnav ingest --schedule                                # both in one process
"""

from __future__ import annotations

import logging

from celery import Celery
from celery.apps.worker import Worker
from celery.signals import worker_init

from ingest_worker.beat_schedule import INGEST_QUEUE, INGEST_TASK, beat_schedule
from shared.celery_base import make_app, size_broker_pool
from shared.config import Settings, get_settings

log = logging.getLogger(__name__)

TASK_MODULES = ["ingest_worker.tasks"]


def make_ingest_app(settings: Settings) -> Celery:
    app = make_app("ingest_worker", settings, TASK_MODULES, {INGEST_TASK: {"queue": INGEST_QUEUE}})
    configure(app, settings)
    return app


def configure(app: Celery, settings: Settings) -> None:
    """The settings the app's tasks run with and the schedule beat reads when it starts (a
    worker's processes are forked from this one, so they see both)."""
    app.conf.taxnav_settings = settings
    app.conf.beat_schedule = beat_schedule(settings)


celery_app = make_ingest_app(get_settings())


@worker_init.connect
def size_pools(sender: Worker, **_: object) -> None:
    if sender.app is celery_app:
        log.info("ingest worker: %d Redis connections per pool", size_broker_pool(celery_app, sender.concurrency))
