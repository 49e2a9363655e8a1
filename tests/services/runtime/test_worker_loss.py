"""What a worker's death or a Redis restart may not cost, with real parts: a private
redis-server (never the shared one), real Celery worker processes on the ingested slice.

- A message handed to a worker at the moment it dies is answered by another worker. Kombu's
  BRPOP removed it from the queue before the worker recorded it as unacknowledged: a worker
  stopped (as a starved container is) with the reply unread, then killed, lost it for good and
  its question ran into the deadline (shared/celery_base.py InflightChannel).
- A worker of the compose services' kind (prefork, a task in hand) rides out a Redis restart
  and answers afterwards. Its reconnect restored the unacknowledged message on a channel whose
  connection was gone ("Unrecoverable error: AttributeError: 'NoneType' object has no
  attribute 'hostname'"), and the task's late ack on it died the same way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
import redis

from services.runtime.celery_app import stage_task_name
from services.runtime.dispatch import celery_for
from services.answering.pipeline import STAGES, new_state, run_stages
from services.runtime.question_store import RedisStore, wait_result
from services.runtime.wire import encode
from services.runtime.workers import WorkerPool, worker_command
from shared.config import Settings
from shared.contracts.api import QuestionRequest
from tests.services.runtime.test_distributed import distributed_settings, worker_env
from tests.support.mistral_standin import MistralStandin, Reply, grounded_chat
from tests.support.redis_server import PrivateRedis

pytestmark = pytest.mark.distributed

QUESTION = "how much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?"
LATER_QUEUES = ("selection", "stitching", "verification")
QUICK_RESTORE = {"TAXNAV_CELERY__VISIBILITY_TIMEOUT_S": "4", "TAXNAV_CELERY__RESTORE_INTERVAL_S": "1"}


def takers(client: redis.Redis) -> int:
    """Connections blocked waiting for a message (BRPOP or BLMOVE) on this private Redis."""
    return sum(1 for c in client.client_list() if c.get("cmd") in ("brpop", "blmove") and "b" in c.get("flags", ""))


def eventually(check, timeout_s: float, every_s: float = 0.2):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout_s
    while not (value := check()):
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(every_s)
    return value


def cluster_settings(slice_settings: Settings, server: PrivateRedis) -> Settings:
    settings = distributed_settings(slice_settings, f"test-loss-{uuid.uuid4().hex[:6]}:")
    settings.redis_url = server.url
    return settings


def send_from_selection(slice_settings: Settings, settings: Settings, store: RedisStore, deadline: float) -> str:
    """A question whose retrieval and graph stages ran here: its selection message is sent to
    the workers (then stitching, verification), as the graph worker would send it. Its id."""
    from celery import chain  # noqa: PLC0415

    state = new_state(QuestionRequest(question=QUESTION), slice_settings)
    state = run_stages([s for s in STAGES if s.queue not in LATER_QUEUES], state, slice_settings, lambda _t: None)
    store.start(state.query.id, deadline)
    app = celery_for(settings)
    expires = datetime.fromtimestamp(deadline, tz=timezone.utc)
    signatures = [app.signature(stage_task_name(q), queue=q, expires=expires, ignore_result=True) for q in LATER_QUEUES]
    signatures[0].args = (encode(state, settings),)
    chain(*signatures).apply_async()
    return state.query.id


def test_a_message_taken_by_a_worker_as_it_dies_is_answered_by_another(slice_settings: Settings, tmp_path: Path) -> None:
    with PrivateRedis(tmp_path) as server:
        settings = cluster_settings(slice_settings, server)
        with WorkerPool(worker_env(settings) | QUICK_RESTORE, log_dir=tmp_path) as pool:
            client, store = server.client(), RedisStore(settings)
            victim = pool.start("selection")
            eventually(lambda: takers(client) == 1, timeout_s=120)  # warmed up, waiting on its queue
            pid = pool.processes[victim].pid
            while True:  # stopped while its take is pending at Redis (each lasts 1 s, then is sent again)
                os.kill(pid, signal.SIGSTOP)
                if takers(client) == 1:
                    break
                os.kill(pid, signal.SIGCONT)
                time.sleep(0.05)
            qid = send_from_selection(slice_settings, settings, store, deadline=time.time() + 150)
            selection_key = f"{settings.celery.key_prefix}selection"
            eventually(lambda: client.llen(selection_key) == 0, timeout_s=5)  # handed to the stopped worker
            time.sleep(0.5)
            pool.kill(victim)  # dies with the message on the wire or unread
            for queue in LATER_QUEUES:
                pool.start(queue)
            result = wait_result(store, qid)  # the deadline's PipelineTimeout when the message was lost
            assert result.status == "answered" and result.id == qid


def test_a_prefork_worker_with_a_task_in_hand_rides_out_a_redis_restart(
    slice_settings: Settings, standin: MistralStandin, tmp_path: Path
) -> None:
    holding = {"selection": 0}

    def slow_selection(body: dict) -> Reply | str:
        from services.providers.mistral import SELECT_SYSTEM  # noqa: PLC0415

        if body["messages"][0]["content"].startswith(SELECT_SYSTEM):
            holding["selection"] += 1
            if holding["selection"] == 1:
                return Reply(content=grounded_chat(body), delay_s=8)  # in hand through the restart
        return grounded_chat(body)

    standin.chat_handler = slow_selection
    model = {
        "TAXNAV_MODELS__PROVIDER": "mistral", "TAXNAV_MODELS__MISTRAL_SERVER_URL": standin.base_url,
        "TAXNAV_MODELS__MISTRAL_API_KEY": standin.api_key, "TAXNAV_MODELS__MAX_RETRIES": "0",
    }  # fmt: skip
    with PrivateRedis(tmp_path) as server:
        settings = cluster_settings(slice_settings, server)
        env = {**os.environ, **worker_env(settings), **QUICK_RESTORE, **model}
        # As compose runs it: the prefork pool, two processes, the task in a child.
        command = [arg for arg in worker_command("selection", "prefork") if arg not in ("--pool", "solo")]
        command += ["--concurrency", "2", "--loglevel", "info"]
        with open(tmp_path / "prefork.log", "wb") as log, WorkerPool(env | model, log_dir=tmp_path) as pool:
            worker = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                client, store = server.client(), RedisStore(settings)
                eventually(lambda: takers(client) == 1, timeout_s=120)
                for queue in ("stitching", "verification"):
                    pool.start(queue)
                first = send_from_selection(slice_settings, settings, store, deadline=time.time() + 120)
                eventually(lambda: holding["selection"] == 1, timeout_s=60)  # the task is in hand
                server.stop()
                time.sleep(3)  # the worker's reconnects are refused meanwhile
                server.start()
                time.sleep(10)  # the held task ends and acks on the channel of the lost connection
                assert worker.poll() is None, (tmp_path / "prefork.log").read_text(errors="replace")[-3000:]
                second = send_from_selection(slice_settings, settings, store, deadline=time.time() + 90)
                assert wait_result(store, second).status == "answered"
                assert wait_result(store, first).status == "answered"  # handed out again, or finished
                assert worker.poll() is None
            finally:
                worker.terminate()
                worker.wait(30)
