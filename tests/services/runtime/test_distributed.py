"""Distributed mode for real: Celery worker processes, one per stage queue, over the Redis at
127.0.0.1:6379, under a key prefix of their own (stray workers cannot take these tasks).
The same question gets the same result as in embedded mode, through the API too."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from tests.support.gateway import wait_ready
from services.runtime.dispatch import answer, submit
from services.errors import PipelineTimeout, Unavailable
from services.answering.pipeline import EVERY_QUESTION, new_state
from services.runtime.question_store import MemoryStore
from services.runtime.workers import WorkerPool, purge
from shared.config import Settings
from shared.contracts.api import QuestionRequest, QuestionResult

pytestmark = pytest.mark.distributed

WARM_UP_S = 180.0  # each worker loads the index (and the embedder) on its first task
QUESTIONS = [
    "how much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?",
    "Our Christmas do came to £160 a head. Is it just the £10 over the limit that gets taxed?",
    "What's the VAT registration threshold for my small business?",  # out_of_scope at the gateway
    "What's the van benefit charge for the 2025-26 tax year?",  # stale
    "Under the optional remuneration arrangement (OpRA) rules, how is a company car I get through salary sacrifice taxed?",  # low_coverage
]


def distributed_settings(base: Settings, prefix: str) -> Settings:
    settings = base.model_copy(deep=True)
    settings.mode = "distributed"
    settings.stores.backend = "local"  # no OpenSearch/Qdrant servers here: the workers read the on-disk index
    settings.celery.key_prefix = prefix
    return settings


def worker_env(settings: Settings) -> dict[str, str]:
    env = {
        "TAXNAV_MODE": "distributed",
        "TAXNAV_STORES__BACKEND": "local",
        "TAXNAV_DATA_DIR": str(settings.data_dir),
        "TAXNAV_REDIS_URL": settings.redis_url,
        "TAXNAV_CELERY__KEY_PREFIX": settings.celery.key_prefix,
    }
    if settings.ingest.embedding_cache_dir:
        env["TAXNAV_INGEST__EMBEDDING_CACHE_DIR"] = str(settings.ingest.embedding_cache_dir)
    return env


def comparable(result: QuestionResult) -> dict:
    """Everything but the id and the timings."""
    data = result.model_dump(mode="json", exclude={"id"})
    data["trace"] = [(t["stage"], t["candidate_ids"]) for t in data["trace"]]
    return data


@pytest.fixture(scope="module")
def cluster(slice_settings: Settings, tmp_path_factory: pytest.TempPathFactory):
    settings = distributed_settings(slice_settings, f"test-{uuid.uuid4().hex[:8]}:")
    with WorkerPool(worker_env(settings), log_dir=tmp_path_factory.mktemp("worker-logs")) as pool:
        pool.start_all()
        patient = settings.model_copy(deep=True)
        patient.gateway.wait_timeout_s = WARM_UP_S
        assert answer(QuestionRequest(question=QUESTIONS[0]), patient).status == "answered"
        yield settings, pool
    purge(settings)


def test_same_result_as_embedded_for_answers_and_refusals(cluster, slice_settings):
    settings, _ = cluster
    for question in QUESTIONS:
        distributed = answer(QuestionRequest(question=question), settings)
        embedded = answer(QuestionRequest(question=question), slice_settings, MemoryStore())
        assert comparable(distributed) == comparable(embedded), question


def test_stage_events_arrive_once_each_in_order(cluster):
    settings, _ = cluster
    seen: list[str] = []
    result = answer(QuestionRequest(question=QUESTIONS[1]), settings, on_event=lambda name, trace: seen.append(name))
    assert seen == [t.stage for t in result.trace] and len(seen) == len(EVERY_QUESTION)


def test_gateway_in_distributed_mode_answers_polls_and_streams(cluster, slice_settings):
    settings, _ = cluster
    with TestClient(create_app(settings)) as client:
        ready = wait_ready(client).json()
        assert ready["ready"] and ready["checks"]["redis"] == "ok"
        waited = client.post("/v1/questions", json={"question": QUESTIONS[0]})
        assert waited.status_code == 200
        embedded = answer(QuestionRequest(question=QUESTIONS[0]), slice_settings, MemoryStore())
        assert comparable(QuestionResult.model_validate(waited.json())) == comparable(embedded)

        qid = client.post("/v1/questions?wait=false", json={"question": QUESTIONS[1]}).json()["id"]
        with client.stream("GET", f"/v1/questions/{qid}/events") as stream:
            blocks = stream.read().decode().strip().split("\n\n")
        kinds = [dict(line.split(": ", 1) for line in block.splitlines())["event"] for block in blocks]
        assert kinds == ["stage"] * len(EVERY_QUESTION) + ["result"]
        final = client.get(f"/v1/questions/{qid}")
        assert final.status_code == 200 and final.json()["id"] == qid
        result_event = json.loads(dict(line.split(": ", 1) for line in blocks[-1].splitlines())["data"])
        assert result_event == final.json()


def test_no_worker_for_the_queue_gives_a_typed_timeout_not_a_hang(slice_settings):
    settings = distributed_settings(slice_settings, f"test-empty-{uuid.uuid4().hex[:8]}:")  # nobody consumes here
    settings.gateway.wait_timeout_s = 2.0
    started = time.monotonic()
    try:
        with pytest.raises(PipelineTimeout):
            answer(QuestionRequest(question=QUESTIONS[0]), settings)
        assert time.monotonic() - started < 5
        with TestClient(create_app(settings)) as client:
            response = client.post("/v1/questions", json={"question": QUESTIONS[0]})
            assert response.status_code == 504 and response.json()["error"]["type"] == "timeout"
            # the scope guard still answers at once: it needs no worker
            assert client.post("/v1/questions", json={"question": QUESTIONS[2]}).json()["refusal"]["category"] == "out_of_scope"
    finally:
        assert purge(settings) > 0  # the undelivered tasks and the question records


def test_readiness_fails_when_redis_is_unreachable(slice_settings):
    settings = distributed_settings(slice_settings, "test-unreachable:")
    settings.redis_url = "redis://127.0.0.1:1/0"
    with TestClient(create_app(settings)) as client:
        response = client.get("/readyz")
    assert response.status_code == 503 and "unreachable" in response.json()["checks"]["redis"]




def test_redis_down_is_a_typed_503_not_a_500(slice_settings):
    settings = distributed_settings(slice_settings, "test-unreachable:")
    settings.redis_url = "redis://127.0.0.1:1/0"
    with TestClient(create_app(settings)) as client:
        response = client.post("/v1/questions", json={"question": QUESTIONS[0]})
    assert response.status_code == 503 and response.json()["error"]["type"] == "unavailable"


def test_broker_down_while_dispatching_is_a_typed_error(slice_settings):
    settings = distributed_settings(slice_settings, "test-unreachable:")
    settings.redis_url = "redis://127.0.0.1:1/0"
    state = new_state(QuestionRequest(question=QUESTIONS[0]), settings)
    started = time.monotonic()
    with pytest.raises(Unavailable, match="broker"):
        submit(state, settings, MemoryStore())  # the store is fine; the broker is not
    assert time.monotonic() - started < 10
