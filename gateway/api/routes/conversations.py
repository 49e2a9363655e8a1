"""Conversations: a thread of questions where each follow-up is read with the turns before it
(services/conversations/reading.py; stored by services/conversations/store.py). A turn is answered like ``POST /v1/questions`` (scope guard here,
stages in process or on the workers) and stored with the conversation."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated

from anyio import to_thread
from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from gateway.deps import MetricsDep, SettingsDep, StoreDep, WaitQuery, with_valid_manual
from gateway.errors import documented
from gateway.metrics import GatewayMetrics
from services.api import ConversationStore, make_conversation_store
from services.errors import PipelineError
from services.api import QuestionStore
from shared.config import Settings
from shared.contracts.conversation import (
    Conversation,
    ConversationCreated,
    ConversationQuestion,
    PendingTurn,
    TurnResult,
    TurnStarted,
)

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])
_finishers: set[asyncio.Future] = set()  # turns nobody waits on, finishing (kept from GC)

ConversationId = Annotated[str, Path(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_-]+$")]


def _conversations(request: Request, settings: Settings) -> ConversationStore:
    state = request.app.state
    if getattr(state, "conversations", None) is None:
        state.conversations = make_conversation_store(settings)
    return state.conversations


@router.post(
    "",
    status_code=201,
    response_model=ConversationCreated,
    responses=documented(503),
    summary="Start a conversation",
    description="Returns the conversation's id; post its questions to `questions_url`. It expires `ttl_s` after its last turn.",
)
async def create_conversation(request: Request, settings: SettingsDep) -> JSONResponse:
    store = _conversations(request, settings)
    conversation = await to_thread.run_sync(store.create)
    cid = conversation.id
    body = ConversationCreated(
        id=cid,
        url=f"/v1/conversations/{cid}",
        questions_url=f"/v1/conversations/{cid}/questions",
        page_url=f"/?c={cid}",
        max_turns=store.max_turns,
        ttl_s=store.ttl_s,
    )
    return JSONResponse(body.model_dump(), status_code=201)


@router.post(
    "/{cid}/questions",
    response_model=TurnResult,
    responses={202: {"model": TurnStarted}, **documented(400, 404, 409, 413, 422, 502, 503, 504)},
    summary="Ask a question in a conversation",
    description=(
        "The same body and result as `POST /v1/questions`, plus the turn number and how the question was read "
        "(`follow_up.kind`: first, follow_up or new_subject). A follow-up carries the earlier turns' topic, pages "
        "and verified claims into retrieval. `condition` chooses an option of the previous turn's conflict refusal "
        "(`refusal.evidence.options[].condition`). Waits for the answer; with `wait: false` returns 202 with the "
        "question's id to follow at `events_url` (the turn is stored when it ends). 404 for an unknown or expired "
        "conversation, 409 past the turn limit, 422 for a condition that is not an option; `manual` as for "
        "`POST /v1/questions` (422 `invalid_manual`, 404 `unknown_manual`)."
    ),
)
async def ask_in_conversation(
    cid: ConversationId,
    body: ConversationQuestion,
    request: Request,
    settings: SettingsDep,
    questions: StoreDep,
    metrics: MetricsDep,
    wait: WaitQuery = None,  # type: ignore[assignment]
) -> JSONResponse:
    started = time.perf_counter()
    body = with_valid_manual(settings, body)  # as /v1/questions: a typed 422 or 404 before the turn starts
    store = _conversations(request, settings)
    pending = await to_thread.run_sync(store.start, cid, body, settings, questions)
    # Finished in every case, so the turn is stored even when nobody waits for it.
    finisher = asyncio.ensure_future(to_thread.run_sync(_finish, store, cid, pending, questions, metrics, started))
    if not (body.wait if wait is None else wait):
        _finishers.add(finisher)
        finisher.add_done_callback(_finishers.discard)
        started = TurnStarted(
            id=pending.question_id,
            conversation_id=cid,
            turn=pending.turn,
            follow_up=pending.follow_up,
            result_url=f"/v1/questions/{pending.question_id}",
            events_url=f"/v1/questions/{pending.question_id}/events",
            conversation_url=f"/v1/conversations/{cid}",
        )
        return JSONResponse(started.model_dump(), status_code=202)
    outcome = await finisher
    if isinstance(outcome, PipelineError):
        raise outcome  # the error handler's typed reply (gateway/errors.py)
    return JSONResponse(outcome.model_dump(mode="json"))


def _finish(
    store: ConversationStore, cid: str, pending: PendingTurn, questions: QuestionStore, metrics: GatewayMetrics, started: float
) -> TurnResult | PipelineError:
    """The turn stored, and its outcome counted in /metrics as a question's (it is one)."""
    try:
        outcome: TurnResult | PipelineError = store.finish(cid, pending, questions)
    except PipelineError as exc:
        outcome = exc
    metrics.record(outcome, time.perf_counter() - started)
    return outcome


@router.get(
    "/{cid}",
    response_model=Conversation,
    responses=documented(404, 503),
    summary="A conversation: every turn with its result",
    description="`turns` in order, each a turn result; `pending` lists turns whose questions are still running.",
)
async def get_conversation(cid: ConversationId, request: Request, settings: SettingsDep, questions: StoreDep) -> JSONResponse:
    conversation = await to_thread.run_sync(_conversations(request, settings).get, cid, questions)
    return JSONResponse(conversation.model_dump(mode="json"))
