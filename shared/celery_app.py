"""The Celery app: Redis broker, one queue per question stage plus ingest.

Question tasks (services/tasks.py) acknowledge late: a worker killed mid-task leaves its
message unacknowledged and Redis hands it to another worker after
``settings.celery.visibility_timeout_s``. Long tasks (ingest) must not acknowledge late, or
they would be handed out again while still running.
"""

from __future__ import annotations

from celery import Celery
from kombu.transport.redis import Transport as RedisTransport
from redis.exceptions import OutOfMemoryError

from shared.config import Settings, get_settings

STAGE_QUEUES = ("retrieval", "graph", "selection", "stitching", "verification")
INGEST_QUEUE = "ingest"
INGEST_TASK = "ingest_worker.tasks.scheduled_ingest"


def stage_task_name(queue: str) -> str:
    return f"taxnav.stage.{queue}"


# Each task is routed to its own queue (the worker services each consume exactly one).
TASK_ROUTES = {stage_task_name(queue): {"queue": queue} for queue in STAGE_QUEUES} | {
    INGEST_TASK: {"queue": INGEST_QUEUE}
}


class FullRedisTolerantTransport(RedisTransport):
    """Redis at maxmemory refuses writes until memory frees: a worker treats that like a lost
    connection (reconnect and wait) instead of exiting with "Unrecoverable error"."""

    connection_errors = (*RedisTransport.connection_errors, OutOfMemoryError)


def make_celery_app(settings: Settings | None = None) -> Celery:
    settings = settings or get_settings()
    app = Celery("taxnav", broker=settings.redis_url, backend=settings.redis_url, include=["services.tasks"])
    prefix = settings.celery.key_prefix
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,  # a worker killed mid-task leaves the message for another worker
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        broker_transport=f"{__name__}:FullRedisTolerantTransport",
        broker_connection_max_retries=None,  # a worker outlives a Redis outage or a full Redis
        broker_transport_options={
            "global_keyprefix": prefix,
            # The body is JSON text: no base64 (a third larger, encoded and decoded every hop).
            "body_encoding": None,
            "visibility_timeout": settings.celery.visibility_timeout_s,
            "unacked_restore_interval": settings.celery.restore_interval_s,
            "unacked_restore_throttle": 1,  # scan for abandoned messages on every sweep
        },
        result_backend_transport_options={"global_keyprefix": prefix},
        worker_hijack_root_logger=False,
        task_routes=TASK_ROUTES,
    )
    return app


celery_app = make_celery_app()
