"""provider=mistral end to end through the gateway: an index embedded by, and questions
answered by, the local STAND-IN for Mistral's API (tests/support/mistral_standin.py). A model
that fails or replies without citations ends in a typed error, never in an uncited answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from ingest_worker.ingest import run_ingest
from tests.support.gateway import wait_ready
from shared.config import Settings
from tests.support.mistral_standin import MistralStandin, Reply, grounded_chat

EIM = "employment-income-manual"
SECTIONS = {"EIM31200", "EIM31230", "EIM31240", "EIM31355"}
QUESTION = "how much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?"


@pytest.fixture(scope="module")
def standin():
    with MistralStandin() as server:
        yield server


@pytest.fixture(scope="module")
def client(standin, corpus_dir: Path, settings_for: Callable[..., Settings], tmp_path_factory: pytest.TempPathFactory):
    settings = settings_for(tmp_path_factory.mktemp("mistral-data"))
    settings.models.provider = "mistral"
    settings.models.mistral_server_url = standin.base_url
    settings.models.mistral_api_key = standin.api_key
    settings.models.max_retries = 1
    run_ingest(settings, str(corpus_dir), EIM, sections=SECTIONS)  # embedded by the stand-in
    with TestClient(create_app(settings)) as test_client:
        wait_ready(test_client)
        yield test_client


def test_answer_from_the_model_is_cited_and_verified(client, standin):
    standin.chat_handler = grounded_chat
    before = len(standin.chat_requests())
    response = client.post("/v1/questions", json={"question": QUESTION})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "answered"
    cited = {c["paragraph_id"] for c in body["citations"]}
    for sentence in body["answer"]["sentences"]:
        assert sentence["citations"] and set(sentence["citations"]) <= cited and sentence["verdict"]
    calls = standin.chat_requests()[before:]
    assert len(calls) == 3 and all(QUESTION in m["messages"][1]["content"] for m in calls)  # select, stitch, verify


def test_a_failing_model_is_a_typed_502(client, standin):
    standin.chat_handler = lambda body: Reply(status=503, raw='{"message": "stand-in: unavailable"}')
    response = client.post("/v1/questions", json={"question": QUESTION})
    assert response.status_code == 502
    assert response.json()["error"]["type"] == "provider_error"


def test_an_uncited_draft_never_reaches_the_client(client, standin):
    def uncited_stitch(body: dict) -> str:
        reply = json.loads(grounded_chat(body))
        for sentence in reply.get("sentences", []):
            sentence["citations"] = []
        return json.dumps(reply)

    standin.chat_handler = uncited_stitch
    response = client.post("/v1/questions", json={"question": QUESTION})
    assert response.status_code == 502 and "stitching" in response.json()["error"]["message"]
