"""The question store both modes report to: memory (embedded) and a real Redis (distributed)."""

from __future__ import annotations

import gc
import threading
import time
import uuid

import pytest

from services.errors import PipelineTimeout, ProviderError
from services.runtime.question_store import MemoryStore, RedisStore, follow, wait_result
from services.runtime.workers import purge
from shared.config import Settings
from shared.contracts.api import QuestionResult, StageTrace
from shared.contracts.events import QuestionEvent, stage_event


def redis_settings() -> Settings:
    settings = Settings(mode="distributed")
    settings.celery.key_prefix = f"test-{uuid.uuid4().hex[:8]}:"
    return settings


@pytest.fixture(params=["memory", "redis"])
def store(request):
    if request.param == "memory":
        yield MemoryStore()
        return
    settings = redis_settings()
    yield RedisStore(settings)
    purge(settings)


def result(qid: str) -> QuestionResult:
    return QuestionResult(id=qid, question="q?", status="answered", trace=[StageTrace(stage="retrieval", ms=1.5)])


def test_follow_replays_stages_once_then_the_result(store):
    qid = uuid.uuid4().hex
    store.start(qid, time.time() + 5)
    store.add(qid, stage_event(StageTrace(stage="retrieval", ms=2.0, candidate_ids=["A#c0", "B#c1"])))
    # a task retried after its worker died reports its stage again: readers see it once
    store.add(qid, stage_event(StageTrace(stage="retrieval", ms=3.0, candidate_ids=["A#c0"])))
    store.add(qid, stage_event(StageTrace(stage="expansion", ms=1.0)))
    store.add(qid, QuestionEvent(kind="result", result=result(qid)))
    store.add(qid, stage_event(StageTrace(stage="late", ms=1.0)))  # after the end: never read
    events = list(follow(store, qid))
    assert [e.kind for e in events] == ["stage", "stage", "result"]
    assert [e.trace.stage for e in events[:2]] == ["retrieval", "expansion"]
    assert events[0].trace.ms == 2.0 and len(events[0].trace.candidate_ids) == 2
    assert events[-1].result.id == qid


def test_reader_waits_for_events_written_later(store):
    qid = uuid.uuid4().hex
    store.start(qid, time.time() + 10)

    def write() -> None:
        time.sleep(0.3)
        store.add(qid, stage_event(StageTrace(stage="retrieval", ms=1.0)))
        time.sleep(0.3)
        store.add(qid, QuestionEvent(kind="result", result=result(qid)))

    threading.Thread(target=write).start()
    seen: list[str] = []
    got = wait_result(store, qid, on_event=lambda name, trace: seen.append(name))
    assert got.id == qid and seen == ["retrieval"]


def test_past_the_deadline_a_typed_timeout_ends_the_stream(store):
    qid = uuid.uuid4().hex
    store.start(qid, time.time() + 0.5)
    store.add(qid, stage_event(StageTrace(stage="retrieval", ms=1.0)))
    started = time.monotonic()
    with pytest.raises(PipelineTimeout):
        wait_result(store, qid)
    assert time.monotonic() - started < 3
    last = list(follow(store, qid, wait=False))[-1]
    assert last.kind == "error" and last.error.type == "timeout"


def test_snapshot_of_a_running_question_has_no_terminal_event(store):
    qid = uuid.uuid4().hex
    store.start(qid, time.time() + 30)
    store.add(qid, stage_event(StageTrace(stage="retrieval", ms=1.0)))
    assert [e.kind for e in follow(store, qid, wait=False)] == ["stage"]


def test_recorded_error_is_raised_again_with_its_type(store):
    qid = uuid.uuid4().hex
    store.start(qid, time.time() + 5)
    store.add(qid, QuestionEvent(kind="error", error=ProviderError("model down").info()))
    with pytest.raises(ProviderError, match="model down"):
        wait_result(store, qid)


def test_unknown_question_has_no_deadline_and_no_events(store):
    assert store.deadline("nope") is None
    assert list(follow(store, "nope")) == []


def test_redis_records_expire_and_stay_under_their_prefix():
    settings = redis_settings()
    settings.gateway.result_ttl_s = 60
    store = RedisStore(settings)
    qid = uuid.uuid4().hex
    store.start(qid, time.time() + 5)
    store.add(qid, stage_event(StageTrace(stage="retrieval", ms=1.0)))
    keys = store._redis.keys(f"{settings.celery.key_prefix}*")
    assert len(keys) == 2 and all(qid in key for key in keys)
    assert all(0 < store._redis.ttl(key) <= 60 for key in keys)
    other = RedisStore(redis_settings())  # another prefix sees nothing of it
    assert other.deadline(qid) is None
    assert purge(settings) == 2


def test_memory_store_forgets_the_oldest_beyond_its_bound():
    store = MemoryStore(max_questions=2)
    for qid in ("a", "b", "c"):
        store.start(qid, time.time() + 5)
    assert store.deadline("a") is None and store.deadline("c") is not None


def test_kept_questions_add_next_to_nothing_for_the_garbage_collector_to_walk():
    store = MemoryStore()
    answered = QuestionResult(id="x", question="q?", status="answered", trace=[StageTrace(stage=f"s{i}", ms=1.0) for i in range(6)])
    gc.collect()
    before = len(gc.get_objects())
    for i in range(1000):
        store.start(f"q{i}", time.time() + 60)
        for trace in answered.trace:
            store.add(f"q{i}", stage_event(trace))
        store.add(f"q{i}", QuestionEvent(kind="result", result=answered.model_copy(update={"id": f"q{i}"})))
    gc.collect()
    assert (len(gc.get_objects()) - before) / 1000 < 12  # the record, its list and condition (parsed events: 30 here, ~160 for a real answer)
    assert wait_result(store, "q999").id == "q999"
