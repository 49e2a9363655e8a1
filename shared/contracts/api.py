"""What a client receives for a question: an answer of cited, verified sentences or a typed refusal."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from shared.contracts.refusals import RefusalEvidence, Route
from shared.generation import MANUAL_REQUEST, MAX_MANUAL_CHARS

Verdict = Literal["supported", "partially_supported", "unsupported", "contradicted"]
# "answer": the sentences that answer the question; "detail": further sentences of the
# manual that qualify it (conditions, exceptions, figures), shown after the answer.
ClaimRole = Literal["answer", "detail"]
# an answer claim's page: likely to answer the question (the page ranker's probability at or
# above its learned threshold), or related background
Relevance = Literal["answering", "background"]
SECTION_ID = r"^[A-Z]{2,5}\d{4,6}$"  # a manual page's id (EIM31240)
RefusalCategory = Literal["out_of_scope", "low_coverage", "conflict", "stale", "malformed"]
MAX_QUESTION_CHARS = 2000
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Text as the pipeline and every response can carry it: NFC, and a lone UTF-16 surrogate
    (valid JSON, not encodable as UTF-8) replaced by U+FFFD."""
    return unicodedata.normalize("NFC", LONE_SURROGATE.sub("\ufffd", text))


class QuestionRequest(BaseModel):
    # Length and content are checked by the scope guard, which answers with a typed
    # `malformed` refusal rather than a validation error.
    question: str
    manual: str | None = Field(
        default=None, description="an ingested manual's name, any case (422 `invalid_manual` for one that is no manual's name, 404 `unknown_manual` for one not ingested)",
        json_schema_extra={"pattern": MANUAL_REQUEST, "maxLength": MAX_MANUAL_CHARS},  # documented: checked by the gateway, typed (gateway/deps.py)
    )
    wait: bool = Field(default=True, strict=True)  # true or false: not 0, 1 or "yes"
    focus: str | None = Field(
        default=None, pattern=SECTION_ID, description="a page of the manual to answer from first: one of a previous answer's `alternatives` (404 `unknown_page` for a well-formed id the manual lacks, as 404 `unknown_manual`)"
    )

    @field_validator("question")  # not manual: checked as sent (NFC makes the Kelvin sign a K; shared/generation.py)
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        return None if value is None else clean_text(value)


class Sentence(BaseModel):
    text: str
    citations: list[str]  # paragraph ids
    verdict: Verdict
    reason: str
    role: ClaimRole = "answer"
    relevance: Relevance | None = None  # answer claims: does its page answer the question, or give background?
    confidence: float | None = None  # the page ranker's probability that the claim's page answers


MAX_ALTERNATIVES = 3  # pages offered beside an answer: a choice, not a second search result list


class Alternative(BaseModel):
    """A page nearly as likely to answer as the answer's own, about another subject: asking
    again with ``focus`` set to it answers from it."""

    section_id: str
    title: str
    url: str
    confidence: float


class Answer(BaseModel):
    sentences: list[Sentence]
    faithfulness: float
    alternatives: list[Alternative] = Field(default_factory=list)
    # how old the answer's figures are: the newest ``public_updated_at`` of the pages it cites
    as_of: datetime | None = None
    # the calibrated probability that the answer part answers the question (cross-validated:
    # services/ranking/assurance.py); below the model's threshold the answer says it may not
    # answer, no claim is marked as answering, and the other likely pages are offered
    confidence: float | None = None
    may_not_answer: bool = False


class Refusal(BaseModel):
    category: RefusalCategory
    message: str
    evidence: RefusalEvidence  # one typed model per category (shared/contracts/refusals.py)

    @model_validator(mode="before")
    @classmethod
    def _evidence_of_the_category(cls, data: Any) -> Any:
        # Evidence given as a plain mapping (or not at all) is read as the category's model.
        if isinstance(data, dict) and "category" in data:
            evidence = data.get("evidence")
            if evidence is None or isinstance(evidence, dict):
                data = {**data, "evidence": {**(evidence or {}), "category": data["category"]}}
        return data


class Citation(BaseModel):
    paragraph_id: str
    section_id: str
    title: str
    heading_path: list[str]
    text: str
    url: str
    public_updated_at: datetime
    # What the paragraph is; a table's text is a row a line, its cells joined by " | ", and
    # ``header_rows`` of its first rows name its columns (0: every row holds figures).
    kind: Literal["p", "li", "table", "pre", "heading"] = "p"
    header_rows: int = 0


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
    # An answered question that also asks about another manual's subject: where that part goes.
    routes: list[Route] = Field(default_factory=list)
    trace: list[StageTrace] = Field(default_factory=list)
