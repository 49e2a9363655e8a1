"""stale, conflict and the named-subject check, on hand-made pages and drafts."""

from __future__ import annotations

from datetime import datetime, timezone

from services.stages.refusals import conflict, missing_subjects, stale
from services.stages.text import CorpusStats
from shared.contracts.corpus import Page, Paragraph
from shared.contracts.pipeline import Draft, DraftSentence


def _page(section: str, when: str) -> Page:
    return Page(
        section_id=section,
        manual="employment-income-manual",
        title=section,
        base_path=f"/hmrc-internal-manuals/employment-income-manual/{section.lower()}",
        public_updated_at=datetime.fromisoformat(when).replace(tzinfo=timezone.utc),
    )


PAGES_2014 = [_page("EIM22790", "2014-09-08"), _page("EIM22915", "2014-03-01")]


def test_stale_when_the_tax_year_starts_after_every_page() -> None:
    refusal = stale("What's the van benefit charge for the 2025-26 tax year?", PAGES_2014)
    assert refusal is not None and refusal.category == "stale"
    assert refusal.evidence["asked_for"] == "2025-26"
    assert refusal.evidence["latest_update"].startswith("2014-09-08")
    assert {p["section_id"] for p in refusal.evidence["pages"]} == {"EIM22790", "EIM22915"}


def test_not_stale_for_a_year_the_pages_cover() -> None:
    # 2014-15 started on 6 April 2014, before the pages' September 2014 update
    assert stale("What is the van benefit for 2014-15?", PAGES_2014) is None
    assert stale("What was the van benefit in 2013/14?", PAGES_2014) is None
    assert stale("What is the van benefit?", PAGES_2014) is None


def test_stale_uses_the_newest_page() -> None:
    pages = PAGES_2014 + [_page("EIM22791", "2026-07-01")]
    assert stale("What's the van benefit charge for 2025-26?", pages) is None


def test_not_stale_when_one_named_year_is_covered() -> None:
    # "joined in 2013 ... and now in 2015-16?" names a covered year too: answer, don't refuse
    assert stale("I joined in 2013; is it different for 2015-16?", PAGES_2014) is None


def _draft(*items: tuple[str, str]) -> Draft:
    return Draft(sentences=[DraftSentence(text=t, citations=[c]) for t, c in items])


PARAS = {
    "EIM1#c0.p0": Paragraph(id="EIM1#c0.p0", text="The exempt amount for a long service award is \u00a350 per year of service."),
    "EIM2#c0.p0": Paragraph(id="EIM2#c0.p0", text="The exempt amount for a long service award is \u00a320 per year of service."),
}


def test_conflict_on_different_figures_for_the_same_statement() -> None:
    draft = _draft((PARAS["EIM1#c0.p0"].text, "EIM1#c0.p0"), (PARAS["EIM2#c0.p0"].text, "EIM2#c0.p0"))
    refusal = conflict("How much can a long service award be worth?", draft, PARAS)
    assert refusal is not None and refusal.category == "conflict"
    assert refusal.evidence["paragraph_ids"] == ["EIM1#c0.p0", "EIM2#c0.p0"]
    assert refusal.evidence["differing"] == ["20", "50"]
    assert refusal.evidence["what_would_decide"]


def test_no_conflict_when_the_question_names_the_year() -> None:
    draft = _draft((PARAS["EIM1#c0.p0"].text, "EIM1#c0.p0"), (PARAS["EIM2#c0.p0"].text, "EIM2#c0.p0"))
    assert conflict("How much could a long service award be worth in 2012-13?", draft, PARAS) is None


def test_no_conflict_when_the_sentences_name_their_own_periods() -> None:
    draft = _draft(
        ("For 2008-09 to 2011-12 the guideline rate was \u00a33 per week.", "EIM1#c0.p0"),
        ("For 2012-13 onwards the guideline rate was \u00a34 per week.", "EIM2#c0.p0"),
    )
    assert conflict("How much can my employer pay for homeworking?", draft, PARAS) is None


def test_no_conflict_within_one_page_or_between_different_statements() -> None:
    same_page = _draft(("The limit is \u00a350 per year.", "EIM1#c0.p0"), ("The limit is \u00a320 per year.", "EIM1#c1.p0"))
    assert conflict("What is the limit?", same_page, PARAS) is None
    different = _draft(("Mileage payments are exempt up to 45p a mile.", "EIM1#c0.p0"), ("Passenger payments are exempt up to 5p a mile.", "EIM2#c0.p0"))
    assert conflict("What is the limit?", different, PARAS) is None


def test_worked_examples_and_table_rows_do_not_conflict() -> None:
    draft = _draft(
        ("On retirement, the scheme pays the employee a lump sum of \u00a3100,000.", "EIM1#c0.p0"),
        ("On retirement, the scheme pays the employee a lump sum of \u00a390,000.", "EIM2#c0.p0"),
    )
    assert conflict("Is my lump sum taxable?", draft, PARAS) is not None  # as statements they would
    assert conflict("Is my lump sum taxable?", draft, PARAS, illustrative=frozenset({"EIM2#c0.p0"})) is None
    tables = {k: v.model_copy(update={"kind": "table"}) for k, v in PARAS.items()}
    assert conflict("Is my lump sum taxable?", draft, tables) is None


def test_conflict_on_opposite_treatment() -> None:
    draft = _draft(("Payments under the scheme are taxable as earnings.", "EIM1#c0.p0"), ("Payments under the scheme are not taxable as earnings.", "EIM2#c0.p0"))
    refusal = conflict("Are payments under the scheme taxable?", draft, PARAS)
    assert refusal is not None and "opposite treatments" in refusal.message


STATS = CorpusStats(["Salary sacrifice and PAYE settlement agreements (PSAs).", "A relocation allowance of \u00a38,000 is exempt."])


def test_missing_subject_acronym_not_in_the_manual() -> None:
    assert missing_subjects("Under the OpRA rules, how is my car valued?", STATS, ["salary sacrifice"]) == ["OpRA"]
    assert missing_subjects("Can we use PSAs for this?", STATS, []) == []
    assert missing_subjects("Explain the ESOP rules for my options", STATS, []) == ["ESOP"]
    # mentioned in passing, not the subject of the question
    assert missing_subjects("Can my employer pay my fees to a body like the ICAEW?", STATS, []) == []


def test_missing_subject_amount_named_rule_absent_from_evidence() -> None:
    question = "How does the \u00a3500 tax exemption for medical treatment work?"
    assert missing_subjects(question, STATS, ["Medical treatment provided to employees is taxable."]) == ["\u00a3500 tax exemption"]
    assert missing_subjects(question, STATS, ["An exemption of \u00a3500 applies to recommended treatment."]) == []
    # amounts that describe the asker's own facts are not the subject
    assert missing_subjects("Our party cost \u00a3160 a head. Is it taxable?", STATS, ["the limit is \u00a3150"]) == []


def test_an_amount_named_rule_needs_its_amount_where_its_subject_is() -> None:
    question = "How does the statutory \u00a350 trivial benefits exemption apply to birthday gifts?"
    elsewhere = ["Long service awards are exempt up to \u00a350 per year of service.", "There is no monetary limit below which a benefit is trivial."]
    assert missing_subjects(question, STATS, elsewhere) == ["\u00a350 trivial benefits exemption"]
    assert missing_subjects(question, STATS, [*elsewhere, "Trivial benefits costing up to \u00a350 are exempt."]) == []
    # words that only say how the rule applies ask for the amount anywhere in the passages
    assert missing_subjects("Do I get the \u00a330k tax-free treatment?", STATS, ["The first \u00a330,000 is exempt."]) == []
