"""Hostile input at the edge, embedded mode on the real slice index: text no encoder can
carry, manual names that try to leave the data directory or load a second copy of an index,
and the policy headers every response carries. None of it may reach a 500."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings
from shared.index import CorpusIndex
from tests.support.gateway import wait_ready

EIM = "employment-income-manual"
MILEAGE = "how much can my employer pay me per mile for using my own car?"
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def client(slice_settings: Settings) -> TestClient:
    with TestClient(create_app(slice_settings), raise_server_exceptions=False) as test_client:
        wait_ready(test_client)
        yield test_client


@pytest.mark.parametrize("wait", ["true", "false"])
def test_a_lone_surrogate_is_replaced_and_later_reads_of_the_id_work(client, wait):
    raw = b'{"question": "how much per mile \\ud800 for my own car?"}'  # valid JSON, not encodable as UTF-8
    response = client.post("/v1/questions", content=raw, headers=JSON, params={"wait": wait})
    assert response.status_code in (200, 202), response.text
    qid = response.json()["id"]
    for _ in range(100):
        again = client.get(f"/v1/questions/{qid}")
        if again.status_code != 202:
            break
    assert again.status_code == 200, again.text
    assert again.json()["question"] == "how much per mile \ufffd for my own car?"
    events = client.get(f"/v1/questions/{qid}/events")
    assert events.status_code == 200 and "event: result" in events.text


def test_a_question_is_nfc_normalised(client):
    body = client.post("/v1/questions", json={"question": "What is the cafe\u0301 allowance?"}).json()
    assert body["question"] == "What is the caf\u00e9 allowance?"


@pytest.mark.parametrize(
    "raw",
    [
        b'{"question": 5, "wait": "\\udfff"}',  # the validation error quotes the bad input
        b'{"question": "\\ud800", "manual": "\\ud800"}',
        b'{"question": "\\udc00\\ud800"}',
    ],
)
def test_surrogates_anywhere_get_a_typed_answer_not_a_500(client, raw):
    response = client.post("/v1/questions", content=raw, headers=JSON)
    assert response.status_code < 500, response.text
    response.json()  # well-formed UTF-8 JSON


def test_one_long_word_is_a_typed_refusal_not_a_500(client):
    started = time.perf_counter()
    response = client.post("/v1/questions", json={"question": "a" * 1200})  # was RecursionError: 500
    assert response.status_code == 200, response.text
    assert response.json()["refusal"]["category"] == "malformed"
    assert time.perf_counter() - started < 5


def test_a_surrogate_in_a_page_path_is_a_404(client):
    response = client.get("/v1/pages/%ED%A0%80")
    assert response.status_code == 404 and response.json()["error"]["type"] == "not_found"


@pytest.mark.parametrize("manual", ["../../evil", "./employment-income-manual", "employment-income-manual/", ".../.", "a b", "/etc", "x" * 101])
def test_a_manual_that_is_not_a_name_is_a_typed_422_listing_the_manuals(client, manual):
    for response in (
        client.post("/v1/questions", json={"question": MILEAGE, "manual": manual}),
        client.get("/v1/pages/EIM31240", params={"manual": manual}),
    ):
        error = response.json()["error"]
        assert response.status_code == 422 and error["type"] in ("invalid_manual", "invalid_request"), response.text
        if error["type"] == "invalid_manual":
            assert error["detail"]["manuals"] == [EIM]


def test_a_manual_not_ingested_is_a_404_listing_the_ingested_ones(client):
    response = client.post("/v1/questions", json={"question": MILEAGE, "manual": "business-income-manual"})
    error = response.json()["error"]
    assert response.status_code == 404 and error["type"] == "unknown_manual" and error["detail"]["manuals"] == [EIM]


def test_every_spelling_of_a_manual_shares_one_index(client):
    assert client.post("/v1/questions", json={"question": MILEAGE}).status_code == 200
    loaded = dict(CorpusIndex._cache)
    for spelling in (EIM, "Employment-Income-Manual", f"  {EIM} ", EIM.upper()):
        response = client.post("/v1/questions", json={"question": MILEAGE, "manual": spelling})
        assert response.status_code == 200 and response.json()["status"] == "answered", response.text
        assert client.get("/v1/pages/EIM31240", params={"manual": spelling}).status_code == 200
    assert CorpusIndex._cache.keys() == loaded.keys()
    assert all(CorpusIndex._cache[k] is loaded[k] for k in loaded)  # not one more copy loaded


@pytest.mark.parametrize("path", ["/healthz", "/v1/pages/EIM31240", "/v1/nothing", "/"])
def test_every_response_carries_the_security_headers(client, path):
    response = client.get(path)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def test_a_wrong_method_is_405_with_allow(client):
    response = client.delete("/v1/questions")
    assert response.status_code == 405 and response.json()["error"]["type"] == "method_not_allowed"
    assert response.headers["allow"] == "POST"


def test_a_misconfigured_manual_is_a_typed_503_not_a_500(tmp_path):
    settings = Settings(data_dir=tmp_path, manual="../elsewhere")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        for response in (client.get("/v1/pages/EIM31240"), client.post("/v1/questions", json={"question": MILEAGE})):
            assert response.status_code == 503 and response.json()["error"]["type"] == "index_unavailable"
