"""What every Celery app of ours shares: the Redis broker and result backend, JSON messages,
the key prefix, and a transport that survives a full Redis. Each workload makes its own app
from this (services/celery_app.py for the question stages, ingest_worker/celery_app.py for
ingests), listing exactly the task modules it serves.

Question tasks acknowledge late: a worker killed mid-task leaves its message unacknowledged
and Redis hands it to another worker after ``settings.celery.visibility_timeout_s``. Long
tasks (ingest) must not acknowledge late, or they would be handed out again while still running.
"""

from __future__ import annotations

from celery import Celery
from kombu.transport.redis import Transport as RedisTransport
from redis.exceptions import OutOfMemoryError

from shared.config import Settings

# Connections a worker keeps beyond one per concurrent task (its consumer, heartbeats, control).
EXTRA_CONNECTIONS = 4


class FullRedisTolerantTransport(RedisTransport):
    """Redis at maxmemory refuses writes until memory frees: a worker treats that like a lost
    connection (reconnect and wait) instead of exiting with "Unrecoverable error"."""

    connection_errors = (*RedisTransport.connection_errors, OutOfMemoryError)


def make_app(main: str, settings: Settings, include: list[str], task_routes: dict[str, dict[str, str]]) -> Celery:
    """An app on ``settings``' Redis that imports ``include`` in its workers and routes each
    task by ``task_routes`` (every worker service consumes exactly one queue)."""
    app = Celery(main, broker=settings.redis_url, backend=settings.redis_url, include=include)
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
        task_routes=task_routes,
    )
    return app


def size_broker_pool(app: Celery, concurrency: int) -> int:
    """At worker_init: the broker's connection pool sized from the worker's concurrency
    (instead of the library's default of 10 whatever the worker runs). Returns the size."""
    size = concurrency + EXTRA_CONNECTIONS
    app.conf.broker_pool_limit = size
    app.conf.redis_max_connections = size
    return size
