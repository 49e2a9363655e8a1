"""The ingest worker's app: its own task module only, no question stage, the beat schedule
from its settings, Redis pools sized from the worker's concurrency (a real worker)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import redis

from ingest_worker.beat_schedule import INGEST_TASK
from ingest_worker.celery_app import celery_app, make_ingest_app
from shared.celery_base import EXTRA_CONNECTIONS
from shared.config import Settings

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/0"


def loaded_after(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; {code}; print(' '.join(sys.modules))"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_the_ingest_worker_loads_no_question_stage() -> None:
    loaded = loaded_after("from ingest_worker.celery_app import celery_app; celery_app.loader.import_default_modules()")
    assert "ingest_worker.tasks" in loaded  # the app did load its task module
    assert not {m for m in loaded if m == "services" or m.startswith("services.")}


def test_the_app_registers_only_the_ingest_task_and_its_schedule() -> None:
    settings = Settings(redis_url=REDIS_URL, ingest={"manuals": ["employment-income-manual", "business-income-manual"]})
    celery_app.loader.import_default_modules()
    assert {name for name in celery_app.tasks if not name.startswith("celery.")} == {INGEST_TASK}
    assert set(make_ingest_app(settings).conf.beat_schedule) == {"ingest:employment-income-manual", "ingest:business-income-manual"}


def test_a_worker_sizes_its_redis_pools_from_its_concurrency(tmp_path: Path) -> None:
    prefix = f"test-ingest-app-{uuid.uuid4().hex[:8]}:"
    settings = Settings(data_dir=tmp_path, redis_url=REDIS_URL, celery={"key_prefix": prefix})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TAXNAV_REDIS_URL": REDIS_URL, "TAXNAV_CELERY__KEY_PREFIX": prefix,
           "TAXNAV_DATA_DIR": str(tmp_path)}  # fmt: skip
    name = f"sized-{uuid.uuid4().hex[:6]}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "ingest_worker.celery_app", "worker", "-Q", "ingest", "-n", f"{name}@%h",
         "--pool", "threads", "--concurrency", "3", "--without-gossip", "--without-mingle", "--loglevel", "warning"],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        app = make_ingest_app(settings)
        conf: dict = {}
        for _ in range(60):
            replies = app.control.inspect(timeout=1.0).conf() or {}
            conf = next((c for node, c in replies.items() if node.startswith(name)), {})
            if conf:
                break
            time.sleep(0.5)
        assert conf, "the worker never answered"
        assert conf["broker_pool_limit"] == 3 + EXTRA_CONNECTIONS
        assert conf["redis_max_connections"] == 3 + EXTRA_CONNECTIONS
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
