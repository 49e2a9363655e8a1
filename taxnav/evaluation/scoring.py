"""The scorer: pure functions from (eval question, pipeline result) to scores.

Definitions (the report repeats them):
- strict correctness (the headline): an answerable question is strictly right (``answer_ok``)
  when it is answered, AND an answer-part claim cites a gold (or also_ok) section, AND at least
  half its key facts appear within the first 350 words of the reply (the answer part, then the
  detail, in order; nothing past word 350 counts). A question to refuse is strictly right when
  refused with the expected category.
- lead facts: share of key facts found within the first 60 words of the answer part.
- facts in 350 words: share of key facts found within the reply's first 350 words.
- claim precision: answer-part claims citing a gold/also_ok section / answer-part claims, over
  answered answerable questions.
- first sentence holds a fact: share of answered answerable questions whose first answer-part
  claim states a key fact.
- lead on point (diagnostic): share of answered answerable questions whose first answer-part
  claim cites a gold/also_ok section: whether the answer leads from a page that answers (page
  choice). Lead facts when on point: lead facts over those questions alone (sentence choice
  within the right page). Together they say which of the two a lead-facts shortfall is.
- marks: of the answer-part claims marked ``answering``, and of those marked ``background``,
  the share that cite a gold/also_ok section and the share that state a key fact (answered
  answerable questions): marks carry information when the first shares sit well above the second.
  Lead mark agrees: share of answered answerable questions whose first claim is marked
  ``answering`` exactly when the answer is strictly right.
- answer words / reply words: words of the answer part / of the whole reply (answer + detail),
  median over answered questions.
- verdict correct (diagnostic): answered when the question expects an answer; refused with the expected
  category when it expects a refusal.
- refusal precision: correct refusals / refusals made; recall: correct refusals / refusals
  expected (overall and per category; an empty denominator scores 1.0: nothing was wrong).
- gold-section recall at a stage: gold pages found among that stage's candidates, where a page
  in ``also_ok`` stands in for a missing gold page: min(|found & gold| + |found & also_ok|,
  |gold|) / |gold|. Only questions with gold sections count.
- key-fact coverage: share of all ``key_facts`` (answerable questions) found in the answer
  text, compared after decoding entities, folding case, quotes, dashes and dropping £ signs
  (the eval set writes some amounts without the £ the page spells as an entity), and not inside
  a longer number or word, so "5p" is not found inside "45p".
- groundedness: share of claims whose checkable facts (numbers, amounts, percentages, dates,
  section references; extracted by the verifier's own function) all appear in the paragraphs
  the claim cites. A claim without a resolvable citation is not grounded.
"""

from __future__ import annotations

import html
import json
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared.contracts.api import ClaimRole, QuestionResult, RefusalCategory, Relevance, Verdict
from shared.contracts.corpus import section_of

ModelT = TypeVar("ModelT", bound=BaseModel)

CITATIONS_STAGE = "citations"  # the pseudo-stage after the last pipeline stage: the answer's citations
FactsFn = Callable[[str], set[str]]


# ---------------------------------------------------------------- the eval set


class EvalQuestion(BaseModel):
    """One line of an eval file (../shared/eval/questions.jsonl shape)."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    question: str
    expect: Literal["answer", "refuse"]
    refusal: RefusalCategory | None = None
    gold_sections: list[str] = Field(default_factory=list)
    also_ok: list[str] = Field(default_factory=list)
    key_facts: list[str] = Field(default_factory=list)
    topic: str = ""
    needs_xref: bool = False
    note: str = ""

    @model_validator(mode="after")
    def _refusal_matches_expect(self) -> EvalQuestion:
        if self.expect == "refuse" and self.refusal is None:
            raise ValueError("expect='refuse' needs a refusal category")
        if self.expect == "answer" and self.refusal is not None:
            raise ValueError("expect='answer' must not name a refusal category")
        return self


class QuestionsFileError(ValueError):
    """The eval file is missing, empty or has a bad line (the message names file and line)."""


def read_jsonl(path: Path, model: type[ModelT], kind: str, prepare: Callable[[Any, int], Any] = lambda raw, _: raw) -> list[ModelT]:
    """Every non-blank line of a JSONL eval file as ``model`` (``prepare`` may fill in a raw
    line's defaults first); a bad file or line is a QuestionsFileError naming file and line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionsFileError(f"cannot read {kind} file {path}: {exc}") from exc
    items: list[ModelT] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            items.append(model.model_validate(prepare(json.loads(line), number)))
        except json.JSONDecodeError as exc:
            raise QuestionsFileError(f"{path}:{number}: not JSON: {exc.msg}") from exc
        except ValidationError as exc:
            problems = "; ".join(
                (f"{'.'.join(map(str, e['loc']))}: " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
                for e in exc.errors()
            )
            raise QuestionsFileError(f"{path}:{number}: {problems}") from exc
    if not items:
        raise QuestionsFileError(f"{path}: no {kind}")
    return items


def load_questions(path: Path) -> list[EvalQuestion]:
    questions = read_jsonl(path, EvalQuestion, "questions")
    seen: set[str] = set()
    for question in questions:
        if question.id in seen:
            raise QuestionsFileError(f"{path}: duplicate question id {question.id!r}")
        seen.add(question.id)
    return questions


# ---------------------------------------------------------------- per question


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


# A claim a person can read alone starts as a sentence does (a capital, a pound sign, a quote
# mark or bracket) or as a rendered table row does, its label and a colon ("6.4.2010: ...",
# "rotary engine: 2009/10 235"), and does not stop on a word that needs more ("... given and",
# "... in Section", "... as follows,").
_SENTENCE_START = re.compile(r"^(?:[\"'\u2018\u201c(\[]?[A-Z\u00a3]|[^:;]{1,30}:\s)")
_NEEDS_MORE = re.compile(
    r"(?:\b(?:and|or|but|nor|of|the|to|for|by|with|in|on|at|a|an|than|that|which|where|if|is|are|Section|Schedule|paragraph|regulation)|[,(\u2013-])$",
)


def reads_alone(claim: str) -> bool:
    """Whether a claim can be read on its own (not "201(3) ITEPA 2003 (see EIM20502).", "338.",
    "it is a widespread custom for such presents to be given and")."""
    text = claim.strip()
    return len(text.split()) >= 3 and bool(_SENTENCE_START.match(text)) and not _NEEDS_MORE.search(text)


REPLY_WINDOW_WORDS = 350  # a longer reply earns nothing past this word
LEAD_WINDOW_WORDS = 60  # what a reader takes in at a glance


def first_words(text: str, limit: int) -> str:
    return " ".join(text.split()[:limit])


def word_count(text: str) -> int:
    return len(text.split())


def verdict_correct(expect: str, expected_refusal: str | None, status: str, refusal: str | None) -> bool:
    if expect == "answer":
        return status == "answered"
    return status == "refused" and refusal == expected_refusal


def sections_in_order(ids: Iterable[str]) -> list[str]:
    """Section ids of chunk/paragraph/section ids, first occurrence order, no repeats."""
    return list(dict.fromkeys(section_of(i) for i in ids))


def section_recall(gold: Sequence[str], also_ok: Sequence[str], found: Iterable[str]) -> float | None:
    if not gold:
        return None
    found_set = set(found)
    hits = len(found_set & set(gold)) + len(found_set & (set(also_ok) - set(gold)))
    return min(hits, len(gold)) / len(gold)


_FOLD = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\xa0": " ", "£": ""}
)


_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_PENCE = re.compile(r"(?<=\d) ?pence\b", re.I)
_PERCENT = re.compile(r"(?<=\d) ?(?:per ?cent|percent)\b", re.I)


def normalise_text(text: str) -> str:
    """Entities decoded, quotes and dashes folded, £ dropped, case and spaces folded, and one
    figure written one way: a number's thousands commas dropped ("£1,022" is "£1022"), pence
    and per cent as symbols ("15 pence" is "15p", "10 per cent" is "10%")."""
    text = _THOUSANDS.sub("", html.unescape(text).translate(_FOLD))
    return " ".join(_PERCENT.sub("%", _PENCE.sub("p", text)).casefold().split())


_NO_LETTER_BEFORE = r"(?<![^\W\d_])"
_NO_LETTER_AFTER = r"(?![^\W\d_])"


def key_fact_found(fact: str, answer_text: str) -> bool:
    needle = normalise_text(fact)
    if not needle:
        return True
    # Not inside a longer number or word ("5p" is not in "45p", "5,000" not in "15,000" or
    # "5,000.50", "rate" not in "separate"), but the scrape's run-together cells still count:
    # "25p" is in "45p25p" and "10,000" in "First 10,000After that", as on the page itself.
    before = r"(?<!\d)(?<!\d[.,])" if needle[0].isdigit() else _NO_LETTER_BEFORE if needle[0].isalpha() else ""
    after = r"(?!\d)(?![.,]\d)" if needle[-1].isdigit() else _NO_LETTER_AFTER if needle[-1].isalpha() else ""
    return re.search(before + re.escape(needle) + after, normalise_text(answer_text)) is not None


def facts_in_texts(facts: Sequence[str], texts: Iterable[str]) -> list[str]:
    """The facts some text states (e.g. missing key facts that a selected page does state)."""
    texts = list(texts)
    return [f for f in facts if any(key_fact_found(f, t) for t in texts)]


def claim_grounded(claim: str, cited_texts: Sequence[str], facts: FactsFn) -> tuple[bool, list[str]]:
    """Whether every checkable fact of the claim appears in its cited text; the missing ones."""
    if not cited_texts:
        return False, ["no resolvable citation"]
    available: set[str] = set()
    for text in cited_texts:
        available |= facts(text)
    missing = sorted(facts(claim) - available)
    return not missing, missing


def score_result(
    question: EvalQuestion,
    result: QuestionResult,
    latency_ms: float,
    facts: FactsFn,
    retrieval_stage: str = "retrieval",
) -> QuestionOutcome:
    refusal = result.refusal.category if result.refusal else None
    sections_by_stage = {t.stage: sections_in_order(t.candidate_ids) for t in result.trace}
    sentences = result.answer.sentences if (result.status == "answered" and result.answer) else []
    sections_by_stage[CITATIONS_STAGE] = sections_in_order(c for s in sentences for c in s.citations)
    recall = {
        stage: value
        for stage, found in sections_by_stage.items()
        if (value := section_recall(question.gold_sections, question.also_ok, found)) is not None
    }
    paragraph_text = {c.paragraph_id: c.text for c in result.citations}
    acceptable = set(question.gold_sections) | set(question.also_ok)
    claims = []
    for sentence in sentences:
        cited = [paragraph_text[c] for c in sentence.citations if c in paragraph_text]
        grounded, missing = claim_grounded(sentence.text, cited, facts)
        claims.append(
            ClaimScore(
                text=sentence.text,
                citations=sentence.citations,
                verdict=sentence.verdict,
                reason=sentence.reason,
                grounded=grounded,
                missing=missing,
                role=sentence.role,
                reads_alone=reads_alone(sentence.text),
                relevance=sentence.relevance,
                on_point=any(section_of(c) in acceptable for c in sentence.citations),
                states_fact=any(key_fact_found(f, sentence.text) for f in question.key_facts),
            )
        )
    answer_text = " ".join(s.text for s in sentences)
    found = [f for f in question.key_facts if key_fact_found(f, answer_text)]
    answer_sentences = [s for s in sentences if s.role == "answer"]
    answer_part = " ".join(s.text for s in answer_sentences)
    # the reply as read: the answer part, then the detail
    reply = " ".join([answer_part, *(s.text for s in sentences if s.role != "answer")])
    reply_window = first_words(reply, REPLY_WINDOW_WORDS)
    lead_window = first_words(answer_part, LEAD_WINDOW_WORDS)
    answer_claims = [c for c in claims if c.role == "answer"]
    on_gold = [c for c in answer_claims if c.on_point]
    in_window = [f for f in question.key_facts if key_fact_found(f, reply_window)]
    verdict_ok = verdict_correct(question.expect, question.refusal, result.status, refusal)
    answer_ok = (
        question.expect == "answer"
        and verdict_ok
        and bool(on_gold)
        and 2 * len(in_window) >= len(question.key_facts)
    )
    retrieval_ms = next((t.ms for t in result.trace if t.stage == retrieval_stage), None)
    return QuestionOutcome(
        answer_ok=answer_ok,
        strict_correct=answer_ok if question.expect == "answer" else verdict_ok,
        gold_in_answer_part=bool(on_gold),
        key_facts_in_reply_window=in_window,
        lead_facts=[f for f in question.key_facts if key_fact_found(f, lead_window)],
        first_sentence_fact=bool(answer_claims) and answer_claims[0].states_fact,
        answer_words=word_count(answer_part),
        reply_words=word_count(reply),
        answer_claims=len(answer_sentences),
        answer_claims_on_gold=len(on_gold),
        lead_on_point=bool(answer_claims) and answer_claims[0].on_point,
        id=question.id,
        question=question.question,
        expect=question.expect,
        expected_refusal=question.refusal,
        status=result.status,
        refusal=refusal,
        refusal_message=result.refusal.message if result.refusal else "",
        correct=verdict_ok,
        gold_sections=question.gold_sections,
        also_ok=question.also_ok,
        candidates_by_stage={t.stage: t.candidate_ids for t in result.trace},
        sections_by_stage=sections_by_stage,
        recall_by_stage=recall,
        claims=claims,
        faithfulness=result.answer.faithfulness if sentences else None,
        key_facts_found=found,
        key_facts_missing=[f for f in question.key_facts if f not in found],
        key_facts_in_answer_part=[f for f in found if key_fact_found(f, answer_part)],
        latency_ms=latency_ms,
        retrieval_ms=retrieval_ms,
    )


# ---------------------------------------------------------------- aggregates


class CategoryScore(BaseModel):
    expected: int
    refused: int  # refusals made in this category
    correct: int
    precision: float
    recall: float


class RefusalScores(BaseModel):
    precision: float
    recall: float
    by_category: dict[str, CategoryScore]


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 1.0


def refusal_scores(pairs: Sequence[tuple[str | None, str | None]]) -> RefusalScores:
    """From (expected category or None, refused category or None) per question."""
    correct = sum(1 for e, a in pairs if a is not None and a == e)
    made = sum(1 for _, a in pairs if a is not None)
    expected = sum(1 for e, _ in pairs if e is not None)
    categories = sorted({c for pair in pairs for c in pair if c is not None})
    by_category = {}
    for cat in categories:
        n_exp = sum(1 for e, _ in pairs if e == cat)
        n_made = sum(1 for _, a in pairs if a == cat)
        n_ok = sum(1 for e, a in pairs if e == cat and a == cat)
        by_category[cat] = CategoryScore(
            expected=n_exp, refused=n_made, correct=n_ok, precision=_ratio(n_ok, n_made), recall=_ratio(n_ok, n_exp)
        )
    return RefusalScores(precision=_ratio(correct, made), recall=_ratio(correct, expected), by_category=by_category)


class MarkScore(BaseModel):
    claims: int
    on_point: float  # share citing a gold/also_ok section
    states_fact: float  # share stating a key fact


def mark_scores(claims: Sequence[ClaimScore]) -> dict[str, MarkScore]:
    """Answer claims grouped by their mark: how many, and how often each group is on point."""
    out: dict[str, MarkScore] = {}
    for mark in ("answering", "background"):
        group = [c for c in claims if c.role == "answer" and c.relevance == mark]
        out[mark] = MarkScore(
            claims=len(group), on_point=_ratio(sum(c.on_point for c in group), len(group)), states_fact=_ratio(sum(c.states_fact for c in group), len(group))
        )
    return out


def lead_mark_agrees(outcome: QuestionOutcome) -> bool:
    """Whether the first answer claim's mark tells the truth about the answer: ``answering``
    on a strictly right answer, anything else on a wrong one."""
    lead = next((c for c in outcome.claims if c.role == "answer"), None)
    return (lead is not None and lead.relevance == "answering") == outcome.answer_ok


class VariantMetrics(BaseModel):
    questions: int
    strict_correct: int  # the headline: answerable strictly right + refusals of the right category
    strict_accuracy: float
    answerable_ok: int  # answerable questions strictly right
    lead_facts: float  # key facts within the answer part's first 60 words / all key facts
    key_facts_in_reply_window: float  # key facts within the reply's first 350 words / all key facts
    claim_precision: float  # answer-part claims citing gold/also_ok / answer-part claims (answerable)
    first_sentence_fact: float  # answered answerable questions whose first claim states a key fact
    lead_on_point: float  # diagnostic: answered answerable questions whose first claim cites gold/also_ok
    lead_facts_when_on_point: float  # diagnostic: lead facts over those questions alone
    answer_words_median: float
    reply_words_median: float
    correct: int  # diagnostic from here on: verdict alone (any answer counts)
    verdict_accuracy: float
    refusal_precision: float
    refusal_recall: float
    refusal_by_category: dict[str, CategoryScore]
    citation_gold_recall: float
    citation_gold_complete: float  # share of gold questions whose citations hold every gold page
    recall_by_stage: dict[str, float]
    answerable_with_gold: int
    key_fact_coverage: float  # over the whole answer (its answer and detail sentences)
    key_fact_coverage_answer_part: float  # over the answer sentences alone
    claims_per_answer: float
    answer_claims_per_answer: float  # claims of the answer part (the rest are detail)
    verdict_counts: dict[str, int]
    mean_faithfulness: float
    groundedness: float
    claims: int
    fragments: int = 0  # claims (answer and detail) that cannot be read alone
    marks: dict[str, MarkScore] = Field(default_factory=dict)  # answer claims by their mark (answering, background)
    lead_mark_agrees: float = 0.0  # answered answerable questions whose first claim is marked answering exactly when the answer is right
    median_latency_ms: float
    median_retrieval_ms: float | None


def key_facts_of(outcomes: Sequence[QuestionOutcome]) -> int:
    """The questions' key facts, found or not."""
    return sum(len(o.key_facts_found) + len(o.key_facts_missing) for o in outcomes)


def aggregate(outcomes: Sequence[QuestionOutcome], stages: Sequence[str]) -> VariantMetrics:
    """Scores of one variant. ``stages``: the pipeline's stage names in order (recall keys)."""
    with_gold = [o for o in outcomes if o.gold_sections]
    stage_names = [*stages, CITATIONS_STAGE]
    recall_by_stage = {
        s: (statistics.fmean(o.recall_by_stage.get(s, 0.0) for o in with_gold) if with_gold else 0.0)
        for s in stage_names
    }
    answerable = [o for o in outcomes if o.expect == "answer"]
    facts_total = key_facts_of(answerable)
    facts_found = sum(len(o.key_facts_found) for o in answerable)
    answered = [o for o in outcomes if o.status == "answered"]
    claims = [c for o in answered for c in o.claims]
    refusals = refusal_scores([(o.expected_refusal, o.refusal) for o in outcomes])
    retrieval_ms = [o.retrieval_ms for o in outcomes if o.retrieval_ms is not None]
    faithfulness = [o.faithfulness for o in answered if o.faithfulness is not None]
    answered_answerable = [o for o in answerable if o.status == "answered"]
    on_point = [o for o in answered_answerable if o.lead_on_point]
    return VariantMetrics(
        questions=len(outcomes),
        strict_correct=sum(o.strict_correct for o in outcomes),
        strict_accuracy=_ratio(sum(o.strict_correct for o in outcomes), len(outcomes)),
        answerable_ok=sum(o.answer_ok for o in answerable),
        lead_facts=_ratio(sum(len(o.lead_facts) for o in answerable), facts_total),
        key_facts_in_reply_window=_ratio(sum(len(o.key_facts_in_reply_window) for o in answerable), facts_total),
        claim_precision=_ratio(
            sum(o.answer_claims_on_gold for o in answered_answerable), sum(o.answer_claims for o in answered_answerable)
        ),
        first_sentence_fact=_ratio(sum(o.first_sentence_fact for o in answered_answerable), len(answered_answerable)),
        lead_on_point=_ratio(len(on_point), len(answered_answerable)),
        lead_facts_when_on_point=_ratio(sum(len(o.lead_facts) for o in on_point), key_facts_of(on_point)),
        answer_words_median=statistics.median(o.answer_words for o in answered) if answered else 0.0,
        reply_words_median=statistics.median(o.reply_words for o in answered) if answered else 0.0,
        correct=sum(o.correct for o in outcomes),
        verdict_accuracy=_ratio(sum(o.correct for o in outcomes), len(outcomes)),
        refusal_precision=refusals.precision,
        refusal_recall=refusals.recall,
        refusal_by_category=refusals.by_category,
        citation_gold_recall=recall_by_stage[CITATIONS_STAGE],
        citation_gold_complete=(
            sum(o.recall_by_stage.get(CITATIONS_STAGE, 0.0) == 1.0 for o in with_gold) / len(with_gold)
            if with_gold
            else 0.0
        ),
        recall_by_stage=recall_by_stage,
        answerable_with_gold=len(with_gold),
        key_fact_coverage=_ratio(facts_found, facts_total),
        key_fact_coverage_answer_part=_ratio(sum(len(o.key_facts_in_answer_part) for o in answerable), facts_total),
        claims_per_answer=len(claims) / len(answered) if answered else 0.0,
        answer_claims_per_answer=sum(c.role == "answer" for c in claims) / len(answered) if answered else 0.0,
        verdict_counts=dict(sorted(Counter(c.verdict for c in claims).items())),
        mean_faithfulness=statistics.fmean(faithfulness) if faithfulness else 0.0,
        groundedness=_ratio(sum(c.grounded for c in claims), len(claims)),
        claims=len(claims),
        fragments=sum(not c.reads_alone for c in claims),
        marks=mark_scores([c for o in answered_answerable for c in o.claims]),
        lead_mark_agrees=_ratio(sum(lead_mark_agrees(o) for o in answered_answerable), len(answered_answerable)),
        median_latency_ms=statistics.median(o.latency_ms for o in outcomes) if outcomes else 0.0,
        median_retrieval_ms=statistics.median(retrieval_ms) if retrieval_ms else None,
    )


def where_lost(outcome: QuestionOutcome, section: str, stages: Sequence[str]) -> str:
    """How far a gold page got: never retrieved, dropped after some stage, or kept but not cited."""
    reached = [stage for stage in stages if section in outcome.sections_by_stage.get(stage, [])]
    if not reached:
        return f"{section} never retrieved"
    if reached[-1] == stages[-1]:
        return f"{section} kept by {stages[-1]} but not cited"
    return f"{section} dropped after {reached[-1]}"


def failure_reasons(outcome: QuestionOutcome, stages: Sequence[str]) -> list[str]:
    """Why a question fails any target: wrong verdict, gold pages not among the final citations
    (and where each was lost), missing key facts, ungrounded or unsupported claims. Empty when
    it passes."""
    stages = list(stages)
    reasons: list[str] = []
    if outcome.correct and outcome.expect == "answer" and not outcome.answer_ok:
        why = []
        if not outcome.gold_in_answer_part:
            why.append("no answer-part claim cites a gold or also_ok page")
        total = len(outcome.key_facts_found) + len(outcome.key_facts_missing)
        if 2 * len(outcome.key_facts_in_reply_window) < total:
            why.append(
                f"{len(outcome.key_facts_in_reply_window)}/{total} key facts within the first {REPLY_WINDOW_WORDS} words"
            )
        reasons.append("not strictly right: " + "; ".join(why))
    if not outcome.correct:
        if outcome.expect == "answer":
            reasons.append(f"wrong refusal: expected an answer, got {outcome.refusal} ({outcome.refusal_message})")
        elif outcome.status == "answered":
            reasons.append(f"missed refusal: expected {outcome.expected_refusal}, got an answer")
        else:
            reasons.append(f"wrong category: expected {outcome.expected_refusal}, got {outcome.refusal}")
    cited_recall = outcome.recall_by_stage.get(CITATIONS_STAGE, 0.0)
    if outcome.gold_sections and outcome.status == "answered" and cited_recall < 1.0:
        cited = set(outcome.sections_by_stage.get(CITATIONS_STAGE, []))
        lost = [where_lost(outcome, g, stages) for g in outcome.gold_sections if g not in cited]
        stand_ins = [a for a in outcome.also_ok if a in cited]
        trail = ", ".join(f"{s} {outcome.recall_by_stage.get(s, 0.0):.2f}" for s in [*stages, CITATIONS_STAGE])
        reasons.append(
            f"gold recall {cited_recall:.2f} in citations: {'; '.join(lost)}"
            f" (also_ok cited: {', '.join(stand_ins) or 'none'}; recall by stage, also_ok counted: {trail})"
        )
    if outcome.key_facts_missing and outcome.status == "answered":
        unquoted = outcome.key_facts_in_selection
        absent = [f for f in outcome.key_facts_missing if f not in unquoted]
        parts = [f"{', '.join(repr(f) for f in unquoted)} on a selected page but not quoted"] if unquoted else []
        parts += [f"{', '.join(repr(f) for f in absent)} not on any selected page"] if absent else []
        reasons.append("missing key facts: " + "; ".join(parts))
    for number, claim in enumerate(outcome.claims, start=1):
        if not claim.grounded:
            reasons.append(f"ungrounded claim {number}: not in cited text: {', '.join(claim.missing)}")
        elif claim.verdict != "supported":
            reasons.append(f"claim {number} verdict {claim.verdict}: {claim.reason}")
    return reasons
