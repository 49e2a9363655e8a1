"""The units scored by the passage ranker and ranked (services/providers/local/ranked.py)."""

from __future__ import annotations

import numpy as np
import pytest

from services.answering.pipeline import new_state, run_stage, stages_through
from services.providers.local.ranked import rank_units, score_units
from services.providers.local.stitching import stitch
from services.ranking.model import RankerModelError
from services.ranking.passage_features import UNIT_FEATURES, rate_table_rows
from services.ranking.rankers import passage_model
from shared.config import DEFAULT_MANUAL, LocalStitchingSettings, Settings
from shared.contracts.api import QuestionRequest
from shared.index import CorpusIndex
from shared.contracts.corpus import Chunk, Paragraph
from shared.contracts.pipeline import PageBundle, SelectionResult
from services.text.reading import new_query
from tests.services.text.paragraphs import units_of

TUNING = LocalStitchingSettings()  # the defaults the tests run with


def test_each_unit_is_scored_by_the_passage_ranker_on_its_features(slice_settings) -> None:  # noqa: ANN001
    state = new_state(QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?"), slice_settings)
    for stage in stages_through("selection"):
        state = run_stage(stage, state, slice_settings)
    vector = np.asarray(state.retrieval.query_vector, dtype=np.float32)  # as retrieval carries it
    units = score_units(state.query, state.selection, slice_settings, CorpusIndex.open(slice_settings), passage_model(slice_settings), vector)
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


def test_pages_holding_only_a_list_intro_give_an_empty_draft_not_an_error(slice_settings) -> None:  # noqa: ANN001
    """A page whose only sentence introduces a list it does not hold (a contents page's
    "The guidance covers:") has nothing quotable: the draft is empty, and stitching does not fail."""
    chunk = Chunk(
        id="EIM99999#c0", section_id="EIM99999", manual=DEFAULT_MANUAL, position=0, heading_path=["Contents"],
        paragraphs=[Paragraph(id="EIM99999#c0.p0", text="The guidance on this subject covers the following:")], content_hash="x",
    )
    selection = SelectionResult(pages=[PageBundle(section_id="EIM99999", score=1.0, chunks=[chunk])], dropped=[])
    query = new_query(id="q", question="What does the guidance cover?", manual=DEFAULT_MANUAL)
    assert stitch(query, selection, slice_settings, CorpusIndex.open(slice_settings), passage_model(slice_settings), []).sentences == []


def test_units_are_ranked_best_first_and_an_unquotable_one_sets_the_floor_but_is_never_quoted() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="A rule that can be quoted."),
        Paragraph(id="EIM1#c0.p1", text="There are two main aspects to this:"),  # a lead-in without its items
        Paragraph(id="EIM1#c0.p2", text="Another rule that can be quoted."),
    )
    for unit, score in zip(units, [0.4, 1.0, 0.6], strict=True):
        unit.score = score
    pool = rank_units(units, TUNING)
    assert pool is not None and pool.best_first == [units[2], units[0]]
    assert pool.floor == TUNING.relative_floor * 1.0 and pool.page_best == {0: 1.0}
    assert [pool.index(u) for u in pool.best_first] == [2, 0]
    assert rank_units(units[1:2], TUNING) is None and rank_units([], TUNING) is None  # nothing quotable
