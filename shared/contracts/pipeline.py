"""Messages between the question stages.

Each stage is a small typed function (its own input message in, its own output out); the
pipeline carries them in one envelope, ``PipelineState``, so that the embedded runner and
the Celery chain move the same JSON between stages.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from shared.contracts.api import ClaimRole, QuestionResult, Refusal, Relevance, Sentence, StageTrace
from shared.contracts.conversation import ConversationContext
from shared.contracts.corpus import Chunk
from shared.contracts.question import QuestionReading
from shared.contracts.refusals import Findings, Route

HitSource = Literal["bm25", "vector", "title", "hybrid", "xref", "sibling", "context"]  # title: a page whose title the question restates; context: an earlier turn's page


class Query(BaseModel):
    id: str
    question: str  # what the stages search and answer
    manual: str
    # the person's own words, when the stages answer only part of them (the rest of a life
    # event routed to another manual); empty when they answer the question as asked
    asked: str = ""
    focus: str | None = None  # a page the person chose among the answer's alternatives: it leads
    reading: QuestionReading  # what ``question`` asks, read once (services/text/reading.py ``new_query``)


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
    pages: list[PageBundle]  # best first; a page's score is the page ranker's probability that it answers
    dropped: list[str] = Field(default_factory=list)  # section ids not kept
    # pages nearly as likely to answer as the first but about another subject (the gym: club
    # fees or sports facilities), offered to the reader to ask again about
    alternatives: list[str] = Field(default_factory=list)
    # the page probability from which a page's claims answer rather than give background (None: no ranker)
    answering_threshold: float | None = None


class DraftSentence(BaseModel):
    text: str
    citations: list[str]  # paragraph ids, only from selected pages
    role: ClaimRole = "answer"
    relevance: Relevance | None = None  # answer claims: whether its page answers the question or gives background
    confidence: float | None = None  # the page ranker's probability that the claim's page answers


class Draft(BaseModel):
    sentences: list[DraftSentence]  # verification turns these into verdict-carrying Sentences
    # how sure the service is that the answer part answers (the answers model's calibrated
    # probability, services/ranking/assurance.py); None without that model
    confidence: float | None = None
    may_not_answer: bool = False  # below the model's threshold: no claim is marked as answering


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
    # what the stages found that may refuse; services/answering/refusals/decide.py turns the
    # first finding that refuses into ``refusal`` after each stage
    findings: Findings = Field(default_factory=Findings)
    refusal: Refusal | None = None  # once set, later stages pass the state through
    routes: list[Route] = Field(default_factory=list)  # parts of the question another manual covers
    result: QuestionResult | None = None
    trace: list[StageTrace] = Field(default_factory=list)
