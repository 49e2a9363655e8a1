"""Stitching: what a quoted sentence brings with it, how quotes become claims, the answer's shape (the last tests on a real slice of the manual)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.runtime.dispatch import answer
from services.answering.pipeline import STAGES, new_state, run_stage, stages_through
from services.providers.local.stitching import (
    best_per_page, claims_of, competing_pages, context_of, figure_first, finishes_line, items_by_score, lead_first, items_joined, list_intro, quotable, reads_alone, repeats, score_units,
    stitch,
    table_full, without_lone_intros,
)
from services.ranking.passage_features import UNIT_FEATURES, rate_table_rows
from services.ranking.rankers import passage_model
from services.text.units import chunk_units, list_items
from shared.config import DEFAULT_MANUAL, LocalStitchingSettings, Settings
from shared.contracts.api import QuestionRequest
from shared.contracts.corpus import Chunk, Paragraph, section_of
from shared.contracts.pipeline import DraftSentence, PageBundle, Query, SelectionResult
from services.ranking.model import RankerModelError
from tests.ingest_worker.test_parser import chunks_of
from taxnav.evaluation.scoring import reads_alone as claim_reads_alone
from tests.services.text.paragraphs import units_of

TUNING = LocalStitchingSettings()  # the defaults the slice tests run with


def test_consecutive_sentences_of_a_paragraph_make_one_claim_with_one_citation() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The figure of \u00a3150 is not an allowance. Costs above it are taxable. Other text."),
        Paragraph(id="EIM1#c0.p1", text="the employee pays"),  # not a continuation: p0 ended its sentence
        Paragraph(id="EIM1#c0.p2", kind="table", text="Year | Amount\n2013/14 | \u00a3150\n2014/15 | \u00a3160"),
    )
    claims = claims_of({0: units[0], 1: units[1], 3: units[3], 4: units[4], 5: units[5]})
    assert [(c.text, c.citations) for c in claims] == [
        ("The figure of \u00a3150 is not an allowance. Costs above it are taxable.", ["EIM1#c0.p0"]),
        ("the employee pays", ["EIM1#c0.p1"]),
        ("2013/14: amount \u00a3150.", ["EIM1#c0.p2"]),  # a table row is one claim, read with its header
        ("2014/15: amount \u00a3160.", ["EIM1#c0.p2"]),
    ]
    # sentences of one paragraph that are not next to each other are two claims (a quote stays verbatim)
    assert len(claims_of({0: units[0], 2: units[2]})) == 2
    assert {c.role for c in claims_of({0: units[0]}, role="detail")} == {"detail"}


def test_a_sentence_split_over_paragraphs_is_one_claim_citing_each_paragraph() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The rule is old. SMP is not a social security benefit but replacement earnings"),
        Paragraph(id="EIM1#c0.p1", text="charged to tax as employment income. It is paid by employers."),
        Paragraph(id="EIM1#c0.p2", text="Another paragraph."),
    )
    assert len(units) == 4 and [p.id for p, _ in units[1].parts] == ["EIM1#c0.p0", "EIM1#c0.p1"]
    claims = claims_of(dict(enumerate(units)))
    assert [(c.text, c.citations) for c in claims] == [
        ("The rule is old. SMP is not a social security benefit but replacement earnings charged to tax as employment income. It is paid by employers.", ["EIM1#c0.p0", "EIM1#c0.p1"]),
        ("Another paragraph.", ["EIM1#c0.p2"]),
    ]
    # the split sentence alone is still whole: one claim citing both its paragraphs, never "charged to tax ..." alone
    assert [c.citations for c in claims_of({1: units[1]})] == [["EIM1#c0.p0", "EIM1#c0.p1"]]


def test_a_line_broken_off_the_one_before_it_is_never_quoted_without_it() -> None:
    # EIM01503: the scrape made "Section 323." a list number, and a chunk boundary fell after it
    units = [
        *units_of(Paragraph(id="EIM1#c0.p0", kind="li", text="All earlier awards in respect of service with the same")),
        *units_of(Paragraph(id="EIM1#c1.p0", text="employer count for the purpose of the 10 year test, whether taxed or not.")),
        *units_of(Paragraph(id="EIM1#c1.p1", text="See example")),
        *units_of(Paragraph(id="EIM1#c1.p2", text="EIM01510.")),
    ]
    assert finishes_line(units, 1) and finishes_line(units, 3) and not finishes_line(units, 2)
    assert 0 in context_of(units, 1, 1.0, TUNING) and 1 in context_of(units, 0, 1.0, TUNING)
    claims = claims_of(dict(enumerate(units)))
    assert [c.text for c in claims] == [
        "All earlier awards in respect of service with the same employer count for the purpose of the 10 year test, whether taxed or not.",
        "See example EIM01510.",
    ]
    assert claims[0].citations == ["EIM1#c0.p0", "EIM1#c1.p0"]


def test_a_list_item_is_quoted_whole_and_the_item_cap_counts_items_not_sentences() -> None:
    items = [
        Paragraph(id=f"EIM1#c0.p{n}", kind="li", text=f"a payment of \u00a3{n},000. This is taxable under Section {n}.")
        for n in range(1, 7)
    ]
    units = units_of(Paragraph(id="EIM1#c0.p0", text="The elements of the payment were:"), *items)
    assert len(units) == 13  # the intro, then two sentences per item
    picked = list_items(units, 0, TUNING.list_items)
    # every item's second sentence comes with it ("This is taxable under Section 3" is part of item 3)
    assert sorted({units[j].paragraph.id for j in picked}) == [f"EIM1#c0.p{n}" for n in range(1, TUNING.list_items + 1)]
    assert len(picked) == 2 * TUNING.list_items


def test_a_list_item_is_quoted_with_the_sentence_that_introduces_its_list() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The key features of the exemption are:"),
        *[Paragraph(id=f"EIM1#c0.p{n}", kind="li", text=f"feature number {n}") for n in range(1, TUNING.list_items + 3)],
        Paragraph(id="EIM1#c0.p9", text="A new rule. It stands alone."),
    )
    assert list_intro(units, 2) == 0 and 0 in context_of(units, 2, floor=1.0, tuning=TUNING)
    assert list_intro(units, TUNING.list_items + 1) == 0  # past the items the intro quotes: still read after it
    assert list_intro(units, len(units) - 1) is None  # not a list item
    assert list_intro(units, 0) is None


def test_context_brings_the_verdict_sentence_and_strong_neighbours_but_not_weak_ones() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="Weak opening sentence. A sum of \u00a310,000 for not competing. This is taxable under Section 225."),
        Paragraph(id="EIM1#c0.p1", text="A rule in another paragraph."),
    )
    floor = 0.5
    for unit, score in zip(units, [0.1, 0.9, 0.1, 0.9]):
        unit.score = score
    assert context_of(units, 1, floor, TUNING) == [2]  # the anaphor follows its sentence; the weak one before does not
    units[0].score = TUNING.neighbour_floor * floor  # a neighbour scoring near the floor joins the claim
    assert context_of(units, 1, floor, TUNING) == [0, 2]
    assert 3 not in context_of(units, 2, floor, TUNING)  # never across paragraphs


def test_a_table_row_reads_with_its_headers_and_brings_the_note_the_header_points_to() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", kind="table", text="CO2 emissions (g/km) (see note) | 2014/15\n135 | 20%\n140 | 21%"),
        Paragraph(id="EIM1#c0.p1", text="Other text."),
        Paragraph(id="EIM1#c0.p2", text="Note: The exact CO2 figure is always rounded down to the nearest 5 g/km."),
    )
    assert [u.text for u in units[:2]] == ["135: 2014/15 20%.", "140: 2014/15 21%."]
    assert context_of(units, 1, 0.5, TUNING) == [3]  # the header says "see note"
    plain = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text="Year | Amount\n2014/15 | \u00a33,090"), Paragraph(id="EIM1#c0.p1", text="Note: other."))
    assert context_of(plain, 0, 0.5, TUNING) == []  # no 'see note' in the header: no note


def test_a_page_does_not_repeat_its_example_for_each_run_of_years_but_two_pages_may_differ() -> None:
    first = units_of(Paragraph(id="EIM1#c0.p0", text="In the tax year 2003/04 D does 12,000 business miles and is paid 35p per mile."))[0]
    again = units_of(Paragraph(id="EIM1#c0.p1", text="In the tax year 2011-12 E does 12,000 business miles and is paid 35p per mile."))[0]
    other_page = units_of(Paragraph(id="EIM2#c0.p0", text="In the tax year 2011-12 E does 12,000 business miles and is paid 35p per mile."), page_rank=1)[0]
    different = units_of(Paragraph(id="EIM1#c0.p2", text="Employees with two employments add their business miles together."))[0]
    assert repeats(again, [first], TUNING)
    assert not repeats(other_page, [first], TUNING)  # the conflict check needs both pages' statements
    assert not repeats(different, [first], TUNING)
    same_elsewhere = units_of(Paragraph(id="EIM2#c0.p0", text="Employees with two employments add their business miles together."), page_rank=1)[0]
    assert repeats(same_elsewhere, [different], TUNING)  # another page saying the same with the same figures adds nothing


def test_the_run_around_the_lead_comes_first_in_the_manuals_order() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts an employer may pay tax free are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night for overnight stays in the UK"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="\u00a310 per night for overnight stays outside the UK."),
        Paragraph(id="EIM1#c0.p3", text="Another rule far below."),
        Paragraph(id="EIM1#c0.p4", text="Yet another rule."),
    )
    claims = lead_first(2, 0, {0: units[0], 1: units[1], 2: units[2], 4: units[4]})
    # the list's lead-in and its items are one claim, the rule far below another
    assert [[c[-2:] for c in claim.citations] for claim in claims] == [["p0", "p1", "p2"], ["p4"]]


def test_the_lead_comes_before_what_only_precedes_it_and_other_pages_come_best_first() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="A general sentence about the subject."),
        Paragraph(id="EIM1#c0.p1", text="The rule that answers the question."),
        Paragraph(id="EIM1#c0.p2", text="Its first condition."),
        Paragraph(id="EIM1#c0.p3", text="A later exception on the page."),
    )
    other = units_of(Paragraph(id="EIM2#c0.p0", text="Another page's weaker point."), Paragraph(id="EIM2#c0.p1", text="Its stronger point."), page_rank=1)
    third = units_of(Paragraph(id="EIM3#c0.p0", text="A third page's point."), page_rank=2)
    chosen = dict(enumerate([*units, *other, *third]))
    for unit, score in zip(chosen.values(), [0.9, 1.0, 0.8, 0.7, 0.5, 0.6, 0.95]):
        unit.score = score
    claims = lead_first(1, 1, chosen)
    # the lead and what follows it, the lead page's other sentences in order, then the other pages by their best
    assert [c.citations[0] for c in claims] == [
        "EIM1#c0.p1", "EIM1#c0.p2", "EIM1#c0.p3", "EIM1#c0.p0", "EIM3#c0.p0", "EIM2#c0.p0", "EIM2#c0.p1",
    ]
    assert [c.citations[0] for c in lead_first(1, 0, chosen)][:2] == ["EIM1#c0.p0", "EIM1#c0.p1"]  # a sentence the lead leans on stays before it


def test_another_pages_sentences_keep_the_manuals_order_when_not_adjacent() -> None:
    # EIM13900 quoted after the lead's page: "You make enquiries and find that the elements of
    # the payment were:" (p1) and its fourth item (p5) are two runs; the item scores higher but
    # is read after its lead-in
    lead = units_of(Paragraph(id="EIM1#c0.p0", text="The rule that answers the question."))
    other = units_of(
        Paragraph(id="EIM2#c0.p0", text="The elements of the payment were:"),
        *[Paragraph(id=f"EIM2#c0.p{n}", kind="li", text=f"an item number {n}.") for n in range(1, 5)],
        page_rank=1,
    )
    chosen = {0: lead[0], 1: other[0], 5: other[4]}
    for unit, score in zip(chosen.values(), [1.0, 0.5, 0.9]):
        unit.score = score
    assert [c.citations[0] for c in lead_first(0, 0, chosen)] == ["EIM1#c0.p0", "EIM2#c0.p0", "EIM2#c0.p4"]


def test_a_lists_items_are_read_best_first_after_their_lead_in_on_a_real_page(corpus_dir: Path) -> None:
    # EIM21715: "Small gifts ... are exempt from tax if the following conditions are met:" and
    # five conditions; the one a question about a gift's cost turns on ("does not exceed £250",
    # with its VAT sentence) is the fifth
    page = chunks_of(corpus_dir, "EIM21715").chunks
    units = [u for c in page for u in chunk_units(c, 0, TUNING)]
    intro = next(i for i, u in enumerate(units) if u.text.endswith("conditions are met:"))
    cost = next(i for i, u in enumerate(units) if "does not exceed" in u.text)
    after = next(i for i, u in enumerate(units) if u.text.startswith("Where the cost of a gift"))
    run = list(range(intro, after + 1))
    chosen = {j: units[j] for j in run}
    for j in run:
        units[j].score = 0.5
    units[cost].score, units[after].score = 0.9, 1.0
    order = items_by_score(run, chosen)
    # the lead-in first, the £250 item with its next sentence, the other items in order; the
    # sentence after the list stays after it however well it scores
    assert order == [intro, cost, cost + 1, *range(intro + 1, cost), after]
    claims = claims_of(chosen, order=order)
    # one claim: the lead-in, then the £250 condition first among its items
    assert claims[0].text.startswith(units[intro].text) and claims[0].citations[1] == "EIM21715#c0.p6"
    assert claims[0].text.index("the total cost to the donor") < min(claims[0].text.index(units[j].text) for j in range(intro + 1, cost))
    assert claims[-1].text.startswith("Where the cost of a gift")
    assert [c.citations[0] for c in claims_of(chosen)] == sorted(c.citations[0] for c in claims_of(chosen))  # no order: the manual's


def test_a_lettered_lists_items_keep_their_order() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The charge is worked out in three steps:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="(a) take the cash equivalent"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="(b) deduct what the employee made good"),
        Paragraph(id="EIM1#c0.p3", kind="li", text="(c) apply the rate of tax."),
    )
    chosen = dict(enumerate(units))
    for unit, score in zip(units, [0.5, 0.2, 0.3, 0.9]):
        unit.score = score
    assert items_by_score(list(chosen), chosen) == [0, 1, 2, 3]
    plain = units_of(*(Paragraph(id=p.id, kind=p.kind, text=p.text.split(") ", 1)[-1]) for u in units for p, _ in u.parts))
    for unit, score in zip(plain, [0.5, 0.2, 0.3, 0.9]):
        unit.score = score
    assert items_by_score([0, 1, 2, 3], dict(enumerate(plain))) == [0, 3, 2, 1]


def test_composed_answer_on_real_pages_is_short_leads_with_the_figure_and_never_ends_on_a_colon(slice_settings) -> None:  # noqa: ANN001
    for question in (
        "How much can my employer pay me per mile for using my own car without tax?",
        "Is there a tax charge on a works van I take home at weekends?",
        "What counts as a long service award?",
    ):
        result = answer(QuestionRequest(question=question), slice_settings)
        assert result.status == "answered", (question, result.refusal)
        claims = [s for s in result.answer.sentences if s.role == "answer"]
        detail = [s for s in result.answer.sentences if s.role == "detail"]
        words = [len(s.text.split()) for s in claims]
        assert 1 <= len(claims) <= TUNING.answer_claims and sum(words) <= TUNING.answer_words_cap, (question, words)
        assert sum(words) + sum(len(s.text.split()) for s in detail) <= TUNING.reply_words
        assert len({s.text for s in claims}) == len(claims)  # no claim repeats another
        assert not claims[-1].text.rstrip().endswith(":")  # a list intro never stands alone
        fragments = [s.text for s in result.answer.sentences if not claim_reads_alone(s.text)]
        assert not fragments, (question, fragments)  # a split sentence, a list item: quoted whole
        assert {s.verdict for s in claims} <= {"supported", "partially_supported"}
    mileage = answer(QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?"), slice_settings)
    first = [s for s in mileage.answer.sentences if s.role == "answer"][0]
    assert "45p" in first.text or "25p" in first.text, first.text  # a figure question: the figure first


def test_the_answer_shape_comes_from_settings(slice_settings: Settings) -> None:
    question = QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?")
    local = slice_settings.stitching.local.model_copy(update={"answer_claims": 1, "reply_words": 60})
    tight = slice_settings.model_copy(update={"stitching": slice_settings.stitching.model_copy(update={"local": local})})
    usual, short = answer(question, slice_settings), answer(question, tight)
    assert len([s for s in usual.answer.sentences if s.role == "answer"]) > 1
    assert len([s for s in short.answer.sentences if s.role == "answer"]) == 1
    assert sum(len(s.text.split()) for s in short.answer.sentences if s.role == "detail") < sum(
        len(s.text.split()) for s in usual.answer.sentences if s.role == "detail"
    )


def test_the_detail_reaches_down_to_its_own_floor_and_the_answer_part_does_not_move(slice_settings: Settings) -> None:
    question = QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?")

    def with_floor(floor: float) -> list:  # noqa: ANN202
        local = slice_settings.stitching.local.model_copy(update={"detail_floor": floor})
        settings = slice_settings.model_copy(update={"stitching": slice_settings.stitching.model_copy(update={"local": local})})
        return answer(question, settings).answer.sentences

    high, low = with_floor(slice_settings.stitching.local.relative_floor), with_floor(0.05)
    assert [s.text for s in high if s.role == "answer"] == [s.text for s in low if s.role == "answer"]
    words = [sum(len(s.text.split()) for s in reply if s.role == "detail") for reply in (high, low)]
    assert words[0] < words[1] and sum(len(s.text.split()) for s in low) <= slice_settings.stitching.local.reply_words


def test_each_unit_is_scored_by_the_passage_ranker_on_its_features(slice_settings) -> None:  # noqa: ANN001
    state = new_state(QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?"), slice_settings)
    for stage in stages_through("selection"):
        state = run_stage(stage, state, slice_settings)
    vector = np.asarray(state.retrieval.query_vector, dtype=np.float32)  # as retrieval carries it
    units = score_units(state.query, state.selection, slice_settings, vector)
    model = passage_model(slice_settings)
    rows = np.array([[u.features[f] for f in UNIT_FEATURES] for u in units])
    assert [u.score for u in units] == pytest.approx(list(model.probability(model.score(rows))))
    assert len({u.score for u in units}) > 1 and all(0.0 < u.score < 1.0 for u in units)
    # the page ranker's probability reaches the passages: the selection's first page says most
    assert {u.features["page_probability"] for u in units if u.page_rank == 0} == {state.selection.pages[0].score}


def test_a_passage_model_trained_on_other_features_is_refused(slice_settings: Settings, tmp_path) -> None:  # noqa: ANN001
    model = passage_model(slice_settings).model_copy(update={"features": [*UNIT_FEATURES[1:], "sentence_cosine"]})
    path = tmp_path / "passages.json"
    path.write_text(model.model_dump_json())
    settings = slice_settings.model_copy(deep=True)
    settings.stitching.local.passage_model = path
    with pytest.raises(RankerModelError, match="sentence_cosine"):
        passage_model(settings)


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
        best = best_per_page(score_units(state.query, state.selection, settings, vector))
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


def test_the_answer_quotes_a_few_rows_of_a_table_not_the_whole_table() -> None:
    rows = "\n".join(["Kind | Rate", *(f"Kind {n} | {n}p" for n in range(1, TUNING.table_rows + 3))])
    units = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text=rows), Paragraph(id="EIM1#c0.p1", text="A rule."))
    assert not table_full(units[TUNING.table_rows], units[:TUNING.table_rows - 1], TUNING)
    assert table_full(units[TUNING.table_rows], units[:TUNING.table_rows], TUNING)
    units[TUNING.table_rows].looked_up = True  # the row the asker's own figure picks always may go in
    assert not table_full(units[TUNING.table_rows], units[:TUNING.table_rows], TUNING)
    assert not table_full(units[-1], units[:TUNING.table_rows], TUNING)  # a sentence is never held back by a table


def test_the_cap_on_rows_counts_every_table_of_the_page() -> None:
    # EIM65970 tabulates the mileage rates twice, to 2010-11 and from 2011-12: the answer part
    # takes table_rows rows of that page, not table_rows of each table
    def table(paragraph: str, years: str) -> Paragraph:
        return Paragraph(id=f"EIM1#c0.{paragraph}", kind="table", text="\n".join(["Kind | Rate " + years, *(f"Kind {n} | {n}p" for n in range(1, 4))]))

    units = units_of(table("p0", "to 2010-11"), table("p1", "from 2011-12"))
    first, second = units[:3], units[3:]
    assert not table_full(second[0], first[: TUNING.table_rows - 1], TUNING)
    assert table_full(second[0], [*first, second[1]][: TUNING.table_rows], TUNING)
    other_page = units_of(table("p0", "to 2010-11"), page_rank=1)
    assert not table_full(other_page[0], [*first, *second][: TUNING.table_rows], TUNING)  # another page's table has its own rows


def test_pages_holding_only_a_list_intro_give_an_empty_draft_not_an_error(slice_settings) -> None:  # noqa: ANN001
    """A page whose only sentence introduces a list it does not hold (a contents page's
    "The guidance covers:") has nothing quotable: the draft is empty, and stitching does not fail."""
    chunk = Chunk(
        id="EIM99999#c0", section_id="EIM99999", manual=DEFAULT_MANUAL, position=0, heading_path=["Contents"],
        paragraphs=[Paragraph(id="EIM99999#c0.p0", text="The guidance on this subject covers the following:")], content_hash="x",
    )
    selection = SelectionResult(pages=[PageBundle(section_id="EIM99999", score=1.0, chunks=[chunk])], dropped=[])
    query = Query(id="q", question="What does the guidance cover?", manual=DEFAULT_MANUAL)
    assert stitch(query, selection, slice_settings, []).sentences == []


def test_a_unit_longer_than_the_answers_hard_cap_never_leads_it(slice_settings) -> None:  # noqa: ANN001
    """EIM13030's table holds a whole list of exclusions in one cell: one row of 200 words. It
    best matches the question's words, but cannot be the lead of a short answer."""
    cap = slice_settings.stitching.local.answer_words_cap
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
    query = Query(id="q", question="Is computer equipment I keep when I leave a termination benefit?", manual=DEFAULT_MANUAL)
    claims = stitch(query, selection, slice_settings, []).sentences
    answer_part = [c for c in claims if c.role == "answer"]
    assert answer_part and all(len(c.text.split()) <= cap for c in answer_part)
    assert any(len(c.text.split()) > cap for c in claims if c.role == "detail")  # the long row is still there, in the detail


def test_a_list_intro_whose_items_are_not_quoted_next_to_it_is_left_out() -> None:
    def claim(text: str, cite: str) -> DraftSentence:
        return DraftSentence(text=text, citations=[cite], role="answer")

    intro, item = claim("There are two main aspects to this:", "EIM1#c0.p3"), claim("the first aspect", "EIM1#c0.p4")
    later = claim("For example, an employer pays 50p a mile.", "EIM1#c1.p0")
    assert without_lone_intros([intro, item], TUNING.lead_in_words) == [intro, item]  # with its first item
    assert without_lone_intros([intro, claim("a later item", "EIM1#c0.p6")], TUNING.lead_in_words)[0] == intro  # or a later one
    assert without_lone_intros([intro, later], TUNING.lead_in_words) == [later]  # followed by something else
    assert without_lone_intros([later, intro], TUNING.lead_in_words) == [later]  # last
    assert without_lone_intros([intro, claim("the first aspect", "EIM2#c0.p4")], TUNING.lead_in_words) == [claim("the first aspect", "EIM2#c0.p4")]  # another page
    rule = claim("The exemption covers certain pensions paid in consequence of disablement caused by injury if:", "EIM1#c0.p3")
    assert without_lone_intros([rule, later], TUNING.lead_in_words) == [rule, later]  # a rule that introduces its conditions says something itself


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
    query = Query(id="q", question="Is a free breakfast on cycle to work days exempt?", manual=DEFAULT_MANUAL)
    draft = stitch(query, SelectionResult(pages=[_withdrawn_page("EIM9", opening)], dropped=[]), settings, [])
    answer = [s for s in draft.sentences if s.role == "answer"]
    assert any("free breakfast" in s.text for s in answer)
    assert (answer[0].text == opening) is quoted  # in the manual's order: the notice first


def test_a_figure_question_is_answered_by_a_figure_first_that_reads_on_its_own() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="Many employers pay a round sum mileage allowance, expressed as x pence per mile."),
        Paragraph(id="EIM1#c0.p1", text="For example, an employer pays 60p a mile to an employee."),
        Paragraph(id="EIM1#c0.p2", text="The payments are exempt if they do not exceed:"),
        Paragraph(id="EIM1#c0.p3", kind="li", text="45p a mile for the first 10,000 business miles"),
        Paragraph(id="EIM1#c1.p0", kind="table", text="Kind of vehicle | Business miles | 2011-12 onwards\nMotor cycle | All | 24p\nCar or van | First 10,000 | 45p"),
    )
    for unit, score in zip(units, (1.0, 0.9, 0.8, 0.7, 0.5, 0.6), strict=True):
        unit.score = score
    units[1].example = True  # what stitching marks a worked example
    chosen = dict(enumerate(units))
    claims = claims_of(chosen)
    led = figure_first("figure", claims, chosen)
    # the list's lead-in with its item is one claim that reads on its own and states the figure;
    # the example does not lead
    assert led[0].text == "The payments are exempt if they do not exceed: 45p a mile for the first 10,000 business miles"
    assert sorted(c.text for c in led) == sorted(c.text for c in claims)  # moved, nothing lost
    units[2].score, units[3].score = 0.4, 0.3  # the table's row now scores best of the claims giving a figure
    assert figure_first("figure", claims, chosen)[0].text.startswith("Car or van:")
    assert figure_first("yes_no", claims, chosen) == claims  # only a figure question
    assert figure_first("figure", led, chosen) == led  # a first claim with a figure stays
    no_row = {i: u for i, u in chosen.items() if u.row is None}
    no_row[1].example, no_row[3].example = True, True  # the item stands in a worked example now: nothing giving a figure reads alone
    assert figure_first("figure", claims_of(no_row), no_row) == claims_of(no_row)  # the order stays
    # nor does a line of a worked computation lead (EIM74652: "State pension | £3,000" before the rate the question asks)
    worked = units_of(
        Paragraph(id="EIM3#c0.p0", text="The lump sum is taxed at the highest rate that applies to the individual's total income."),
        Paragraph(id="EIM3#c1.p0", kind="table", text="Earnings | \u00a322,000 |\nState pension | \u00a33,000 |"),
    )
    chosen = dict(enumerate(worked))
    assert figure_first("figure", claims_of(chosen), chosen) == claims_of(chosen)
    # a page's notice that its rule has ended is read first, figure or none (EIM02650's repeal of the 15p exemption)
    ended = units_of(
        Paragraph(id="EIM2#c0.p0", text="Section 89 ITEPA 2003 was repealed by Finance Act 2012 with effect from the tax year 2013-14."),
        Paragraph(id="EIM2#c0.p1", text="There is a 15p per working day exemption on some meal vouchers."),
    )
    chosen = dict(enumerate(ended))
    assert figure_first("figure", claims_of(chosen), chosen) == claims_of(chosen)


def test_a_line_going_on_from_an_unfinished_one_never_opens_the_answer(corpus_dir: Path) -> None:
    # EIM76185: "... work for an employer but cannot get" / "Statutory Sick Pay, or" / "have been
    # getting Statutory Sick Pay but it has now stopped": the scrape split the item where no join
    # could be told; the second line led an answer to "Do I pay tax on ESA?"
    page = chunks_of(corpus_dir, "EIM76185").chunks
    units = [u for c in page for u in chunk_units(c, 0, TUNING)]
    i = next(i for i, u in enumerate(units) if u.text.startswith("Statutory Sick Pay, or"))
    assert not reads_alone(units, i, TUNING.list_items)
    opening = next(i for i, u in enumerate(units) if u.text.startswith("Employment and Support Allowance (ESA) is"))
    assert reads_alone(units, opening, TUNING.list_items)


def test_a_list_item_after_its_lead_in_and_a_table_row_read_alone_a_this_sentence_does_not() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night in the UK"),
        Paragraph(id="EIM1#c0.p2", text="This is the rule."),
        Paragraph(id="EIM1#c0.p3", kind="table", text="Kind | Rate\nCar | 45p"),
    )
    assert [reads_alone(units, i, TUNING.list_items) for i in range(len(units))] == [True, True, False, True]
    # a line of a worked computation (a table without a header) is read with the rest of it
    computation = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text="Earnings | \u00a322,000 |\nState pension | \u00a33,000 |"))
    assert not any(reads_alone(computation, i, TUNING.list_items) for i in range(len(computation)))
    # an item after a lead-in without its colon goes on from an unfinished line, but that line is its list's lead-in
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts are"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night in the UK"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="\u00a310 per night outside the UK."),
        Paragraph(id="EIM1#c0.p3", text="Spent on"),
        Paragraph(id="EIM1#c0.p4", text="Newspapers, it is exempt."),
    )
    assert [reads_alone(units, i, TUNING.list_items) for i in range(len(units))] == [True, True, True, False]


def test_a_rate_question_gets_the_best_row_of_a_rate_table_not_of_a_worked_computation() -> None:
    # EIM74652 works the state pension lump sum's tax out in a table without a header
    # ("Earnings | £22,000", "State pension | £3,000"): it tabulates no rate
    rates = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text="Date | Official rate\n6.4.2013 | 4%\n6.4.2014 | 3.25%"))
    sums = units_of(Paragraph(id="EIM2#c0.p0", kind="table", text="Earnings | \u00a322,000 |\nState pension | \u00a33,000 |"))
    weights = {"rate": 1.0, "pension": 1.0, "earn": 1.0, "offici": 1.0}
    assert [u.text for u in rate_table_rows(rates, weights, set(), 0.15)] == [rates[-1].text]  # the newest when none scores better
    assert rate_table_rows(rates, {**weights, "2013": 1.0}, set(), 0.15) == [rates[0]]  # the row naming the question's year
    assert rate_table_rows(sums, weights, set(), 0.15) == []
    assert rate_table_rows(rates, {"mileag": 1.0}, set(), 0.15) == []  # a table about something else


def test_a_unit_that_cannot_be_read_with_what_the_page_gives_beside_it_is_never_quoted() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night in the UK"),
        Paragraph(id="EIM1#c0.p2", kind="table", text="Kind | Rate\nCar | 45p"),
        Paragraph(id="EIM1#c0.p3", text="There are two main aspects to this:"),
    )
    assert [quotable(units, i, TUNING.list_items) for i in range(len(units))] == [True, True, True, False]  # a lead-in with no items after it
    computation = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text="Earnings | \u00a322,000 |\nState pension | \u00a33,000 |"))
    assert not any(quotable(computation, i, TUNING.list_items) for i in range(len(computation)))  # "Earnings | £22,000": a line of a sum
    # a list item a chunk boundary cut from its lead-in (its chunk opens with it): no lead-in to read it after
    orphan = units_of(Paragraph(id="EIM1#c0.p0", text="the vehicle used must be a car or a van."), Paragraph(id="EIM1#c0.p1", text="A rule that stands alone."))
    assert [quotable(orphan, i, TUNING.list_items) for i in range(len(orphan))] == [False, True]


def test_the_detail_never_quotes_an_item_of_a_list_the_answer_part_quotes_apart_from_its_lead_in(slice_settings: Settings) -> None:
    # EIM31400 lists its exemption's conditions over two chunks: the answer part quotes the
    # lead-in with its first items; a later item in the detail would read as a fragment
    for question in ("How much can my employer pay me per mile for using my own car without tax?", "Can my employer pay me extra for carrying colleagues as passengers?"):
        result = answer(QuestionRequest(question=question), slice_settings)
        quoted = [s for s in result.answer.sentences if s.role == "detail"]
        assert quoted and all(claim_reads_alone(s.text) for s in quoted), [s.text for s in quoted if not claim_reads_alone(s.text)]


def test_an_item_quoted_apart_from_its_lead_in_joins_it_and_a_crumb_is_never_quoted() -> None:
    claims = [
        DraftSentence(text="In a case where property is transferred the request should:", citations=["EIM1#c0.p0"]),
        DraftSentence(text="attach a copy of any tenancy agreement in force.", citations=["EIM1#c0.p3"]),
        DraftSentence(text="A new rule that stands alone.", citations=["EIM1#c0.p4"]),
        DraftSentence(text="another item of the list on that page.", citations=["EIM1#c0.p5"]),
        DraftSentence(text="a line in lower case from another page.", citations=["EIM2#c0.p0"]),
    ]
    joined = items_joined(claims)
    assert [c.text for c in joined] == [
        "In a case where property is transferred the request should: attach a copy of any tenancy agreement in force.",
        "A new rule that stands alone. another item of the list on that page.",  # its page's claim before it: read after it
        "a line in lower case from another page.",  # nothing of its page before it: left as it is (quotable keeps such lines out)
    ]
    assert joined[0].citations == ["EIM1#c0.p0", "EIM1#c0.p3"]
    crumbs = units_of(Paragraph(id="EIM1#c0.p0", text="Example 1"), Paragraph(id="EIM1#c0.p1", text="See EIM24360."), Paragraph(id="EIM1#c0.p2", text="This is taxable."))
    assert [quotable(crumbs, i, TUNING.list_items) for i in range(len(crumbs))] == [False, False, True]


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
    query = Query(id="q", question=question, manual=DEFAULT_MANUAL)
    draft = stitch(query, SelectionResult(pages=[rule, example], dropped=[]), settings, [])
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
    query = Query(id="q", question="How much can my employer pay me per mile for my own car without tax?", manual=DEFAULT_MANUAL)
    selection = SelectionResult(pages=[first, second], dropped=[])
    units = score_units(query, selection, settings, None)
    best = {rank: max(u.score for u in units if u.page_rank == rank) for rank in (0, 1)}
    assert best[1] < settings.stitching.local.relative_floor * best[0]  # its best unit falls under the answer's floor
    draft = stitch(query, selection, settings, [])
    answer_part = {c.split("#")[0] for s in draft.sentences if s.role == "answer" for c in s.citations}
    assert answer_part == {"EIM8", "EIM7"}  # selection ranked it among the first (quoted_pages): the answer quotes it
