"""A question ends exactly once, in both stores: a timeout its waiter recorded is the end
(a result computed later is dropped, so a client told "timeout" never sees it complete),
and a result that landed first beats the timeout. An embedded question still queued at its
deadline is never started."""

from __future__ import annotations

import time
import uuid

import pytest

from services.runtime.dispatch import run_embedded
from services.errors import PipelineTimeout
from services.answering.pipeline import new_state
from services.runtime.question_store import MemoryStore, RedisStore, follow
from services.runtime.workers import purge
from shared.config import Settings
from shared.contracts.api import QuestionRequest, QuestionResult, StageTrace
from shared.contracts.events import QuestionEvent, stage_event
from tests.services.answering.stages.test_stages_slice import state_after

MILEAGE = "how much can my employer pay me per mile for my own car?"


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.distributed)])
def store(request):
    if request.param == "memory":
        yield MemoryStore()
        return
    settings = Settings(mode="distributed")
    settings.celery.key_prefix = f"test-end-{uuid.uuid4().hex[:8]}:"
    yield RedisStore(settings)
    purge(settings)


def result(qid: str) -> QuestionResult:
    return QuestionResult(id=qid, question="q?", status="answered")


@pytest.fixture
def stages_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the stages run_stages started (a spy on the one stage runner, so "no stage
    ran" is observed, not inferred from how long the call took)."""
    from services.answering import pipeline  # noqa: PLC0415

    ran: list[str] = []
    real = pipeline.Answering.run_stage

    def spy(self, stage, state, index):  # noqa: ANN001, ANN202
        ran.append(stage.name)
        return real(self, stage, state, index)

    monkeypatch.setattr(pipeline.Answering, "run_stage", spy)
    return ran


def test_a_recorded_timeout_is_final_and_a_late_result_is_dropped(store):
    qid = uuid.uuid4().hex
    store.start(qid, time.time() + 0.2)
    assert store.add(qid, stage_event(StageTrace(stage="retrieval", ms=1.0)))
    events = list(follow(store, qid))
    assert [e.kind for e in events] == ["stage", "error"] and events[-1].error.type == "timeout"
    assert store.add(qid, QuestionEvent(kind="result", result=result(qid))) is False  # the late result
    assert store.add(qid, stage_event(StageTrace(stage="expansion", ms=1.0))) is False
    again = list(follow(store, qid, wait=False))  # a later GET
    assert [e.kind for e in again] == ["stage", "error"] and again[-1].error.type == "timeout"


def test_a_result_that_landed_first_beats_the_timeout(store):
    qid = uuid.uuid4().hex
    store.start(qid, time.time() - 1)  # already past its deadline when first read
    assert store.add(qid, QuestionEvent(kind="result", result=result(qid)))
    events = list(follow(store, qid))
    assert [e.kind for e in events] == ["result"]
    assert store.add(qid, QuestionEvent(kind="error", error=PipelineTimeout("late").info())) is False


def test_a_question_queued_past_its_deadline_is_not_started(slice_settings, stages_run):
    store = MemoryStore()
    state = new_state(QuestionRequest(question=MILEAGE), slice_settings)
    qid = state.query.id
    store.start(qid, time.time() - 0.01)
    run_embedded(state, slice_settings, store, deadline=time.time() - 0.01)
    events = list(follow(store, qid, wait=False))
    assert [e.kind for e in events] == ["error"] and events[0].error.type == "timeout"
    assert "not started" in events[0].error.message
    assert stages_run == []


def test_a_question_within_its_deadline_runs_every_stage(slice_settings, stages_run):
    """The spy above sees stages when they do run (so its empty list means something)."""
    store = MemoryStore()
    state = new_state(QuestionRequest(question=MILEAGE), slice_settings)
    store.start(state.query.id, time.time() + 30)
    run_embedded(state, slice_settings, store, deadline=time.time() + 30)
    assert stages_run[:2] == ["retrieval", "expansion"]


def test_an_embedded_question_stops_after_the_stage_during_which_it_timed_out(slice_settings):
    store = MemoryStore()
    state = new_state(QuestionRequest(question=MILEAGE), slice_settings)
    qid = state.query.id
    store.start(qid, time.time() + 30)
    store.add(qid, QuestionEvent(kind="result", result=result(qid)))  # e.g. a timeout already recorded
    run_embedded(state, slice_settings, store, deadline=time.time() + 30)  # ended already: first stage report stops it
    events = list(follow(store, qid, wait=False))
    assert [e.kind for e in events] == ["result"]


# ---- a stage worker (services/runtime/tasks.py run_queue) past the deadline or after the end ----


def worker_run(queue: str, state, settings: Settings, store, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN001, ANN201
    """``run_queue`` as a worker runs it, on ``store`` (the outcome: its return or exception)."""
    from services.runtime import tasks  # noqa: PLC0415  (imports the Celery stage app)
    from services.runtime.wire import encode  # noqa: PLC0415

    monkeypatch.setattr(tasks, "get_settings", lambda: settings)
    monkeypatch.setattr(tasks, "_store", lambda: store)
    try:
        return tasks.run_queue(queue, encode(state, settings))
    except BaseException as exc:  # noqa: BLE001  (the caller asserts which)
        return exc


def test_a_stage_task_past_the_deadline_ends_the_question_as_a_timeout_and_runs_nothing(slice_settings, monkeypatch, stages_run):
    from celery.exceptions import Ignore  # noqa: PLC0415

    store = MemoryStore()
    state = new_state(QuestionRequest(question=MILEAGE), slice_settings)
    store.start(state.query.id, time.time() - 0.01)
    outcome = worker_run("retrieval", state, slice_settings, store, monkeypatch)
    assert isinstance(outcome, Ignore)  # the chain stops: no next stage is sent
    assert stages_run == []
    events = list(follow(store, state.query.id, wait=False))
    assert [(e.kind, e.error.type) for e in events] == [("error", "timeout")]
    assert "not started" in events[0].error.message


def test_a_stage_task_of_a_question_that_ended_stops_after_its_stage_and_changes_nothing(slice_settings, monkeypatch):
    from celery.exceptions import Ignore  # noqa: PLC0415

    store = MemoryStore()
    retrieved = state_after(MILEAGE, slice_settings, "retrieval")
    qid = retrieved.query.id
    store.start(qid, time.time() + 30)
    assert store.add(qid, QuestionEvent(kind="error", error=PipelineTimeout("told the client").info()))  # by its follower
    assert isinstance(worker_run("graph", retrieved, slice_settings, store, monkeypatch), Ignore)
    events = list(follow(store, qid, wait=False))
    assert [e.kind for e in events] == ["error"] and events[0].error.message == "told the client"


def test_a_stage_task_whose_record_expired_is_dropped(slice_settings, monkeypatch):
    from celery.exceptions import Ignore  # noqa: PLC0415

    store = MemoryStore()  # no record: expired (or never started)
    state = new_state(QuestionRequest(question=MILEAGE), slice_settings)
    assert isinstance(worker_run("retrieval", state, slice_settings, store, monkeypatch), Ignore)
    assert list(follow(store, state.query.id, wait=False)) == []
