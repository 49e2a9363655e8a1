"""What a client receives for a question: an answer of cited, verified sentences or a typed refusal."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

Verdict = Literal["supported", "partially_supported", "unsupported", "contradicted"]
# "answer": the sentences that answer the question; "detail": further sentences of the
# manual that qualify it (conditions, exceptions, figures), shown after the answer.
ClaimRole = Literal["answer", "detail"]
RefusalCategory = Literal["out_of_scope", "low_coverage", "conflict", "stale", "malformed"]
MAX_QUESTION_CHARS = 2000


class QuestionRequest(BaseModel):
    # Length and content are checked by the scope guard, which answers with a typed
    # `malformed` refusal rather than a validation error.
    question: str
    manual: str | None = None
    wait: bool = True


class Sentence(BaseModel):
    text: str
    citations: list[str]  # paragraph ids
    verdict: Verdict
    reason: str
    role: ClaimRole = "answer"


class Answer(BaseModel):
    sentences: list[Sentence]
    faithfulness: float
    # how old the answer's figures are: the newest ``public_updated_at`` of the pages it cites
    as_of: datetime | None = None


class Refusal(BaseModel):
    category: RefusalCategory
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)


class Citation(BaseModel):
    paragraph_id: str
    section_id: str
    title: str
    heading_path: list[str]
    text: str
    url: str
    public_updated_at: datetime


class StageTrace(BaseModel):
    stage: str
    ms: float
    candidate_ids: list[str] = Field(default_factory=list)


class QuestionResult(BaseModel):
    id: str
    question: str
    status: Literal["answered", "refused"]
    answer: Answer | None = None
    refusal: Refusal | None = None
    citations: list[Citation] = Field(default_factory=list)
    trace: list[StageTrace] = Field(default_factory=list)
