"""Bad requests get a 4xx in the one error shape with a message, never a 500 or a hang.
None of these reach the pipeline, so no index is needed."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings
from shared.contracts.api import MAX_QUESTION_CHARS


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> TestClient:
    settings = Settings(data_dir=tmp_path_factory.mktemp("empty-data"))
    settings.gateway.max_body_bytes = 4096
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


JSON = {"content-type": "application/json"}


def chunked(total: int):
    for _ in range(total // 1000):
        yield b" " * 1000


@pytest.mark.parametrize(
    ("request_kwargs", "status", "error_type"),
    [
        ({"content": b'{"question": "how', "headers": JSON}, 400, "invalid_json"),
        ({"content": b"\xff\xfe\x00", "headers": JSON}, 400, "invalid_request"),
        ({"content": b"[1, 2]", "headers": JSON}, 422, "invalid_request"),
        ({"json": {"question": 42}}, 422, "invalid_request"),
        ({"json": {"question": None}}, 422, "invalid_request"),
        ({"json": {"text": "how is my car taxed?"}}, 422, "invalid_request"),
        ({"json": {"question": "how is my car taxed?", "wait": "maybe"}}, 422, "invalid_request"),
        ({"json": {"question": "x" * 5000}}, 413, "body_too_large"),
        ({"content": chunked(10_000), "headers": JSON}, 413, "body_too_large"),
        ({"content": b"{}", "headers": {**JSON, "content-length": "lots"}}, 400, "invalid_request"),
    ],
    ids=["truncated-json", "not-utf8", "array", "int-question", "null-question", "no-question", "bad-wait", "huge", "huge-chunked", "bad-length"],
)
def test_bad_question_requests_get_typed_4xx(client, request_kwargs, status, error_type):
    response = client.post("/v1/questions", **request_kwargs)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == error_type and error["message"]


@pytest.mark.parametrize(
    ("method", "path", "status", "error_type"),
    [
        ("GET", "/v1/questions/does-not-exist", 404, "not_found"),
        ("GET", "/v1/questions/does-not-exist/events", 404, "not_found"),
        ("GET", "/v1/questions/bad%20id!", 422, "invalid_request"),
        ("GET", "/v1/questions?wait=perhaps", 405, "method_not_allowed"),
        ("DELETE", "/v1/questions", 405, "method_not_allowed"),
        ("GET", "/v1/nothing-here", 404, "not_found"),
        ("GET", "/static/../../pyproject.toml", 404, "not_found"),
    ],
)
def test_bad_paths_and_methods_get_typed_4xx(client, method, path, status, error_type):
    response = client.request(method, path)
    assert response.status_code == status, response.text
    assert response.json()["error"]["type"] == error_type


def test_bad_query_parameter_is_422(client):
    response = client.post("/v1/questions?wait=perhaps", json={"question": "how is my car taxed?"})
    assert response.status_code == 422 and "wait" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("question", "why"),
    [("", "empty"), ("   \n ", "blank"), ("a" * (MAX_QUESTION_CHARS + 1), "too long"), ("how\x00 is my car taxed?", "control"), ("?? 123 !!", "no letters")],
)
def test_malformed_questions_are_refusals_not_errors(client, question, why):
    response = client.post("/v1/questions", json={"question": question})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "refused" and body["refusal"]["category"] == "malformed", why
    assert body["answer"] is None and body["trace"] == []  # no retrieval cost


def test_without_an_index_pages_and_readiness_say_so(client):
    response = client.get("/v1/pages/EIM31240")
    assert response.status_code == 503 and response.json()["error"]["type"] == "index_unavailable"
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["ready"] is False
    assert client.get("/healthz").json() == {"status": "ok"}


def test_openapi_documents_every_route(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/v1/questions", "/v1/questions/{qid}", "/v1/questions/{qid}/events", "/v1/pages/{section_id}", "/healthz", "/readyz", "/metrics"):
        assert path in paths
    assert "202" in paths["/v1/questions"]["post"]["responses"] and "413" in paths["/v1/questions"]["post"]["responses"]
