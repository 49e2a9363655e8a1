"""Title matching (services/text/titles.py): a question restating a page title, and the
retrieval list of the pages so titled, on the manual's own titles."""

from __future__ import annotations

import pytest

from services.text.titles import FRAME_WORDS
from services.answering.stages.retrieval import retrieve, title_chunks
from services.text.terms import CorpusStats, terms
from services.text.titles import TitleIndex, title_match

from services.text.reading import new_query
from shared.index import CorpusIndex

STATS = CorpusStats(
    [
        "Books bought by teachers for lessons.",
        "School teachers' expenses: the cost of books used in the classroom.",
        "Transitional rules apply to awards made before the change.",
        "Employee car ownership schemes: relief for business travel.",
        "Employee car ownership schemes: description of the scheme.",
    ]
)


def asked(question: str) -> set[str]:
    return set(terms(question))


def test_a_question_restating_a_title_matches_it_fully_and_a_narrower_or_wider_title_less() -> None:
    question = asked("What are the rules on Employee car ownership schemes: relief?")
    assert title_match(question, "Employee car ownership schemes: relief", STATS, FRAME_WORDS) == pytest.approx(1.0)
    narrower = title_match(question, "Employee car ownership schemes: description", STATS, FRAME_WORDS)
    wider = title_match(question, "Employee car ownership schemes: relief for business travel", STATS, FRAME_WORDS)
    assert 0.0 < narrower < 0.8 and 0.0 < wider < 0.8
    # one word asked, a title naming more: the title's share in the question is low
    assert title_match(asked("What are the rules on Books?"), "School teachers' expenses: books", STATS, FRAME_WORDS) < 0.5
    assert title_match(asked("What are the rules on Books?"), "Books", STATS, FRAME_WORDS) == pytest.approx(1.0)


def test_the_words_that_frame_any_question_count_on_neither_side() -> None:
    question = asked("What are the rules on Books?")
    assert title_match(question, "Books", STATS) < 1.0  # "rules" asked, not in the title
    assert title_match(question, "Books: rules", STATS, FRAME_WORDS) == pytest.approx(1.0)
    assert title_match(asked("What are the rules?"), "Books", STATS, FRAME_WORDS) == 0.0  # nothing asked but the frame
    assert title_match(question, "Zyxwv", STATS, FRAME_WORDS) == 0.0  # a title of words the manual never uses


def test_the_title_index_lists_the_restated_titles_best_first_above_the_floor() -> None:
    pages = {"EIM3": "Employee car ownership schemes: description", "EIM2": "Books", "EIM1": "Books", "EIM4": "School teachers' expenses: books"}
    titles = TitleIndex(pages, STATS, FRAME_WORDS)
    assert titles.restated(asked("What are the rules on books?"), 0.8) == [("EIM1", pytest.approx(1.0)), ("EIM2", pytest.approx(1.0))]
    assert [s for s, _ in titles.restated(asked("What are the rules on books?"), 0.1)] == ["EIM1", "EIM2", "EIM4"]
    assert titles.restated(asked("Can my employer pay for my books and my car?"), 0.8) == []


def test_retrieval_searches_the_titles_a_question_restates_and_only_those(slice_settings) -> None:  # noqa: ANN001
    index = CorpusIndex.open(slice_settings, slice_settings.manual)
    restating = "What are the rules on Exemptions: small loans?"
    assert title_chunks(index, restating, 0.8, 50)[0] == "EIM26140#c0"  # "Exemptions: small loans"
    assert title_chunks(index, "How much can my employer pay me per mile for using my own car without tax?", 0.8, 50) == []
    assert title_chunks(index, restating, 1.01, 50) == []
    query = new_query(id="q", question=restating, manual=slice_settings.manual)
    off = slice_settings.model_copy(update={"retrieval": slice_settings.retrieval.model_copy(update={"use_titles": False})})
    with_titles = {h.chunk_id: h.score for h in retrieve(query, slice_settings, CorpusIndex.open(slice_settings))[0].hits}
    without = {h.chunk_id: h.score for h in retrieve(query, off, CorpusIndex.open(off))[0].hits}
    # the page opening gains the title list's first place in the fusion
    gain = 1 / (slice_settings.retrieval.rrf_k + 1)
    assert with_titles["EIM26140#c0"] == pytest.approx(without.get("EIM26140#c0", 0.0) + gain)
