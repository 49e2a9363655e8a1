"""Conversations through the API in embedded mode on the real ingested slice: turns read with
the turns before them, the thread stored in the data directory, and every failure typed."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings
from tests.support.gateway import wait_ready

MILEAGE = "How much can my employer pay me per mile, tax free, when I drive my own car on business trips?"
MOTORCYCLE = "What about for a motorcycle instead?"
PARTY = "Our staff Christmas party costs £100 a head. Is it a taxable benefit for the employees who attend?"
VAN = "I can use my company van privately. What's the taxable benefit for 2014-15?"


@pytest.fixture(scope="module")
def settings(slice_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # Conversations are written under the data dir: a copy of the settings whose data dir holds
    # a link to the slice's collections, so the shared slice is only read.
    data_dir = tmp_path_factory.mktemp("conversation-data")
    (data_dir / "collections").symlink_to(Path(slice_settings.data_dir) / "collections")
    return slice_settings.model_copy(update={"data_dir": data_dir})


@pytest.fixture(scope="module")
def client(settings: Settings) -> TestClient:
    with TestClient(create_app(settings)) as test_client:
        wait_ready(test_client)
        yield test_client


def start(client: TestClient) -> str:
    response = client.post("/v1/conversations")
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["url"] == f"/v1/conversations/{body['id']}" and body["page_url"] == f"/?c={body['id']}"
    return body["id"]


def turn(client: TestClient, cid: str, question: str, **extra: object) -> dict:
    response = client.post(f"/v1/conversations/{cid}/questions", json={"question": question, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def sections(result: dict, stage: str) -> set[str]:
    ids = next(t["candidate_ids"] for t in result["trace"] if t["stage"] == stage)
    return {i.split("#")[0] for i in ids}


def answer_sections(result: dict) -> set[str]:
    return {c.split("#")[0] for s in result["answer"]["sentences"] if s["role"] == "answer" for c in s["citations"]}


def test_a_follow_up_searches_the_pages_the_first_turn_found(client):
    cid = start(client)
    first = turn(client, cid, MILEAGE)
    assert first["turn"] == 1 and first["follow_up"]["kind"] == "first" and first["status"] == "answered"
    assert "EIM31240" in answer_sections(first)

    follow = turn(client, cid, MOTORCYCLE)
    assert follow["turn"] == 2 and follow["conversation_id"] == cid
    assert follow["question"] == MOTORCYCLE  # the person's words; the searched question is shown apart
    assert follow["follow_up"]["kind"] == "follow_up" and follow["follow_up"]["reasons"]
    assert follow["follow_up"]["searched"].startswith(MOTORCYCLE) and MILEAGE in follow["follow_up"]["searched"]
    assert "EIM31240" in follow["follow_up"]["carried_sections"]
    assert follow["status"] == "answered" and "EIM31240" in sections(follow, "retrieval")
    # The same words asked alone search elsewhere: the conversation is what brings the rate page.
    alone = client.post("/v1/questions", json={"question": MOTORCYCLE}).json()
    assert "EIM31240" not in sections(alone, "retrieval")

    thread = client.get(f"/v1/conversations/{cid}").json()
    assert [t["turn"] for t in thread["turns"]] == [1, 2]
    assert [t["question"] for t in thread["turns"]] == [MILEAGE, MOTORCYCLE]
    assert thread["turns"][1]["answer"] == follow["answer"]


def test_a_question_on_another_subject_is_answered_on_its_own(client):
    cid = start(client)
    turn(client, cid, MILEAGE)
    party = turn(client, cid, PARTY)
    assert party["follow_up"]["kind"] == "new_subject" and party["follow_up"]["searched"] == PARTY
    assert party["status"] == "answered" and "EIM21690" in answer_sections(party)


def test_follow_ups_that_drift_get_their_own_typed_refusals(client):
    cid = start(client)
    assert turn(client, cid, VAN)["status"] == "answered"
    later = turn(client, cid, "And for the 2027-28 tax year?")
    assert later["follow_up"]["kind"] == "follow_up"
    assert later["status"] == "refused" and later["refusal"]["category"] == "stale"
    vat = turn(client, cid, "And can the company reclaim the VAT it paid on the van?")
    assert vat["status"] == "refused" and vat["refusal"]["category"] == "out_of_scope"


def test_unknown_conversation_is_a_typed_404(client):
    for response in (
        client.get("/v1/conversations/doesnotexist"),
        client.post("/v1/conversations/doesnotexist/questions", json={"question": MILEAGE}),
    ):
        assert response.status_code == 404
        error = response.json()["error"]
        assert error["type"] == "not_found" and "doesnotexist" in error["message"]


def test_bad_bodies_and_ids_are_typed_4xx(client):
    cid = start(client)
    bad_json = client.post(f"/v1/conversations/{cid}/questions", content=b"{nope", headers={"content-type": "application/json"})
    assert bad_json.status_code == 400 and bad_json.json()["error"]["type"]
    wrong_type = client.post(f"/v1/conversations/{cid}/questions", json={"question": 12})
    assert wrong_type.status_code == 422 and wrong_type.json()["error"]["type"]
    long_condition = client.post(f"/v1/conversations/{cid}/questions", json={"question": "x", "condition": "y" * 501})
    assert long_condition.status_code == 422
    assert client.get("/v1/conversations/bad id!").status_code in (404, 422)
    assert client.get(f"/v1/conversations/{cid}").json()["turns"] == []  # nothing was stored


@pytest.mark.parametrize("wait", [True, False])
@pytest.mark.parametrize(
    "manual, status, kind",
    [("../../evil", 422, "invalid_manual"), ("a b", 422, "invalid_manual"), ("business-income-manual", 404, "unknown_manual")],
)
def test_a_turns_manual_is_checked_at_the_edge_as_a_questions_is(client, wait, manual, status, kind):
    # was a 502 pipeline_failed or 503 index_unavailable (wait), a turn started only to fail (no wait)
    cid = start(client)
    for path in (f"/v1/conversations/{cid}/questions", "/v1/questions"):
        response = client.post(path, json={"question": MILEAGE, "manual": manual, "wait": wait})
        error = response.json()["error"]
        assert response.status_code == status and error["type"] == kind, response.text
        assert error["detail"]["manuals"] == ["employment-income-manual"]
    assert client.get(f"/v1/conversations/{cid}").json()["turns"] == []  # no turn was started


def test_a_condition_that_is_no_option_of_the_previous_turn_is_a_typed_422(client):
    cid = start(client)
    response = client.post(f"/v1/conversations/{cid}/questions", json={"question": "that one", "condition": "for 2014-15"})
    assert response.status_code == 422 and response.json()["error"]["type"] == "unknown_condition"
    turn(client, cid, MILEAGE)  # answered, not a conflict: still no options to choose from
    response = client.post(f"/v1/conversations/{cid}/questions", json={"question": "that one", "condition": "for 2014-15"})
    assert response.status_code == 422 and "not a conflict" in response.json()["error"]["message"]


def test_turns_posted_at_once_get_distinct_numbers_and_none_is_lost(client):
    cid = start(client)
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda q: turn(client, cid, q), [MILEAGE, PARTY, VAN]))
    assert sorted(r["turn"] for r in results) == [1, 2, 3]
    stored = client.get(f"/v1/conversations/{cid}").json()["turns"]
    assert sorted(t["question"] for t in stored) == sorted([MILEAGE, PARTY, VAN])


def test_turn_limit_and_expiry(settings: Settings):
    limited = settings.model_copy(deep=True)
    limited.conversations.max_turns = 1
    limited.conversations.ttl_s = 60
    with TestClient(create_app(limited)) as client:
        wait_ready(client)
        cid = start(client)
        turn(client, cid, MILEAGE)
        over = client.post(f"/v1/conversations/{cid}/questions", json={"question": MOTORCYCLE})
        assert over.status_code == 409 and over.json()["error"]["type"] == "turn_limit"
        assert len(client.get(f"/v1/conversations/{cid}").json()["turns"]) == 1
        # Expiry: a conversation untouched for longer than its TTL is gone (its file is backdated).
        path = Path(limited.data_dir) / "conversations" / f"{cid}.json"
        data = json.loads(path.read_text())
        data["updated_at"] = "2000-01-01T00:00:00Z"
        path.write_text(json.dumps(data))
        expired = client.get(f"/v1/conversations/{cid}")
        assert expired.status_code == 404 and expired.json()["error"]["type"] == "not_found"
        assert not path.exists()


def test_a_turn_not_waited_for_is_followed_like_a_question_and_still_read_by_the_next(client):
    cid = start(client)
    response = client.post(f"/v1/conversations/{cid}/questions", json={"question": MILEAGE, "wait": False})
    assert response.status_code == 202, response.text
    started = response.json()
    assert started["turn"] == 1 and started["events_url"] == f"/v1/questions/{started['id']}/events"
    # Posted at once, before anyone followed the first: the follow-up still reads it.
    follow = turn(client, cid, MOTORCYCLE)
    assert follow["turn"] == 2 and follow["follow_up"]["kind"] == "follow_up"
    assert MILEAGE in follow["follow_up"]["searched"]
    result = client.get(started["result_url"]).json()
    assert result["status"] == "answered" and result["question"] == MILEAGE
    thread = client.get(f"/v1/conversations/{cid}").json()
    assert [t["turn"] for t in thread["turns"]] == [1, 2] and thread["pending"] == []
    assert thread["turns"][0]["answer"] == result["answer"]


def test_an_unreadable_conversation_file_is_a_typed_404_not_a_500(client, settings):
    cid = start(client)
    (Path(settings.data_dir) / "conversations" / f"{cid}.json").write_text("{half a conversa")
    response = client.get(f"/v1/conversations/{cid}")
    assert response.status_code == 404 and response.json()["error"]["type"] == "not_found"
