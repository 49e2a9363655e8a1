"""The scores over many questions: one settings variant's metrics (``aggregate``), refusal
precision and recall per category, the marks' information, and why a question fails a target
(the definitions are scoring.py's docstring)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, Field

from taxnav.evaluation.matching import REPLY_WINDOW_WORDS
from taxnav.evaluation.outcomes import CITATIONS_STAGE, ClaimScore, QuestionOutcome


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
