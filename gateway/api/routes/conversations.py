"""Conversations: a thread of questions where each follow-up is read with the turns before it
(services/conversation.py). A turn is answered like ``POST /v1/questions`` (scope guard here,
stages in process or on the workers) and stored with the conversation."""

from __future__ import annotations

from typing import Annotated

from anyio import to_thread
from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from gateway.deps import SettingsDep, StoreDep
from gateway.errors import documented
from services.conversation import ConversationStore, ask, make_conversation_store
from shared.config import Settings
from shared.contracts.conversation import Conversation, ConversationCreated, ConversationQuestion, TurnResult

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])

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
    responses=documented(400, 404, 409, 413, 422, 502, 503, 504),
    summary="Ask a question in a conversation",
    description=(
        "The same body and result as `POST /v1/questions`, plus the turn number and how the question was read "
        "(`follow_up.kind`: first, follow_up or new_subject). A follow-up carries the earlier turns' topic, pages "
        "and verified claims into retrieval. `condition` chooses an option of the previous turn's conflict refusal "
        "(`refusal.evidence.options[].condition`). Waits for the answer. 404 for an unknown or expired "
        "conversation, 409 past the turn limit, 422 for a condition that is not an option."
    ),
)
async def ask_in_conversation(cid: ConversationId, body: ConversationQuestion, request: Request, settings: SettingsDep, questions: StoreDep) -> JSONResponse:
    store = _conversations(request, settings)
    turn = await to_thread.run_sync(ask, store, cid, body, settings, questions)
    return JSONResponse(turn.model_dump(mode="json"))


@router.get(
    "/{cid}",
    response_model=Conversation,
    responses=documented(404, 503),
    summary="A conversation: every turn with its result",
)
async def get_conversation(cid: ConversationId, request: Request, settings: SettingsDep) -> JSONResponse:
    conversation = await to_thread.run_sync(_conversations(request, settings).get, cid)
    return JSONResponse(conversation.model_dump(mode="json"))
