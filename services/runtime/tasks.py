"""Celery tasks: one per queue, each running that queue's stages (services/answering/pipeline.py STAGES)
on the PipelineState JSON and returning it, so the gateway chains them in pipeline order.

Workers: ``celery -A services.runtime.celery_app worker -Q retrieval`` (and graph, selection,
stitching, verification). Each task reports its stages to the question store; the last
queue's task also builds the result. Tasks acknowledge late and are pure functions of their
input, so a task whose worker was killed is simply run again by another worker.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from celery import Task
from celery.exceptions import Ignore
from celery.signals import worker_ready

from services.runtime.celery_app import celery_app, stage_task_name
from services.runtime.dispatch import QuestionEnded, finish_to_store, reporter
from services.errors import PipelineTimeout, as_info
from services.answering.pipeline import STAGE_QUEUES, STAGES, answering_for
from services.runtime.question_store import REDIS_CONNECTIONS, RedisStore
from services.runtime.wire import WireState, encode, rebuild
from shared.config import Settings, get_settings
from shared.contracts.events import QuestionEvent


log = logging.getLogger(__name__)


@worker_ready.connect
def warm_up(sender: object = None, **_: object) -> None:
    """Before the first task, build this worker's stage components (once per process) and load
    what its queues would otherwise load on their first question (a couple of seconds): the
    index; the embedder (retrieval); the chunk vectors, the corpus term statistics and the
    rankers (selection and stitching score with them)."""
    consumed = {queue.name for queue in getattr(getattr(sender, "task_consumer", None), "queues", [])}
    warm_queues(consumed, get_settings())


def warm_queues(queues: set[str], settings: Settings) -> None:
    try:
        answering_for(settings).warm_up(queues)
    except Exception as exc:  # noqa: BLE001  (the first task reports a real problem as a typed error)
        log.warning("warm-up skipped: %s", exc)


@lru_cache(maxsize=1)
def _store() -> RedisStore:
    # Sized at worker_init from the worker's concurrency (services/runtime/celery_app.py); a process
    # that is no worker (a test calling run_queue) keeps the gateway's size.
    return RedisStore(get_settings(), celery_app.conf.redis_max_connections or REDIS_CONNECTIONS)


def run_queue(queue: str, state_json: str) -> str:
    """This queue's stages on the state; raises Ignore (the chain stops, nothing logged as a
    failure) for a question that has ended or is past its deadline: a client told "timeout"
    never has the question go on, let alone complete."""
    settings = get_settings()
    answering = answering_for(settings)  # built at the worker's warm-up: the lookup only
    store = _store()
    # Page bundles travel as chunk ids (services/runtime/wire.py): the query id is read first, so
    # that chunks missing from this worker's index are recorded as the question's error.
    arrived = WireState.model_validate_json(state_json)
    qid = arrived.query.id
    deadline = store.deadline(qid)
    if deadline is None:  # its record expired: nobody can read an outcome any more
        raise Ignore()
    try:
        # The hop's one index generation: the chunks the state names are taken from it and
        # its stages read it (a state that came whole opens it with its first stage).
        index = answering.open(arrived.query.manual) if arrived.generation is not None else None
        state = rebuild(arrived, index)
        stages = [stage for stage in STAGES if stage.queue == queue]
        state = answering.run(stages, state, reporter(store, qid), deadline, index)
        if queue == STAGE_QUEUES[-1]:
            finish_to_store(state, settings, store, index)
        return encode(state, settings)
    except QuestionEnded:  # its follower recorded a timeout (or another run of the task ended it)
        raise Ignore() from None
    except PipelineTimeout as exc:
        # Past the deadline before a stage: end the question as a timeout here (unless its
        # follower already did), the stages after it are not run.
        store.add(qid, QuestionEvent(kind="error", error=exc.info()))
        raise Ignore() from None
    except Exception as exc:
        # The chain stops here: record the typed error so the client does not wait it out.
        store.add(qid, QuestionEvent(kind="error", error=as_info(exc)))
        raise


def _make_task(queue: str) -> Task:
    # The state travels as a JSON string: pydantic (de)serialises it natively, several
    # times faster than a dict through Celery's JSON encoder.
    def stage_task(state_json: str) -> str:
        return run_queue(queue, state_json)

    stage_task.__name__ = stage_task.__qualname__ = queue
    return celery_app.task(
        stage_task, name=stage_task_name(queue), acks_late=True, reject_on_worker_lost=True, ignore_result=True,
        shared=False,  # on the stage app only, not on every app this process makes
    )


STAGE_TASKS: dict[str, Task] = {queue: _make_task(queue) for queue in STAGE_QUEUES}
