"""conflict's evidence (services/answering/refusals/conflict.py) and the refusal decide makes of
it: on hand-made drafts, and on real pages where the behaviour depends on the manual's text."""

from __future__ import annotations

import pytest

from services.answering.refusals import decide
from services.answering.refusals.conflict import Case, conflict_evidence, own_words
from services.text.sentences import split_sentences
from shared.contracts.api import Refusal
from shared.contracts.corpus import Paragraph
from shared.contracts.pipeline import Draft, DraftSentence
from shared.contracts.refusals import StitchingFinding
from shared.index import CorpusIndex


def conflict(question: str, draft: Draft, *args: object, **kwargs: object) -> Refusal | None:
    """The check's finding as stitching records it, and the refusal decide makes of it."""
    found = conflict_evidence(question, draft, *args, **kwargs)  # type: ignore[arg-type]
    return decide.stitching(StitchingFinding(searched=[], claims=len(draft.sentences), conflict=found))


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
    assert refusal.evidence.paragraph_ids == ["EIM1#c0.p0", "EIM2#c0.p0"]
    assert refusal.evidence.differing == ["\u00a320", "\u00a350"]
    assert [(o.value, o.paragraph_id, o.section_id) for o in refusal.evidence.options] == [
        ("\u00a350", "EIM1#c0.p0", "EIM1"),
        ("\u00a320", "EIM2#c0.p0", "EIM2"),
    ]
    assert refusal.evidence.what_would_decide


def test_no_conflict_when_the_question_names_the_year_or_asks_no_figure() -> None:
    draft = _draft((PARAS["EIM1#c0.p0"].text, "EIM1#c0.p0"), (PARAS["EIM2#c0.p0"].text, "EIM2#c0.p0"))
    assert conflict("How much could a long service award be worth in 2012-13?", draft, PARAS) is None
    # "what are the rules on ...": no single figure asked, so nothing to choose between, even
    # when the subject names an amount (the title sweep once refused a page's own title)
    assert conflict("What are the rules on long service awards?", draft, PARAS) is None
    assert conflict("What are the rules on long service awards: the exempt amount?", draft, PARAS) is None


def test_no_conflict_when_the_sentences_name_their_own_periods() -> None:
    draft = _draft(
        ("For 2008-09 to 2011-12 the guideline rate was \u00a33 per week.", "EIM1#c0.p0"),
        ("For 2012-13 onwards the guideline rate was \u00a34 per week.", "EIM2#c0.p0"),
    )
    assert conflict("How much can my employer pay for homeworking?", draft, PARAS) is None


def test_no_conflict_when_two_pages_give_one_rules_figures_for_the_years_they_share() -> None:
    # EIM01476 gives both earlier guideline rates, EIM32815 the one of two of those years: they agree
    draft = _draft(
        ("For 2008-09 to 2011-12, the guideline rate was \u00a33 per week, and for 2003-04 to 2007-08, the guideline rate was \u00a32 per week.", "EIM1#c0.p0"),
        ("For 2006-07 and 2007-08 the guideline rate was \u00a32 per week.", "EIM2#c0.p0"),
    )
    assert conflict("How much can my employer pay for homeworking?", draft, PARAS) is None
    # the same years with another figure still conflict
    other = _draft((draft.sentences[0].text, "EIM1#c0.p0"), ("For 2006-07 and 2007-08 the guideline rate was \u00a35 per week.", "EIM2#c0.p0"))
    assert conflict("How much can my employer pay for homeworking?", other, PARAS) is not None


def test_no_conflict_within_one_page_or_between_different_statements() -> None:
    same_page = _draft(("The limit is \u00a350 per year.", "EIM1#c0.p0"), ("The limit is \u00a320 per year.", "EIM1#c1.p0"))
    assert conflict("What is the limit?", same_page, PARAS) is None
    different = _draft(("Mileage payments are exempt up to 45p a mile.", "EIM1#c0.p0"), ("Passenger payments are exempt up to 5p a mile.", "EIM2#c0.p0"))
    assert conflict("What is the limit?", different, PARAS) is None


def test_worked_examples_and_table_rows_and_detail_do_not_conflict() -> None:
    draft = _draft(
        ("On retirement, the scheme pays the employee a lump sum of \u00a3100,000.", "EIM1#c0.p0"),
        ("On retirement, the scheme pays the employee a lump sum of \u00a390,000.", "EIM2#c0.p0"),
    )
    assert conflict("How much is the lump sum?", draft, PARAS) is not None  # as statements they would
    assert conflict("How much is the lump sum?", draft, PARAS, illustrative=frozenset({"EIM2#c0.p0"})) is None
    tables = {k: v.model_copy(update={"kind": "table"}) for k, v in PARAS.items()}
    assert conflict("How much is the lump sum?", draft, tables) is None
    detail = Draft(sentences=[draft.sentences[0], draft.sentences[1].model_copy(update={"role": "detail"})])
    assert conflict("How much is the lump sum?", detail, PARAS) is None


@pytest.mark.parametrize(
    "a, b",
    [
        # boilerplate the title sweep once refused: steps of a method statement, contents
        # ranges, paired "is / is not" headings. No amounts, or no figure asked: never a conflict.
        ("This page concerns step 1 of the method statement.", "This page concerns step 5 of the method statement."),
        ("Contents: pages A to H", "Contents: pages C to Z"),
        ("Conditions if the transaction is a loan", "Conditions if the transaction is not a loan"),
    ],
)
def test_boilerplate_never_conflicts(a: str, b: str) -> None:
    draft = _draft((a, "EIM1#c0.p0"), (b, "EIM2#c0.p0"))
    for question in ("What are the rules on the car benefit method statement?", "How much is the car benefit?"):
        assert conflict(question, draft, PARAS) is None


def _case(index: CorpusIndex, section: str) -> Case:
    chunks = index.page_chunks(section)
    first = next(p.text for c in chunks for p in c.paragraphs if p.kind != "heading")
    return Case(title=index.pages[section].title, lead=split_sentences(first)[0], text=own_words([c.text for c in chunks]))


def test_conflict_on_real_pages_laundering_flat_rates_for_two_occupations(corpus_dir, settings_for, tmp_path) -> None:
    """EIM67240 (nurses, \u00a3100) and EIM63650 (fire officers, \u00a380) both state 'the amount of
    the deduction' for laundering a uniform: asked without the occupation it is a real
    conflict, with the occupations as the options; naming one settles it."""
    from ingest_worker.ingest import run_ingest  # noqa: PLC0415

    settings = settings_for(tmp_path / "data")
    run_ingest(settings, str(corpus_dir), "employment-income-manual", sections={"EIM67240", "EIM63650"})
    index = CorpusIndex.open(settings)
    nurses, fire = index.paragraph("EIM67240#c0.p0"), index.paragraph("EIM63650#c0.p4")
    draft = _draft((split_sentences(nurses.text)[1], nurses.id), (fire.text, fire.id))
    paragraphs = {nurses.id: nurses, fire.id: fire}
    cases = {s: _case(index, s) for s in ("EIM67240", "EIM63650")}
    refusal = conflict("How much relief do I get for washing my work uniform each year?", draft, paragraphs, cases=cases)
    assert refusal is not None and refusal.category == "conflict"
    options = refusal.evidence.options
    assert [o.section_id for o in options] == ["EIM67240", "EIM63650"]
    assert "nurses" in options[0].condition and "fire officers" in options[1].condition
    assert "\u00a3100" in options[0].value and options[1].value == "\u00a380"
    # choosing an option asks again with its condition: the question now settles it
    for option in options:
        assert conflict(f"How much relief do I get for washing my work uniform each year? {option.condition}", draft, paragraphs, cases=cases) is None
    assert conflict("How much can a nurse deduct for laundering her uniform?", draft, paragraphs, cases=cases) is None


def test_naming_a_case_settles_it_though_the_general_page_points_to_that_case(corpus_dir, settings_for, tmp_path) -> None:
    """EIM32485 (laundering generally: \u00a360 from 2008/09) names nurses only to send them to
    their own page; EIM67240's first sentence is about nurses (\u00a3100). Asked without the
    occupation it is a conflict; a nurse asking has chosen the nurses' case."""
    from ingest_worker.ingest import run_ingest  # noqa: PLC0415

    settings = settings_for(tmp_path / "data")
    run_ingest(settings, str(corpus_dir), "employment-income-manual", sections={"EIM32485", "EIM67240"})
    index = CorpusIndex.open(settings)
    general, nurses = index.paragraph("EIM32485#c0.p2"), index.paragraph("EIM67240#c0.p0")
    assert "nurses" in index.paragraph("EIM32485#c0.p1").text  # the pointer to their page
    row = "2008/09 onwards: amount per year \u00a360."  # the rate table's row as the answer states it
    draft = _draft((row, general.id), (split_sentences(nurses.text)[1], nurses.id))
    paragraphs = {general.id: general, nurses.id: nurses}
    cases = {s: _case(index, s) for s in ("EIM32485", "EIM67240")}
    refusal = conflict("How much can I deduct each year for laundering my uniform?", draft, paragraphs, cases=cases)
    assert refusal is not None and refusal.category == "conflict"
    assert conflict("As a nurse, how much can I deduct each year for laundering my uniform?", draft, paragraphs, cases=cases) is None


def test_an_answer_statement_conflicts_with_a_candidate_page_selection_left_out() -> None:
    draft = _draft((PARAS["EIM1#c0.p0"].text, "EIM1#c0.p0"))
    candidate = DraftSentence(text=PARAS["EIM2#c0.p0"].text, citations=["EIM2#c0.p0"])
    question = "How much can a long service award be worth?"
    assert conflict(question, draft, PARAS) is None  # the answer alone states one figure
    refusal = conflict(question, draft, PARAS, candidates=[candidate])
    assert refusal is not None and [o.section_id for o in refusal.evidence.options] == ["EIM1", "EIM2"]
    # two candidates never conflict between themselves: the answer must state the quantity
    other = DraftSentence(text="The exempt amount for a long service award is \u00a330 per year of service.", citations=["EIM3#c0.p0"])
    paras = {**PARAS, "EIM3#c0.p0": Paragraph(id="EIM3#c0.p0", text=other.text)}
    unrelated = _draft(("Mileage payments are exempt up to 45p a mile.", "EIM1#c0.p0"))
    assert conflict(question, unrelated, paras, candidates=[candidate, other]) is None
    # a candidate in a table or a worked example does not count
    assert conflict(question, draft, PARAS, illustrative=frozenset({"EIM2#c0.p0"}), candidates=[candidate]) is None


def test_a_table_row_counts_only_when_it_names_its_period_and_every_conflicting_case_is_an_option() -> None:
    paras = {
        "EIM1#c0.p0": Paragraph(id="EIM1#c0.p0", kind="table", text="Year Amount per year"),
        "EIM2#c0.p0": Paragraph(id="EIM2#c0.p0", text="x"),
        "EIM3#c0.p0": Paragraph(id="EIM3#c0.p0", text="y"),
    }
    row = _draft(("2008/09 onwards: amount per year \u00a360.", "EIM1#c0.p0"))
    nurses = DraftSentence(text="The amount of the deduction is \u00a3100 per year from 2008/09 onwards.", citations=["EIM2#c0.p0"])
    fire = DraftSentence(text="From 2008/09 onwards the amount per year of the deduction for fire officers is \u00a380.", citations=["EIM3#c0.p0"])
    question = "How much can I deduct for laundering?"
    refusal = conflict(question, row, paras, candidates=[nurses, fire])
    assert refusal is not None
    assert [(o.section_id, o.value) for o in refusal.evidence.options] == [("EIM1", "\u00a360"), ("EIM2", "\u00a3100"), ("EIM3", "\u00a380")]
    assert refusal.evidence.differing == ["\u00a3100", "\u00a360", "\u00a380"]
    undated = _draft(("Band A: amount per year \u00a360.", "EIM1#c0.p0"))  # a row keyed by a case: that case's own figure
    assert conflict(question, undated, paras, candidates=[nurses]) is None
    earlier = _draft(("1998/99 to 2007/08: amount per year \u00a345.", "EIM1#c0.p0"))  # no period in common
    assert conflict(question, earlier, paras, candidates=[nurses]) is None


def test_a_left_out_page_must_restate_the_answers_quantity_and_an_inline_example_never_counts() -> None:
    """A left-out page's sentence must say all the answer's statement says ("R is a rate of
    5p per mile" names too little to be the same quantity); an illustration's figures are the
    example's, whether under an example heading or introduced by 'for example'."""
    answer = _draft(("The maximum tax-free amount per business mile is the approved rate of 45p.", "EIM1#c0.p0"))
    short = DraftSentence(text="R is a rate of 5p per mile.", citations=["EIM2#c0.p0"])
    question = "How much can my employer pay me per mile?"
    assert conflict(question, answer, PARAS, candidates=[short]) is None
    restated = DraftSentence(text="For passengers, the maximum tax-free amount per business mile is the approved rate of 5p.", citations=["EIM2#c0.p0"])
    assert conflict(question, answer, PARAS, candidates=[restated]) is not None
    example = _draft(("For example, the maximum tax-free amount per business mile is the approved rate of 45p.", "EIM1#c0.p0"))
    assert conflict(question, example, PARAS, candidates=[restated]) is None


def test_a_left_out_page_whose_title_is_less_about_the_question_is_no_rival_case() -> None:
    answer = _draft(("35% otherwise, for example a rotary engine.".replace("for example ", ""), "EIM1#c0.p0"))
    candidate = DraftSentence(text="32% otherwise, a rotary engine.", citations=["EIM2#c0.p0"])
    question = "My company car has no official CO2 figure. What percentage of the list price is used for the benefit?"
    cases = {
        "EIM1": Case(title="Step 5: car without an approved CO2 emissions figure", lead="", text="a car and its CO2 figure"),
        "EIM2": Case(title="Step 5: car first registered before 1 January 1998", lead="", text="a car and its CO2 figure"),
    }
    assert conflict(question, answer, PARAS, cases=cases, candidates=[candidate]) is None
    # the same sentence on a page whose title is as much about the question is a rival case
    rival = {**cases, "EIM2": Case(title="Step 5: car registered abroad: its CO2 figure", lead="", text="a car and its CO2 figure")}
    assert conflict(question, answer, PARAS, cases=rival, candidates=[candidate]) is not None


def test_a_left_out_nurses_page_makes_the_uniform_laundering_figure_a_conflict(corpus_dir, settings_for, tmp_path) -> None:
    """Selection may keep the fire officers' page (\u00a380) and drop the nurses' (\u00a3100): the
    conflict check still reads the dropped candidate on the asked subject, on real pages."""
    from ingest_worker.ingest import run_ingest  # noqa: PLC0415
    from services.answering.stages.stitching import candidate_statements, cases  # noqa: PLC0415

    settings = settings_for(tmp_path / "data")
    run_ingest(settings, str(corpus_dir), "employment-income-manual", sections={"EIM67240", "EIM63650"})
    index = CorpusIndex.open(settings)
    fire = index.paragraph("EIM63650#c0.p4")
    draft = _draft((fire.text, fire.id))
    question = "How much relief do I get for washing my work uniform? Just the one annual figure."
    assert conflict(question, draft, {fire.id: fire}, cases=cases(index, ["EIM63650"])) is None
    candidates, paragraphs = candidate_statements(question, index, ["EIM67240"])
    assert candidates and all(c.citations[0] in paragraphs for c in candidates)
    refusal = conflict(question, draft, {fire.id: fire, **paragraphs}, cases=cases(index, ["EIM63650", "EIM67240"]), candidates=candidates)
    assert refusal is not None and refusal.category == "conflict"
    options = refusal.evidence.options
    assert [(o.section_id, o.value) for o in options][0] == ("EIM63650", "\u00a380")
    assert options[1].section_id == "EIM67240" and "\u00a3100" in options[1].value and "nurses" in options[1].condition
    # naming the case settles it; a candidate page whose title names nothing asked is not read
    assert conflict(f"{question} {options[0].condition}", draft, {fire.id: fire, **paragraphs}, cases=cases(index, ["EIM63650", "EIM67240"]), candidates=candidates) is None
    assert candidate_statements("How much can I claim back?", index, ["EIM67240"]) == ([], {})
