"""What scoring one question gives: the question's outcome under one settings variant and each
claim's score (the definitions are scoring.py's docstring)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from shared.contracts.api import ClaimRole, RefusalCategory, Relevance, Verdict

CITATIONS_STAGE = "citations"  # the pseudo-stage after the last pipeline stage: the answer's citations


class ClaimScore(BaseModel):
    text: str
    citations: list[str]
    verdict: Verdict
    reason: str
    grounded: bool
    missing: list[str] = Field(default_factory=list)  # claim facts absent from the cited text
    role: ClaimRole = "answer"
    reads_alone: bool = True  # False: a fragment no one can read on its own (``reads_alone``)
    relevance: Relevance | None = None  # the service's mark on an answer claim
    on_point: bool = False  # cites a gold/also_ok section
    states_fact: bool = False  # states one of the question's key facts
    # the second-opinion judge's view (``taxnav eval --judge``), None when no judge ran
    judge_correct: bool | None = None
    judge_grounded: bool | None = None
    judge_reason: str = ""


class QuestionOutcome(BaseModel):
    """One question asked under one settings variant, scored."""

    id: str
    question: str
    expect: Literal["answer", "refuse"]
    expected_refusal: RefusalCategory | None
    status: Literal["answered", "refused"]
    refusal: RefusalCategory | None = None
    refusal_message: str = ""
    correct: bool
    gold_sections: list[str]
    also_ok: list[str]
    candidates_by_stage: dict[str, list[str]]  # the trace's candidate ids, as the pipeline left them
    sections_by_stage: dict[str, list[str]]  # their sections per trace stage, then "citations"
    recall_by_stage: dict[str, float]  # empty when the question has no gold sections
    claims: list[ClaimScore]
    faithfulness: float | None = None
    key_facts_found: list[str]
    key_facts_missing: list[str]
    key_facts_in_answer_part: list[str] = Field(default_factory=list)  # found before the "detail" sentences
    # missing facts that the selected pages do state (stitching left them out) -- the rest were
    # never in the selected pages (a retrieval or selection miss)
    key_facts_in_selection: list[str] = Field(default_factory=list)
    latency_ms: float
    retrieval_ms: float | None = None
    # strict measures (see the module docstring); for refusals they stay at their empty values
    answer_ok: bool = False
    strict_correct: bool = False
    gold_in_answer_part: bool = False
    key_facts_in_reply_window: list[str] = Field(default_factory=list)  # within the first REPLY_WINDOW_WORDS
    lead_facts: list[str] = Field(default_factory=list)  # within the answer part's first LEAD_WINDOW_WORDS
    first_sentence_fact: bool = False
    answer_words: int = 0
    reply_words: int = 0
    answer_claims: int = 0
    answer_claims_on_gold: int = 0
    lead_on_point: bool = False  # the first answer-part claim cites a gold/also_ok section
