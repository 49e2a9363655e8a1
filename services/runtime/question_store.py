"""Where a question's progress and outcome live while clients wait, poll or stream.

One small interface, two backings: process memory in embedded mode (the gateway runs the
stages itself) and a Redis stream per question in distributed mode (workers write, any
gateway replica reads). A question's record is an append-only list of events: one per stage
finished, then exactly one terminal event, ``result`` or ``error``; readers follow it with a
cursor, so a late reader replays everything and nobody misses the end.
"""

from __future__ import annotations

import base64
import functools
import threading
import time
import zlib
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterator

import redis

from services.errors import PipelineTimeout, Unavailable, from_info
from shared.config import Settings
from shared.contracts.api import QuestionResult, StageTrace
from shared.contracts.events import QuestionEvent

START = "0"  # cursor before the first event
BLOCK_S = 1.0  # longest single blocking read; readers loop until their deadline
# Threads a gateway lets block on events: up to MAX_WAITERS followers of admitted questions
# (one each) and as many event streams. Redis connections: one per such thread, plus the sync
# routes' threads (anyio's 40) and headroom, so none meets "Too many connections" while Redis
# is healthy (the pool opens them only as needed).
MAX_WAITERS = 256
REDIS_CONNECTIONS = 2 * MAX_WAITERS + 64
# A timeout claimed too late (the result was being written) is followed this much longer.
LATE_RESULT_GRACE_S = 5.0


class QuestionStore(ABC):
    # Whether calls may wait on I/O (a caller on an event loop then runs them on a thread).
    blocking = True

    @abstractmethod
    def start(self, qid: str, deadline: float) -> None:
        """Open a question's record; ``deadline`` (epoch seconds) is when waiting stops."""

    @abstractmethod
    def add(self, qid: str, event: QuestionEvent) -> bool:
        """Append an event; False (and nothing written) once the question has its terminal
        event, so a question ends exactly once (a late result after a timeout is dropped)."""

    @abstractmethod
    def read(self, qid: str, cursor: str, block_s: float) -> tuple[list[QuestionEvent], str]:
        """Events after ``cursor`` (waiting up to ``block_s`` for one) and the new cursor."""

    @abstractmethod
    def deadline(self, qid: str) -> float | None:
        """The question's deadline, or None when the id is unknown (or expired)."""

    def writable(self) -> str | None:
        """None when the store takes writes, else why not."""
        return None


class _Record:
    def __init__(self, deadline: float, lock: threading.Lock) -> None:
        self.deadline = deadline
        # Events as their JSON text: a string is one object the garbage collector never
        # traverses, where a parsed result is ~160 (10,000 kept questions: 1.6 million objects
        # each full collection walks holding the GIL).
        self.events: list[str] = []
        self.ended = False
        self.changed = threading.Condition(lock)  # wakes this question's readers only


class MemoryStore(QuestionStore):
    """Embedded mode: the gateway process is the only writer and reader."""

    blocking = False  # writes take a lock held for microseconds; only reads with block_s > 0 wait

    def __init__(self, max_questions: int = 10_000) -> None:
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_questions

    def start(self, qid: str, deadline: float) -> None:
        with self._lock:
            self._records[qid] = _Record(deadline, self._lock)
            while len(self._records) > self._max:  # oldest first
                self._records.popitem(last=False)

    def add(self, qid: str, event: QuestionEvent) -> bool:
        with self._lock:
            record = self._records.get(qid)
            if record is None or record.ended:
                return False
            record.events.append(event.model_dump_json())
            record.ended = event.terminal
            record.changed.notify_all()
            return True

    def read(self, qid: str, cursor: str, block_s: float) -> tuple[list[QuestionEvent], str]:
        position = int(cursor)
        with self._lock:
            record = self._records.get(qid)
            if record is None:
                return [], cursor
            record.changed.wait_for(lambda: len(record.events) > position, timeout=block_s)
            events = record.events[position:]
        return [QuestionEvent.model_validate_json(e) for e in events], str(position + len(events))

    def deadline(self, qid: str) -> float | None:
        record = self._records.get(qid)
        return record.deadline if record else None


def _typed_redis_errors(method: Callable) -> Callable:
    @functools.wraps(method)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            return method(*args, **kwargs)
        except redis.RedisError as exc:
            # The class name only: redis-py's messages carry the server's host and port.
            full = isinstance(exc, redis.exceptions.OutOfMemoryError)
            raise Unavailable("Redis is full (maxmemory reached)" if full else f"Redis is unavailable ({type(exc).__name__})") from exc

    return wrapper


def _encode(event: QuestionEvent) -> tuple[str, str]:
    """(stream field, value): a result, by far the largest event (its citations repeat each
    page's title, URL and date per paragraph), is kept zlib-compressed, about 6x smaller."""
    text = event.model_dump_json()
    if event.kind != "result":
        return "e", text
    return "z", base64.b64encode(zlib.compress(text.encode(), 6)).decode()


def _decode(fields: dict[str, str]) -> QuestionEvent:
    if "z" in fields:
        return QuestionEvent.model_validate_json(zlib.decompress(base64.b64decode(fields["z"])))
    return QuestionEvent.model_validate_json(fields["e"])


# Append an event unless the question already ended; a terminal event marks the end. One
# script, so a worker's result and a follower's timeout cannot both land.
_ADD_EVENT = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if ARGV[3] == '1' then redis.call('SET', KEYS[2], '1', 'EX', ARGV[2]) end
redis.call('XADD', KEYS[1], '*', ARGV[4], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""


class RedisStore(QuestionStore):
    """Distributed mode: a stream, a deadline key and an end marker per question, expiring
    after the TTL."""

    def __init__(self, settings: Settings, max_connections: int = REDIS_CONNECTIONS) -> None:
        # Blocking reads are short (BLOCK_S), so a socket timeout above them only fires when
        # Redis is really gone: the caller then gets an error instead of hanging. A blocking
        # pool waits for a free connection instead of failing at once.
        pool = redis.BlockingConnectionPool.from_url(
            settings.redis_url, decode_responses=True, socket_timeout=BLOCK_S + 5, socket_connect_timeout=5,
            max_connections=max_connections, timeout=BLOCK_S + 5,
        )  # fmt: skip
        self._redis = redis.Redis(connection_pool=pool)
        self._add_event = self._redis.register_script(_ADD_EVENT)
        self._prefix = f"{settings.celery.key_prefix}taxnav:question:"
        self._ttl = settings.gateway.result_ttl_s

    def _key(self, qid: str, part: str) -> str:
        return f"{self._prefix}{qid}:{part}"

    @_typed_redis_errors
    def start(self, qid: str, deadline: float) -> None:
        self._redis.set(self._key(qid, "deadline"), repr(deadline), ex=self._ttl)

    @_typed_redis_errors
    def add(self, qid: str, event: QuestionEvent) -> bool:
        field, value = _encode(event)
        keys = [self._key(qid, "events"), self._key(qid, "done")]
        return bool(self._add_event(keys=keys, args=[value, self._ttl, int(event.terminal), field]))

    @_typed_redis_errors
    def read(self, qid: str, cursor: str, block_s: float) -> tuple[list[QuestionEvent], str]:
        block_ms = int(block_s * 1000)
        # redis-py: block=None is a plain read; block=0 would wait forever.
        reply = self._redis.xread({self._key(qid, "events"): cursor}, count=100, block=block_ms if block_ms > 0 else None)
        events: list[QuestionEvent] = []
        for _key, entries in reply or []:
            for entry_id, fields in entries:
                events.append(_decode(fields))
                cursor = entry_id
        return events, cursor

    @_typed_redis_errors
    def deadline(self, qid: str) -> float | None:
        value = self._redis.get(self._key(qid, "deadline"))
        return float(value) if value is not None else None

    def writable(self) -> str | None:
        """None when a write succeeds, else why not (full, unreachable)."""
        try:
            self._redis.set(f"{self._prefix}readyz", "1", ex=10)
            return None
        except redis.exceptions.OutOfMemoryError:
            return "full (maxmemory reached)"
        except redis.RedisError as exc:
            return f"unreachable ({type(exc).__name__})"


def make_store(settings: Settings) -> QuestionStore:
    return RedisStore(settings) if settings.mode == "distributed" else MemoryStore()


def follow(store: QuestionStore, qid: str, wait: bool = True) -> Iterator[QuestionEvent]:
    """A question's events in order, each stage once (a retried task reports again), ending
    with its terminal event. Past the deadline the reader records a ``timeout`` as the
    question's end (unless its result landed first: then that is read), so a client told
    "timeout" never sees the question complete later. With ``wait=False`` only what is there
    now (no terminal event when still running)."""
    deadline = store.deadline(qid)
    if deadline is None:
        return
    cursor, seen, lost_claim = START, set(), False
    while True:
        remaining = deadline - time.time()
        # Past the deadline, block only while a result that beat our timeout is being read.
        block_s = (min(BLOCK_S, remaining) if remaining > 0 else BLOCK_S if lost_claim else 0) if wait else 0
        events, cursor = store.read(qid, cursor, block_s)
        for event in events:
            if event.kind == "stage":
                if event.trace.stage in seen:
                    continue
                seen.add(event.trace.stage)
            yield event
            if event.terminal:
                return
        if events:
            continue
        if remaining <= 0:
            timeout = QuestionEvent(kind="error", error=PipelineTimeout(f"question {qid} did not finish within its deadline").info())
            if store.add(qid, timeout) or remaining < -LATE_RESULT_GRACE_S:
                yield timeout
                return
            lost_claim = True
        if not wait:
            return


OnEvent = Callable[[str, StageTrace], None]  # (stage name, its trace)


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
