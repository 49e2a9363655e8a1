"""The stage workers' Celery app: one task per stage queue (services/runtime/tasks.py), routed to
that queue. Workers: ``celery -A services.runtime.celery_app worker -Q retrieval`` (and graph,
selection, stitching, verification); the gateway uses ``make_stage_app`` to send the chain.
"""

from __future__ import annotations

import logging

from celery import Celery
from celery.apps.worker import Worker
from celery.signals import worker_init

from services.answering.pipeline import STAGE_QUEUES
from shared.celery_base import make_app, size_broker_pool
from shared.config import Settings, get_settings

log = logging.getLogger(__name__)

TASK_MODULES = ["services.runtime.tasks"]


def stage_task_name(queue: str) -> str:
    return f"taxnav.stage.{queue}"


def make_stage_app(settings: Settings) -> Celery:
    routes = {stage_task_name(queue): {"queue": queue} for queue in STAGE_QUEUES}
    return make_app("services", settings, TASK_MODULES, routes)


celery_app = make_stage_app(get_settings())


@worker_init.connect
def size_pools(sender: Worker, **_: object) -> None:
    """Redis connections for as many tasks as this worker runs at once (services/runtime/tasks.py
    opens its question store with the same size)."""
    if sender.app is celery_app:
        log.info("stage worker: %d Redis connections per pool", size_broker_pool(celery_app, sender.concurrency))
