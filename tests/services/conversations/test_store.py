"""Conversations in distributed mode for real: the thread in the Redis at 127.0.0.1:6379 under
a key prefix of its own, and each turn's context carried to the Celery stage workers inside
the message (they share no memory with the gateway or each other)."""

from __future__ import annotations

import time
import uuid

import pytest
import redis
from fastapi.testclient import TestClient

from gateway.app import create_app
from services.conversations.store import RedisConversationStore, new_turn_state
from services.errors import ConversationNotFound, TurnLimitReached
from services.runtime.wire import WireState, encode, rebuild
from shared.config import Settings
from shared.contracts.conversation import ConversationQuestion
from tests.services.runtime.test_distributed import cluster  # noqa: F401  (the fixture: real workers)
from tests.support.gateway import wait_ready

MILEAGE = "How much can my employer pay me per mile, tax free, when I drive my own car on business trips?"
FOLLOW_UP = "And if I cycle there instead?"


def redis_settings(base: Settings, **conversations: object) -> Settings:
    settings = base.model_copy(deep=True)
    settings.celery.key_prefix = f"test-conv-{uuid.uuid4().hex[:8]}:"
    for key, value in conversations.items():
        setattr(settings.conversations, key, value)
    return settings


def test_redis_store_keeps_turns_with_a_ttl_and_a_limit(slice_settings):
    settings = redis_settings(slice_settings, ttl_s=30, max_turns=1)
    store = RedisConversationStore(settings)
    conversation = store.create()
    key = f"{settings.celery.key_prefix}taxnav:conversation:{conversation.id}"
    client = redis.Redis.from_url(settings.redis_url)
    assert 0 < client.ttl(key) <= 30
    assert store.get(conversation.id).turns == []
    with pytest.raises(ConversationNotFound):
        store.get("no-such-conversation")
    client.expire(key, 1)
    time.sleep(1.2)
    with pytest.raises(ConversationNotFound):
        store.get(conversation.id)


def test_redis_store_refuses_a_turn_past_the_limit(slice_settings):
    from services.conversations.store import ask  # noqa: PLC0415
    from services.runtime.question_store import MemoryStore  # noqa: PLC0415

    settings = redis_settings(slice_settings, max_turns=1)
    store, questions = RedisConversationStore(settings), MemoryStore()
    cid = store.create().id
    assert ask(store, cid, ConversationQuestion(question=MILEAGE), settings, questions).turn == 1
    with pytest.raises(TurnLimitReached):
        ask(store, cid, ConversationQuestion(question=FOLLOW_UP), settings, questions)
    assert len(store.get(cid).turns) == 1 and store.get(cid).pending == []


def test_the_context_crosses_a_celery_hop_in_the_message(slice_settings):
    from services.conversations.store import as_turn, follow_up_info  # noqa: PLC0415
    from services.runtime.dispatch import submit  # noqa: PLC0415
    from services.answering.pipeline import STAGES, run_stage, stages_through  # noqa: PLC0415
    from services.runtime.question_store import MemoryStore, wait_result  # noqa: PLC0415
    from shared.contracts.conversation import PendingTurn  # noqa: PLC0415
    from shared.index import CorpusIndex  # noqa: PLC0415

    state = new_turn_state(ConversationQuestion(question=MILEAGE), [], slice_settings)
    pending = PendingTurn(turn=1, question_id=state.query.id, question=MILEAGE, follow_up=follow_up_info(state))
    store = MemoryStore()
    earlier = [as_turn(wait_result(store, submit(state, slice_settings, store)), "c", pending)]
    follow = new_turn_state(ConversationQuestion(question=FOLLOW_UP), earlier, slice_settings)
    assert follow.context is not None and follow.context.kind == "follow_up" and follow.context.carried_sections
    for stage in stages_through("selection"):  # through selection: page bundles travel as ids from here on
        follow = run_stage(stage, follow, slice_settings)
    arrived = rebuild(WireState.model_validate_json(encode(follow, slice_settings)), CorpusIndex.open(slice_settings, follow.query.manual))
    assert arrived.context == follow.context and arrived.query == follow.query


@pytest.mark.distributed
def test_a_conversation_through_real_workers_matches_embedded(cluster, slice_settings, tmp_path):  # noqa: F811
    settings, _ = cluster
    embedded = slice_settings.model_copy(update={"data_dir": tmp_path})
    (tmp_path / "collections").symlink_to(slice_settings.data_dir / "collections")
    results = {}
    for name, mode_settings in (("distributed", settings), ("embedded", embedded)):
        with TestClient(create_app(mode_settings)) as client:
            wait_ready(client)
            cid = client.post("/v1/conversations").json()["id"]
            turns = [client.post(f"/v1/conversations/{cid}/questions", json={"question": q}) for q in (MILEAGE, FOLLOW_UP)]
            assert all(t.status_code == 200 for t in turns), [t.text for t in turns]
            stored = client.get(f"/v1/conversations/{cid}").json()["turns"]
            assert [t["turn"] for t in stored] == [1, 2]
            results[name] = [t.json() for t in turns]
    for distributed, embedded_turn in zip(results["distributed"], results["embedded"], strict=True):
        assert distributed["follow_up"] == embedded_turn["follow_up"]
        assert distributed["answer"] == embedded_turn["answer"] and distributed["status"] == embedded_turn["status"]
        assert [t["candidate_ids"] for t in distributed["trace"]] == [t["candidate_ids"] for t in embedded_turn["trace"]]
    assert results["distributed"][1]["follow_up"]["kind"] == "follow_up"


def test_redis_down_is_a_typed_503_for_conversations(slice_settings):
    settings = redis_settings(slice_settings)
    settings.mode = "distributed"
    settings.stores.backend = "local"
    settings.redis_url = "redis://127.0.0.1:1/0"  # nothing listens there
    with TestClient(create_app(settings)) as client:
        for response in (client.post("/v1/conversations"), client.get("/v1/conversations/abc")):
            assert response.status_code == 503, response.text
            assert response.json()["error"]["type"] == "unavailable"
