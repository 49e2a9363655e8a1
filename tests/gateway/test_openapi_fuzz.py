"""Schemathesis over the gateway's OpenAPI spec, every operation, in embedded mode on the real
slice index: whatever it generates, no 5xx, and every 4xx in the one error shape. Bounded: a
fixed number of examples per operation, derandomised, no deadline."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from fastapi.testclient import TestClient

from gateway.app import create_app
from tests.conftest import make_settings
from tests.support.gateway import wait_ready

EXAMPLES = 40


def test_no_operation_answers_5xx(slice_data_dir, embedding_cache):
    configured = make_settings(slice_data_dir, embedding_cache)
    configured.gateway.max_in_flight = 256  # this is about input, not load: nothing is shed
    app = create_app(configured)
    with TestClient(app) as client:
        wait_ready(client)
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 7
        failures: list[tuple] = []
        calls = {"n": 0}
        for operation in operations:

            @given(case=operation.as_strategy())
            @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
            def call(case) -> None:  # noqa: ANN001
                response = case.call()
                calls["n"] += 1
                calls[response.status_code] = calls.get(response.status_code, 0) + 1
                if response.status_code >= 500:
                    failures.append((case.method, case.formatted_path, case.query, case.body, response.status_code, response.text[:300]))
                elif response.status_code >= 400 and "error" not in response.json():
                    failures.append((case.method, case.formatted_path, "not the error shape", response.text[:300]))

            call()
    assert calls["n"] >= len(operations) * 5
    assert failures == []
