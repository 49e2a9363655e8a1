"""Admission control in embedded mode on the real slice index: past the limit of questions in
flight a fast typed 503 with Retry-After; scope-guard refusals answered at once while the
gateway is full; a slot is given back when its question ends."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings
from tests.support.gateway import wait_ready

QUESTIONS = [
    "how much can my employer pay me per mile for using my own car?",
    "is a staff christmas party a taxable benefit?",
    "can I claim for heating when I work from home?",
    "how is a company van taxed?",
]
REFUSAL = "What's the VAT registration threshold for my small business?"


@pytest.fixture(scope="module")
def client(slice_settings: Settings) -> TestClient:
    settings = slice_settings.model_copy(deep=True)
    settings.gateway.max_in_flight = 2
    settings.gateway.embedded_threads = 1
    settings.gateway.retry_after_s = 3
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        wait_ready(test_client)
        yield test_client


def wait_done(client: TestClient, qid: str) -> dict:
    for _ in range(300):
        response = client.get(f"/v1/questions/{qid}")
        if response.status_code != 202:
            return response.json()
        time.sleep(0.05)
    raise AssertionError(f"{qid} never ended")


def test_a_burst_past_the_limit_is_shed_with_typed_503s_and_the_rest_answered(client):
    with ThreadPoolExecutor(12) as pool:
        responses = list(pool.map(lambda q: client.post("/v1/questions", json={"question": q, "wait": False}), QUESTIONS * 3))
    admitted = [r for r in responses if r.status_code == 202]
    shed = [r for r in responses if r.status_code != 202]
    assert admitted and shed, [r.status_code for r in responses]
    for response in shed:
        assert response.status_code == 503 and response.json()["error"]["type"] == "overloaded"
        assert response.headers["retry-after"] == "3"
    for response in admitted:
        assert wait_done(client, response.json()["id"])["status"] in ("answered", "refused")


def test_while_full_refusals_answer_at_once_and_a_freed_slot_admits_again(client):
    assert client.post("/v1/questions", json={"question": QUESTIONS[0]}).status_code == 200
    admission = client.app.state.admission
    deadline = time.monotonic() + 10
    while admission.in_flight and time.monotonic() < deadline:  # earlier questions' followers finish
        time.sleep(0.05)
    held = [admission.enter() for _ in range(admission.limit)]  # two questions in flight, held open
    assert all(held)
    try:
        blocked = client.post("/v1/questions", json={"question": QUESTIONS[1]})
        assert blocked.status_code == 503 and blocked.json()["error"]["type"] == "overloaded"
        started = time.perf_counter()
        refused = client.post("/v1/questions", json={"question": REFUSAL})
        elapsed = time.perf_counter() - started
        assert refused.status_code == 200 and refused.json()["refusal"]["category"] == "out_of_scope"
        assert elapsed < 0.1, elapsed
    finally:
        admission.leave()
    again = client.post("/v1/questions", json={"question": QUESTIONS[1]})
    assert again.status_code == 200 and again.json()["status"] == "answered"
    admission.leave()
    assert admission.in_flight == 0


def test_the_overloaded_error_is_documented(client):
    responses = client.get("/openapi.json").json()["paths"]["/v1/questions"]["post"]["responses"]
    assert {"503", "404", "429"} <= set(responses)
