"""Schemathesis over the gateway's OpenAPI spec, every operation (the conversation routes
included), in embedded mode on the real slice index: whatever it generates, data the schema
allows and data it forbids, every check schemathesis has holds (no 5xx; statuses, content
types and bodies as documented; allowed data accepted, forbidden data refused) and every 4xx
is in the one error shape. Bounded: a fixed number of examples per operation and mode,
derandomised, no deadline. (The distributed run is in tests/services/test_fault_suite.py.)"""

from __future__ import annotations

import os
from collections import Counter

from fastapi.testclient import TestClient

from gateway.app import create_app
from tests.conftest import make_settings
from tests.support.fuzz import fuzz_every_operation
from tests.support.gateway import wait_ready

EXAMPLES = int(os.environ.get("TAXNAV_TEST_FUZZ_EXAMPLES", "40"))


def test_every_operation_holds_every_check(slice_data_dir, embedding_cache):
    configured = make_settings(slice_data_dir, embedding_cache)
    configured.gateway.max_in_flight = 256  # this is about input, not load: nothing is shed
    app = create_app(configured)
    with TestClient(app) as client:
        wait_ready(client)
        operations = sum(len(methods) for methods in app.openapi()["paths"].values())
        statuses, failures = fuzz_every_operation(app, EXAMPLES)
    print(f"schemathesis: {statuses['operations']} operations, {statuses.total() - statuses['operations']} calls, {dict(statuses)}")
    assert statuses["operations"] == operations >= 13
    assert statuses[200] and statuses[404] and statuses[422] and not any(status >= 500 for status in statuses if isinstance(status, int))
    kinds = Counter((f[0], f[1], str(f[6])) for f in failures)
    assert failures == [], (kinds.most_common(30), failures[:10])
