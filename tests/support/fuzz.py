"""Schemathesis over an app's OpenAPI spec, every operation, bounded and derandomised, with
every check schemathesis has (no 5xx, status codes, content types, headers and bodies as
documented, data the schema allows accepted and data it forbids refused) plus ours (every 4xx
in the one error shape): the calls it made and the replies that broke the contract."""

from __future__ import annotations

from collections import Counter

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from starlette.types import ASGIApp


def fuzz_every_operation(app: ASGIApp, examples: int) -> tuple[Counter[int], list[tuple]]:
    """(statuses, failures); ``statuses`` also counts the operations run as ``"operations"``."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    statuses: Counter = Counter()
    failures: list[tuple] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        statuses["operations"] += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
            def call(case) -> None:  # noqa: ANN001
                response = case.call()
                statuses[response.status_code] += 1
                where = (case.method, case.formatted_path, case.query, case.headers, case.body, response.status_code)
                try:
                    case.validate_response(response)
                except Exception as exc:  # noqa: BLE001  (a FailureGroup: one failure per check broken)
                    titles = [getattr(e, "title", type(e).__name__) for e in getattr(exc, "exceptions", [exc])]
                    failures.append((*where, titles, response.text[:300]))
                if response.status_code >= 400 and "error" not in response.json():
                    failures.append((*where, "not the error shape", response.text[:300]))

            try:
                call()
            except Unsatisfiable:  # negative: an operation without parameters or body has nothing to break
                assert mode is GenerationMode.NEGATIVE, operation.label
    return statuses, failures
