"""Messages between the question stages.

Each stage is a small typed function (its own input message in, its own output out); the
pipeline carries them in one envelope, ``PipelineState``, so that the embedded runner and
the Celery chain move the same JSON between stages.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from shared.contracts.api import ClaimRole, QuestionResult, Refusal, Sentence, StageTrace
from shared.contracts.conversation import ConversationContext
from shared.contracts.corpus import Chunk
from shared.contracts.refusals import Route

HitSource = Literal["bm25", "vector", "title", "hybrid", "xref", "sibling", "context"]  # title: a page whose title the question restates; context: an earlier turn's page


class Query(BaseModel):
    id: str
    question: str  # what the stages search and answer
    manual: str
    # the person's own words, when the stages answer only part of them (the rest of a life
    # event routed to another manual); empty when they answer the question as asked
    asked: str = ""


class ScoredChunk(BaseModel):
    chunk_id: str
    score: float
    source: HitSource
    via: str | None = None  # the chunk or page that brought a graph neighbour in


class RetrievalResult(BaseModel):
    hits: list[ScoredChunk]
    # The query embedding, carried so later stages (possibly other worker processes) do not
    # embed the question again. Empty when vectors are switched off.
    query_vector: list[float] = Field(default_factory=list)


class ExpansionResult(BaseModel):
    hits: list[ScoredChunk]  # retrieval hits plus decayed neighbours


class PageBundle(BaseModel):
    section_id: str
    score: float
    chunks: list[Chunk]  # best-scoring chunk first


class RollupResult(BaseModel):
    pages: list[PageBundle]


class SelectionResult(BaseModel):
    pages: list[PageBundle]
    dropped: list[str] = Field(default_factory=list)  # section ids not kept


class DraftSentence(BaseModel):
    text: str
    citations: list[str]  # paragraph ids, only from selected pages
    role: ClaimRole = "answer"


class Draft(BaseModel):
    sentences: list[DraftSentence]  # verification turns these into verdict-carrying Sentences


class VerificationResult(BaseModel):
    sentences: list[Sentence]  # each draft sentence with its verdict and a one-line reason
    faithfulness: float  # supported / claims


class PipelineState(BaseModel):
    query: Query
    context: ConversationContext | None = None  # a conversation turn: what earlier turns established
    retrieval: RetrievalResult | None = None
    expansion: ExpansionResult | None = None
    rollup: RollupResult | None = None
    selection: SelectionResult | None = None
    draft: Draft | None = None
    verification: VerificationResult | None = None
    refusal: Refusal | None = None  # set by any stage: later stages pass the state through
    routes: list[Route] = Field(default_factory=list)  # parts of the question another manual covers
    result: QuestionResult | None = None
    trace: list[StageTrace] = Field(default_factory=list)
