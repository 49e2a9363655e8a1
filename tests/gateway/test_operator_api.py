"""What an operator and an API client see around the questions: a typed 503 before the first
ingest, `Location` on every 202, numbered server-sent events that resume from
`Last-Event-ID`, and /metrics labelling files and /docs by route."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings
from tests.conftest import make_settings
from tests.support.gateway import wait_ready

MILEAGE = "how much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?"


@pytest.fixture(scope="module")
def client(slice_settings: Settings) -> TestClient:
    with TestClient(create_app(slice_settings)) as test_client:
        wait_ready(test_client)
        yield test_client


@pytest.fixture
def empty_client(tmp_path: Path) -> TestClient:
    return TestClient(create_app(make_settings(tmp_path / "never-ingested")))


def events(client: TestClient, qid: str, headers: dict[str, str] | None = None) -> list[dict[str, str]]:
    with client.stream("GET", f"/v1/questions/{qid}/events", headers=headers or {}) as response:
        assert response.status_code == 200, response.read()
        text = response.read().decode()
    return [dict(line.split(": ", 1) for line in block.splitlines() if ": " in line) for block in text.strip().split("\n\n")]


def test_a_question_before_any_ingest_is_a_typed_503(empty_client: TestClient, tmp_path: Path) -> None:
    response = empty_client.post("/v1/questions", json={"question": MILEAGE})
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["type"] == "index_unavailable" and "taxnav ingest" in error["message"]
    assert "CollectionNotFound" not in response.text and str(tmp_path) not in response.text  # no class names, no paths


def test_a_question_id_before_any_ingest_ends_in_the_same_typed_error(empty_client: TestClient) -> None:
    started = empty_client.post("/v1/questions?wait=false", json={"question": MILEAGE})
    assert started.status_code == 202
    stream = events(empty_client, started.json()["id"])
    assert [e["event"] for e in stream] == ["error"]
    assert json.loads(stream[0]["data"])["type"] == "index_unavailable"
    result = empty_client.get(started.headers["Location"])
    assert result.status_code == 503 and result.json()["error"]["type"] == "index_unavailable"


def test_every_202_carries_location(client: TestClient) -> None:
    started = client.post("/v1/questions?wait=false", json={"question": MILEAGE})
    assert started.status_code == 202
    qid = started.json()["id"]
    assert started.headers["Location"] == f"/v1/questions/{qid}" == started.json()["result_url"]
    polled = client.get(started.headers["Location"])
    while polled.status_code == 202:  # still running: the poll's 202 points at itself too
        assert polled.headers["Location"] == f"/v1/questions/{qid}"
        polled = client.get(started.headers["Location"])
    assert polled.status_code == 200 and polled.json()["status"] == "answered"


def test_events_are_numbered_and_last_event_id_resumes(client: TestClient) -> None:
    qid = client.post("/v1/questions?wait=false", json={"question": MILEAGE}).json()["id"]
    full = events(client, qid)
    assert [e["id"] for e in full] == [str(n) for n in range(1, len(full) + 1)]
    assert full[-1]["event"] == "result" and len(full) > 3
    resumed = events(client, qid, {"Last-Event-ID": "3"})
    assert resumed == full[3:]
    assert events(client, qid, {"Last-Event-ID": str(len(full) - 1)}) == full[-1:]


def test_a_bad_last_event_id_is_a_typed_422(client: TestClient) -> None:
    qid = client.post("/v1/questions?wait=false", json={"question": MILEAGE}).json()["id"]
    for bad in ("abc", "-1"):
        response = client.get(f"/v1/questions/{qid}/events", headers={"Last-Event-ID": bad})
        assert response.status_code == 422, bad
        assert response.json()["error"]["type"] == "invalid_request"


def test_metrics_label_files_and_docs_by_route(empty_client: TestClient) -> None:
    for path in ("/docs", "/docs/init.js", "/docs/assets/swagger-ui.css", "/static/app.js", "/openapi.json", "/no-such-page"):
        empty_client.get(path)
    text = empty_client.get("/metrics").text
    for route in ("/docs", "/docs/init.js", "/docs/assets/{path}", "/static/{path}", "/openapi.json"):
        assert f'route="{route}",status="200"' in text, route
    assert 'route="unmatched",status="404"' in text  # only what matches nothing
    unmatched = [line for line in text.splitlines() if line.startswith("taxnav_http_requests_total{") and 'route="unmatched"' in line]
    assert len(unmatched) == 1 and 'status="404"' in unmatched[0]
