"""Schemathesis over the gateway's OpenAPI spec, every operation, in embedded mode on the real
slice index: whatever it generates, no 5xx, and every 4xx in the one error shape. Bounded: a
fixed number of examples per operation, derandomised, no deadline. (The distributed run is
in tests/services/test_fault_suite.py.)"""

from __future__ import annotations

from fastapi.testclient import TestClient

from gateway.app import create_app
from tests.conftest import make_settings
from tests.support.fuzz import fuzz_every_operation
from tests.support.gateway import wait_ready

EXAMPLES = 40


def test_no_operation_answers_5xx(slice_data_dir, embedding_cache):
    configured = make_settings(slice_data_dir, embedding_cache)
    configured.gateway.max_in_flight = 256  # this is about input, not load: nothing is shed
    app = create_app(configured)
    with TestClient(app) as client:
        wait_ready(client)
        statuses, failures = fuzz_every_operation(app, EXAMPLES)
    assert statuses.total() >= 7 * 5 and statuses[200] and statuses[404] and statuses[422]
    assert failures == []
