"""The ingest worker's app: its own task module only, no question stage, the beat schedule
from its settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ingest_worker.beat_schedule import INGEST_TASK
from ingest_worker.celery_app import celery_app, make_ingest_app
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
