"""Start real Celery worker processes, one per stage queue (the benchmark and the
distributed tests use this; production runs them as separate services, see deploy/)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import redis

from services.runtime.dispatch import celery_for
from services.answering.pipeline import STAGE_QUEUES
from shared.config import Settings


def worker_command(queue: str, name: str) -> list[str]:
    # solo pool: one task at a time per process, no fork; scale by running more processes.
    return [
        sys.executable, "-m", "celery", "-A", "services.runtime.celery_app", "worker", "-Q", queue, "-n", f"{name}@%h",
        "--pool", "solo", "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "warning",
    ]  # fmt: skip


@dataclass
class WorkerPool:
    """Worker processes sharing one environment (TAXNAV_* settings, key prefix included)."""

    env: dict[str, str]
    log_dir: Path | None = None
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, queue: str, name: str | None = None, env: dict[str, str] | None = None) -> str:
        """Start a worker for ``queue`` (``env`` adds to the pool's environment)."""
        name = name or f"{queue}-{uuid.uuid4().hex[:6]}"
        log = open(self.log_dir / f"{name}.log", "wb") if self.log_dir else subprocess.DEVNULL  # noqa: SIM115
        self.processes[name] = subprocess.Popen(
            worker_command(queue, name), env={**os.environ, **self.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT
        )
        if log is not subprocess.DEVNULL:
            log.close()  # the worker has its own descriptor
        return name

    def start_all(self, queues: tuple[str, ...] = STAGE_QUEUES) -> list[str]:
        return [self.start(queue) for queue in queues]

    def kill(self, name: str) -> None:
        """SIGKILL: no warm shutdown, the task it holds stays unacknowledged."""
        process = self.processes.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True)
class QueueState:
    consumers: int  # workers consuming it now
    taken: int  # tasks those workers have taken from it since they started
    waiting: int  # messages in it


def queue_states(settings: Settings, timeout_s: float = 1.0) -> dict[str, QueueState]:
    """Each stage queue's consumers and their progress (one remote-control broadcast over the
    broker: every live worker answers with its queues, shared/celery_base.py ``stage_queues``)
    and the messages waiting in it. Raises the broker's error when unreachable."""
    app = celery_for(settings)
    replies = app.control.broadcast("stage_queues", reply=True, timeout=timeout_s) or []
    consumers, taken = dict.fromkeys(STAGE_QUEUES, 0), dict.fromkeys(STAGE_QUEUES, 0)
    for reply in replies:
        for answer in reply.values():
            for queue, count in (answer.get("taken") or {}).items() if isinstance(answer, dict) else ():
                if queue in consumers:
                    consumers[queue] += 1
                    taken[queue] += count
    with app.connection_for_read() as connection:
        channel = connection.default_channel
        waiting = {queue: channel.queue_declare(queue=queue).message_count for queue in STAGE_QUEUES}
    return {queue: QueueState(consumers[queue], taken[queue], waiting[queue]) for queue in STAGE_QUEUES}


class StallWatch:
    """Per stage queue, since when messages have waited while its workers took none: a worker
    alive and answering broadcasts but consuming nothing (it once stayed so after a full Redis)
    shows no other way. Progress is a task taken, or fewer messages waiting (expired ones dropped)."""

    def __init__(self, stall_after_s: float) -> None:
        self.stall_after_s = stall_after_s
        self._last: dict[str, tuple[QueueState, float]] = {}  # queue -> (last seen, progress since)

    def check(self, queue: str, state: QueueState, now: float) -> str:
        previous, since = self._last.get(queue, (None, now))
        moved = previous is None or state.waiting == 0 or state.taken != previous.taken or state.waiting < previous.waiting
        since = now if moved else since
        self._last[queue] = (state, since)
        if not state.consumers:
            return "no consumer"
        if now - since >= self.stall_after_s:
            return f"stalled: {state.waiting} waiting, none taken for {now - since:.0f} s"
        return f"ok: {state.consumers} consumer(s), {state.waiting} waiting"


def purge(settings: Settings) -> int:
    """Delete every Redis key under the settings' key prefix (a finished test or benchmark
    run's queues, results and question records). Refuses the empty prefix."""
    prefix = settings.celery.key_prefix
    if not prefix:
        raise ValueError("refusing to purge without a key prefix")
    client = redis.Redis.from_url(settings.redis_url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    return client.delete(*keys) if keys else 0
