"""How sure an answer is, through the API on a real slice: each answer claim marked as
answering or as background by the page ranker, the alternatives offered beside the answer,
and asking again scoped to one of them (``focus``)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from services.ranking.rankers import page_ranker
from shared.config import Settings
from shared.contracts.corpus import section_of
from tests.gateway.api.routes.test_questions import client  # noqa: F401  (the gateway on the slice, warmed once)

PARTY = "Is our work Christmas party taxable?"


def _answer(client: TestClient, body: dict) -> dict:
    response = client.post("/v1/questions", json=body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["status"] == "answered", result.get("refusal")
    return result["answer"]


def test_every_answer_claim_says_whether_its_page_answers_and_the_detail_says_nothing(client: TestClient, slice_settings: Settings) -> None:
    threshold = page_ranker(slice_settings).answering_threshold
    answer = _answer(client, {"question": PARTY})
    claims = [s for s in answer["sentences"] if s["role"] == "answer"]
    assert claims
    for claim in claims:
        assert 0.0 < claim["confidence"] < 1.0
        assert claim["relevance"] == ("answering" if claim["confidence"] >= threshold else "background")
    assert all(s["relevance"] is None and s["confidence"] is None for s in answer["sentences"] if s["role"] == "detail")


def test_asking_again_about_a_page_answers_from_that_page_alone(client: TestClient) -> None:
    first = _answer(client, {"question": PARTY})
    for alternative in first["alternatives"]:  # (none on this slice may be close enough: their shape when there are)
        assert alternative["title"] and alternative["url"].startswith("https://www.gov.uk/") and 0 < alternative["confidence"] < 1
    again = _answer(client, {"question": PARTY, "focus": "EIM21691"})
    assert {section_of(c) for s in again["sentences"] for c in s["citations"]} == {"EIM21691"}
    assert again["alternatives"] == []  # the person chose: nothing more to offer
    assert all(s["relevance"] == "answering" for s in again["sentences"] if s["role"] == "answer")


@pytest.mark.parametrize(("focus", "status", "kind"), [("EIM99999", 404, "unknown_page"), ("not a page", 422, "invalid_request"), ("eim21690", 422, "invalid_request")])
def test_a_focus_that_is_no_page_of_the_manual_is_a_typed_error(client: TestClient, focus: str, status: int, kind: str) -> None:
    response = client.post("/v1/questions", json={"question": PARTY, "focus": focus})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == kind and error["message"]


def test_a_conversation_turn_can_ask_again_about_an_alternative(client: TestClient) -> None:
    cid = client.post("/v1/conversations").json()["id"]
    assert client.post(f"/v1/conversations/{cid}/questions", json={"question": PARTY}).status_code == 200
    turn = client.post(f"/v1/conversations/{cid}/questions", json={"question": PARTY, "focus": "EIM21691"})
    assert turn.status_code == 200, turn.text
    assert {section_of(c) for s in turn.json()["answer"]["sentences"] for c in s["citations"]} == {"EIM21691"}
    bad = client.post(f"/v1/conversations/{cid}/questions", json={"question": PARTY, "focus": "EIM99999"})
    assert bad.status_code == 404 and bad.json()["error"]["type"] == "unknown_page"
