"""stale, conflict, low_coverage's checks: on hand-made pages and drafts, and on real pages of
the EIM slice (tests/conftest.py) where the behaviour depends on the manual's own text."""

from __future__ import annotations

from datetime import datetime, timezone

from datetime import date

import pytest

from services.runtime.dispatch import answer
from services.answering.refusals import Case, asks_about_now, conflict, later_rule, latest_figures, missing_subjects, own_words, stale
from services.text.sentences import split_sentences
from services.text.terms import CorpusStats
from shared.config import Settings
from shared.contracts.api import QuestionRequest
from shared.contracts.corpus import Page, Paragraph
from shared.contracts.pipeline import Draft, DraftSentence
from shared.contracts.refusals import StaleEvidence
from shared.index import CorpusIndex


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
    assert isinstance(refusal.evidence, StaleEvidence)
    assert refusal.evidence.asked_for == "2025-26"
    assert refusal.evidence.latest_update.date().isoformat() == "2014-09-08"
    assert {p.section_id for p in refusal.evidence.pages} == {"EIM22790", "EIM22915"}


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


# ---- stale: "this year / now" asked of figures for years long past (real pages) -----------


def test_asks_about_now_only_when_the_asking_clause_wants_todays_figure() -> None:
    assert asks_about_now("What is the homeworking allowance this year?")
    assert asks_about_now("How much can my employer currently pay me per mile?")
    assert asks_about_now("Is the current mileage rate for a bicycle still 20p?")
    # the time word describes the asker's facts, not what is asked
    assert not asks_about_now("I drove 12,000 miles this year - can I claim relief on the shortfall, and roughly how much?")
    # no figure asked for
    assert not asks_about_now("Is my company car taxable now that I work from home?")
    assert not asks_about_now("How much can my employer pay me per mile?")


def test_latest_figures_are_the_manuals_newest_dated_amounts_on_the_subject(slice_settings: Settings) -> None:
    index = CorpusIndex.open(slice_settings)
    chunks = [c for s in ("EIM01476", "EIM01472", "EIM21690") for c in index.page_chunks(s)]
    year, figures = latest_figures("What is the homeworking allowance this year?", chunks)
    assert year == 2012
    assert figures and all(f.year == "2012" for f in figures)
    assert any("\u00a34" in f.text and f.paragraph_id.startswith("EIM01476#") for f in figures)
    # a table's rows carry the years of its header: the 2011-12 mileage rates
    mileage = index.page_chunks("EIM31240")
    year, figures = latest_figures("What is the current mileage rate for a motor cycle?", mileage)
    assert year == 2011 and any("24p" in f.text and "2011-12" in f.text for f in figures)


def test_stale_for_todays_figure_when_the_manual_has_only_long_past_ones(slice_settings: Settings) -> None:
    index = CorpusIndex.open(slice_settings)
    chunks = index.page_chunks("EIM01476")
    pages = [index.pages["EIM01476"]]
    refusal = stale("What is the homeworking allowance this year?", pages, [], chunks, today=date(2026, 12, 1))
    assert refusal is not None and refusal.category == "stale"
    assert refusal.evidence.asked_for == "the current year"
    assert refusal.evidence.latest_figures[0].year == "2012" and "2012" in refusal.message
    # the same figures were current in 2013: not long past then
    assert stale("What is the homeworking allowance this year?", pages, [], chunks, today=date(2013, 6, 1)) is None
    # a figure the manual does not tie to any year is not year-specific: answered
    undated = [c.model_copy(update={"paragraphs": [p for p in c.paragraphs if "2012" not in p.text and "2008" not in p.text]}) for c in chunks]
    assert stale("What is the homeworking allowance this year?", pages, [], undated, today=date(2026, 12, 1)) is None


def test_stale_now_end_to_end_cites_the_latest_figures(slice_settings: Settings) -> None:
    result = answer(QuestionRequest(question="What is the homeworking allowance this year?"), slice_settings)
    assert result.status == "refused" and result.refusal.category == "stale", result.refusal
    cited = {c.paragraph_id for c in result.citations}
    assert {f.paragraph_id for f in result.refusal.evidence.latest_figures} <= cited
    assert {c.section_id for c in result.citations} <= {p.section_id for p in result.refusal.evidence.pages}


# ---- low_coverage: a rule dated after the manual is not in it (not stale) -----------------


@pytest.mark.parametrize(
    "question",
    [
        "How is the 2019 loan charge on disguised remuneration loans worked out?",
        "How does the April 2017 exemption for employer-funded pensions advice work?",
        "What changed under the rules introduced in April 2021 for off-payroll working?",
        # a rule noun dated by when it applies from: the rule began then, the manual lacks it
        "Who qualifies for the relief since 2019 on employer-paid training courses?",
    ],
)
def test_a_rule_dated_after_the_manual_is_low_coverage(question: str) -> None:
    refusal = later_rule(question, PAGES_2014)
    assert refusal is not None and refusal.category == "low_coverage"
    assert refusal.evidence.missing


@pytest.mark.parametrize(
    "question",
    [
        "What's the van benefit charge for the 2025-26 tax year?",  # a later period: stale, not this
        "What is the charge in the 2025 tax year?",
        "How did the 2009 exemption for homeworking change?",  # a rule dated before the update
        # a figure's noun dated by when it applies from asks for a later period: stale, not this
        "What is the mileage allowance from April 2026?",
        "What are the van benefit charges since 2020?",
        "How do the rules from 6 April 2020 treat my termination payment?",  # the law for a period
        "How does the exemption from April 2013 for homeworking work?",  # dated before the update
    ],
)
def test_a_later_period_or_an_older_rule_is_not_a_later_rule(question: str) -> None:
    assert later_rule(question, PAGES_2014) is None


# ---- conflict ---------------------------------------------------------------------------


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


STATS = CorpusStats(["Salary sacrifice and PAYE settlement agreements (PSAs).", "A relocation allowance of \u00a38,000 is exempt."])


def test_missing_subject_acronym_not_in_the_manual() -> None:
    assert missing_subjects("Under the OpRA rules, how is my car valued?", STATS, ["salary sacrifice"]) == ["OpRA"]
    assert missing_subjects("Can we use PSAs for this?", STATS, []) == []
    assert missing_subjects("Explain the ESOP rules for my options", STATS, []) == ["ESOP"]
    # mentioned in passing, not the subject of the question
    assert missing_subjects("Can my employer pay my fees to a body like the ICAEW?", STATS, []) == []


def test_an_acronym_for_a_name_the_manual_spells_out_is_not_missing() -> None:
    """The manual names the body in full, never by its initials: asked by the initials, it
    is still covered; initials it never spells out are still missing."""
    stats = CorpusStats(["Rates of allowances paid under particular agreements: Electrical Contractors' Association",
                         "The Joint Industry Board sets the rates."])  # fmt: skip
    assert missing_subjects("Which allowances are paid under the ECA agreement?", stats, []) == []
    assert missing_subjects("Are the rates set under the JIB scheme?", stats, []) == []  # "The" dropped
    assert missing_subjects("Under the EOT rules, are my bonuses tax-free?", stats, []) == ["EOT"]
    assert missing_subjects("Under the TJ scheme, what applies?", stats, []) == ["TJ"]  # not the name's own initials


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


def test_stale_names_the_page_of_a_latest_figure_that_selection_left_out(slice_settings: Settings) -> None:
    index = CorpusIndex.open(slice_settings)
    chunks = [*index.page_chunks("EIM22790"), *index.page_chunks("EIM22915")]
    selected = [index.pages["EIM22790"]]
    refusal = stale("What's the van fuel benefit charge for 2025-26?", selected, [], chunks, known_pages=index.pages)
    assert refusal is not None and refusal.evidence.latest_figures
    figure_pages = {f.section_id for f in refusal.evidence.latest_figures}
    assert figure_pages <= {p.section_id for p in refusal.evidence.pages}
    assert all(f.year == "2014-15" for f in refusal.evidence.latest_figures)
