"""The question API in embedded mode on a real ingested slice: answers, every refusal
category, waiting and not waiting, server-sent progress, pages, readiness and metrics."""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from fastapi.testclient import TestClient

from gateway.app import create_app
from services.runtime.question_store import MemoryStore, RedisStore
from services.runtime.workers import purge
from shared.config import Settings
from shared.contracts.api import StageTrace
from shared.contracts.events import stage_event
from tests.support.gateway import wait_ready

MILEAGE = "how much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?"
REFUSALS = {
    "out_of_scope": "What's the VAT registration threshold for my small business?",
    "malformed": "asdf ;; qwerty ?? 7#k lorem zz",
    "low_coverage": "Under the optional remuneration arrangement (OpRA) rules, how is a company car I get through salary sacrifice taxed?",
    "stale": "What's the van benefit charge for the 2025-26 tax year?",
}
STAGES = ["retrieval", "expansion", "rollup", "selection", "stitching", "marks", "verification"]


@pytest.fixture(scope="module")
def client(slice_settings: Settings) -> TestClient:
    with TestClient(create_app(slice_settings)) as test_client:
        wait_ready(test_client)  # as a client would: the start-up warm-up runs first
        yield test_client


def ask(client: TestClient, question: str, **params: object) -> dict:
    response = client.post("/v1/questions", json={"question": question}, params=params)
    assert response.status_code in (200, 202), response.text
    return response.json()


def sse(client: TestClient, qid: str) -> list[tuple[str, dict]]:
    with client.stream("GET", f"/v1/questions/{qid}/events") as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        text = response.read().decode()
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((fields.get("event", "message"), json.loads(fields["data"])))
    return events


def test_answer_every_sentence_cited_verified_and_resolvable(client):
    body = ask(client, MILEAGE)
    assert body["status"] == "answered" and body["refusal"] is None
    sentences = body["answer"]["sentences"]
    assert sentences and all(s["citations"] and s["verdict"] and s["reason"] for s in sentences)
    cited = {c for s in sentences for c in s["citations"]}
    by_id = {c["paragraph_id"]: c for c in body["citations"]}
    assert cited == set(by_id)
    selected = next(t["candidate_ids"] for t in body["trace"] if t["stage"] == "selection")
    assert {c["section_id"] for c in body["citations"]} <= set(selected)  # only selected pages are cited
    for citation in body["citations"]:
        assert citation["url"].startswith("https://www.gov.uk/hmrc-internal-manuals/employment-income-manual/")
        assert citation["text"] and citation["heading_path"] and citation["public_updated_at"]
    assert [t["stage"] for t in body["trace"]] == STAGES
    assert 0 <= body["answer"]["faithfulness"] <= 1


@pytest.mark.parametrize("category", sorted(REFUSALS))
def test_each_refusal_category_through_the_api(client, category):
    body = ask(client, REFUSALS[category])
    assert body["status"] == "refused" and body["answer"] is None
    refusal = body["refusal"]
    assert refusal["category"] == category and refusal["message"]
    if category in ("out_of_scope", "malformed"):
        assert body["trace"] == []  # the scope guard refused before any retrieval
    else:
        assert body["trace"][0]["stage"] == "retrieval" and refusal["evidence"]
    if category == "stale":
        assert refusal["evidence"]["pages"] and all(c["public_updated_at"] for c in body["citations"])


def test_not_waiting_gives_an_id_then_the_same_kind_of_result(client):
    pending = ask(client, MILEAGE, wait="false")
    assert pending["status"] == "pending" and pending["result_url"] == f"/v1/questions/{pending['id']}"
    deadline = time.monotonic() + 30
    while True:
        response = client.get(pending["result_url"])
        if response.status_code == 200 or time.monotonic() > deadline:
            break
        assert response.status_code == 202 and response.json()["id"] == pending["id"]
        time.sleep(0.05)
    body = response.json()
    assert response.status_code == 200 and body["id"] == pending["id"] and body["status"] == "answered"
    assert body["answer"] == ask(client, MILEAGE)["answer"]  # deterministic pipeline


def test_wait_false_in_the_body_also_returns_at_once(client):
    response = client.post("/v1/questions", json={"question": MILEAGE, "wait": False})
    assert response.status_code == 202 and response.json()["events_url"].endswith("/events")


def test_events_report_each_stage_then_the_result(client):
    qid = ask(client, MILEAGE, wait="false")["id"]
    events = sse(client, qid)
    kinds = [kind for kind, _ in events]
    assert kinds == ["stage"] * len(STAGES) + ["result"]
    result = events[-1][1]
    assert result["id"] == qid and result["status"] == "answered"
    for (_, stage), trace in zip(events[:-1], result["trace"], strict=True):
        assert stage["stage"] == trace["stage"] and stage["ms"] == pytest.approx(trace["ms"], abs=0.01)
        assert stage["candidates"] == len(trace["candidate_ids"])
    assert sse(client, qid) == events  # a late reader replays the same stream


def test_events_of_a_scope_refusal_are_just_the_result(client):
    qid = ask(client, REFUSALS["out_of_scope"])["id"]
    events = sse(client, qid)
    assert [kind for kind, _ in events] == ["result"] and events[0][1]["refusal"]["category"] == "out_of_scope"


def test_page_route_serves_the_cited_paragraphs(client):
    body = ask(client, MILEAGE)
    citation = body["citations"][0]
    page = client.get(f"/v1/pages/{citation['section_id']}").json()
    assert page["section_id"] == citation["section_id"] and page["url"] == citation["url"]
    paragraphs = {p["id"]: p["text"] for chunk in page["chunks"] for p in chunk["paragraphs"]}
    assert paragraphs[citation["paragraph_id"]] == citation["text"]
    assert [c["position"] for c in page["chunks"]] == sorted(c["position"] for c in page["chunks"])


def test_unknown_page_is_a_typed_404(client):
    response = client.get("/v1/pages/EIM99999")
    assert response.status_code == 404 and response.json()["error"]["type"] == "not_found"


def test_ready_with_an_index_and_metrics_count_what_happened(client):
    ready = wait_ready(client)
    assert ready.status_code == 200 and ready.json()["checks"]["index"].startswith("ok")
    assert ready.json()["checks"]["warm_up"] == "ok"
    ask(client, REFUSALS["out_of_scope"])
    ask(client, MILEAGE)
    client.get("/v1/pages/EIM99999")
    text = client.get("/metrics").text
    assert 'taxnav_refusals_total{category="out_of_scope"}' in text
    assert 'taxnav_questions_total{outcome="answered"}' in text
    for stage in STAGES:
        assert f'taxnav_stage_seconds_count{{stage="{stage}"}}' in text
    assert 'taxnav_http_requests_total{method="GET",route="/v1/pages/{section_id}",status="404"}' in text
    assert 'taxnav_http_requests_total{method="POST",route="/v1/questions",status="200"}' in text


def test_web_page_and_its_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert client.get("/static/app.js").status_code == 200


def test_pages_of_another_manual_need_its_index(client):
    assert client.get("/v1/pages/EIM31240", params={"manual": "employment-income-manual"}).status_code == 200
    response = client.get("/v1/pages/BIM00500", params={"manual": "business-income-manual"})  # not ingested here
    error = response.json()["error"]
    assert response.status_code == 404 and error["type"] == "unknown_manual"
    assert error["detail"]["manuals"] == ["employment-income-manual"]


def test_concurrent_questions_all_get_their_own_answer(client):
    questions = [MILEAGE, REFUSALS["stale"], REFUSALS["low_coverage"], MILEAGE] * 3
    with ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(lambda q: ask(client, q), questions))
    assert [b["question"] for b in bodies] == [q.strip() for q in questions]
    assert len({b["id"] for b in bodies}) == len(questions)
    mileage = [b["answer"] for b, q in zip(bodies, questions, strict=True) if q == MILEAGE]
    assert all(answer == mileage[0] for answer in mileage) and mileage[0] is not None


class DroppingMemoryStore(MemoryStore):
    """Reads raise as a lost Redis connection does, after the first."""

    reads = 0

    def read(self, qid, cursor, block_s):  # noqa: ANN001, ANN201
        self.reads += 1
        if self.reads > 1:
            raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return super().read(qid, cursor, block_s)


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.distributed)])
def dropping_store(request, monkeypatch):
    if request.param == "memory":
        yield DroppingMemoryStore(), "pipeline_failed"
        return
    settings = Settings(mode="distributed")
    settings.celery.key_prefix = f"test-drop-{uuid.uuid4().hex[:8]}:"
    store = RedisStore(settings)
    real, reads = store._redis.xread, []

    def xread(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        reads.append(1)
        if len(reads) > 1:
            raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        return real(*args, **kwargs)

    monkeypatch.setattr(store._redis, "xread", xread)
    yield store, "unavailable"
    purge(settings)


def test_an_event_stream_whose_store_drops_ends_with_a_typed_error_event(dropping_store, tmp_path):
    store, kind = dropping_store
    app = create_app(Settings(data_dir=tmp_path))
    app.state.store = store
    qid = uuid.uuid4().hex
    store.start(qid, time.time() + 30)
    store.add(qid, stage_event(StageTrace(stage="retrieval", ms=1.0)))
    started = time.perf_counter()
    events = sse(TestClient(app), qid)  # was the stage, then a bare end of stream
    assert [k for k, _ in events] == ["stage", "error"]
    assert events[-1][1]["type"] == kind and "6379" not in events[-1][1]["message"]
    assert time.perf_counter() - started < 10  # ended at the failure, not at the deadline
