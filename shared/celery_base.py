"""What every Celery app of ours shares: the Redis broker and result backend, JSON messages,
the key prefix, and a transport that survives a full Redis. Each workload makes its own app
from this (services/runtime/celery_app.py for the question stages, ingest_worker/celery_app.py for
ingests), listing exactly the task modules it serves.

Question tasks acknowledge late: a worker killed mid-task leaves its message unacknowledged
and Redis hands it to another worker after ``settings.celery.visibility_timeout_s``. Long
tasks (ingest) must not acknowledge late, or they would be handed out again while still running.

Acknowledging late is not enough on kombu's Redis transport alone: a consumer takes a message
with BRPOP, which removes it from the queue, and records it as unacknowledged only once it has
read the reply (a second command). A worker killed in between, with the reply on the wire or
unread in its socket (kombu even leaves a reply unread while the worker has no free slot),
lost the message for good: no queue, no unacked index, and its question ran into the gateway's
deadline. So a consumer here takes a message with BLMOVE into a list of its own (the queue's
``inflight`` list for this consumer) and records it as unacknowledged with one script that also
removes it from that list: at every moment the message is in the queue, in an inflight list, or
in the unacked index. A consumer's inflight lists are registered with a liveness key it renews;
any worker's restore sweep hands the lists of a consumer whose key expired back to their queues
(``InflightChannel``), after the same visibility timeout as unacked messages.
"""

from __future__ import annotations

import logging
import time
import uuid
from queue import Empty

import redis
from celery import Celery
from celery.worker import state as worker_state
from celery.worker.control import inspect_command
from kombu.transport import virtual
from kombu.transport.redis import Channel as RedisChannel
from kombu.transport.redis import QoS as RedisQoS
from kombu.transport.redis import Transport as RedisTransport
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import dumps, loads
from redis.client import Pipeline
from redis.exceptions import OutOfMemoryError

from shared.config import Settings

log = logging.getLogger(__name__)

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
        except Exception as exc:  # noqa: BLE001
            self._left_to_sweep("ack", exc)
        finally:
            virtual.QoS.ack(self, delivery_tag)  # the slot, whatever Redis said (a set: twice is once)

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        try:
            super().reject(delivery_tag, requeue)
        except Exception as exc:  # noqa: BLE001
            self._left_to_sweep("reject", exc)
        finally:
            virtual.QoS.ack(self, delivery_tag)

    def _left_to_sweep(self, what: str, exc: Exception) -> None:
        """An ack or reject that failed leaves its message in the unacked index, which the sweep
        hands out again (a repeat a question task is safe to run). Raised, it killed the worker
        whenever it was not a connection error: a task that ended after a reconnect acks on the
        old, closed channel, whose pool is gone (AttributeError: 'NoneType' ... 'client')."""
        log.warning("%s left to the restore sweep (%s: %s)", what, type(exc).__name__, exc)

    def append(self, message: virtual.Message, delivery_tag: str) -> None:
        if self.channel.claimed.pop(delivery_tag, None):  # its claim recorded it already
            virtual.QoS.append(self, message, delivery_tag)
        else:
            super().append(message, delivery_tag)

    def restore_unacked(self, client: redis.Redis | None = None) -> None:
        """At a channel's close, its messages back to their queues at once: an optimisation only,
        since they stay in the unacked index and the restore sweep hands them out anyway. Kombu
        tries it after the channel has dropped its connection pool, and on a reconnect after a
        Redis restart the connection is gone too: building a pool then raised AttributeError
        (``'NoneType' object has no attribute 'hostname'``), which killed the worker
        ("Unrecoverable error"), or a connection error. Either way the sweep will do it."""
        try:
            super().restore_unacked(client)
        except Exception as exc:  # noqa: BLE001  (see above: never worth the worker)
            log.warning("left %d unacknowledged message(s) to the restore sweep (%s)", len(self._delivered), type(exc).__name__)
            self._delivered.clear()

    def restore_visible(self, start: int = 0, num: int = 10, interval: int = 10) -> None:
        self.channel.heartbeat()
        self.channel.sweep_inflight()
        super().restore_visible(start, num, interval)


# Record a message moved into an inflight list as unacknowledged, and take it out of that list,
# in one step. Returns 0, writing nothing, when the message is no longer there (the sweep gave
# it back to its queue: this consumer looked dead). The writes that need memory come first, so
# a full Redis refuses the script before it changes anything.
CLAIM = """
if not redis.call('LPOS', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[4])
redis.call('LREM', KEYS[1], 1, ARGV[1])
return 1
"""
# A live consumer renews its liveness key and registers its inflight list (list -> queue).
HEARTBEAT = """
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('HSET', KEYS[2], KEYS[3], KEYS[4])
"""
# A consumer whose liveness key expired: every message in its inflight list back to the front of
# its queue (one at a time, each move atomic), then the list leaves the registry.
SWEEP = """
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
local moved = 0
while redis.call('LMOVE', KEYS[2], KEYS[3], 'RIGHT', 'RIGHT') do moved = moved + 1 end
redis.call('HDEL', KEYS[4], KEYS[2])
return moved
"""
FULL_BACKOFF_S = 1.0  # a full Redis refuses BLMOVE (it may allocate): ask again this much later


def _raw(client: redis.Redis, *args: object) -> object:
    """A command as written: kombu's prefixing client would prefix some keys of its own accord."""
    return redis.Redis.execute_command(client, *args)


class InflightChannel(RedisChannel):
    """Takes a message with BLMOVE into an inflight list of this consumer, then CLAIMs it (module
    docstring). Used when the channel consumes one queue with acknowledgements, at one priority
    level (the workers: each consumes one queue); anything else takes kombu's BRPOP."""

    QoS = FullRedisTolerantQoS

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.claimed: dict[str, bool] = {}  # delivery tags a claim recorded, until QoS.append
        self._no_ack_queues: set[str] = set()
        self._moving: str | None = None  # the queue of the BLMOVE in flight, if one is
        self._inflight: dict[str, str] = {}  # queue -> this consumer's inflight list (prefixed)
        self._full_until = 0.0
        self._beat_at = float("-inf")
        self._new_consumer_id()
        super().__init__(*args, **kwargs)

    def _new_consumer_id(self) -> None:
        """A new identity: the lists of the old one are no longer renewed, so the sweep returns
        whatever they hold (a reply lost with its connection) once the old key expires."""
        self._consumer_id = uuid.uuid4().hex
        self._inflight = {}

    def _key(self, name: str) -> str:
        return f"{self.global_keyprefix}{name}"

    @property
    def _registry(self) -> str:
        return self._key("taxnav.inflight")

    def basic_consume(self, queue: str, no_ack: bool, *args: object, **kwargs: object) -> object:
        if no_ack:  # nobody acknowledges: nothing to hand out again either
            self._no_ack_queues.add(queue)
        return super().basic_consume(queue, no_ack, *args, **kwargs)

    def _inflight_key(self, queue: str) -> str:
        if queue not in self._inflight:
            self._inflight[queue] = self._key(f"taxnav.inflight.{queue}.{self._consumer_id}")
            self._beat_at = float("-inf")  # register it before its first BLMOVE
        return self._inflight[queue]

    def heartbeat(self, force: bool = True) -> None:
        """Renew the liveness key of this consumer's lists (and register them), at least once a
        third of the visibility timeout: the timer's restore sweep, and before each BLMOVE."""
        if not self._inflight or (not force and time.monotonic() - self._beat_at < self.visibility_timeout / 3):
            return
        ttl_ms = int(self.visibility_timeout * 1000)
        try:
            with self.conn_or_acquire() as client:
                for queue, inflight in self._inflight.items():
                    queue_key = self._key(self._q_for_pri(queue, 0))
                    client.eval(HEARTBEAT, 4, f"{inflight}.alive", self._registry, inflight, queue_key, ttl_ms)
        except OutOfMemoryError:  # full: the lists stay registered; renewed once memory frees
            return
        self._beat_at = time.monotonic()

    def sweep_inflight(self) -> None:
        """Every inflight list of a consumer that stopped renewing its key, back to its queue."""
        with self.conn_or_acquire() as client:
            owners = _raw(client, "HGETALL", self._registry) or {}
            for inflight, queue_key in (owners.items() if isinstance(owners, dict) else zip(owners[::2], owners[1::2])):
                inflight, queue_key = bytes_to_str(inflight), bytes_to_str(queue_key)
                moved = client.eval(SWEEP, 4, f"{inflight}.alive", inflight, queue_key, self._registry)
                if moved and moved > 0:
                    log.warning("returned %d message(s) taken by a consumer that died to %s", moved, queue_key)

    def _brpop_start(self, timeout: int | None = None) -> None:
        queues = self.active_queues
        if len(queues) != 1 or len(self.priority_steps) != 1 or next(iter(queues)) in self._no_ack_queues:
            self._moving = None
            return super()._brpop_start(timeout)
        if time.monotonic() < self._full_until:
            return  # asked again on the next poll
        queue = next(iter(queues))
        inflight = self._inflight_key(queue)
        self.heartbeat(force=False)
        self._moving = queue
        self._in_poll = self.client.connection
        self._brpop_sent_at = time.monotonic()
        source = self._key(self._q_for_pri(queue, 0))
        self.client.connection.send_command("BLMOVE", source, inflight, "RIGHT", "LEFT", timeout or self.brpop_timeout or 0)

    def _brpop_read(self, **options: object) -> bool:
        queue = self._moving
        if queue is None:
            return super()._brpop_read(**options)
        try:
            try:
                item = self.client.parse_response(self.client.connection, "BLMOVE", **options)
            except OutOfMemoryError:  # refused, nothing moved: wait for memory
                self._full_until = time.monotonic() + FULL_BACKOFF_S
                raise Empty() from None
            except self.connection_errors:
                self.client.connection.disconnect()
                self._new_consumer_id()  # a message moved before the drop is the sweep's
                raise
            if not item:
                raise Empty()
            payload = loads(bytes_to_str(item))
            if not self._claim(queue, item, payload):
                raise Empty()  # the sweep gave it back: another consumer (or this one) takes it again
            self.connection._deliver(payload, queue)
            return True
        finally:
            self._moving = None
            self._in_poll = None
            self._flush_brpop_reauth()

    def _claim(self, queue: str, item: bytes, payload: dict) -> bool:
        info = payload["properties"]["delivery_info"]
        tag = payload["properties"]["delivery_tag"]
        record = dumps([payload, info["exchange"], info["routing_key"]])
        try:
            with self.conn_or_acquire() as client:
                keys = (self._inflight_key(queue), self._key(self.unacked_index_key), self._key(self.unacked_key))
                done = client.eval(CLAIM, 3, *keys, item, tag, time.time(), record)
        except Exception:
            self._new_consumer_id()  # the message stays in the old list: the sweep returns it
            raise
        if done:
            self.claimed[tag] = True
        return bool(done)


class FullRedisTolerantTransport(RedisTransport):
    """Redis at maxmemory refuses writes until memory frees: a worker treats that like a lost
    connection (reconnect and wait) instead of exiting with "Unrecoverable error", and its
    acknowledgements neither need memory nor, failing, stop it consuming (FullRedisTolerantQoS)."""

    Channel = InflightChannel
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
            # One list per queue, so a consumer takes with one BLMOVE (InflightChannel); no task
            # of ours sets a priority.
            "priority_steps": [0],
        },
        result_backend_transport_options={"global_keyprefix": prefix},
        worker_hijack_root_logger=False,
        task_routes=task_routes,
    )
    return app


@inspect_command()
def stage_queues(state: object) -> dict[str, dict[str, int]]:
    """The queues this worker consumes, each with the tasks it has taken from it so far (its
    app's tasks routed there): readiness (services/workers.py ``queue_states``) tells a worker
    that stopped taking, alive and answering, from one that is working. Readiness broadcasts it
    to every worker, so every app of ours answers it, the ingest worker's included (it raised
    KeyError, a traceback in its log per readiness check)."""
    consumer = state.consumer.task_consumer  # type: ignore[attr-defined]
    queues = [queue.name for queue in consumer.queues] if consumer else []
    routes = state.app.conf.task_routes or {}  # type: ignore[attr-defined]
    return {"taken": {queue: sum(worker_state.total_count.get(name, 0) for name, route in routes.items() if route.get("queue") == queue) for queue in queues}}


def size_broker_pool(app: Celery, concurrency: int) -> int:
    """At worker_init: the broker's connection pool sized from the worker's concurrency
    (instead of the library's default of 10 whatever the worker runs). Returns the size."""
    size = concurrency + EXTRA_CONNECTIONS
    app.conf.broker_pool_limit = size
    app.conf.redis_max_connections = size
    return size
