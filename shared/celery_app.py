"""The Celery app: Redis broker and result backend, one queue per question stage plus ingest."""

from __future__ import annotations

from celery import Celery

from shared.config import get_settings

STAGE_QUEUES = ("retrieval", "graph", "selection", "stitching", "verification")
INGEST_QUEUE = "ingest"


def make_celery_app() -> Celery:
    settings = get_settings()
    app = Celery("taxnav", broker=settings.redis_url, backend=settings.redis_url)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,  # a worker killed mid-task leaves the message for another worker
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
    )
    return app


celery_app = make_celery_app()
