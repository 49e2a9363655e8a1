"""The answer part: the lead, what scores near it, a statement from each of its pages (services/providers/local/answer_part.py)."""

from __future__ import annotations

import numpy as np
import pytest

from services.answering.pipeline import new_state, run_stage, stages_through
from services.providers.local.answer_part import answer_part, choose_lead, competing_pages, lead_candidates, lead_start
from services.providers.local.claims import best_per_page
from services.providers.local.ranked import rank_units, score_units
from services.providers.local.stitching import stitch
from shared.config import DEFAULT_MANUAL, AnswerShape, LocalStitchingSettings, Settings
from shared.contracts.api import QuestionRequest
from shared.index import CorpusIndex
from services.ranking.rankers import passage_model
from shared.contracts.corpus import Chunk, Paragraph, section_of
from shared.contracts.pipeline import PageBundle, SelectionResult
from services.text.reading import new_query
from tests.services.text.paragraphs import units_of

TUNING = LocalStitchingSettings()  # the defaults the tests run with
SHAPE = AnswerShape()


def test_a_lower_page_is_quoted_in_the_answer_only_when_its_best_sentence_competes_with_the_leads() -> None:
    best = {0: 1.0, 1: 0.5, 2: 0.5, 3: 0.86}
    assert competing_pages(best, 0, 0.85, 2) == {0, 1, 3}  # the first two always; a lower page rivalling the lead's too
    assert competing_pages(best, 0, 0.95, 2) == {0, 1}
    assert competing_pages(best, 0, 0.85, 0) == {0, 3}
    assert competing_pages(best, 2, 0.85, 0) == {0, 1, 2, 3}  # the lead's own page always, whatever its score
    assert best_per_page(units_of(Paragraph(id="EIM1#c0.p0", text="One. Two."))) == {0: 0.0}


def test_the_answer_quotes_competing_lower_pages_and_leaves_the_others_to_the_detail(slice_settings) -> None:  # noqa: ANN001
    lower_quoted = lower_left = 0
    # the restated-title rule off: these questions' page order is what puts a rival below the first two
    settings = slice_settings.model_copy(deep=True)
    settings.retrieval.title_match_floor = 1.01
    for question in (
        "How much can my employer pay towards my extra household costs when I work from home?",
        "What are the rules on Exemption for long service testimonial awards: maximum exempt amount?",
    ):
        state = new_state(QuestionRequest(question=question), settings)
        for stage in stages_through("stitching"):
            state = run_stage(stage, state, settings)
        vector = np.asarray(state.retrieval.query_vector, dtype=np.float32)
        best = best_per_page(score_units(state.query, state.selection, settings, CorpusIndex.open(settings), passage_model(settings), vector))
        pages = [p.section_id for p in state.selection.pages]
        answer = [s for s in state.draft.sentences if s.role == "answer"]
        lead_page = pages.index(section_of(answer[0].citations[0]))
        quoted = competing_pages(best, lead_page, TUNING.page_compete, TUNING.quoted_pages)
        cited = {pages.index(section_of(s.citations[0])) for s in answer}
        detail = {pages.index(section_of(s.citations[0])) for s in state.draft.sentences if s.role == "detail"}
        assert cited <= quoted, (question, cited, quoted)
        lower_quoted += len({r for r in cited if r >= TUNING.quoted_pages})
        lower_left += len(detail - quoted)
    # (which lower page rivals the lead's depends on the page ranker's order: competing_pages'
    # own rule is checked on fixed scores above)
    assert lower_quoted or lower_left  # a lower page is in the answer when it competes, else in the detail only


def test_a_unit_longer_than_the_answers_hard_cap_never_leads_it(slice_settings) -> None:  # noqa: ANN001
    """EIM13030's table holds a whole list of exclusions in one cell: one row of 200 words. It
    best matches the question's words, but cannot be the lead of a short answer."""
    cap = slice_settings.stitching.shape.words_cap
    long_cell = "Computer equipment up to \u00a3500 per year is not a benefit for this purpose; " + "other excluded items are listed here in turn; " * (cap // 6)
    chunk = Chunk(
        id="EIM99998#c0", section_id="EIM99998", manual=DEFAULT_MANUAL, position=0, heading_path=["Termination benefits"],
        paragraphs=[
            Paragraph(id="EIM99998#c0.p0", text="Payments in lieu of notice made under the contract are taxable as earnings."),
            Paragraph(id="EIM99998#c0.p1", kind="table", text=f"Benefit | Notes\nComputer equipment | {long_cell}"),
        ],
        content_hash="y",
    )
    selection = SelectionResult(pages=[PageBundle(section_id="EIM99998", score=1.0, chunks=[chunk])], dropped=[])
    query = new_query(id="q", question="Is computer equipment I keep when I leave a termination benefit?", manual=DEFAULT_MANUAL)
    claims = stitch(query, selection, slice_settings, CorpusIndex.open(slice_settings), passage_model(slice_settings), []).sentences
    answer_part = [c for c in claims if c.role == "answer"]
    assert answer_part and all(len(c.text.split()) <= cap for c in answer_part)
    assert any(len(c.text.split()) > cap for c in claims if c.role == "detail")  # the long row is still there, in the detail


def _withdrawn_page(section: str, opening: str) -> PageBundle:
    paragraphs = [
        Paragraph(id=f"{section}#c0.p0", text=opening),
        Paragraph(id=f"{section}#c0.p1", text="Regulations exempt a free breakfast given to employees on designated cycle to work days."),
        Paragraph(id=f"{section}#c0.p2", text="The exemption covers refreshments as well as meals."),
    ]
    chunk = Chunk(id=f"{section}#c0", section_id=section, manual=DEFAULT_MANUAL, position=0, heading_path=[], paragraphs=paragraphs, content_hash="h")
    return PageBundle(section_id=section, score=1.0, chunks=[chunk])


@pytest.mark.parametrize(
    ("opening", "quoted"),
    [
        ("THIS RELIEF WAS WITHDRAWN FROM 6 APRIL 2013", True),  # EIM21668's opening line
        ("Section 89 ITEPA 2003 was repealed by section 227 and Schedule 39 FA 2004.", True),
        ("Employers sometimes hold events for staff.", False),  # an ordinary opening stays unquoted when it scores low
    ],
)
def test_a_page_that_opens_by_saying_its_rule_has_ended_is_never_quoted_without_it(slice_settings: Settings, opening: str, quoted: bool) -> None:
    settings = slice_settings.model_copy(deep=True)
    settings.retrieval.use_vectors = False
    query = new_query(id="q", question="Is a free breakfast on cycle to work days exempt?", manual=DEFAULT_MANUAL)
    draft = stitch(query, SelectionResult(pages=[_withdrawn_page("EIM9", opening)], dropped=[]), settings, CorpusIndex.open(settings), passage_model(settings), [])
    answer = [s for s in draft.sentences if s.role == "answer"]
    assert any("free breakfast" in s.text for s in answer)
    assert (answer[0].text == opening) is quoted  # in the manual's order: the notice first


def _page(section: str, *texts: str) -> PageBundle:
    paragraphs = [Paragraph(id=f"{section}#c0.p{n}", text=text) for n, text in enumerate(texts)]
    chunk = Chunk(id=f"{section}#c0", section_id=section, manual=DEFAULT_MANUAL, position=0, heading_path=[], paragraphs=paragraphs, content_hash="h")
    return PageBundle(section_id=section, score=0.5, chunks=[chunk])


@pytest.mark.parametrize(("question", "example_in_answer"), [
    ("How much can my employer pay me per mile for my own car without tax?", False),
    ("Can you show me a worked example of the mileage payments my employer can make without tax?", True),
])
def test_a_worked_example_nobody_asked_for_is_left_to_the_detail(slice_settings: Settings, question: str, example_in_answer: bool) -> None:
    settings = slice_settings.model_copy(deep=True)
    settings.retrieval.use_vectors = False
    rule = _page("EIM8", "Employers can pay mileage allowance payments free of tax up to the approved amount.", "The approved amount for a car is 45p a mile for the first 10,000 business miles.")
    example = _page("EIM9", "Example", "G uses his own car for work and his employer pays him 45p a mile for 8,000 business miles, all of it free of tax.")
    query = new_query(id="q", question=question, manual=DEFAULT_MANUAL)
    draft = stitch(query, SelectionResult(pages=[rule, example], dropped=[]), settings, CorpusIndex.open(settings), passage_model(settings), [])
    answer_part = [c for s in draft.sentences if s.role == "answer" for c in s.citations]
    assert any(c.startswith("EIM8") for c in answer_part)
    assert any(c.startswith("EIM9") for c in answer_part) is example_in_answer
    assert any(c.startswith("EIM9") for s in draft.sentences for c in s.citations)  # unasked, it is still in the detail


def test_the_answer_part_quotes_each_of_selections_first_pages_whatever_their_best_unit_scores(slice_settings: Settings) -> None:
    settings = slice_settings.model_copy(deep=True)
    settings.retrieval.use_vectors = False
    first = _page("EIM8", "Employers can pay mileage allowance payments free of tax up to the approved amount.", "The approved amount for a car is 45p a mile for the first 10,000 business miles.")
    second = _page("EIM7", "Passenger payments of up to 5p a mile can be paid free of tax for each colleague carried on a business journey.")
    first.score, second.score = 0.9, 0.02  # the page ranker's probabilities: the second page far behind
    query = new_query(id="q", question="How much can my employer pay me per mile for my own car without tax?", manual=DEFAULT_MANUAL)
    selection = SelectionResult(pages=[first, second], dropped=[])
    units = score_units(query, selection, settings, CorpusIndex.open(settings), passage_model(settings), None)
    best = {rank: max(u.score for u in units if u.page_rank == rank) for rank in (0, 1)}
    assert best[1] < settings.stitching.local.relative_floor * best[0]  # its best unit falls under the answer's floor
    draft = stitch(query, selection, settings, CorpusIndex.open(settings), passage_model(settings), [])
    answer_part = {c.split("#")[0] for s in draft.sentences if s.role == "answer" for c in s.citations}
    assert answer_part == {"EIM8", "EIM7"}  # selection ranked it among the first (quoted_pages): the answer quotes it


def _scored(units: list, scores: list[float]) -> list:  # noqa: ANN001
    for unit, score in zip(units, scores, strict=True):
        unit.score = score
    return units


def test_the_lead_reads_on_its_own_unless_that_unit_scores_well_below_the_best() -> None:
    units = _scored(units_of(
        Paragraph(id="EIM1#c0.p0", text="The approved amount for a car is 45p a mile."),
        Paragraph(id="EIM1#c0.p1", text="This is the rule for every employee who drives."),
    ), [0.9, 1.0])
    pool = rank_units(units, TUNING)
    assert pool is not None and choose_lead(pool, TUNING, SHAPE) is units[0]  # "This is ..." leans on the one before it
    units[0].score = 0.5  # under lead_standalone of the best: the best leads after all
    assert choose_lead(rank_units(units, TUNING), TUNING, SHAPE) is units[1]


def test_the_lead_comes_from_the_first_pages_and_within_the_hard_cap() -> None:
    first = units_of(Paragraph(id="EIM1#c0.p0", text="A rule on the first page that answers."))
    third = units_of(Paragraph(id="EIM3#c0.p0", text="A rule on a lower page that scores best."), page_rank=TUNING.answer_pages)
    long = units_of(Paragraph(id="EIM2#c0.p0", text="A rule far too long to lead " + "and so on " * SHAPE.words_cap + "until it ends."), page_rank=1)
    units = _scored([*first, *long, *third], [0.5, 0.9, 1.0])
    assert lead_candidates(rank_units(units, TUNING), TUNING, SHAPE) == [units[0]]
    units[2].looked_up = True  # a row keyed by the asker's own figure may lead from any page
    assert lead_candidates(rank_units(units, TUNING), TUNING, SHAPE) == [units[2], units[0]]
    alone = _scored(units_of(Paragraph(id="EIM2#c0.p0", text="A rule far too long to lead " + "and so on " * SHAPE.words_cap + "until it ends.")), [1.0])
    assert lead_candidates(rank_units(alone, TUNING), TUNING, SHAPE) == alone  # a filter leaving none falls away


def test_the_answer_starts_at_what_the_lead_is_read_after() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="An opening sentence. The rule that answers."),
        Paragraph(id="EIM1#c0.p1", text="Another paragraph before it."),
        Paragraph(id="EIM1#c0.p2", text="The maximum amounts are:"),
        Paragraph(id="EIM1#c0.p3", kind="li", text="\u00a35 per night in the UK"),
    )
    assert lead_start(units, 1, [1, 0]) == 0  # a paragraph is quoted from where it starts to say it
    assert lead_start(units, 4, [4, 3]) == 3  # a list item after its lead-in
    assert lead_start(units, 3, [3, 2]) == 3  # not the paragraph before


def test_the_answer_part_keeps_its_shape() -> None:
    topics = ["cars", "vans", "bicycles", "motorcycles", "passengers", "parking", "fuel", "insurance", "tolls", "repairs"]
    units = _scored(units_of(*(Paragraph(id=f"EIM1#c0.p{n}", text=f"A rule about {topic} for employees who travel on business.") for n, topic in enumerate(topics))), [1.0] * 10)
    pool = rank_units(units, TUNING)
    part = answer_part(pool, "yes_no", TUNING, SHAPE)
    assert 1 < len(part.claims) <= SHAPE.claims and sum(len(c.text.split()) for c in part.claims) <= SHAPE.words
    assert len(answer_part(pool, "yes_no", TUNING, SHAPE.model_copy(update={"claims": 1})).claims) == 1
    assert set(part.quoted) <= set(range(len(units)))


def _mileage_pool(rate_row: bool) -> list:
    """The demo's case in small: a lead on the first page, a rule about a side case on a lower one
    scoring best, and the mileage rates table of the third page, whose car row is that page's best
    unit; the answer's words leave room for the side rule or the car row, not both."""
    lead = units_of(Paragraph(id="EIM1#c0.p0", text="Many employers pay a mileage allowance, expressed as so many pence per mile."), page_rank=0)
    side = units_of(Paragraph(id="EIM2#c0.p0", text="Where an employee uses their own vehicle in more than one employment, each is treated separately for the 10,000 mile limit."), page_rank=3)
    rates = units_of(Paragraph(id="EIM3#c1.p0", kind="table", text="Kind of vehicle | Business miles | 2011-12 onwards\nMotor cycle | All | 24p\nCar or van | First 10,000 | 45p; after that 25p"), page_rank=2)
    motorcycle, car = rates
    car.rate_row = rate_row  # the best row of a rate table about the question's subject (passage_features)
    return _scored([*lead, *side, motorcycle, car], [0.5, 0.6, 0.2, 0.45])


def test_a_rate_questions_row_is_quoted_and_read_first_before_a_better_scoring_side_rule() -> None:
    shape = AnswerShape(claims=4, words=40, words_cap=60)
    for rate_row in (False, True):
        units = _mileage_pool(rate_row)
        part = answer_part(rank_units(units, TUNING), "figure", TUNING, shape)
        first = part.claims[0].text
        if rate_row:  # the rate for the asker's case leads, the side rule gave way to it
            assert first.startswith("Car or van") and not any("more than one employment" in c.text for c in part.claims)
        else:  # scored alone, the side rule takes the room and leads as the figure
            assert "more than one employment" in first and not any(c.text.startswith("Car or van") for c in part.claims)
