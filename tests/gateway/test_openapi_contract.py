"""The OpenAPI description says what the gateway enforces, no more and no less: the manual's
pattern, a strict boolean `wait`, a non-empty `condition`, a numeric Last-Event-ID with no
null, the event stream's errors as JSON. (The schemathesis run, tests/gateway/test_openapi_fuzz.py,
checks the same over generated data.)"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, settings_for: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(tmp_path_factory.mktemp("contract-data")))) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def spec(client: TestClient) -> dict:
    return client.get("/openapi.json").json()


def parameter(spec: dict, path: str, name: str) -> dict:
    return next(p for p in spec["paths"][path][next(iter(spec["paths"][path]))]["parameters"] if p["name"] == name)


def test_the_manual_is_documented_with_the_pattern_the_gateway_checks(client, spec):
    manual = spec["components"]["schemas"]["QuestionRequest"]["properties"]["manual"]
    pattern = manual["pattern"]  # beside anyOf [string, null]: it applies to the string
    assert parameter(spec, "/v1/pages/{section_id}", "manual")["schema"]["pattern"] == pattern
    for name in ("employment-income-manual", " Employment-Income-Manual\n"):
        assert re.search(pattern, name)
    for name in ("\u212a", "employment/income", "a\u00e9", "x--y"):  # the Kelvin sign lower-cases to "k"
        assert not re.search(pattern, name)
        response = client.post("/v1/questions", json={"question": "how much per mile?", "manual": name})
        assert response.status_code == 422 and response.json()["error"]["type"] == "invalid_manual", (name, response.text)


@pytest.mark.parametrize("wait", [0, 1, "yes", "true", None])
def test_wait_in_the_body_is_a_strict_boolean(client, spec, wait):
    assert spec["components"]["schemas"]["QuestionRequest"]["properties"]["wait"]["type"] == "boolean"
    response = client.post("/v1/questions", json={"question": "how much per mile?", "wait": wait})
    assert response.status_code == 422 and response.json()["error"]["type"] == "invalid_request", response.text


def test_query_overrides_and_last_event_id_have_no_null_in_their_schema(spec):
    for path in ("/v1/questions", "/v1/conversations/{cid}/questions"):
        assert parameter(spec, path, "wait")["schema"]["type"] == "boolean"
    assert parameter(spec, "/v1/questions/{qid}/events", "last-event-id")["schema"] | {"description": "", "title": ""} == {
        "type": "integer", "minimum": 0, "maximum": 1_000_000, "description": "", "title": "",
    }  # fmt: skip


def test_an_empty_condition_is_refused_as_the_schema_says(client, spec):
    condition = spec["components"]["schemas"]["ConversationQuestion"]["properties"]["condition"]["anyOf"][0]
    assert condition["minLength"] == 1
    cid = client.post("/v1/conversations").json()["id"]
    response = client.post(f"/v1/conversations/{cid}/questions", json={"question": "how much per mile?", "condition": ""})
    assert response.status_code == 422 and response.json()["error"]["type"] == "invalid_request", response.text


def test_the_event_streams_errors_are_documented_and_sent_as_json(client, spec):
    assert list(spec["paths"]["/v1/questions/{qid}/events"]["get"]["responses"]["404"]["content"]) == ["application/json"]
    response = client.get("/v1/questions/unknown/events", headers={"Last-Event-ID": "3"})
    assert response.status_code == 404 and response.headers["content-type"] == "application/json"
