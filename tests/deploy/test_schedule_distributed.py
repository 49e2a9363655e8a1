"""The scheduled re-ingest for real: `taxnav ingest --schedule` (a Celery worker on the ingest
queue with beat embedded) against the real Redis, crawling the local replay server over a
small slice of the EIM. Beat fires the run at the next minute; a second run sent while it
holds the lock is refused; both runs are recorded and served by GET /v1/ingest/runs.

Takes up to a minute of waiting for the cron minute (crontab has no finer resolution).
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from ingest_worker.runs import read_runs
from ingest_worker.tasks import TASK_NAME, lock_key
from shared.celery_app import INGEST_QUEUE, make_celery_app
from shared.config import Settings
from taxnav.replay_server import Fault, ReplayServer

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
REDIS_URL = "redis://127.0.0.1:6379/0"
MANUAL = "employment-income-manual"
# Leaf pages of "Employees using own vehicles for work" (EIM31200): 11 pages, no children.
SLICE = ["EIM31205", "EIM31210", "EIM31215", "EIM31230", "EIM31235", "EIM31240", "EIM31255", "EIM31260", "EIM31265", "EIM31275", "EIM31280"]  # fmt: skip
PAGE_DELAY_S = 1.5  # every page answers slowly, so the run surely holds its lock when the second arrives


def sliced_root(server: ReplayServer) -> dict:
    """The manual's root page listing only SLICE, so a crawl from the root ingests just those."""
    root = copy.deepcopy(server.document(MANUAL, None))
    children = [c for group in root["details"]["child_section_groups"] for c in group["child_sections"]]
    wanted = {c["section_id"]: c for c in children}
    for section in SLICE:
        wanted.setdefault(section, {"base_path": f"/hmrc-internal-manuals/{MANUAL}/{section.lower()}", "section_id": section, "title": section, "description": ""})  # fmt: skip
    root["details"]["child_section_groups"] = [{"title": None, "child_sections": [wanted[s] for s in SLICE]}]
    return root


def next_cron_minute() -> str:
    """A cron string firing at the next whole minute at least 15 s away: time for the process to start (then not for an hour)."""
    target = datetime.now(UTC) + timedelta(seconds=75)
    return f"{target.minute} * * * *"


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(CORPUS) as server:
        server.override(MANUAL, None, sliced_root(server))
        for section in SLICE:
            server.add_fault(Fault(manual=MANUAL, section=section, kind="slow", delay_s=PAGE_DELAY_S))
        yield server


@pytest.fixture
def settings(tmp_path: Path, replay: ReplayServer) -> Iterator[Settings]:
    prefix = f"test-deploy-beat-{uuid.uuid4().hex[:8]}:"
    cron = next_cron_minute()
    settings = Settings(
        data_dir=tmp_path / "data",
        redis_url=REDIS_URL,
        manual=MANUAL,
        celery={"key_prefix": prefix},
        models={"provider": "local"},
        ingest={
            "source": replay.base_url,
            "manuals": [MANUAL],
            "allowed_hosts": ["127.0.0.1"],
            "schedule_cron": cron,
            "lock_ttl_s": 30,
        },
    )
    yield settings
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


def settings_env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXNAV_")}
    env.update(
        PYTHONPATH=str(ROOT),
        TAXNAV_DATA_DIR=str(settings.data_dir),
        TAXNAV_REDIS_URL=settings.redis_url,
        TAXNAV_MANUAL=settings.manual,
        TAXNAV_CELERY__KEY_PREFIX=settings.celery.key_prefix,
        TAXNAV_MODELS__PROVIDER=settings.models.provider,
        TAXNAV_INGEST__SOURCE=settings.ingest.source,
        TAXNAV_INGEST__MANUALS=f'["{MANUAL}"]',
        TAXNAV_INGEST__ALLOWED_HOSTS='["127.0.0.1"]',
        TAXNAV_INGEST__SCHEDULE_CRON=settings.ingest.schedule_cron,
        TAXNAV_INGEST__LOCK_TTL_S=str(settings.ingest.lock_ttl_s),
    )
    return env


@pytest.fixture
def scheduler(settings: Settings, tmp_path: Path) -> Iterator[subprocess.Popen]:
    log = (tmp_path / "scheduler.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "taxnav.cli", "ingest", "--schedule"],
        cwd=ROOT, env=settings_env(settings), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    yield process
    process.send_signal(signal.SIGTERM)  # warm shutdown
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    log.close()


def wait_for(predicate, timeout_s: float, what: str, process: subprocess.Popen, log: Path):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        assert process.poll() is None, f"scheduler exited ({process.returncode}):\n{log.read_text()[-3000:]}"
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}:\n{log.read_text()[-3000:]}")


@pytest.mark.timeout(240)
def test_scheduled_run_finishes_and_records_and_a_concurrent_run_is_refused(
    settings: Settings, scheduler: subprocess.Popen, tmp_path: Path
) -> None:
    log = tmp_path / "scheduler.log"
    client = redis.Redis.from_url(REDIS_URL)
    key = lock_key(settings, MANUAL)
    fire_minute = int(settings.ingest.schedule_cron.split()[0])
    assert client.get(key) is None

    # Beat fires at the cron minute; the run takes the manual's lock.
    holder = wait_for(lambda: client.get(key), 120, "the scheduled run to take the lock", scheduler, log).decode()
    assert datetime.now(UTC).minute == fire_minute

    # A second run, started while the first holds the lock, is refused (not queued behind it).
    app = make_celery_app(settings)
    second = app.send_task(TASK_NAME, kwargs={"manual": MANUAL, "trigger": "api"}, queue=INGEST_QUEUE)
    refused = second.get(timeout=60)
    assert refused["status"] == "refused"
    assert holder in refused["message"]
    assert client.get(key) is not None  # the first run still holds it

    # The scheduled run finishes, records its summary and frees the lock.
    runs = wait_for(
        lambda: [r for r in read_runs(settings.data_dir) if r.trigger == "schedule"], 150, "the scheduled run's record", scheduler, log
    )  # fmt: skip
    (scheduled,) = runs
    assert scheduled.status == "ok", scheduled.message
    assert holder.startswith(scheduled.run_id)
    assert scheduled.pages == len(SLICE)
    assert set(scheduled.changed_pages) == set(SLICE)  # a first ingest: every page is new
    assert scheduled.removed_pages == []
    assert scheduled.seconds >= PAGE_DELAY_S
    assert {m.section_id for m in scheduled.dates_moved} == set(SLICE)  # all new: no date before
    assert all(m.before is None and m.after is not None for m in scheduled.dates_moved)
    assert scheduled.started_at.minute == fire_minute
    assert client.get(key) is None

    # Both runs are in the log, newest first, and served by the gateway.
    statuses = [(r.trigger, r.status) for r in read_runs(settings.data_dir)]
    assert statuses == [("schedule", "ok"), ("api", "refused")]
    from fastapi.testclient import TestClient  # noqa: PLC0415

    from gateway.app import create_app  # noqa: PLC0415

    served = TestClient(create_app(settings)).get("/v1/ingest/runs").json()["runs"]
    assert [(r["trigger"], r["status"], r["pages"]) for r in served] == [("schedule", "ok", len(SLICE)), ("api", "refused", 0)]
