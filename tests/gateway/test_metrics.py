"""/metrics counts every reply by its route template, the ones the edge middleware sends
itself (401, 429, 413, 408, a bad Content-Length) included, without failing on them. No index
needed: none of these reach the pipeline."""

from __future__ import annotations

import logging

from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings

MALFORMED = {"question": "?? 123 !!"}  # a scope-guard refusal: answered without an index


def counted(text: str, method: str, route: str, status: int) -> bool:
    return f'taxnav_http_requests_total{{method="{method}",route="{route}",status="{status}"}} 1.0' in text


def test_replies_the_middleware_sends_itself_are_counted_by_route(tmp_path, caplog):
    settings = Settings(data_dir=tmp_path / "data")
    settings.gateway.api_keys, settings.gateway.rate_limit_per_minute, settings.gateway.max_body_bytes = ["k"], 3, 1000
    key = {"x-api-key": "k"}
    caplog.set_level(logging.ERROR)
    # raise_server_exceptions (the default): a counter that fails after the reply fails the test
    with TestClient(create_app(settings)) as client:
        assert client.post("/v1/questions", json=MALFORMED).status_code == 401
        assert client.get("/v1/pages/EIM31240").status_code == 401
        assert client.post("/v1/questions", content=b"x" * 2000, headers={**key, "content-type": "application/json"}).status_code == 413
        bad_length = client.post("/v1/questions", content=b"{}", headers={**key, "content-length": "two"})
        assert bad_length.status_code == 400
        # the key's third request this minute (after the 413 and the 400), then one over its limit
        assert [client.post("/v1/questions", json=MALFORMED, headers=key).status_code for _ in range(2)] == [200, 429]
        text = client.get("/metrics").text
    assert counted(text, "POST", "/v1/questions", 401)
    assert counted(text, "GET", "/v1/pages/{section_id}", 401)
    assert counted(text, "POST", "/v1/questions", 413)
    assert counted(text, "POST", "/v1/questions", 400)
    assert counted(text, "POST", "/v1/questions", 200) and counted(text, "POST", "/v1/questions", 429)
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]


def test_questions_asked_in_a_conversation_are_counted_as_questions(tmp_path):
    """A conversation's turn is a question: /metrics counted only those posted to /v1/questions."""
    with TestClient(create_app(Settings(data_dir=tmp_path / "data"))) as client:
        questions_url = client.post("/v1/conversations").json()["questions_url"]
        turn = client.post(questions_url, json=MALFORMED)
        assert turn.status_code == 200 and turn.json()["status"] == "refused"
        text = client.get("/metrics").text
    assert 'taxnav_questions_total{outcome="refused"} 1.0' in text
    assert 'taxnav_refusals_total{category="malformed"} 1.0' in text
