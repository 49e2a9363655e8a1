"""Faults in distributed mode, with real worker processes: a worker SIGKILLed in the middle
of a question (its task is handed to another worker and the question is answered), and a
model that keeps failing (a typed error, not a hang). Selection, stitching and verification
run the mistral provider against the local STAND-IN for Mistral's API
(tests/support/mistral_standin.py), which lets the test hold a call open while it kills the
worker making it."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from services.runtime.dispatch import answer, submit
from services.errors import PipelineTimeout, ProviderError
from services.answering.pipeline import new_state
from services.runtime.question_store import RedisStore, follow, wait_result
from services.runtime.workers import WorkerPool, purge
from shared.config import Settings
from shared.contracts.api import QuestionRequest, QuestionResult
from tests.services.runtime.test_distributed import QUESTIONS, WARM_UP_S, comparable, distributed_settings, worker_env
from tests.support.mistral_standin import MistralStandin, Reply, grounded_chat

pytestmark = pytest.mark.distributed

QUESTION = "how much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?"
MODEL_QUEUES = ("selection", "stitching", "verification")


def is_selection(body: dict) -> bool:
    from services.providers.prompts import SELECT_SYSTEM  # noqa: PLC0415

    return body["messages"][0]["content"].startswith(SELECT_SYSTEM)


@pytest.fixture(scope="module")
def standin():
    with MistralStandin() as server:
        server.chat_handler = grounded_chat
        yield server


@pytest.fixture(scope="module")
def cluster(slice_settings: Settings, standin: MistralStandin, tmp_path_factory: pytest.TempPathFactory):
    settings = distributed_settings(slice_settings, f"test-faults-{uuid.uuid4().hex[:8]}:")
    # A killed worker's task is handed out again after 4 s. (A task still running after that
    # is handed out too: harmless, as stages are pure and readers take the first outcome.)
    base = worker_env(settings) | {"TAXNAV_CELERY__VISIBILITY_TIMEOUT_S": "4", "TAXNAV_CELERY__RESTORE_INTERVAL_S": "1"}
    model = {
        "TAXNAV_MODELS__PROVIDER": "mistral",
        "TAXNAV_MODELS__MISTRAL_SERVER_URL": standin.base_url,
        "TAXNAV_MODELS__MISTRAL_API_KEY": standin.api_key,
        "TAXNAV_MODELS__MAX_RETRIES": "0",
        "TAXNAV_MODELS__TIMEOUT_S": "30",
    }
    with WorkerPool(base, log_dir=tmp_path_factory.mktemp("fault-worker-logs")) as pool:
        pool.start("retrieval")
        pool.start("graph")
        for queue in MODEL_QUEUES:
            pool.start(queue, name=f"{queue}-first", env=model)
        patient = settings.model_copy(deep=True)
        patient.gateway.wait_timeout_s = WARM_UP_S
        baseline = answer(QuestionRequest(question=QUESTION), patient)
        assert baseline.status == "answered"
        yield settings, pool, model, baseline
    purge(settings)


def test_worker_killed_mid_question_is_retried_by_another_and_answers(cluster, standin):
    settings, pool, model, baseline = cluster
    settings = settings.model_copy(deep=True)
    settings.gateway.wait_timeout_s = 60
    held = threading.Event()
    calls = {"selection": 0}

    def slow_first_selection(body: dict) -> Reply | str:
        if is_selection(body):
            calls["selection"] += 1
            if calls["selection"] == 1:
                held.set()
                return Reply(content=grounded_chat(body), delay_s=20)  # the worker dies while it waits
        return grounded_chat(body)

    standin.chat_handler = slow_first_selection
    outcome: dict[str, QuestionResult | BaseException] = {}

    def ask() -> None:
        try:
            outcome["result"] = answer(QuestionRequest(question=QUESTION), settings)
        except BaseException as exc:  # noqa: BLE001  (reported below)
            outcome["result"] = exc

    started = time.monotonic()
    asker = threading.Thread(target=ask)
    asker.start()
    try:
        assert held.wait(30), "the selection worker never called the model"
        pool.kill("selection-first")  # SIGKILL: its task is unacknowledged
        pool.start("selection", name="selection-second", env=model)
        asker.join(60)
        assert not asker.is_alive(), "the question hung"
    finally:
        standin.chat_handler = grounded_chat
    result = outcome["result"]
    assert isinstance(result, QuestionResult), result
    assert calls["selection"] >= 2  # the same task, run again by the second worker
    assert comparable(result) == comparable(baseline)
    assert time.monotonic() - started < 45


def test_a_model_that_keeps_failing_is_a_typed_error_within_the_timeout(cluster, standin):
    settings, _, _, _ = cluster
    standin.chat_handler = lambda body: Reply(status=500, raw='{"message": "stand-in: model down"}')
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError, match="selection failed"):
            answer(QuestionRequest(question=QUESTION), settings)
    finally:
        standin.chat_handler = grounded_chat
    assert time.monotonic() - started < settings.gateway.wait_timeout_s


def test_a_question_past_its_deadline_is_not_carried_on_by_any_worker(cluster, standin):
    """The client is told "timeout" at the deadline; the selection call in hand is cut there
    (its worker is free long before the model would have replied), no later stage runs for
    that question, and its stored outcome stays the timeout the client was told."""
    settings, _, _, _ = cluster
    hold_s, timed = 12.0, settings.model_copy(deep=True)
    timed.gateway.wait_timeout_s = 3
    held = QUESTIONS[1]

    def slow_selection(body: dict) -> Reply | str:
        if is_selection(body) and held in body["messages"][1]["content"]:
            return Reply(content=grounded_chat(body), delay_s=hold_s)
        return grounded_chat(body)

    standin.chat_handler = slow_selection
    store = RedisStore(timed)
    started = time.monotonic()
    try:
        qid = submit(new_state(QuestionRequest(question=held), timed), timed, store)
        with pytest.raises(PipelineTimeout):
            wait_result(store, qid)
        told_s = time.monotonic() - started
        assert told_s < timed.gateway.wait_timeout_s + 2
        following = answer(QuestionRequest(question=QUESTION), settings)  # the same selection worker
    finally:
        standin.chat_handler = grounded_chat
    assert following.status == "answered"
    assert time.monotonic() - started < hold_s  # the held call did not keep its worker busy
    time.sleep(2)  # any stage still running for the held question would report by now
    later = [(p, b) for p, b in standin.requests if p == "/v1/chat/completions" and held in b["messages"][1]["content"]]
    assert len(later) == 1 and is_selection(later[0][1])  # no stitching, no verification, no second selection
    events = list(follow(store, qid, wait=False))
    assert events[-1].kind == "error" and events[-1].error.type == "timeout"
    assert [e.trace.stage for e in events if e.kind == "stage"] == ["retrieval", "expansion", "rollup"]
