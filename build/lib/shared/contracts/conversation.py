"""Conversations: a thread of questions where each follow-up is read with the turns before it.

``ConversationContext`` is what a follow-up carries down the pipeline (inside the
PipelineState, so a distributed worker gets it in the message, never from another worker's
memory); the other models are what the API stores and returns.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from shared.contracts.api import QuestionRequest, QuestionResult
from shared.contracts.refusals import ConflictOption

MAX_CONDITION_CHARS = 500
# first: no earlier turn; follow_up: read with the turns before it; new_subject: asked after
# other turns but about something else, so answered on its own.
TurnKind = Literal["first", "follow_up", "new_subject"]


class CarriedClaim(BaseModel):
    """A verified answer sentence of an earlier turn, with its citations."""

    text: str
    citations: list[str]
    turn: int = 0  # the turn that verified it


class ConversationContext(BaseModel):
    """The follow-up's reading of the conversation, carried in the pipeline state."""

    kind: TurnKind
    asked: str  # the person's own words (the query's question is what the stages read)
    topic: str = ""  # the question that opened the current subject
    carried_sections: list[str] = Field(default_factory=list)  # earlier pages retrieval also searches
    # pages one cross-reference hop from the pages earlier answers cited: where the manual's
    # authors send the reader for the detail a narrowing follow-up asks about
    linked_sections: list[str] = Field(default_factory=list)
    claims: list[CarriedClaim] = Field(default_factory=list)  # earlier verified claims on those pages
    chosen: ConflictOption | None = None  # a conflict option chosen in this turn
    excluded_sections: list[str] = Field(default_factory=list)  # the options not chosen
    reasons: list[str] = Field(default_factory=list)  # why it is (or is not) a follow-up


class ConversationQuestion(QuestionRequest):
    """``POST /v1/conversations/{id}/questions``: a question, and optionally the condition of
    a conflict option of the previous turn (choosing it is this turn)."""

    condition: str | None = Field(default=None, min_length=1, max_length=MAX_CONDITION_CHARS)  # "" is no option's condition


class FollowUpInfo(BaseModel):
    kind: TurnKind
    searched: str  # the question as the pipeline read it
    carried_sections: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)


class TurnResult(QuestionResult):
    """A conversation turn's result: the question result, its turn number and how it was read."""

    conversation_id: str
    turn: int  # 1 for the first question
    condition: str | None = None
    follow_up: FollowUpInfo


class PendingTurn(BaseModel):
    """A turn whose question is still in the pipeline: it keeps its number, and the next turn
    (or any reader) settles it from the question store before reading the conversation."""

    turn: int
    question_id: str
    question: str
    condition: str | None = None
    follow_up: FollowUpInfo


class Conversation(BaseModel):
    id: str
    created_at: datetime
    updated_at: datetime
    max_turns: int
    turns: list[TurnResult] = Field(default_factory=list)
    pending: list[PendingTurn] = Field(default_factory=list)


class TurnStarted(BaseModel):
    """``wait: false``: the turn's question id; follow it like any question."""

    id: str
    conversation_id: str
    turn: int
    follow_up: FollowUpInfo
    status: Literal["pending"] = "pending"
    result_url: str
    events_url: str
    conversation_url: str


class ConversationCreated(BaseModel):
    id: str
    url: str  # GET it for every turn
    questions_url: str  # POST follow-ups here
    page_url: str  # the web page that reopens it
    max_turns: int
    ttl_s: int

