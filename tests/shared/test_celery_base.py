"""Every workload's app sizes its Redis pools from its worker's concurrency at worker_init
(real worker processes, asked for their configuration over the broker); the transport's
acknowledgements and takes on a private redis-server, full or with a consumer gone quiet."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty
from typing import IO

import pytest
import redis

from shared.celery_base import EXTRA_CONNECTIONS, make_app
from shared.config import Settings

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/0"


@contextmanager
def prefixed_worker(tmp_path: Path, app_path: str, queue: str, pool: list[str], output: IO[bytes] | int = subprocess.DEVNULL) -> Iterator[tuple[str, Settings]]:
    """A real worker process of ``app_path`` consuming ``queue`` with ``pool``'s options, its keys
    under a prefix of its own (deleted afterwards); yields its node name and the settings that
    reach it over the broker."""
    prefix = f"test-celery-base-{uuid.uuid4().hex[:8]}:"
    settings = Settings(data_dir=tmp_path, redis_url=REDIS_URL, celery={"key_prefix": prefix})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TAXNAV_REDIS_URL": REDIS_URL, "TAXNAV_CELERY__KEY_PREFIX": prefix,
           "TAXNAV_DATA_DIR": str(tmp_path)}  # fmt: skip
    name = f"{queue}-{uuid.uuid4().hex[:6]}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", app_path, "worker", "-Q", queue, "-n", f"{name}@%h", *pool,
         "--without-gossip", "--without-mingle", "--loglevel", "warning"],
        env=env, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT if output is not subprocess.DEVNULL else subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield name, settings
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)


def first_answer(name: str, ask: Callable[[], Iterable[tuple[str, dict]]]) -> dict:
    """What the worker ``name`` answers to ``ask`` (each node's reply), waiting up to a minute
    for it to come up; empty when it never does."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = next((a for node, a in ask() if node.startswith(name)), None)
        if answer:
            return answer
    return {}


@pytest.mark.parametrize(("app_path", "queue"), [("services.runtime.celery_app", "retrieval"), ("ingest_worker.celery_app", "ingest")])
def test_a_worker_sizes_its_redis_pools_from_its_concurrency(app_path: str, queue: str, tmp_path: Path) -> None:
    with prefixed_worker(tmp_path, app_path, queue, ["--pool", "threads", "--concurrency", "3"]) as (name, settings):
        control = make_app("probe", settings, [], {}).control
        conf = first_answer(name, lambda: (control.inspect(timeout=1.0).conf() or {}).items())
        assert conf, f"the {app_path} worker never answered"
        assert conf["broker_pool_limit"] == 3 + EXTRA_CONNECTIONS  # the library's default is 10
        assert conf["redis_max_connections"] == 3 + EXTRA_CONNECTIONS


def test_a_worker_acks_into_a_full_redis_and_keeps_consuming(tmp_path: Path) -> None:
    """Redis at maxmemory refuses what MULTI queues, an ack's ZREM and HDEL included: the ack
    goes through outside one, and the prefetch slot is free again (it stayed taken for good)."""
    from kombu import Connection, Queue  # noqa: PLC0415

    from tests.support.redis_server import PrivateRedis  # noqa: PLC0415

    with PrivateRedis(tmp_path, maxmemory="4mb") as server:
        app = make_app("probe", Settings(data_dir=tmp_path, redis_url=server.url), [], {})
        with Connection(server.url, transport=app.conf.broker_transport) as connection:
            channel = connection.channel()
            channel.basic_qos(0, 1, False)  # a solo worker's prefetch: one message at a time
            queue = Queue("stage", channel=channel)
            queue.declare()
            connection.Producer(channel).publish({"n": 1}, routing_key="stage")
            message = queue.get()  # taken: recorded as unacked, the slot held
            assert message is not None and not channel.qos.can_consume()
            server.fill()
            message.ack()  # raised OutOfMemoryError, the slot held for good
            assert channel.qos.can_consume()
            client = server.client()
            assert client.hlen(channel.unacked_key) == 0 and client.zcard(channel.unacked_index_key) == 0


def test_the_ingest_worker_answers_the_readiness_broadcast(tmp_path: Path) -> None:
    """Readiness broadcasts `stage_queues` to every worker on the broker: the ingest worker
    answered each with a KeyError traceback in its log; it answers with its own queue now
    (which readiness ignores: not a stage queue)."""
    log = tmp_path / "worker.log"
    with open(log, "wb") as out, prefixed_worker(tmp_path, "ingest_worker.celery_app", "ingest", ["--pool", "solo"], out) as (name, settings):
        control = make_app("probe", settings, [], {}).control
        answer = first_answer(name, lambda: [item for reply in control.broadcast("stage_queues", reply=True, timeout=1.0) or [] for item in reply.items()])
        assert answer == {"taken": {"ingest": 0}}
        assert "Traceback" not in log.read_text(errors="replace")


def inflight_consumer(url: str, tmp_path: Path, delivered: list):  # noqa: ANN201
    """A kombu connection on our transport consuming queue `stage` with acknowledgements, as a
    worker's does (visibility timeout 1 s), and its channel."""
    from kombu import Connection, Queue  # noqa: PLC0415

    settings = Settings(data_dir=tmp_path, redis_url=url, celery={"visibility_timeout_s": 1})
    app = make_app("probe", settings, [], {})
    connection = Connection(url, transport=app.conf.broker_transport, transport_options=app.conf.broker_transport_options)
    channel = connection.channel()
    channel.basic_qos(0, 1, False)
    Queue("stage", channel=channel).declare()
    channel.basic_consume("stage", False, delivered.append, "probe")
    return connection, channel


def test_a_message_the_sweep_gave_back_is_not_also_delivered_by_the_consumer_that_looked_dead(tmp_path: Path) -> None:
    """A consumer whose liveness lapsed (stopped, starved) with a taken message unread: the sweep
    returns the message to its queue, and the consumer, reading it late, drops it (it is
    another consumer's now) instead of running it a second time."""
    from tests.support.redis_server import PrivateRedis  # noqa: PLC0415

    with PrivateRedis(tmp_path) as server:
        delivered: list = []
        connection, channel = inflight_consumer(server.url, tmp_path, delivered)
        other_connection, other = inflight_consumer(server.url, tmp_path, [])
        with connection, other_connection:
            connection.Producer(channel).publish({"n": 1}, routing_key="stage")
            connection.transport.cycle._register_BRPOP(channel)  # takes it: BLMOVE into its inflight list
            client = server.client()
            time.sleep(0.3)
            assert client.llen("stage") == 0 and client.hlen("taxnav.inflight") == 1
            time.sleep(1.2)  # its liveness key (the visibility timeout, 1 s) expires unrenewed
            other.qos.restore_visible(num=10, interval=1)  # any worker's sweep
            assert client.llen("stage") == 1 and client.hlen("taxnav.inflight") == 0
            with pytest.raises(Empty):
                channel._brpop_read()  # the late reply
            assert delivered == [] and client.hlen(channel.unacked_key) == 0 and client.llen("stage") == 1


def test_a_full_redis_leaves_the_message_in_its_queue_and_the_consumer_waiting(tmp_path: Path) -> None:
    """At maxmemory Redis refuses BLMOVE (it may allocate): the consumer backs off and asks
    again, the message stays queued; once memory frees it is taken and delivered."""
    from tests.support.redis_server import PrivateRedis  # noqa: PLC0415

    with PrivateRedis(tmp_path, maxmemory="4mb") as server:
        delivered: list = []
        connection, channel = inflight_consumer(server.url, tmp_path, delivered)
        with connection:
            connection.Producer(channel).publish({"n": 1}, routing_key="stage")
            server.fill()
            with pytest.raises(socket.timeout):
                connection.drain_events(timeout=1.5)  # refused, no error raised: waiting for memory
            assert server.client().llen("stage") == 1 and delivered == []
            server.free()
            connection.drain_events(timeout=5)
            assert len(delivered) == 1 and delivered[0].payload == {"n": 1}
