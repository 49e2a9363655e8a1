"""stale's evidence (services/answering/refusals/stale.py) and the refusal decide makes of it:
on hand-made pages, and on real pages of the EIM slice (tests/conftest.py) where the behaviour
depends on the manual's own text."""

from __future__ import annotations

from datetime import date

from services.runtime.dispatch import answer
from services.answering.refusals import decide
from services.answering.refusals.asking import asks_about_now
from services.answering.refusals.stale import latest_figures, stale_evidence
from shared.config import Settings
from shared.contracts.api import QuestionRequest, Refusal
from shared.contracts.corpus import Page
from shared.contracts.refusals import SelectionFinding, StaleEvidence
from shared.index import CorpusIndex
from tests.services.answering.refusals.pages import PAGES_2014, page as _page


def stale(question: str, pages: list[Page], *args: object, **kwargs: object) -> Refusal | None:
    """The check's finding as selection records it, and the refusal decide makes of it."""
    found = stale_evidence(question, pages, *args, **kwargs)  # type: ignore[arg-type]
    return decide.selection(SelectionFinding(candidates=["EIM1"], kept=[p.section_id for p in pages], stale=found))


def test_stale_when_the_tax_year_starts_after_every_page() -> None:
    refusal = stale("What's the van benefit charge for the 2025-26 tax year?", PAGES_2014)
    assert refusal is not None and refusal.category == "stale"
    assert isinstance(refusal.evidence, StaleEvidence)
    assert refusal.evidence.asked_for == "2025-26"
    assert refusal.evidence.latest_update.date().isoformat() == "2014-09-08"
    assert {p.section_id for p in refusal.evidence.pages} == {"EIM22790", "EIM22915"}


def test_a_year_in_the_askers_story_or_in_a_rule_question_is_not_stale() -> None:
    """Real askers date what happened to them; only a year the question asks a figure for
    makes the 2014 pages stale."""
    assert stale("I was made redundant in November 2020 and got \u00a325,000. Do I pay tax on it?", PAGES_2014) is None
    assert stale("We lent an employee \u00a32,000 in the 2016/17 tax year and wrote it off. How is the van benefit treated?", PAGES_2014) is None
    assert stale("If an employee leaves during the 2022/23 tax year, should the P11D show the van benefit pro rata?", PAGES_2014) is None
    # the year asked a figure for, alone or in a follow-up read with its subject's figure question
    assert stale("I drive a works van. What's the van benefit charge for 2025-26?", PAGES_2014) is not None
    assert stale("And what will it be for 2025-26? How much is the van benefit charge?", PAGES_2014) is not None
    assert stale("And for the 2027-28 tax year? I use a company van. What's the taxable benefit?", PAGES_2014) is not None


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


def test_stale_names_the_page_of_a_latest_figure_that_selection_left_out(slice_settings: Settings) -> None:
    index = CorpusIndex.open(slice_settings)
    chunks = [*index.page_chunks("EIM22790"), *index.page_chunks("EIM22915")]
    selected = [index.pages["EIM22790"]]
    refusal = stale("What's the van fuel benefit charge for 2025-26?", selected, [], chunks, known_pages=index.pages)
    assert refusal is not None and refusal.evidence.latest_figures
    figure_pages = {f.section_id for f in refusal.evidence.latest_figures}
    assert figure_pages <= {p.section_id for p in refusal.evidence.pages}
    assert all(f.year == "2014-15" for f in refusal.evidence.latest_figures)
