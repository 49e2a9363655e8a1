"""Questions: ask (wait for the answer, or get an id back at once), poll, stream progress.

The scope guard runs here, in the gateway, before anything is dispatched; the stages then
run in process (embedded) or on the Celery workers (distributed), reporting to the
question store that every route below reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Annotated, Literal

from anyio import CapacityLimiter, to_thread
from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import JSONResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel

from gateway.deps import MetricsDep, SettingsDep, StoreDep
from gateway.errors import ApiError, documented, pipeline_error_response
from gateway.metrics import GatewayMetrics
from services.dispatch import submit
from services.errors import PipelineError, from_info
from services.pipeline import new_state
from services.results import QuestionStore, follow, wait_result
from shared.config import Settings
from shared.contracts.api import QuestionRequest, QuestionResult

router = APIRouter(prefix="/v1/questions", tags=["questions"])

# Waiting for an outcome blocks a thread (a Redis read or a condition wait), so waits get
# their own pool of threads instead of starving the one sync routes share.
WAITING_THREADS = 256
_followers: set[asyncio.Future] = set()  # followers of questions nobody waits on (kept from GC)


def _waiters(request: Request) -> CapacityLimiter:
    state = request.app.state
    if getattr(state, "waiters", None) is None:  # made inside the app's event loop
        state.waiters = CapacityLimiter(WAITING_THREADS)
    return state.waiters


QuestionId = Annotated[str, Path(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_-]+$")]


class Pending(BaseModel):
    id: str
    status: Literal["pending"] = "pending"
    stages_done: list[str] = []
    result_url: str
    events_url: str


def _pending(qid: str, stages_done: list[str]) -> JSONResponse:
    body = Pending(id=qid, stages_done=stages_done, result_url=f"/v1/questions/{qid}", events_url=f"/v1/questions/{qid}/events")
    return JSONResponse(body.model_dump(), status_code=202, headers={"Location": body.result_url})


def _start(request: QuestionRequest, settings: Settings, store: QuestionStore) -> str:
    return submit(new_state(request, settings), settings, store)


def _outcome(store: QuestionStore, qid: str, metrics: GatewayMetrics, started: float) -> QuestionResult | PipelineError:
    try:
        outcome: QuestionResult | PipelineError = wait_result(store, qid)
    except PipelineError as exc:
        outcome = exc
    metrics.record(outcome, time.perf_counter() - started)
    return outcome


@router.post(
    "",
    response_model=QuestionResult,
    responses={202: {"model": Pending}, **documented(400, 413, 422, 502, 503, 504)},
    summary="Ask a question",
    description=(
        "Runs the scope guard, then the pipeline. Waits up to the gateway's timeout and returns the result "
        "(an answer of cited, verified sentences, or a typed refusal); with `wait: false` (body) or "
        "`?wait=false` returns 202 with the question's id at once."
    ),
)
async def ask(
    body: QuestionRequest,
    settings: SettingsDep,
    store: StoreDep,
    metrics: MetricsDep,
    request: Request,
    wait: Annotated[bool | None, Query(description="overrides the body's `wait`")] = None,
) -> JSONResponse:
    started = time.perf_counter()
    qid = await to_thread.run_sync(_start, body, settings, store)
    # Followed in every case, so metrics see each outcome once even when nobody waits.
    follower = asyncio.ensure_future(to_thread.run_sync(_outcome, store, qid, metrics, started, limiter=_waiters(request)))
    if not (body.wait if wait is None else wait):
        _followers.add(follower)
        follower.add_done_callback(_followers.discard)
        return _pending(qid, [])
    outcome = await follower
    if isinstance(outcome, PipelineError):
        return pipeline_error_response(outcome)
    return JSONResponse(outcome.model_dump(mode="json"))


def known_question(store: StoreDep, qid: QuestionId) -> str:
    if store.deadline(qid) is None:
        raise ApiError(404, "not_found", f"No question {qid} (unknown, or its result has expired).")
    return qid


KnownQuestion = Annotated[str, Depends(known_question)]


@router.get(
    "/{qid}",
    response_model=QuestionResult,
    responses={202: {"model": Pending}, **documented(404, 502, 503, 504)},
    summary="A question's result (202 while it runs)",
)
def get_question(qid: KnownQuestion, store: StoreDep) -> JSONResponse:
    events = list(follow(store, qid, wait=False))
    last = events[-1] if events else None
    if last is not None and last.kind == "result":
        return JSONResponse(last.result.model_dump(mode="json"))
    if last is not None and last.kind == "error":
        return pipeline_error_response(from_info(last.error))
    return _pending(qid, [e.trace.stage for e in events if e.kind == "stage"])


@router.get(
    "/{qid}/events",
    response_class=EventSourceResponse,
    responses=documented(404),
    summary="Stage progress as server-sent events",
    description=(
        "One `stage` event per stage finished (`{stage, ms, candidates}`), then one `result` event with the "
        "QuestionResult, or one `error` event (`{type, message}`, e.g. a timeout). Events are numbered "
        "from 1 (`id:`); a reconnect with `Last-Event-ID: n` resumes after event n, without one it replays from the start."
    ),
)
async def question_events(
    qid: KnownQuestion,
    store: StoreDep,
    request: Request,
    last_event_id: Annotated[int | None, Header(ge=0, description="resume after this event (the browser sends it on reconnect)")] = None,
) -> AsyncIterator[ServerSentEvent]:
    events = follow(store, qid)  # the same order on every replay, so an event's number is stable
    limiter = _waiters(request)  # each blocking read on the waiting threads, not the shared pool
    number = 0
    while (event := await to_thread.run_sync(next, events, None, limiter=limiter)) is not None:
        number += 1
        if last_event_id is not None and number <= last_event_id:
            continue
        if event.kind == "stage":
            data = {"stage": event.trace.stage, "ms": round(event.trace.ms, 3), "candidates": len(event.trace.candidate_ids)}
            yield ServerSentEvent(event="stage", data=data, id=str(number))
        elif event.kind == "result":
            yield ServerSentEvent(event="result", data=event.result.model_dump(mode="json"), id=str(number))
        else:
            yield ServerSentEvent(event="error", data=event.error.model_dump(), id=str(number))
