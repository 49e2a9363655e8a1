"""No response carries a secret or a location: the Redis URL's password, Redis's host:port,
the data directory's path. Every route is called (from the OpenAPI spec) against a gateway
whose Redis URL holds a password, with Redis unreachable and with Redis refusing that
password, and every byte of every answer is searched."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings

PASSWORD = "S3cretPass"
# 6399: nothing listens there; 6379: the real Redis, which has no password set (AUTH fails).
URLS = {"unreachable": f"redis://admin:{PASSWORD}@127.0.0.1:6399/0", "wrong-password": f"redis://admin:{PASSWORD}@127.0.0.1:6379/0"}


def every_route_output(client: TestClient) -> list[tuple[str, int, str]]:
    spec = client.get("/openapi.json").json()
    outputs = []
    for path, operations in spec["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "EIM31240", path)
        for method in operations:
            kwargs = {"json": {"question": "how much can my employer pay me per mile?"}} if method == "post" else {}
            for query in ("", "?manual=employment-income-manual"):
                response = client.request(method.upper(), concrete + query, **kwargs)
                outputs.append((f"{method} {concrete}{query}", response.status_code, response.text + str(response.headers)))
    for extra in ("/", "/v1/questions/EIM31240/events", "/readyz", "/nowhere"):
        response = client.get(extra)
        outputs.append((f"get {extra}", response.status_code, response.text + str(response.headers)))
    return outputs


@pytest.mark.distributed
@pytest.mark.parametrize("redis", sorted(URLS))
def test_no_route_shows_the_redis_password_address_or_data_path(tmp_path, redis, slice_data_dir):
    for data_dir in (tmp_path / "no-index-here", slice_data_dir):
        settings = Settings(data_dir=data_dir, mode="distributed", redis_url=URLS[redis])
        settings.stores.backend = "local"
        settings.celery.key_prefix = "test-secrets:"
        settings.gateway.wait_timeout_s = 2
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            outputs = every_route_output(client)
        assert any(status == 503 for _, status, _ in outputs)  # Redis really was in the way
        for where, status, text in outputs:
            assert status < 500 or status in (502, 503, 504), (where, status, text)
            for secret in (PASSWORD, "admin:", "127.0.0.1", str(data_dir), str(data_dir.resolve())):
                assert secret not in text, (where, secret, text)
            for port in ("6399", "6379"):
                # a port as a number of its own: /metrics' timestamps (1.796308022406399e+09) hold any four digits
                assert not re.search(rf"(?<!\d){port}(?!\d)", text), (where, port, text)


@pytest.mark.parametrize(
    "message",
    [
        f"Error 111 connecting to 127.0.0.1:6399. Connection refused. (redis://admin:{PASSWORD}@127.0.0.1:6399/0)",
        "[Errno 2] No such file or directory: '/srv/taxnav/data/collections/x/current/manifest.json'",
        "cannot reach redis-primary.internal:6380 nor [::1]:6379 nor localhost:9200",
        "failed under ../shared/corpus/employment-income-manual/eim1.json",
    ],
)
def test_redact_removes_urls_addresses_and_paths_but_keeps_the_gist(message):
    from gateway.errors import redact

    cleaned = redact(message)
    for secret in (PASSWORD, "127.0.0.1", "6399", "6380", "9200", "/srv/taxnav", "shared/corpus", "redis-primary"):
        assert secret not in cleaned, cleaned
    assert cleaned.split()[0] == message.split()[0]  # still says what went wrong
