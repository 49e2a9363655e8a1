"""Results in Redis are bounded: they expire after gateway.result_ttl_s and a result is
stored compressed (its citations repeat each page's title, URL and date per paragraph)."""

from __future__ import annotations

import time
import uuid

import pytest
import redis

from services.runtime.dispatch import answer
from services.runtime.question_store import RedisStore, follow
from services.runtime.workers import purge
from shared.config import Settings
from shared.contracts.api import QuestionRequest
from shared.contracts.events import QuestionEvent

pytestmark = pytest.mark.distributed


def test_a_stored_result_is_compressed_expires_and_reads_back_whole(slice_settings):
    answered = answer(QuestionRequest(question="how much can my employer pay me per mile for my own car?"), slice_settings)
    assert answered.status == "answered"
    settings = Settings(mode="distributed")
    settings.celery.key_prefix = f"test-bounded-{uuid.uuid4().hex[:8]}:"
    settings.gateway.result_ttl_s = 120
    store = RedisStore(settings)
    try:
        store.start(answered.id, time.time() + 5)
        assert store.add(answered.id, QuestionEvent(kind="result", result=answered))
        raw = redis.Redis.from_url(settings.redis_url)
        keys = list(raw.scan_iter(match=f"{settings.celery.key_prefix}*"))
        assert len(keys) == 3  # deadline, events, end marker
        assert all(0 < raw.ttl(key) <= 120 for key in keys)
        stored = raw.memory_usage(f"{settings.celery.key_prefix}taxnav:question:{answered.id}:events")
        plain = len(answered.model_dump_json())
        assert stored < plain * 0.6, (stored, plain)  # zlib on a short answer: about 0.45 with Redis overhead
        [event] = list(follow(store, answered.id))
        assert event.result == answered
    finally:
        purge(settings)



def test_more_waiters_than_redis_py_default_pool_all_get_their_result():
    """redis-py's default pool holds 100 connections; a gateway has up to MAX_WAITERS threads
    blocked on reads at once, and every one must get its result, none "Too many connections"."""
    from concurrent.futures import ThreadPoolExecutor

    from services.runtime.question_store import MAX_WAITERS, wait_result
    from shared.contracts.api import QuestionResult

    settings = Settings(mode="distributed")
    settings.celery.key_prefix = f"test-pool-{uuid.uuid4().hex[:8]}:"
    store = RedisStore(settings)
    qids = [uuid.uuid4().hex for _ in range(MAX_WAITERS)]
    try:
        for qid in qids:
            store.start(qid, time.time() + 20)
        with ThreadPoolExecutor(MAX_WAITERS) as pool:
            waiting = [pool.submit(wait_result, store, qid) for qid in qids]
            time.sleep(1.5)  # every waiter is now blocked in its own XREAD
            for qid in qids:
                store.add(qid, QuestionEvent(kind="result", result=QuestionResult(id=qid, question="q?", status="answered")))
            results = [future.result(timeout=30) for future in waiting]
        assert [r.id for r in results] == qids
    finally:
        purge(settings)
