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

from collections.abc import Iterable, Sequence

from shared.contracts.api import QuestionResult
from shared.contracts.corpus import section_of
from taxnav.evaluation.matching import (
    LEAD_WINDOW_WORDS, REPLY_WINDOW_WORDS, FactsFn, claim_grounded, first_words, key_fact_found, reads_alone, word_count,
)
from taxnav.evaluation.metrics import aggregate  # noqa: F401  (taxnav/evaluation/ranker.py imports it from here)
from taxnav.evaluation.outcomes import CITATIONS_STAGE, ClaimScore, QuestionOutcome
from taxnav.evaluation.questions import EvalQuestion, load_questions  # noqa: F401  (load_questions: as for aggregate)


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
