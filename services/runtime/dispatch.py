"""Run a question that has passed the scope guard: in process (embedded) or as a Celery
chain, one task per queue (distributed). Either way the stages report to a question store
(services/runtime/question_store.py), which is what the gateway, ``taxnav ask`` and the benchmark wait on.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime, timezone
from collections.abc import Callable
from functools import lru_cache, partial
from typing import TYPE_CHECKING

from services.errors import Unavailable, as_info
from services.answering.pipeline import STAGE_QUEUES, STAGES, answering_for, new_state
from services.runtime.question_store import OnEvent, QuestionStore, make_store, wait_result
from shared import heap
from shared.config import Settings
from shared.contracts.api import QuestionRequest, QuestionResult, StageTrace
from shared.contracts.events import QuestionEvent, stage_event
from shared.contracts.pipeline import PipelineState
from shared.index import CorpusIndex

if TYPE_CHECKING:
    from celery import Celery


def finish_to_store(state: PipelineState, settings: Settings, store: QuestionStore, index: CorpusIndex | None = None) -> QuestionResult:
    """The finished (or refused) state's result, recorded as the question's terminal event;
    ``index``: the generation its stages read, when this process ran them."""
    return to_store(answering_for(settings).finish(state, index), store)


def to_store(result: QuestionResult, store: QuestionStore) -> QuestionResult:
    """A question's result, recorded as its terminal event."""
    store.add(result.id, QuestionEvent(kind="result", result=result))
    return result


class QuestionEnded(Exception):
    """The question already has its terminal event (e.g. its follower recorded a timeout)."""


def reporter(store: QuestionStore, qid: str) -> Callable[[StageTrace], None]:
    """The stage loop's ``on_trace``: each stage's event to the store, and QuestionEnded once
    the question has ended, so the stages after it (wasted work) are not run."""

    def report(trace: StageTrace) -> None:
        if not store.add(qid, stage_event(trace)):
            raise QuestionEnded

    return report


class Admission:
    """At most ``limit`` questions in flight in this process; past it the caller sheds load
    (the gateway answers a typed 503 with Retry-After) instead of queueing without bound."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._free = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self.in_flight = 0

    def enter(self) -> bool:
        if not self._free.acquire(blocking=False):
            return False
        with self._lock:
            self.in_flight += 1
        return True

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1
        self._free.release()


def run_embedded(state: PipelineState, settings: Settings, store: QuestionStore, deadline: float) -> None:
    """All stages in this process; any failure is recorded as the question's typed error.
    Past its deadline no stage starts (a question still queued then is not started at all):
    its waiter has given up."""
    qid = state.query.id
    try:
        to_store(answering_for(settings).answer(state, reporter(store, qid), deadline), store)
    except QuestionEnded:
        pass
    except Exception as exc:  # noqa: BLE001  (recorded for the waiting client, never lost)
        store.add(qid, QuestionEvent(kind="error", error=as_info(exc)))


@lru_cache(maxsize=8)
def _executor(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="question")


class _Relay(QuestionStore):
    """A worker process's store: each event goes to the gateway over a queue (it never reads)."""

    blocking = False

    def __init__(self, events: multiprocessing.Queue) -> None:
        self._events = events

    def start(self, qid: str, deadline: float) -> None:
        raise NotImplementedError("the gateway opens the question's record")

    def add(self, qid: str, event: QuestionEvent) -> bool:
        self._events.put((qid, event.model_dump_json()))
        return True  # whether it ended already is the gateway's to know; the deadline still holds

    def read(self, qid: str, cursor: str, block_s: float) -> tuple[list[QuestionEvent], str]:
        raise NotImplementedError("the gateway reads")

    def deadline(self, qid: str) -> float | None:
        raise NotImplementedError("the gateway reads")


_relay: _Relay | None = None  # in a worker process: set once at its start


@lru_cache(maxsize=8)
def _settings(settings_json: str) -> Settings:
    return Settings.model_validate_json(settings_json)


# Asked once by each process that serves questions before its first real one: it loads the
# index and everything the stages load lazily.
WARM_UP_QUESTION = "How much can my employer pay me per mile for using my own car for work?"


def _exit_with(parent: int) -> None:
    """A worker outlives no gateway, however it ended (SIGKILL included): the worker holds both
    ends of its queues' pipes, so it would never read an end of file and wait for ever."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _start_worker(events: multiprocessing.Queue, settings_json: str) -> None:
    """A worker process warms up before its first question, then freezes its heap (shared/heap.py)."""
    global _relay
    _relay = _Relay(events)
    threading.Thread(target=_exit_with, args=(os.getppid(),), name="parent-watch", daemon=True).start()
    settings = _settings(settings_json)
    state = new_state(QuestionRequest(question=WARM_UP_QUESTION), settings)
    try:
        answering_for(settings).run(STAGES, state, lambda _trace: None)  # the components built once, then warm
    except Exception:  # noqa: BLE001  (no index yet: each question reports it as a typed error)
        pass
    heap.freeze()


def _run_in_worker(state_json: str, settings_json: str, deadline: float) -> None:
    assert _relay is not None, "started by _start_worker"
    run_embedded(PipelineState.model_validate_json(state_json), _settings(settings_json), _relay, deadline)


class WorkerProcesses:
    """Embedded questions in ``settings.gateway.embedded_processes`` worker processes: the
    gateway's own threads then hold the GIL only to serve requests and relay events. Every
    question ends with a terminal event: its own, relayed, or, when a worker process dies, a
    typed ``unavailable`` error for each question the broken pool held (a new pool starts with
    the next question)."""

    def __init__(self, settings: Settings) -> None:
        self._settings_json = settings.model_dump_json()
        self._processes = settings.gateway.embedded_processes
        self._lock = threading.Lock()
        self._stores: dict[str, QuestionStore] = {}  # questions in flight, until their terminal event
        self._pool: ProcessPoolExecutor | None = None

    def pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                context = multiprocessing.get_context("spawn")  # not fork: the gateway runs threads
                events = context.Queue()  # one per pool: a killed writer may leave its lock held
                self._pool = ProcessPoolExecutor(
                    self._processes, mp_context=context, initializer=_start_worker, initargs=(events, self._settings_json)
                )
                threading.Thread(target=self._relay, args=(events, self._pool), name="question-relay", daemon=True).start()
                for _ in range(self._processes):  # a process per task not yet taken: all start (and load) now
                    self._pool.submit(int)
            return self._pool

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:  # broken for good: the next question starts a new one
                self._pool = None

    def submit(self, state: PipelineState, store: QuestionStore, deadline: float) -> None:
        qid = state.query.id
        with self._lock:
            self._stores[qid] = store
        pool = self.pool()
        try:
            future = pool.submit(_run_in_worker, state.model_dump_json(), self._settings_json, deadline)
        except BrokenProcessPool:  # it broke before its failed tasks' callbacks ran
            self._drop(pool)
            pool = self.pool()
            future = pool.submit(_run_in_worker, state.model_dump_json(), self._settings_json, deadline)
        future.add_done_callback(partial(self._ended, qid, pool))

    def _ended(self, qid: str, pool: ProcessPoolExecutor, future: Future) -> None:
        """A question's task is over; only a failed task (its process died) needs an end here."""
        if future.cancelled() or future.exception() is not None:
            self._drop(pool)
            with self._lock:
                store = self._stores.pop(qid, None)
            if store is not None:
                error = Unavailable("the worker process running this question ended; ask again")
                store.add(qid, QuestionEvent(kind="error", error=as_info(error)))

    def _relay(self, events: multiprocessing.Queue, pool: ProcessPoolExecutor) -> None:
        """The workers' events into the questions' stores, until the pool is replaced and drained."""
        while True:
            try:
                qid, payload = events.get(timeout=1.0)
            except queue.Empty:
                if self._pool is not pool:
                    return
                continue
            event = QuestionEvent.model_validate_json(payload)
            with self._lock:
                store = self._stores.pop(qid, None) if event.terminal else self._stores.get(qid)
            if store is not None:
                store.add(qid, event)


@lru_cache(maxsize=8)
def _worker_processes(settings_json: str) -> WorkerProcesses:
    return WorkerProcesses(Settings.model_validate_json(settings_json))


@lru_cache(maxsize=8)
def _celery(settings_json: str) -> Celery:
    # Celery and its Redis transport only in distributed mode (0.3 s of every embedded start)
    from services.runtime.celery_app import make_stage_app  # noqa: PLC0415

    return make_stage_app(Settings.model_validate_json(settings_json))


def celery_for(settings: Settings) -> Celery:
    """A producer app for these settings (the module-level app reads the environment)."""
    return _celery(settings.model_dump_json())


def send_chain(state: PipelineState, settings: Settings, deadline: float) -> None:
    from celery import chain  # noqa: PLC0415  (distributed mode only, as in _celery)
    from kombu.exceptions import OperationalError  # noqa: PLC0415

    from services.runtime.celery_app import stage_task_name  # noqa: PLC0415

    app = celery_for(settings)
    # Expired messages are dropped by workers: nobody waits for them any more.
    expires = datetime.fromtimestamp(deadline, tz=timezone.utc)
    # ignore_result: nobody reads Celery results (the question store carries them), and
    # without it every send subscribes to a result channel.
    signatures = [app.signature(stage_task_name(queue), queue=queue, expires=expires, ignore_result=True) for queue in STAGE_QUEUES]
    signatures[0].args = (state.model_dump_json(),)
    try:
        chain(*signatures).apply_async(retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5})
    except OperationalError as exc:  # the class name only: the message carries the broker's address
        raise Unavailable(f"the Celery broker is unavailable ({type(exc).__name__})") from exc


def record_refusal(state: PipelineState, settings: Settings, store: QuestionStore) -> QuestionResult:
    """A question the scope guard refused: its result at once (no retrieval or model cost),
    recorded so that later reads of its id find it."""
    store.start(state.query.id, time.time() + settings.gateway.wait_timeout_s)
    return finish_to_store(state, settings, store)


def submit(state: PipelineState, settings: Settings, store: QuestionStore) -> str:
    """Start a question (the scope guard has run: ``state`` may already be refused).

    Returns its id at once; progress and the outcome arrive in ``store``."""
    qid = state.query.id
    if state.refusal is not None:
        record_refusal(state, settings, store)
        return qid
    deadline = time.time() + settings.gateway.wait_timeout_s
    store.start(qid, deadline)
    if settings.mode == "distributed":
        send_chain(state, settings, deadline)
    elif settings.gateway.embedded_processes:
        _worker_processes(settings.model_dump_json()).submit(state, store, deadline)
    else:
        _executor(settings.gateway.embedded_threads).submit(run_embedded, state, settings, store, deadline)
    return qid


def answer(
    request: QuestionRequest, settings: Settings, store: QuestionStore | None = None, on_event: OnEvent | None = None
) -> QuestionResult:
    """The one way to ask and wait: scope guard here, stages per ``settings.mode`` (in this
    process or the Celery chain), reported to ``store`` (by default the mode's own store).
    Raises a PipelineError on failure or timeout."""
    store = make_store(settings) if store is None else store
    qid = submit(new_state(request, settings), settings, store)
    return wait_result(store, qid, on_event)
