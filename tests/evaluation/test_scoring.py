"""The scorer's pure functions on small hand-made cases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.text.figures import checkable_facts
from shared.contracts.api import (
    Answer,
    Citation,
    QuestionResult,
    Refusal,
    Sentence,
    StageTrace,
)
from taxnav.evaluation.matching import facts_in_texts
from taxnav.evaluation.metrics import aggregate, failure_reasons, where_lost
from taxnav.evaluation.outcomes import CITATIONS_STAGE
from taxnav.evaluation.questions import EvalQuestion
from taxnav.evaluation.scoring import score_result, section_recall, sections_in_order, verdict_correct

STAGES = ["retrieval", "expansion", "rollup", "selection"]
MILEAGE_ROW = "Car or van First 10,000 After that 45p 25p"


def _answerable(**kw) -> EvalQuestion:
    base = {
        "id": "Q1",
        "question": "How much per mile can my employer pay tax-free?",
        "expect": "answer",
        "gold_sections": ["EIM31240"],
        "also_ok": ["EIM31230"],
        "key_facts": ["45p", "25p", "10,000"],
    }
    return EvalQuestion.model_validate({**base, **kw})


def _citation(pid: str, text: str) -> Citation:
    section = pid.split("#")[0]
    return Citation(
        paragraph_id=pid,
        section_id=section,
        title=section,
        heading_path=[],
        text=text,
        url=f"https://www.gov.uk/x/{section.lower()}",
        public_updated_at=datetime(2014, 9, 8, tzinfo=UTC),
    )


def _answered(sentences: list[Sentence], citations: list[Citation], trace: list[StageTrace]) -> QuestionResult:
    return QuestionResult(
        id="r1",
        question="q",
        status="answered",
        answer=Answer(sentences=sentences, faithfulness=sum(s.verdict == "supported" for s in sentences) / len(sentences)),
        citations=citations,
        trace=trace,
    )


def _refused(category: str) -> QuestionResult:
    return QuestionResult(
        id="r2", question="q", status="refused", refusal=Refusal(category=category, message=f"{category} message")
    )


# ---------------------------------------------------------------- verdicts and refusals


def test_verdicts():
    assert verdict_correct("refuse", "stale", "refused", "stale")  # a right refusal
    assert not verdict_correct("refuse", "stale", "refused", "low_coverage")  # wrong category
    assert not verdict_correct("refuse", "stale", "answered", None)  # missed refusal
    assert not verdict_correct("answer", None, "refused", "low_coverage")  # wrong refusal
    assert verdict_correct("answer", None, "answered", None)


# ---------------------------------------------------------------- retrieval recall


def test_section_recall_counts_also_ok_as_hits():
    gold, ok = ["EIM31355", "EIM31330"], ["EIM31240", "EIM31235"]
    assert section_recall(gold, ok, ["EIM31355", "EIM99999"]) == 0.5
    assert section_recall(gold, ok, ["EIM31355", "EIM31240"]) == 1.0  # also_ok stands in for EIM31330
    assert section_recall(gold, ok, ["EIM31240", "EIM31235", "EIM31355", "EIM31330"]) == 1.0  # capped
    assert section_recall(gold, ok, ["EIM00001"]) == 0.0
    assert section_recall([], ok, ["EIM31240"]) is None


def test_sections_in_order_from_chunk_and_paragraph_ids():
    assert sections_in_order(["EIM2#c1", "EIM1#c0.p2", "EIM2#c0", "EIM3"]) == ["EIM2", "EIM1", "EIM3"]


# ---------------------------------------------------------------- one result


def test_score_result_reads_trace_citations_and_claims():
    trace = [
        StageTrace(stage="retrieval", ms=3.0, candidate_ids=["EIM31230#c0", "EIM99999#c1"]),
        StageTrace(stage="expansion", ms=1.0, candidate_ids=["EIM31230#c0", "EIM31240#c1"]),
        StageTrace(stage="rollup", ms=1.0, candidate_ids=["EIM31240", "EIM31230"]),
        StageTrace(stage="selection", ms=1.0, candidate_ids=["EIM31240"]),
    ]
    sentences = [
        Sentence(text="Cars get 45p a mile for the first 10,000 miles.", citations=["EIM31240#c1.p1"], verdict="supported", reason="ok"),
        Sentence(text="After that it is 20p.", citations=["EIM31240#c1.p1"], verdict="contradicted", reason="says 20p"),
    ]
    result = _answered(sentences, [_citation("EIM31240#c1.p1", MILEAGE_ROW)], trace)
    outcome = score_result(_answerable(), result, latency_ms=12.5, facts=checkable_facts)
    assert outcome.correct and outcome.status == "answered"
    # retrieval found only the also_ok page: a hit; expansion brought the gold page
    assert outcome.recall_by_stage == {"retrieval": 1.0, "expansion": 1.0, "rollup": 1.0, "selection": 1.0, CITATIONS_STAGE: 1.0}
    assert outcome.sections_by_stage["retrieval"] == ["EIM31230", "EIM99999"]
    assert outcome.candidates_by_stage["expansion"] == ["EIM31230#c0", "EIM31240#c1"]
    assert [c.grounded for c in outcome.claims] == [True, False]
    assert outcome.claims[1].missing == ["20p"]
    assert outcome.key_facts_found == ["45p", "10,000"] and outcome.key_facts_missing == ["25p"]
    assert outcome.retrieval_ms == 3.0 and outcome.faithfulness == 0.5


def test_key_facts_of_the_answer_part_are_counted_apart_from_the_detail():
    sentences = [
        Sentence(text="Cars get 45p a mile.", citations=["EIM31240#c1.p1"], verdict="supported", reason="ok"),
        Sentence(text="Above 10,000 miles it is 25p.", citations=["EIM31240#c1.p1"], verdict="supported", reason="ok", role="detail"),
    ]
    result = _answered(sentences, [_citation("EIM31240#c1.p1", MILEAGE_ROW)], [])
    outcome = score_result(_answerable(), result, latency_ms=1.0, facts=checkable_facts)
    assert outcome.key_facts_found == ["45p", "25p", "10,000"]
    assert outcome.key_facts_in_answer_part == ["45p"]
    assert [c.role for c in outcome.claims] == ["answer", "detail"]
    m = aggregate([outcome], STAGES)
    assert m.key_fact_coverage == 1.0
    assert m.key_fact_coverage_answer_part == pytest.approx(1 / 3)
    assert (m.claims_per_answer, m.answer_claims_per_answer) == (2.0, 1.0)


def test_score_result_of_a_refusal():
    question = EvalQuestion(id="R", question="VAT?", expect="refuse", refusal="out_of_scope")
    outcome = score_result(question, _refused("out_of_scope"), latency_ms=1.0, facts=checkable_facts)
    assert outcome.correct and outcome.claims == [] and outcome.recall_by_stage == {}
    wrong = score_result(question, _refused("malformed"), latency_ms=1.0, facts=checkable_facts)
    assert not wrong.correct
    assert failure_reasons(wrong, STAGES) == ["wrong category: expected out_of_scope, got malformed"]


def test_aggregate_and_failure_reasons():
    gold_lost = [StageTrace(stage="retrieval", ms=2.0, candidate_ids=["EIM31240#c0"]), StageTrace(stage="expansion", ms=1.0, candidate_ids=["EIM31240#c0"]), StageTrace(stage="rollup", ms=1.0, candidate_ids=["EIM31240"]), StageTrace(stage="selection", ms=1.0, candidate_ids=["EIM55555"])]
    s1 = Sentence(text="Unrelated page says 5p.", citations=["EIM55555#c0.p0"], verdict="supported", reason="ok")
    answered = score_result(
        _answerable(),
        _answered([s1], [_citation("EIM55555#c0.p0", "5p per passenger")], gold_lost),
        latency_ms=10.0,
        facts=checkable_facts,
    )
    refused_ok = score_result(
        EvalQuestion(id="R", question="VAT?", expect="refuse", refusal="out_of_scope"),
        _refused("out_of_scope"),
        latency_ms=2.0,
        facts=checkable_facts,
    )
    wrongly_refused = score_result(_answerable(id="Q2"), _refused("low_coverage"), latency_ms=4.0, facts=checkable_facts)
    m = aggregate([answered, refused_ok, wrongly_refused], STAGES)
    assert (m.questions, m.correct) == (3, 2)
    assert m.verdict_accuracy == pytest.approx(2 / 3)
    assert m.refusal_precision == 0.5 and m.refusal_recall == 1.0
    # two gold questions: the first keeps the gold page until selection drops it, the second was refused
    assert m.recall_by_stage == {"retrieval": 0.5, "expansion": 0.5, "rollup": 0.5, "selection": 0.0, CITATIONS_STAGE: 0.0}
    assert m.key_fact_coverage == 0.0  # 6 key facts, none in any answer
    assert (m.claims, m.claims_per_answer, m.verdict_counts, m.groundedness) == (1, 1.0, {"supported": 1}, 1.0)
    assert m.median_latency_ms == 4.0 and m.median_retrieval_ms == 2.0
    reasons = failure_reasons(answered, STAGES)
    assert reasons.pop(0) == (
        "not strictly right: no answer-part claim cites a gold or also_ok page; 0/3 key facts within the first 350 words"
    )
    assert reasons[0] == (
        "gold recall 0.00 in citations: EIM31240 dropped after rollup (also_ok cited: none; "
        "recall by stage, also_ok counted: retrieval 1.00, expansion 1.00, rollup 1.00, selection 0.00, citations 0.00)"
    )
    assert reasons[1] == "missing key facts: '45p', '25p', '10,000' not on any selected page"
    answered.key_facts_in_selection = facts_in_texts(answered.key_facts_missing, [MILEAGE_ROW.replace("25p", "")])
    assert answered.key_facts_in_selection == ["45p", "10,000"]
    assert failure_reasons(answered, STAGES)[2] == (
        "missing key facts: '45p', '10,000' on a selected page but not quoted; '25p' not on any selected page"
    )
    assert failure_reasons(wrongly_refused, STAGES)[0].startswith("wrong refusal: expected an answer, got low_coverage")
    assert failure_reasons(refused_ok, STAGES) == []


def test_where_lost_names_how_far_a_gold_page_got():
    trace = [
        StageTrace(stage="retrieval", ms=1.0, candidate_ids=["EIM31230#c0"]),
        StageTrace(stage="expansion", ms=1.0, candidate_ids=["EIM31230#c0", "EIM31240#c2"]),  # came in by a link
        StageTrace(stage="rollup", ms=1.0, candidate_ids=["EIM31230", "EIM31240"]),
        StageTrace(stage="selection", ms=1.0, candidate_ids=["EIM31230", "EIM31240"]),
    ]
    s = Sentence(text="Approved amounts are defined there.", citations=["EIM31230#c0.p0"], verdict="supported", reason="ok")
    question = _answerable(gold_sections=["EIM31240", "EIM31405"], also_ok=["EIM31230"])
    outcome = score_result(question, _answered([s], [_citation("EIM31230#c0.p0", "Approved amounts")], trace), 1.0, checkable_facts)
    assert where_lost(outcome, "EIM31240", STAGES) == "EIM31240 kept by selection but not cited"
    assert where_lost(outcome, "EIM31405", STAGES) == "EIM31405 never retrieved"
    assert outcome.recall_by_stage["citations"] == 0.5  # the also_ok page stands in for one gold page
    assert failure_reasons(outcome, STAGES)[0] == "not strictly right: 0/3 key facts within the first 350 words"
    assert failure_reasons(outcome, STAGES)[1].startswith(
        "gold recall 0.50 in citations: EIM31240 kept by selection but not cited; EIM31405 never retrieved "
        "(also_ok cited: EIM31230;"
    )


# ---------------------------------------------------------------- strict measures


def _sentence(text: str, pid: str = "EIM31240#c1.p1", role: str = "answer") -> Sentence:
    return Sentence(text=text, citations=[pid], verdict="supported", reason="quoted", role=role)


def _strict(sentences: list[Sentence], **question) -> object:
    citations = [_citation(pid, MILEAGE_ROW) for pid in dict.fromkeys(c for s in sentences for c in s.citations)]
    return score_result(_answerable(**question), _answered(sentences, citations, []), latency_ms=1.0, facts=checkable_facts)


def test_strict_answer_needs_a_gold_page_cited_by_the_answer_part():
    # the key facts are there, but only the detail cites the gold page
    outcome = _strict(
        [
            _sentence("Cars get 45p a mile, 25p after 10,000 miles.", "EIM55555#c0.p0"),
            _sentence("The table sets the rates.", "EIM31240#c1.p1", role="detail"),
        ]
    )
    assert outcome.correct and not outcome.answer_ok and not outcome.strict_correct
    assert (outcome.answer_claims, outcome.answer_claims_on_gold) == (1, 0)
    assert failure_reasons(outcome, STAGES)[0] == "not strictly right: no answer-part claim cites a gold or also_ok page"
    # an also_ok page in the answer part is enough
    assert _strict([_sentence("Cars get 45p a mile, 25p after 10,000 miles.", "EIM31230#c0.p1")]).answer_ok


def test_strict_answer_counts_no_key_fact_past_word_350():
    filler = " ".join(["word"] * 345)
    late = _strict(
        [_sentence(filler + " cars.", "EIM31240#c1.p1"), _sentence("Cars get 45p, then 25p after 10,000.", "EIM31240#c1.p2", role="detail")]
    )
    # "Cars get 45p," ends at word 349: only 45p is inside the window -> 1 of 3 facts, below half
    assert late.key_facts_found == ["45p", "25p", "10,000"]
    assert late.key_facts_in_reply_window == ["45p"]
    assert not late.answer_ok
    assert "1/3 key facts within the first 350 words" in failure_reasons(late, STAGES)[0]
    # half the facts (2 of 3, rounded up is not needed: 2*2 >= 3) within the window passes
    early = _strict([_sentence("Cars get 45p a mile for the first 10,000 miles.")])
    assert early.answer_ok and early.strict_correct


def test_strict_reply_reads_the_answer_part_before_the_detail_whatever_the_order():
    filler = " ".join(["word"] * 400)
    outcome = _strict([_sentence(filler, role="detail"), _sentence("Cars get 45p a mile, 25p after 10,000 miles.")])
    assert outcome.key_facts_in_reply_window == ["45p", "25p", "10,000"]
    assert (outcome.answer_words, outcome.reply_words) == (9, 409)


def test_lead_facts_first_sentence_and_claim_precision():
    filler = " ".join(["word"] * 58)
    outcome = _strict(
        [
            _sentence("Mileage payments are tax-free up to the approved amount."),
            _sentence(filler + " cars 45p, 25p after 10,000 miles.", "EIM99999#c0.p0"),
        ]
    )
    # words 1-9 are the first sentence; 45p is word 69: past the 60-word lead
    assert outcome.lead_facts == [] and not outcome.first_sentence_fact
    assert (outcome.answer_claims, outcome.answer_claims_on_gold) == (2, 1)
    first = _strict([_sentence("Cars get 45p a mile."), _sentence("Unrelated.", "EIM99999#c0.p0")])
    assert first.lead_facts == ["45p"] and first.first_sentence_fact
    m = aggregate([outcome, first], STAGES)
    assert m.lead_facts == pytest.approx(1 / 6)
    assert m.claim_precision == pytest.approx(2 / 4)
    assert m.first_sentence_fact == 0.5
    assert m.answer_words_median == (outcome.answer_words + first.answer_words) / 2 == (9 + 64 + 5 + 1) / 2


def test_lead_on_point_splits_page_choice_from_sentence_choice():
    # led from an off-gold page, the gold page second: the facts are there, the lead page is wrong
    off = _strict([_sentence("Cars get 45p a mile.", "EIM99999#c0.p0"), _sentence("Cars get 45p, 25p after 10,000 miles.")])
    # led from the gold page, but by a sentence without the facts: the page is right, the sentence is not
    vague = _strict([_sentence("Mileage payments are tax-free up to the approved amount."), _sentence("Cars get 45p.")])
    right = _strict([_sentence("Cars get 45p a mile, 25p after 10,000 miles.")])
    assert (off.lead_on_point, vague.lead_on_point, right.lead_on_point) == (False, True, True)
    m = aggregate([off, vague, right], STAGES)
    assert m.lead_on_point == pytest.approx(2 / 3)
    # lead facts counted over the on-point questions alone: vague 1 of 3 (45p is within 60 words), right 3 of 3
    assert vague.lead_facts == ["45p"]
    assert m.lead_facts_when_on_point == pytest.approx(4 / 6)
    assert m.lead_facts == pytest.approx((3 + 1 + 3) / 9)  # off holds all three in its first 60 words, from the wrong page
    refused = score_result(_answerable(), _refused("low_coverage"), latency_ms=1.0, facts=checkable_facts)
    assert not refused.lead_on_point and aggregate([refused], STAGES).lead_on_point == 1.0  # nothing answered: nothing wrong


def test_marks_are_scored_by_how_often_each_is_on_point():
    def marked(text: str, pid: str, relevance: str | None, role: str = "answer") -> Sentence:
        return _sentence(text, pid, role).model_copy(update={"relevance": relevance})

    outcome = _strict(
        [
            marked("Cars get 45p a mile.", "EIM31240#c1.p1", "answering"),
            marked("The approved amount is set by law.", "EIM31240#c1.p2", "answering"),
            marked("Vans are taxed as a benefit.", "EIM99999#c0.p0", "background"),
            marked("Bicycles get 20p a mile.", "EIM99999#c0.p1", "background"),
            marked("Cars get 45p a mile in the detail.", "EIM31240#c1.p3", None, role="detail"),
        ]
    )
    metrics = aggregate([outcome], STAGES)
    marks = metrics.marks
    assert (marks["answering"].claims, marks["answering"].on_point, marks["answering"].states_fact) == (2, 1.0, 0.5)
    assert (marks["background"].claims, marks["background"].on_point, marks["background"].states_fact) == (2, 0.0, 0.0)
    # the answer is not strictly right (one key fact of three in its reply) yet leads with an answering mark
    assert not outcome.answer_ok and metrics.lead_mark_agrees == 0.0
    right = _strict([marked("Cars get 45p a mile, 25p after 10,000 miles.", "EIM31240#c1.p1", "answering")])
    unsure = _strict([marked("Cars get 45p a mile, 25p after 10,000 miles.", "EIM31240#c1.p1", "background")])
    assert right.answer_ok and aggregate([right, unsure, outcome], STAGES).lead_mark_agrees == 1 / 3


def test_strict_headline_counts_refusals_of_the_right_category_only():
    refuse = EvalQuestion(id="R", question="VAT?", expect="refuse", refusal="out_of_scope")
    right = score_result(refuse, _refused("out_of_scope"), latency_ms=1.0, facts=checkable_facts)
    wrong = score_result(refuse, _refused("malformed"), latency_ms=1.0, facts=checkable_facts)
    refused_answerable = score_result(_answerable(), _refused("low_coverage"), latency_ms=1.0, facts=checkable_facts)
    good = _strict([_sentence("Cars get 45p a mile for the first 10,000 miles.")])
    loose = _strict([_sentence("Mileage is covered elsewhere.", "EIM99999#c0.p0")])
    m = aggregate([right, wrong, refused_answerable, good, loose], STAGES)
    assert (m.strict_correct, m.answerable_ok, m.correct) == (2, 1, 3)
    assert m.strict_accuracy == pytest.approx(2 / 5)
    assert not refused_answerable.answer_ok and refused_answerable.answer_words == 0
