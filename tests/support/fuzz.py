"""Schemathesis over an app's OpenAPI spec, every operation, bounded and derandomised: the
calls it made and the replies that broke the contract (a 5xx, or a 4xx not in the error shape)."""

from __future__ import annotations

from collections import Counter

import schemathesis
from hypothesis import HealthCheck, given, settings
from starlette.types import ASGIApp


def fuzz_every_operation(app: ASGIApp, examples: int) -> tuple[Counter[int], list[tuple]]:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    statuses: Counter[int] = Counter()
    failures: list[tuple] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
        def call(case) -> None:  # noqa: ANN001
            response = case.call()
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                failures.append((case.method, case.formatted_path, case.query, case.body, response.status_code, response.text[:300]))
            elif response.status_code >= 400 and "error" not in response.json():
                failures.append((case.method, case.formatted_path, "not the error shape", response.text[:300]))

        call()
    return statuses, failures
