"""GET /v1/ingest/runs through the real gateway app: the run log as counts, filtered and
paginated; one run's page lists on request, paginated; typed 4xx errors."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings
from shared.contracts.ingest_runs import DateMove, IngestRun, record_run

T0 = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def client(data_dir: Path) -> TestClient:
    return TestClient(create_app(Settings(data_dir=data_dir)))


def record(
    data_dir: Path, n: int, status: str = "ok", manual: str = "employment-income-manual", source: str = "https://www.gov.uk", message: str = ""
) -> IngestRun:
    run = IngestRun(
        run_id=f"run-{n}",
        manual=manual,
        source=source,
        trigger="schedule",
        status=status,
        started_at=T0 + timedelta(days=n),
        finished_at=T0 + timedelta(days=n, seconds=42),
        seconds=42.0,
        pages=2507,
        chunks=9000,
        changed_pages=["EIM31240"] if status == "ok" else [],
        removed_pages=["EIM99999"] if status == "ok" else [],
        dates_moved=[DateMove(section_id="EIM31240", before=T0 - timedelta(days=400), after=T0)] if status == "ok" else [],
        message=message or ("" if status == "ok" else "an ingest of employment-income-manual is already in progress"),
    )
    record_run(data_dir, run)
    return run


def test_no_runs_yet(client: TestClient) -> None:
    response = client.get("/v1/ingest/runs")
    assert response.status_code == 200
    assert response.json() == {"runs": [], "offset": 0, "next_offset": None}


def test_runs_newest_first_with_what_changed(client: TestClient, data_dir: Path) -> None:
    record(data_dir, 0)
    record(data_dir, 1, status="refused")
    record(data_dir, 2)
    runs = client.get("/v1/ingest/runs").json()["runs"]
    assert [r["run_id"] for r in runs] == ["run-2", "run-1", "run-0"]
    newest = runs[0]
    assert newest["status"] == "ok" and newest["seconds"] == 42.0
    assert (newest["changed_pages"], newest["removed_pages"], newest["dates_moved"]) == (1, 1, 1)  # counts, not lists
    assert runs[1]["status"] == "refused" and "already in progress" in runs[1]["message"]
    assert (runs[1]["changed_pages"], runs[1]["dates_moved"]) == (0, 0)
    pages = lambda kind: client.get(f"/v1/ingest/runs/run-2/pages?kind={kind}").json()  # noqa: E731
    assert pages("changed")["pages"] == ["EIM31240"] and pages("removed")["pages"] == ["EIM99999"]
    moved = pages("dates_moved")["dates_moved"]
    assert moved[0]["section_id"] == "EIM31240" and datetime.fromisoformat(moved[0]["after"]) == T0


@pytest.mark.parametrize(
    "source, shown",
    [
        ("https://www.gov.uk", "www.gov.uk"),
        ("https://user:secret@content.example.org:8443/api/content?token=t", "content.example.org/api/content"),
        ("/srv/taxnav/shared/corpus", "local directory corpus"),
        ("../shared/corpus", "local directory corpus"),
        ("../shared/corpus/employment-income-manual/", "local directory employment-income-manual"),
        ("..", "local directory"),
    ],
)
def test_a_runs_source_shows_no_path(client: TestClient, data_dir: Path, source: str, shown: str) -> None:
    record(data_dir, 0, status="failed", source=source, message=f"no readable pages in employment-income-manual at {source}: {{}}")
    for run in (client.get("/v1/ingest/runs").json()["runs"][0], client.get("/v1/ingest/runs/run-0").json()):
        assert run["source"] == shown
        assert "/srv" not in run["message"] and "../" not in run["message"] and "secret" not in run["message"]
    assert "no readable pages" in run["message"]


def test_a_big_run_lists_counts_and_pages_its_lists(client: TestClient, data_dir: Path) -> None:
    """A first ingest changes every page: the run list stays small, the pages come a page at a time."""
    ids = [f"EIM{n:05d}" for n in range(2507)]
    run = record(data_dir, 0).model_copy(update={"run_id": "first", "changed_pages": ids})
    record_run(data_dir, run)
    listing = client.get("/v1/ingest/runs")
    assert len(listing.content) < 2000, len(listing.content)
    assert listing.json()["runs"][0]["changed_pages"] == 2507
    assert client.get("/v1/ingest/runs/first").json()["changed_pages"] == 2507
    seen, offset = [], 0
    while offset is not None:
        body = client.get(f"/v1/ingest/runs/first/pages?kind=changed&limit=1000&offset={offset}").json()
        assert body["total"] == 2507 and len(body["pages"]) <= 1000
        seen += body["pages"]
        offset = body["next_offset"]
    assert seen == ids


def test_runs_are_paginated(client: TestClient, data_dir: Path) -> None:
    for n in range(5):
        record(data_dir, n)
    first = client.get("/v1/ingest/runs?limit=2").json()
    assert [r["run_id"] for r in first["runs"]] == ["run-4", "run-3"] and first["next_offset"] == 2
    second = client.get("/v1/ingest/runs?limit=2&offset=2").json()
    assert [r["run_id"] for r in second["runs"]] == ["run-2", "run-1"] and second["next_offset"] == 4
    last = client.get("/v1/ingest/runs?limit=2&offset=4").json()
    assert [r["run_id"] for r in last["runs"]] == ["run-0"] and last["next_offset"] is None


def test_unknown_run_is_a_typed_404(client: TestClient, data_dir: Path) -> None:
    record(data_dir, 0)
    for path in ("/v1/ingest/runs/nope", "/v1/ingest/runs/nope/pages"):
        response = client.get(path)
        assert response.status_code == 404
        assert response.json()["error"]["type"] == "not_found"
    assert client.get("/v1/ingest/runs/run-0/pages?kind=everything").status_code == 422


def test_filters_and_limit(client: TestClient, data_dir: Path) -> None:
    record(data_dir, 0)
    record(data_dir, 1, status="refused")
    record(data_dir, 2, manual="business-income-manual")
    get = lambda query: [r["run_id"] for r in client.get(f"/v1/ingest/runs?{query}").json()["runs"]]  # noqa: E731
    assert get("status=refused") == ["run-1"]
    assert get("manual=business-income-manual") == ["run-2"]
    assert get("limit=2") == ["run-2", "run-1"]
    assert get("manual=self-assessment-manual") == []


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=-3", "limit=abc", "limit=100000", "offset=-1", "offset=x", "status=exploded", f"manual={'x' * 101}"]
)
def test_bad_queries_are_typed_4xx_errors(client: TestClient, query: str) -> None:
    response = client.get(f"/v1/ingest/runs?{query}")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["type"] and error["message"]


def test_documented_in_openapi(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    operation = spec["paths"]["/v1/ingest/runs"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {"limit", "offset", "manual", "status"}
    assert "422" in operation["responses"]


def test_the_gateway_reads_the_run_log_without_loading_the_ingest_worker(tmp_path: Path):
    # The run records are a contract (shared/contracts/ingest_runs.py): the gateway process,
    # every route included, must not pull in the ingest worker's code (parser, embedder, tasks).
    probe = (
        "import sys; from gateway.app import create_app; from shared.config import Settings; "
        f"create_app(Settings(data_dir={str(tmp_path)!r})); "
        "print(sorted(m for m in sys.modules if m.startswith('ingest_worker')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert loaded.stdout.strip() == "[]"
