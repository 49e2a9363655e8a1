"""Embedded questions in worker processes (gateway.embedded_processes) on the real slice index:
answered with their stage events relayed to the gateway's store; a worker killed while a
question is in flight gives that question a typed ``unavailable`` error at once (not a wait
until its deadline), and the next question starts a new pool and is answered."""

from __future__ import annotations

import os
import signal
import time

import pytest

from services.runtime.dispatch import _worker_processes, answer, submit
from services.errors import Unavailable
from services.answering.pipeline import EVERY_QUESTION, new_state
from services.runtime.question_store import MemoryStore, wait_result
from shared.config import Settings
from shared.contracts.api import QuestionRequest

MILEAGE = "how much can my employer pay me per mile for my own car?"
PARTY = "is a staff christmas party a taxable benefit?"


@pytest.fixture(scope="module")
def settings(slice_settings: Settings) -> Settings:
    settings = slice_settings.model_copy(deep=True)
    settings.gateway.embedded_processes = 1
    settings.gateway.wait_timeout_s = 120  # a worker's start (imports, warm-up) on a busy machine
    return settings


def test_a_question_is_answered_in_a_worker_with_its_stage_events(settings: Settings) -> None:
    stages: list[str] = []
    result = answer(QuestionRequest(question=MILEAGE), settings, MemoryStore(), on_event=lambda stage, _trace: stages.append(stage))
    assert result.status == "answered" and result.citations
    assert stages == [stage.name for stage in EVERY_QUESTION]
    assert os.getpid() not in {p.pid for p in _worker_processes(settings.model_dump_json()).pool()._processes.values()}


def test_a_killed_worker_ends_its_question_with_a_typed_error_and_the_next_is_answered(settings: Settings) -> None:
    answer(QuestionRequest(question=MILEAGE), settings, MemoryStore())  # the pool is up and warm
    workers = _worker_processes(settings.model_dump_json())
    store = MemoryStore()
    started = time.monotonic()
    qid = submit(new_state(QuestionRequest(question=PARTY), settings), settings, store)
    for process in list(workers.pool()._processes.values()):
        os.kill(process.pid, signal.SIGKILL)
    with pytest.raises(Unavailable, match="worker process"):
        wait_result(store, qid)
    assert time.monotonic() - started < 30  # the death was noticed, not the 120 s deadline
    again = answer(QuestionRequest(question=PARTY), settings, MemoryStore())
    assert again.status == "answered"
