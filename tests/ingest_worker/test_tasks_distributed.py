"""The scheduled re-ingest for real, started both ways a user starts it: `taxnav ingest
--schedule` (a Celery worker on the ingest queue with beat embedded), and compose's `ingest`
and `beat` service commands as two processes. Real Redis; the ingest crawls the local replay
server over a small slice of the EIM. Beat fires the run at the next minute; a second run sent while it
holds the lock is refused; both runs are recorded and served by GET /v1/ingest/runs; the
ingest service's compose healthcheck answers for the live worker.

The two setups run side by side (own data dir, own Redis key prefix), so the test waits for
one cron minute, at most 60 s (crontab has no finer resolution), not two.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from shared.contracts.ingest_runs import read_runs
from ingest_worker.beat_schedule import INGEST_QUEUE, INGEST_TASK
from ingest_worker.celery_app import make_ingest_app
from ingest_worker.tasks import lock_key
from shared.config import Settings
from taxnav.replay_server import Fault, ReplayServer
from tests.deploy.compose_cli import run_compose

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
REDIS_URL = "redis://127.0.0.1:6379/0"
MANUAL = "employment-income-manual"
# Leaf pages of "Employees using own vehicles for work" (EIM31200): 11 pages, no children.
SLICE = ["EIM31205", "EIM31210", "EIM31215", "EIM31230", "EIM31235", "EIM31240", "EIM31255", "EIM31260", "EIM31265", "EIM31275", "EIM31280"]  # fmt: skip
# Every page answers slowly and the crawler fetches two at a time: the run lasts 9 s or more,
# so it surely still holds its lock when the second run arrives, even on a loaded machine.
PAGE_DELAY_S = 1.5
CRAWL_CONCURRENCY = 2


def sliced_root(server: ReplayServer) -> dict:
    """The manual's root page listing only SLICE, so a crawl from the root ingests just those."""
    root = copy.deepcopy(server.document(MANUAL, None))
    children = [c for group in root["details"]["child_section_groups"] for c in group["child_sections"]]
    wanted = {c["section_id"]: c for c in children}
    for section in SLICE:
        wanted.setdefault(section, {"base_path": f"/hmrc-internal-manuals/{MANUAL}/{section.lower()}", "section_id": section, "title": section, "description": ""})  # fmt: skip
    root["details"]["child_section_groups"] = [{"title": None, "child_sections": [wanted[s] for s in SLICE]}]
    return root


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(CORPUS) as server:
        server.override(MANUAL, None, sliced_root(server))
        for section in SLICE:
            server.add_fault(Fault(manual=MANUAL, section=section, kind="slow", delay_s=PAGE_DELAY_S))
        yield server


LAUNCHES = {
    # --data-dir, not the environment, names its data dir: the fixture points the environment elsewhere
    "taxnav ingest --schedule": lambda data_dir: [[sys.executable, "-m", "taxnav.cli", "ingest", "--schedule", "--data-dir", str(data_dir)]],
    "compose ingest + beat": lambda data_dir: compose_commands(data_dir),
}


def make_settings(data_dir: Path, replay: ReplayServer) -> Settings:
    return Settings(
        data_dir=data_dir,
        redis_url=REDIS_URL,
        manual=MANUAL,
        celery={"key_prefix": f"test-deploy-beat-{uuid.uuid4().hex[:8]}:"},
        models={"provider": "local"},
        ingest={
            "source": replay.base_url,
            "manuals": [MANUAL],
            "allowed_hosts": ["127.0.0.1"],
            "concurrency": CRAWL_CONCURRENCY,
            "schedule_cron": "* * * * *",  # every minute: the first fires within 60 s of start
            "lock_ttl_s": 30,
        },
    )


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
        TAXNAV_INGEST__CONCURRENCY=str(settings.ingest.concurrency),
        TAXNAV_INGEST__SCHEDULE_CRON=settings.ingest.schedule_cron,
        TAXNAV_INGEST__LOCK_TTL_S=str(settings.ingest.lock_ttl_s),
    )
    return env


def compose_commands(data_dir: Path) -> list[list[str]]:
    """The ingest worker's and beat's commands exactly as docker-compose.yml runs them, with the
    container's /data pointed at this test's data dir."""
    done = run_compose("config", "--format", "json")
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    commands = []
    for name in ("ingest", "beat"):
        command = [arg.replace("/data", str(data_dir)) if arg.startswith("/data") else arg for arg in services[name]["command"]]
        assert command[0] == "celery"
        commands.append([sys.executable, "-m", *command])
    return commands


@dataclass
class Scheduler:
    name: str
    settings: Settings
    processes: list[subprocess.Popen]
    log: Path

    def check_alive(self) -> None:
        for process in self.processes:
            assert process.poll() is None, f"{self.name}: exited ({process.returncode}):\n{self.log.read_text()[-3000:]}"


@pytest.fixture
def schedulers(tmp_path: Path, replay: ReplayServer) -> Iterator[list[Scheduler]]:
    """Both launch styles, started at once, each with its own data dir and key prefix."""
    started: list[Scheduler] = []
    for i, (name, commands) in enumerate(LAUNCHES.items()):
        settings = make_settings(tmp_path / f"data{i}", replay)
        settings.data_dir.mkdir(parents=True)
        log = tmp_path / f"scheduler{i}.log"
        with log.open("w") as out:
            env = settings_env(settings)
            processes = [
                subprocess.Popen(
                    command, cwd=ROOT, env={**env, "TAXNAV_DATA_DIR": str(tmp_path / "decoy")} if "--data-dir" in command else env,
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                )
                for command in commands(settings.data_dir)
            ]
        started.append(Scheduler(name, settings, processes, log))
    yield started
    for scheduler in started:  # shown by pytest when the test failed
        print(f"--- {scheduler.name} log ---\n{scheduler.log.read_text()[-4000:]}")
    for scheduler in started:
        for process in scheduler.processes:
            process.send_signal(signal.SIGTERM)  # warm shutdown
    client = redis.Redis.from_url(REDIS_URL)
    for scheduler in started:
        for process in scheduler.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for key in client.scan_iter(f"{scheduler.settings.celery.key_prefix}*"):
            client.delete(key)


def wait_for(predicate, timeout_s: float, what: str, schedulers: list[Scheduler]):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        for scheduler in schedulers:
            scheduler.check_alive()
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}:\n" + "\n".join(s.log.read_text()[-2000:] for s in schedulers))


@pytest.mark.timeout(240)
def test_scheduled_run_finishes_and_records_and_a_concurrent_run_is_refused(schedulers: list[Scheduler]) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    keys = [lock_key(s.settings, MANUAL) for s in schedulers]
    assert all(client.get(key) is None for key in keys)

    # Beat fires at the next minute; each run takes its manual's lock ("<run id> <host>").
    holders = [
        wait_for(lambda key=key: client.get(key), 120, f"{s.name}: the scheduled run to take the lock", schedulers).decode()
        for s, key in zip(schedulers, keys)
    ]

    # A second run, started while the first holds the lock, is refused (not queued behind it).
    seconds = [
        make_ingest_app(s.settings).send_task(INGEST_TASK, kwargs={"manual": MANUAL, "trigger": "api"}, queue=INGEST_QUEUE)
        for s in schedulers
    ]
    for scheduler, key, holder, second in zip(schedulers, keys, holders, seconds):
        refused = second.get(timeout=60)
        assert refused["status"] == "refused" and refused["trigger"] == "api", scheduler.name
        assert holder in refused["message"], scheduler.name
        assert client.get(key) == holder.encode(), scheduler.name  # the first run still holds it

    # Each scheduled run finishes, records its summary and frees the lock.
    for scheduler, key, holder, second in zip(schedulers, keys, holders, seconds):
        run_id = holder.split()[0]
        data_dir = scheduler.settings.data_dir
        (scheduled,) = wait_for(
            lambda: [r for r in read_runs(data_dir) if r.run_id == run_id], 150, f"{scheduler.name}: the run's record", schedulers
        )  # fmt: skip
        assert scheduled.status == "ok", (scheduler.name, scheduled.message)
        assert scheduled.trigger == "schedule"
        assert scheduled.started_at.second < 40  # beat fired it on the minute (give or take a loaded machine)
        assert scheduled.pages == len(SLICE)
        assert set(scheduled.changed_pages) == set(SLICE)  # a first ingest: every page is new
        assert scheduled.removed_pages == []
        assert scheduled.seconds >= PAGE_DELAY_S * len(SLICE) / CRAWL_CONCURRENCY
        assert {m.section_id for m in scheduled.dates_moved} == set(SLICE)  # all new: no date before
        assert all(m.before is None and m.after is not None for m in scheduled.dates_moved)
        # the run records its summary, then frees the lock on its way out
        wait_for(lambda key=key: client.get(key) is None, 30, f"{scheduler.name}: the lock freed", schedulers)

        # Both runs are in the log and served by the gateway, newest first.
        from fastapi.testclient import TestClient  # noqa: PLC0415

        from gateway.app import create_app  # noqa: PLC0415

        served = TestClient(create_app(scheduler.settings)).get("/v1/ingest/runs").json()["runs"]
        refused_id = second.get()["run_id"]
        ours = [(r["run_id"] == run_id, r["trigger"], r["status"], r["pages"]) for r in served if r["run_id"] in (run_id, refused_id)]
        assert ours == [(True, "schedule", "ok", len(SLICE)), (False, "api", "refused", 0)], scheduler.name

    # The ingest service's healthcheck, run as the container's shell runs it, answers 0 for the
    # live worker (it names itself ingest@<hostname>) and fails for a node that is not there.
    done = run_compose("config", "--format", "json")
    kind, healthcheck = json.loads(done.stdout)["services"]["ingest"]["healthcheck"]["test"]
    assert kind == "CMD-SHELL"
    healthcheck = healthcheck.replace("$$", "$").replace("celery ", f"{sys.executable} -m celery ", 1)  # compose unescapes $$
    for scheduler in schedulers:
        env = settings_env(scheduler.settings)
        ok = subprocess.run(["sh", "-c", healthcheck], env={**env, "HOSTNAME": socket.gethostname()}, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert ok.returncode == 0, (scheduler.name, ok.stdout, ok.stderr)
        wrong = subprocess.run(
            ["sh", "-c", healthcheck.replace("--timeout 10", "--timeout 2")], env={**env, "HOSTNAME": "no-such-host"}, cwd=ROOT, capture_output=True, timeout=60
        )  # fmt: skip
        assert wrong.returncode != 0, scheduler.name
