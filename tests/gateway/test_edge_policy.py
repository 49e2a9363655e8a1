"""Edge policy: optional API keys with per-key rate limits, the CORS setting, and a body
that trickles in too slowly, over real HTTP where the transport matters. No index needed:
none of these reach the pipeline."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.security import RateWindow
from shared.config import Settings
from tests.support.gateway import served

MALFORMED = {"question": "?? 123 !!"}  # a scope-guard refusal: answered without an index


def app_with(tmp_path, **gateway: object):
    settings = Settings(data_dir=tmp_path / "data")
    for name, value in gateway.items():
        setattr(settings.gateway, name, value)
    return create_app(settings)


def test_with_keys_the_api_needs_one_and_health_stays_open(tmp_path):
    with TestClient(app_with(tmp_path, api_keys=["k-one", "k-two"]), raise_server_exceptions=False) as client:
        missing = client.post("/v1/questions", json=MALFORMED)
        assert missing.status_code == 401 and missing.json()["error"]["type"] == "unauthorized"
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = client.post("/v1/questions", json=MALFORMED, headers={"x-api-key": "k-three"})
        assert wrong.status_code == 401 and "k-three" not in wrong.text
        assert client.post("/v1/questions", json=MALFORMED, headers={"x-api-key": "k-one"}).status_code == 200
        assert client.post("/v1/questions", json=MALFORMED, headers={"authorization": "Bearer k-two"}).status_code == 200
        assert client.get("/healthz").status_code == 200 and client.get("/openapi.json").status_code == 200


def test_without_keys_the_api_is_open(tmp_path):
    with TestClient(app_with(tmp_path), raise_server_exceptions=False) as client:
        assert client.post("/v1/questions", json=MALFORMED).status_code == 200


def test_each_key_has_its_own_rate_limit_with_retry_after(tmp_path):
    with TestClient(app_with(tmp_path, api_keys=["a", "b"], rate_limit_per_minute=3), raise_server_exceptions=False) as client:
        statuses = [client.post("/v1/questions", json=MALFORMED, headers={"x-api-key": "a"}).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        limited = client.post("/v1/questions", json=MALFORMED, headers={"x-api-key": "a"})
        assert limited.json()["error"]["type"] == "rate_limited" and 1 <= int(limited.headers["retry-after"]) <= 60
        assert client.post("/v1/questions", json=MALFORMED, headers={"x-api-key": "b"}).status_code == 200  # b's own budget


def test_failed_key_guesses_are_rate_limited_per_address(tmp_path):
    with TestClient(app_with(tmp_path, api_keys=["right"], key_failures_per_minute=3), raise_server_exceptions=False) as client:
        guesses = [client.post("/v1/questions", json=MALFORMED, headers={"x-api-key": f"guess-{i}"}) for i in range(4)]
        assert [g.status_code for g in guesses] == [401, 401, 401, 429]
        assert guesses[-1].json()["error"]["type"] == "rate_limited" and 1 <= int(guesses[-1].headers["retry-after"]) <= 60
        # past the limit the address learns nothing more: even the right key is not compared
        assert client.post("/v1/questions", json=MALFORMED, headers={"x-api-key": "right"}).status_code == 429
        assert client.get("/healthz").status_code == 200  # outside the API: never limited


def test_a_window_can_be_read_without_counting():
    window = RateWindow(1, clock=lambda: 0.0)
    assert window.full("k") is None and window.full("k") is None
    assert window.admit("k") is None
    assert window.full("k") == pytest.approx(60.0)


def test_a_rate_window_reopens_after_a_minute():
    now = [0.0]
    window = RateWindow(2, clock=lambda: now[0])
    assert window.admit("k") is None and window.admit("k") is None
    assert window.admit("k") == pytest.approx(60.0)
    now[0] = 59.5
    assert window.admit("k") == pytest.approx(0.5)
    now[0] = 60.0
    assert window.admit("k") is None


def test_cors_allows_only_the_configured_origins(tmp_path):
    with TestClient(app_with(tmp_path, cors_origins=["https://navigator.example"]), raise_server_exceptions=False) as client:
        preflight = {"access-control-request-method": "POST"}
        allowed = client.options("/v1/questions", headers={"origin": "https://navigator.example", **preflight})
        assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "https://navigator.example"
        other = client.options("/v1/questions", headers={"origin": "https://evil.example", **preflight})
        assert "access-control-allow-origin" not in other.headers
    with TestClient(app_with(tmp_path), raise_server_exceptions=False) as client:  # default: no cross-origin calls
        response = client.post("/v1/questions", json=MALFORMED, headers={"origin": "https://navigator.example"})
        assert "access-control-allow-origin" not in response.headers


def test_a_body_that_trickles_in_is_cut_off_with_408(tmp_path):
    with served(app_with(tmp_path, body_read_timeout_s=0.5)) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as conn:
            conn.sendall(b"POST /v1/questions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"qu")
            started = time.monotonic()
            reply = conn.recv(4096).decode()
            elapsed = time.monotonic() - started
        assert reply.startswith("HTTP/1.1 408") and "body_timeout" in reply, reply
        assert elapsed < 3
        assert httpx.post(f"{url}/v1/questions", json=MALFORMED).status_code == 200  # the server still serves
