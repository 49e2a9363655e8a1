"""The stage workers' app: one task per stage queue routed to it, nothing of the ingest worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


from services.runtime.celery_app import celery_app, stage_task_name
from services.answering.pipeline import STAGE_QUEUES

ROOT = Path(__file__).resolve().parents[3]


def test_queues_follow_the_stage_table_in_order() -> None:
    assert STAGE_QUEUES == ("retrieval", "graph", "selection", "stitching", "verification")


def test_the_app_registers_one_task_per_stage_queue_routed_to_it() -> None:
    celery_app.loader.import_default_modules()
    assert {name for name in celery_app.tasks if not name.startswith("celery.")} == {stage_task_name(q) for q in STAGE_QUEUES}
    for queue in STAGE_QUEUES:
        assert celery_app.amqp.router.route({}, stage_task_name(queue), (), {})["queue"].name == queue


def test_a_stage_worker_loads_no_crawler_or_parser() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from services.runtime.celery_app import celery_app; "
         "celery_app.loader.import_default_modules(); print(' '.join(sys.modules))"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "services.runtime.tasks" in loaded
    assert not loaded & {"ingest_worker.crawler", "ingest_worker.parser", "ingest_worker.tasks", "ingest_worker.celery_app"}
