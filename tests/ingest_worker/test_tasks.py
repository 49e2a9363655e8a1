"""The beat schedule from settings, and the per-manual Redis lock (real Redis at
127.0.0.1:6379; every test uses its own key prefix)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery.schedules import crontab

from ingest_worker.beat_schedule import INGEST_QUEUE, INGEST_TASK, beat_schedule, parse_cron
from ingest_worker.celery_app import celery_app
from shared.contracts.ingest_runs import read_runs
from ingest_worker.tasks import _LockKeeper, lock_key, run_locked_ingest
from shared.config import Settings

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/0"
MANUAL = "employment-income-manual"


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    prefix = f"test-deploy-{uuid.uuid4().hex[:8]}:"
    yield Settings(data_dir=tmp_path, redis_url=REDIS_URL, celery={"key_prefix": prefix}, ingest={"lock_ttl_s": 2})
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


# --- Schedule -----------------------------------------------------------------------------


def test_default_schedule_is_daily_at_three() -> None:
    assert parse_cron(Settings().ingest.schedule_cron) == crontab(minute="0", hour="3")


@pytest.mark.parametrize("expr", ["61 3 * * *", "0 3 * *", "0 3 * * * *", "every day", ""])
def test_a_bad_cron_string_is_a_clear_error(expr: str) -> None:
    with pytest.raises(ValueError, match="schedule_cron"):
        parse_cron(expr)


def test_one_beat_entry_per_manual_on_the_ingest_queue() -> None:
    settings = Settings(ingest={"manuals": ["employment-income-manual", "business-income-manual"], "schedule_cron": "*/15 2-4 * * 1-5"})
    entries = beat_schedule(settings)
    assert set(entries) == {"ingest:employment-income-manual", "ingest:business-income-manual"}
    for manual in settings.ingest.manuals:
        entry = entries[f"ingest:{manual}"]
        assert entry["task"] == INGEST_TASK
        assert entry["kwargs"] == {"manual": manual, "trigger": "schedule"}
        assert entry["options"]["queue"] == INGEST_QUEUE
        assert entry["schedule"] == crontab(minute="*/15", hour="2-4", day_of_week="1-5")


def test_the_task_is_registered_on_the_ingest_queue_without_late_acks() -> None:
    task = celery_app.tasks[INGEST_TASK]
    assert celery_app.amqp.router.route({}, INGEST_TASK, (), {})["queue"].name == INGEST_QUEUE
    assert task.acks_late is False  # an ingest outlives the visibility timeout: never redelivered mid-run
    assert celery_app.conf.beat_schedule.keys() == beat_schedule(Settings()).keys()


def test_beat_refuses_to_start_on_a_bad_cron_string(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TAXNAV_INGEST__SCHEDULE_CRON": "0 25 * * *", "TAXNAV_REDIS_URL": REDIS_URL}
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "ingest_worker.celery_app", "beat", "-s", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=60, env=env, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode != 0
    assert "schedule_cron '0 25 * * *'" in done.stdout + done.stderr


# --- Lock ---------------------------------------------------------------------------------


def test_a_run_is_refused_while_another_holds_the_lock(settings: Settings) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    held = client.lock(lock_key(settings, MANUAL), timeout=30)
    assert held.acquire(blocking=False, token="run-elsewhere host-a")

    run = run_locked_ingest(settings, MANUAL, "api", source="http://127.0.0.1:9")
    assert run.status == "refused"
    assert "run-elsewhere host-a" in run.message and "already in progress" in run.message
    assert read_runs(settings.data_dir) == [run]
    assert client.get(held.name) == b"run-elsewhere host-a"  # the holder keeps its lock
    held.release()


def test_locks_are_per_manual_and_per_prefix(settings: Settings) -> None:
    other_prefix = settings.model_copy(update={"celery": settings.celery.model_copy(update={"key_prefix": "x:"})})
    keys = {lock_key(settings, MANUAL), lock_key(settings, "business-income-manual"), lock_key(other_prefix, MANUAL)}
    assert len(keys) == 3
    assert lock_key(settings, MANUAL).startswith(settings.celery.key_prefix)


def test_the_keeper_holds_the_lock_past_its_ttl_and_lets_it_expire_after(settings: Settings) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    lock = client.lock(lock_key(settings, MANUAL), timeout=1, thread_local=False)
    assert lock.acquire(blocking=False, token="me")
    with _LockKeeper(lock, ttl_s=1):
        time.sleep(2.5)  # two and a half TTLs
        assert client.get(lock.name) == b"me"
    time.sleep(1.5)
    assert client.get(lock.name) is None  # a killed run's lock does not outlive one TTL


def test_a_failing_run_is_recorded_as_failed_and_frees_the_lock(settings: Settings) -> None:
    from ingest_worker.ingest import IngestError

    dead = f"http://127.0.0.1:{_closed_port()}"
    settings = settings.model_copy(update={"ingest": settings.ingest.model_copy(update={"allowed_hosts": ["127.0.0.1"], "max_retries": 0})})
    with pytest.raises(IngestError):
        run_locked_ingest(settings, MANUAL, "api", source=dead)
    (run,) = read_runs(settings.data_dir)
    assert run.status == "failed" and run.trigger == "api" and run.source == dead
    assert run.message.startswith("IngestError")
    assert redis.Redis.from_url(REDIS_URL).get(lock_key(settings, MANUAL)) is None
    # ...so the next run is not refused
    with pytest.raises(IngestError):
        run_locked_ingest(settings, MANUAL, "api", source=dead)
    assert [r.status for r in read_runs(settings.data_dir)] == ["failed", "failed"]


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_cli_ingest_into_shared_servers_takes_the_lock_too(settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from taxnav import cli  # noqa: PLC0415

    client = redis.Redis.from_url(REDIS_URL)
    held = client.lock(lock_key(settings, MANUAL), timeout=30)
    assert held.acquire(blocking=False, token="run-elsewhere host-b")
    monkeypatch.setenv("TAXNAV_REDIS_URL", REDIS_URL)
    monkeypatch.setenv("TAXNAV_CELERY__KEY_PREFIX", settings.celery.key_prefix)
    monkeypatch.setenv("TAXNAV_STORES__BACKEND", "servers")  # OpenSearch/Qdrant several machines write to
    # refused before any store or source is touched (neither exists here)
    assert cli.main(["ingest", "--data-dir", str(settings.data_dir), "--source", "http://127.0.0.1:9", "--no-progress"]) == 1
    assert "already in progress (run run-elsewhere host-b)" in capsys.readouterr().err
    assert [r.status for r in read_runs(settings.data_dir)] == ["refused"]
    assert read_runs(settings.data_dir)[0].trigger == "cli"
    held.release()
