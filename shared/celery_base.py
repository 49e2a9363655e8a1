"""What every Celery app of ours shares: the Redis broker and result backend, JSON messages,
the key prefix, and a transport that survives a full Redis. Each workload makes its own app
from this (services/runtime/celery_app.py for the question stages, ingest_worker/celery_app.py for
ingests), listing exactly the task modules it serves.

Question tasks acknowledge late: a worker killed mid-task leaves its message unacknowledged
and Redis hands it to another worker after ``settings.celery.visibility_timeout_s``. Long
tasks (ingest) must not acknowledge late, or they would be handed out again while still running.
"""

from __future__ import annotations

from celery import Celery
from kombu.transport import virtual
from kombu.transport.redis import Channel as RedisChannel
from kombu.transport.redis import QoS as RedisQoS
from kombu.transport.redis import Transport as RedisTransport
from redis.client import Pipeline
from redis.exceptions import OutOfMemoryError

from shared.config import Settings

# Connections a worker keeps beyond one per concurrent task (its consumer, heartbeats, control).
EXTRA_CONNECTIONS = 4


class FullRedisTolerantQoS(RedisQoS):
    """Acknowledgements that survive a full Redis. At maxmemory Redis refuses every command
    queued inside MULTI, even an ack's ZREM and HDEL, which free memory and which it takes
    outside one: so an ack is sent as a plain pipeline. And an ack or reject that fails all the
    same still gives back the worker's prefetch slot (the message stays in the unacked index:
    the restore sweep hands it out again after the visibility timeout, and question tasks are
    safe to repeat). Kept, that slot was never freed and the worker, alive and answering
    `celery inspect`, consumed nothing until restarted ("Couldn't ack ... OutOfMemoryError")."""

    def _remove_from_indices(self, delivery_tag: str, pipe: Pipeline | None = None) -> Pipeline:
        if pipe is not None:  # a step of restore_by_tag's own transaction
            return super()._remove_from_indices(delivery_tag, pipe)
        with self.channel.conn_or_acquire() as client:
            return client.pipeline(transaction=False).zrem(self.unacked_index_key, delivery_tag).hdel(self.unacked_key, delivery_tag)

    def ack(self, delivery_tag: str) -> None:
        try:
            super().ack(delivery_tag)
        finally:
            virtual.QoS.ack(self, delivery_tag)  # the slot, whatever Redis said (a set: twice is once)

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        try:
            super().reject(delivery_tag, requeue)
        finally:
            virtual.QoS.ack(self, delivery_tag)


class FullRedisTolerantChannel(RedisChannel):
    QoS = FullRedisTolerantQoS


class FullRedisTolerantTransport(RedisTransport):
    """Redis at maxmemory refuses writes until memory frees: a worker treats that like a lost
    connection (reconnect and wait) instead of exiting with "Unrecoverable error", and its
    acknowledgements neither need memory nor, failing, stop it consuming (FullRedisTolerantQoS)."""

    Channel = FullRedisTolerantChannel
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
