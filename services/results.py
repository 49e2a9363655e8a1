"""Where a question's progress and outcome live while clients wait, poll or stream.

One small interface, two backings: process memory in embedded mode (the gateway runs the
stages itself) and a Redis stream per question in distributed mode (workers write, any
gateway replica reads). A question's record is an append-only list of events: one per stage
finished, then exactly one terminal event, ``result`` or ``error``; readers follow it with a
cursor, so a late reader replays everything and nobody misses the end.
"""

from __future__ import annotations

import functools
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Literal

import redis
from pydantic import BaseModel

from services.errors import ErrorInfo, PipelineTimeout, Unavailable, from_info
from shared.config import Settings
from shared.contracts.api import QuestionResult, StageTrace

START = "0"  # cursor before the first event
BLOCK_S = 1.0  # longest single blocking read; readers loop until their deadline


class QuestionEvent(BaseModel):
    kind: Literal["stage", "result", "error"]
    trace: StageTrace | None = None  # a finished stage: its name, ms and the candidate ids left
    result: QuestionResult | None = None
    error: ErrorInfo | None = None

    @property
    def terminal(self) -> bool:
        return self.kind != "stage"


def stage_event(trace: StageTrace) -> QuestionEvent:
    return QuestionEvent(kind="stage", trace=trace)


class QuestionStore(ABC):
    @abstractmethod
    def start(self, qid: str, deadline: float) -> None:
        """Open a question's record; ``deadline`` (epoch seconds) is when waiting stops."""

    @abstractmethod
    def add(self, qid: str, event: QuestionEvent) -> None: ...

    @abstractmethod
    def read(self, qid: str, cursor: str, block_s: float) -> tuple[list[QuestionEvent], str]:
        """Events after ``cursor`` (waiting up to ``block_s`` for one) and the new cursor."""

    @abstractmethod
    def deadline(self, qid: str) -> float | None:
        """The question's deadline, or None when the id is unknown (or expired)."""

    def ping(self) -> bool:
        return True


class MemoryStore(QuestionStore):
    """Embedded mode: the gateway process is the only writer and reader."""

    def __init__(self, max_questions: int = 10_000) -> None:
        self._records: OrderedDict[str, tuple[float, list[QuestionEvent]]] = OrderedDict()
        self._changed = threading.Condition()
        self._max = max_questions

    def start(self, qid: str, deadline: float) -> None:
        with self._changed:
            self._records[qid] = (deadline, [])
            while len(self._records) > self._max:  # oldest first
                self._records.popitem(last=False)

    def add(self, qid: str, event: QuestionEvent) -> None:
        with self._changed:
            if qid in self._records:
                self._records[qid][1].append(event)
                self._changed.notify_all()

    def read(self, qid: str, cursor: str, block_s: float) -> tuple[list[QuestionEvent], str]:
        position = int(cursor)
        with self._changed:
            self._changed.wait_for(lambda: len(self._records.get(qid, (0, []))[1]) > position, timeout=block_s)
            events = self._records.get(qid, (0, []))[1][position:]
        return events, str(position + len(events))

    def deadline(self, qid: str) -> float | None:
        record = self._records.get(qid)
        return record[0] if record else None


def _typed_redis_errors(method: Callable) -> Callable:
    @functools.wraps(method)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            return method(*args, **kwargs)
        except redis.RedisError as exc:
            raise Unavailable(f"Redis is unavailable: {exc}") from exc

    return wrapper


class RedisStore(QuestionStore):
    """Distributed mode: a stream and a deadline key per question, expiring after the TTL."""

    def __init__(self, settings: Settings) -> None:
        # Blocking reads are short (BLOCK_S), so a socket timeout above them only fires when
        # Redis is really gone: the caller then gets an error instead of hanging.
        self._redis = redis.Redis.from_url(settings.redis_url, decode_responses=True, socket_timeout=BLOCK_S + 5, socket_connect_timeout=5)
        self._prefix = f"{settings.celery.key_prefix}taxnav:question:"
        self._ttl = settings.gateway.result_ttl_s

    def _key(self, qid: str, part: str) -> str:
        return f"{self._prefix}{qid}:{part}"

    @_typed_redis_errors
    def start(self, qid: str, deadline: float) -> None:
        self._redis.set(self._key(qid, "deadline"), repr(deadline), ex=self._ttl)

    @_typed_redis_errors
    def add(self, qid: str, event: QuestionEvent) -> None:
        key = self._key(qid, "events")
        pipe = self._redis.pipeline(transaction=False)
        pipe.xadd(key, {"e": event.model_dump_json()})
        pipe.expire(key, self._ttl)
        pipe.execute()

    @_typed_redis_errors
    def read(self, qid: str, cursor: str, block_s: float) -> tuple[list[QuestionEvent], str]:
        block_ms = int(block_s * 1000)
        # redis-py: block=None is a plain read; block=0 would wait forever.
        reply = self._redis.xread({self._key(qid, "events"): cursor}, count=100, block=block_ms if block_ms > 0 else None)
        events: list[QuestionEvent] = []
        for _key, entries in reply or []:
            for entry_id, fields in entries:
                events.append(QuestionEvent.model_validate_json(fields["e"]))
                cursor = entry_id
        return events, cursor

    @_typed_redis_errors
    def deadline(self, qid: str) -> float | None:
        value = self._redis.get(self._key(qid, "deadline"))
        return float(value) if value is not None else None

    def ping(self) -> bool:
        try:
            return bool(self._redis.ping())
        except redis.RedisError:
            return False


def make_store(settings: Settings) -> QuestionStore:
    return RedisStore(settings) if settings.mode == "distributed" else MemoryStore()


def follow(store: QuestionStore, qid: str, wait: bool = True) -> Iterator[QuestionEvent]:
    """A question's events in order, each stage once (a retried task reports again), ending
    with its terminal event; past the deadline a ``timeout`` error ends it. With
    ``wait=False`` only what is there now (no terminal event when still running)."""
    deadline = store.deadline(qid)
    if deadline is None:
        return
    cursor, seen = START, set()
    while True:
        remaining = deadline - time.time()
        events, cursor = store.read(qid, cursor, min(BLOCK_S, max(remaining, 0)) if wait else 0)
        for event in events:
            if event.kind == "stage":
                if event.trace.stage in seen:
                    continue
                seen.add(event.trace.stage)
            yield event
            if event.terminal:
                return
        if not events and (not wait or remaining <= 0):
            if remaining <= 0:
                yield QuestionEvent(kind="error", error=PipelineTimeout(f"question {qid} did not finish within its deadline").info())
            return


OnEvent = Callable[[str, StageTrace], None]  # (stage name, its trace), as pipeline.answer_question


def wait_result(store: QuestionStore, qid: str, on_event: OnEvent | None = None) -> QuestionResult:
    """Block until the question ends: its result, or its typed error raised."""
    for event in follow(store, qid):
        if event.kind == "stage" and on_event is not None:
            on_event(event.trace.stage, event.trace)
        elif event.kind == "result":
            return event.result
        elif event.kind == "error":
            raise from_info(event.error)
    raise PipelineTimeout(f"question {qid} is unknown or expired")
