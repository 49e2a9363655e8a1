"""The error shape's headers: a failure that passes by itself (Redis back, the index swapped)
tells the client when to ask again; one that does not, does not."""

from __future__ import annotations

from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.errors import pipeline_error_response
from services.errors import IndexChanged, IndexUnavailable, PipelineTimeout, ProviderError, Unavailable
from shared.config import Settings


def test_only_failures_that_pass_carry_retry_after():
    for retriable in (Unavailable("Redis is unavailable"), IndexChanged("ask again")):
        assert pipeline_error_response(retriable, 7).headers["retry-after"] == "7"
    for lasting in (ProviderError("x"), PipelineTimeout("x"), IndexUnavailable("x")):
        assert "retry-after" not in pipeline_error_response(lasting, 7).headers


def test_redis_down_is_a_503_with_retry_after(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", mode="distributed", redis_url="redis://127.0.0.1:1/0")  # nothing listens there
    settings.gateway.retry_after_s = 3
    with TestClient(create_app(settings)) as client:
        for response in (
            client.get("/v1/questions/abc"),
            client.get("/v1/questions/abc/events"),
            client.post("/v1/conversations"),
            client.get("/v1/conversations/abc"),
        ):
            assert response.status_code == 503, response.text
            assert response.json()["error"]["type"] == "unavailable" and response.headers["retry-after"] == "3"
