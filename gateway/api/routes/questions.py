"""Questions: ask (wait for the answer, or get an id back at once), poll, stream progress.

The scope guard runs here, in the gateway, before anything is dispatched; the stages then
run in process (embedded) or on the Celery workers (distributed), reporting to the
question store that every route below reads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Literal

from anyio import CapacityLimiter, to_thread
from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import JSONResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel

from gateway.deps import MetricsDep, SettingsDep, StoreDep, WaitQuery, with_valid_manual
from gateway.errors import ApiError, documented, redact
from gateway.metrics import GatewayMetrics
from services.api import Admission, record_refusal, submit
from services.errors import PipelineError, as_info, from_info
from services.api import new_state
from services.api import MAX_WAITERS, QuestionStore, follow, wait_result
from shared.config import Settings
from shared.contracts.api import QuestionRequest, QuestionResult
from shared.contracts.events import QuestionEvent

router = APIRouter(prefix="/v1/questions", tags=["questions"])
log = logging.getLogger(__name__)

_followers: set[asyncio.Future] = set()  # followers of questions nobody waits on (kept from GC)


def _streams(request: Request) -> CapacityLimiter:
    """Threads for event streams' blocking reads (a Redis read or a condition wait), apart from
    the pool sync routes share."""
    state = request.app.state
    if getattr(state, "streams", None) is None:  # made inside the app's event loop
        state.streams = CapacityLimiter(MAX_WAITERS)
    return state.streams


def _admission(request: Request, settings: Settings) -> Admission:
    """Questions in flight, with a follower thread each (never queued: one per slot) and, apart,
    a few threads for scope-guard refusals so they never wait behind either."""
    state = request.app.state
    if getattr(state, "admission", None) is None:
        state.admission = Admission(min(settings.gateway.max_in_flight, MAX_WAITERS))
        state.followers = CapacityLimiter(state.admission.limit)
        state.refusals = CapacityLimiter(REFUSAL_THREADS)
    return state.admission


REFUSAL_THREADS = 8
MAX_EVENT_ID = 1_000_000  # far above the events any question has (its stages, then one end)


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


def _outcome(store: QuestionStore, qid: str, metrics: GatewayMetrics, started: float, admission: Admission) -> QuestionResult | PipelineError:
    try:
        outcome: QuestionResult | PipelineError = wait_result(store, qid)
    except PipelineError as exc:
        outcome = exc
    finally:
        admission.leave()  # the question has ended (result, error or a recorded timeout)
    metrics.record(outcome, time.perf_counter() - started)
    return outcome


@router.post(
    "",
    response_model=QuestionResult,
    responses={202: {"model": Pending}, **documented(400, 401, 404, 408, 413, 422, 429, 502, 503, 504)},
    summary="Ask a question",
    description=(
        "Runs the scope guard, then the pipeline. Waits up to the gateway's timeout and returns the result "
        "(an answer of cited, verified sentences, or a typed refusal); with `wait: false` (body) or "
        "`?wait=false` returns 202 with the question's id at once. Past the gateway's limit of questions in "
        "flight: 503 `overloaded` with Retry-After (refusals decided by the scope guard are never held back). "
        "`manual` must be one of the ingested manuals (404 `unknown_manual` lists them)."
    ),
)
async def ask(
    body: QuestionRequest,
    settings: SettingsDep,
    store: StoreDep,
    metrics: MetricsDep,
    request: Request,
    wait: WaitQuery = None,  # type: ignore[assignment]
) -> JSONResponse:
    started = time.perf_counter()
    admission = _admission(request, settings)
    body = with_valid_manual(settings, body)
    waiting = body.wait if wait is None else wait
    # The scope guard: text rules, and the ingested manuals' cached listing (a stat and a
    # readlink per manual, shared/generation.py): cheaper on the event loop than a thread hop.
    state = new_state(body, settings)
    if state.refusal is not None:
        if store.blocking:
            result = await to_thread.run_sync(record_refusal, state, settings, store, limiter=request.app.state.refusals)
        else:  # in memory: microseconds, and a thread hop would wait on the pipeline's threads for the GIL
            result = record_refusal(state, settings, store)
        metrics.record(result, time.perf_counter() - started)
        return JSONResponse(result.model_dump(mode="json")) if waiting else _pending(result.id, [])
    if not admission.enter():
        raise ApiError(
            503, "overloaded", f"The gateway has {admission.limit} questions in flight; ask again shortly.",
            headers={"Retry-After": str(settings.gateway.retry_after_s)},
        )  # fmt: skip
    try:
        qid = await to_thread.run_sync(submit, state, settings, store)
    except BaseException:
        admission.leave()
        raise
    # Followed in every case, so metrics see each outcome once and the admission slot is
    # given back when the question ends, even when nobody waits.
    followers = request.app.state.followers
    follower = asyncio.ensure_future(to_thread.run_sync(_outcome, store, qid, metrics, started, admission, limiter=followers))
    if not waiting:
        _followers.add(follower)
        follower.add_done_callback(_followers.discard)
        return _pending(qid, [])
    outcome = await follower
    if isinstance(outcome, PipelineError):
        raise outcome  # the error handler's typed reply (gateway/errors.py)
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
        raise from_info(last.error)
    return _pending(qid, [e.trace.stage for e in events if e.kind == "stage"])


@router.get(
    "/{qid}/events",
    response_class=EventSourceResponse,
    responses=documented(404, media_type="application/json"),  # errors are JSON, not the stream's type
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
    # int, not int | None: a header is absent or a number (the schema's null would be sent as "null")
    last_event_id: Annotated[int, Header(ge=0, le=MAX_EVENT_ID, description="resume after this event (the browser sends it on reconnect)")] = None,  # type: ignore[assignment]
) -> AsyncIterator[ServerSentEvent]:
    events = follow(store, qid)  # the same order on every replay, so an event's number is stable
    limiter = _streams(request)  # each blocking read on the stream threads, not the shared pool
    number = 0
    while (event := await _next_event(events, limiter)) is not None:
        number += 1
        if last_event_id is not None and number <= last_event_id:
            continue
        if event.kind == "stage":
            data = {"stage": event.trace.stage, "ms": round(event.trace.ms, 3), "candidates": len(event.trace.candidate_ids)}
            yield ServerSentEvent(event="stage", data=data, id=str(number))
        elif event.kind == "result":
            yield ServerSentEvent(event="result", data=event.result.model_dump(mode="json"), id=str(number))
        else:
            yield ServerSentEvent(event="error", data={"type": event.error.type, "message": redact(event.error.message)}, id=str(number))


async def _next_event(events: Iterator[QuestionEvent], limiter: CapacityLimiter) -> QuestionEvent | None:
    """The stream's next event; a read that fails (Redis gone mid-stream) ends the stream with
    its typed error, as the last event, rather than with a bare end-of-stream."""
    try:
        return await to_thread.run_sync(next, events, None, limiter=limiter)
    except Exception as exc:  # noqa: BLE001  (raised inside it, the follower is over: the next call gives None)
        if not isinstance(exc, PipelineError):
            log.warning("event stream failed: %s", type(exc).__name__)
        return QuestionEvent(kind="error", error=as_info(exc))
