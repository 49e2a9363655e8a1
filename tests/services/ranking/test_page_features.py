"""The page ranker's features, one by one, on real pages: each read through the extractor by
its name, on a page that has the property and one that does not (the slice of the manual, and
a few real pages the slice lacks: tests/services/ranking/conftest.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.ranking.model import default_path, load_ranker
from services.ranking.page_features import NO_SUBJECT, PAGE_EXTRACTOR, PAGE_FEATURES, ConversationSubject, PageContext, page_contexts, page_signals
from shared.config import Settings
from shared.contracts.pipeline import PageBundle
from services.text.reading import new_query, read_question
from shared.index import CorpusIndex

SMALL_LOANS = "How does the small loans exemption work?"
MILEAGE_RATE = "What is the approved mileage rate for my car?"


def pages(
    settings: Settings, question: str, *section_ids: str, scores: list[float] | None = None, asked: str = "", subject: ConversationSubject = NO_SUBJECT
) -> dict[str, PageContext]:
    """The candidates ``section_ids`` (retrieval's scores: 1.0, 0.9, ... unless given) as the page features read them."""
    index = CorpusIndex.open(settings)
    scores = scores or [1.0 - 0.1 * i for i in range(len(section_ids))]
    bundles = [PageBundle(section_id=s, score=x, chunks=index.page_chunks(s)) for s, x in zip(section_ids, scores, strict=True)]
    query = new_query(id="test", question=question, manual=settings.manual, own_words=asked)
    return {p.section_id: p for p in page_contexts(query, bundles, settings, CorpusIndex.open(settings), [], subject)}


def feature(name: str, page: PageContext) -> float:
    return PAGE_EXTRACTOR[name].value(page)


def _keywords_only(settings: Settings) -> Settings:
    return settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"use_vectors": False})})


# ---- the extractor as the service and the model files read it ----------------------------


def test_the_page_features_are_the_extractors_names_in_the_order_the_model_file_lists() -> None:
    assert PAGE_FEATURES == PAGE_EXTRACTOR.names and len(PAGE_FEATURES) == 23
    assert tuple(load_ranker(default_path("pages"), "pages", PAGE_FEATURES).features) == PAGE_EXTRACTOR.names
    assert all(f.about for f in PAGE_EXTRACTOR)  # each says what it measures


def test_page_signals_rows_are_the_extractors_matrix_of_the_same_pages(slice_settings) -> None:  # noqa: ANN001
    index = CorpusIndex.open(slice_settings)
    bundles = [PageBundle(section_id=s, score=1.0 - 0.1 * i, chunks=index.page_chunks(s)) for i, s in enumerate(("EIM26140", "EIM26142", "EIM31240"))]
    query = new_query(id="test", question=SMALL_LOANS, manual=slice_settings.manual)
    served = np.stack([s.features for s in page_signals(query, bundles, slice_settings, CorpusIndex.open(slice_settings), [])])
    assert served.shape == (3, len(PAGE_FEATURES))
    assert served.tobytes() == PAGE_EXTRACTOR.matrix(page_contexts(query, bundles, slice_settings, CorpusIndex.open(slice_settings), [])).tobytes()


# ---- meaning --------------------------------------------------------------------------------


def test_chunk_cosine_best_is_highest_for_the_page_about_the_question(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, "Is a staff Christmas party taxable?", "EIM21690", "EIM31240")
    assert feature("chunk_cosine_best", found["EIM21690"]) > feature("chunk_cosine_best", found["EIM31240"]) + 0.1
    # keywords only: the page's term coverage stands in for the cosine
    keywords = pages(_keywords_only(slice_settings), SMALL_LOANS, "EIM26140", "EIM31240")
    assert feature("chunk_cosine_best", keywords["EIM26140"]) == feature("term_coverage", keywords["EIM26140"]) > 0.5
    assert feature("chunk_cosine_best", keywords["EIM31240"]) == 0.0


def test_chunk_cosine_mean_averages_the_pages_chunks(slice_settings) -> None:  # noqa: ANN001
    page = pages(slice_settings, SMALL_LOANS, "EIM26140")["EIM26140"]
    assert len(page.bundle.chunks) > 1
    assert 0.0 < feature("chunk_cosine_mean", page) < feature("chunk_cosine_best", page)  # not the best chunk's alone
    assert feature("chunk_cosine_mean", page) == pytest.approx(np.mean(page.cosines))


def test_title_cosine_tells_the_page_titled_by_the_subject(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, "Is a staff Christmas party taxable?", "EIM21690", "EIM01500")
    # annual parties against long service awards, which shares only words with the question
    assert feature("title_cosine", found["EIM21690"]) > feature("title_cosine", found["EIM01500"]) + 0.1
    assert feature("title_cosine", pages(_keywords_only(slice_settings), SMALL_LOANS, "EIM26140")["EIM26140"]) == 0.0


# ---- the question's terms --------------------------------------------------------------------


def test_term_coverage_is_the_share_of_the_questions_terms_on_the_page(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, SMALL_LOANS, "EIM26140", "EIM31240")
    assert feature("term_coverage", found["EIM26140"]) == pytest.approx(1.0)  # small, loans, exemption: all there
    assert feature("term_coverage", found["EIM31240"]) < 0.3  # mileage rates


def test_title_coverage_reads_the_title_alone(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, SMALL_LOANS, "EIM26140", "EIM26137", "EIM31240")
    assert feature("title_coverage", found["EIM26140"]) > 0.8  # "Exemptions: small loans"
    # "Exemptions: qualifying and non-qualifying loans": its body names small loans, its title does not
    assert feature("title_coverage", found["EIM26137"]) < feature("term_coverage", found["EIM26137"]) - 0.2
    assert feature("title_coverage", found["EIM31240"]) == 0.0


def test_title_own_share_counts_the_askers_own_subject_terms_not_the_words_framing_the_question(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, "What are the rules on Exemptions: small loans?", "EIM26140", "EIM31240")
    assert feature("title_own_share", found["EIM26140"]) == pytest.approx(1.0)  # exemptions, small, loans: all in the title
    assert feature("title_coverage", found["EIM26140"]) < 0.95  # "rules" counts there, and the title does not say it
    assert feature("title_own_share", found["EIM31240"]) == 0.0


def test_title_names_subject_only_as_a_phrase_of_two_words_or_more(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, "Are long service testimonial awards taxable?", "EIM01500", "EIM01501")
    assert feature("title_names_subject", found["EIM01500"]) == 1.0  # "Long service testimonial awards: general"
    assert feature("title_names_subject", found["EIM01501"]) == 0.0  # "Exemption for long service testimonial awards: ..."


def test_title_restated_is_one_for_the_title_the_question_restates(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, "What are the rules on Exemptions: small loans?", "EIM26140", "EIM26142", "EIM31240")
    assert feature("title_restated", found["EIM26140"]) == pytest.approx(1.0)
    assert feature("title_restated", found["EIM26142"]) < 1.0  # "... small loans: example" says more
    assert feature("title_restated", found["EIM31240"]) == 0.0


# ---- retrieval ---------------------------------------------------------------------------------


def test_retrieval_score_is_the_fused_score_over_the_best_candidates(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, SMALL_LOANS, "EIM26142", "EIM26140", "EIM31240", scores=[0.5, 2.0, 0.2])
    assert [feature("retrieval_score", found[s]) for s in ("EIM26142", "EIM26140", "EIM31240")] == pytest.approx([0.25, 1.0, 0.1])


def test_retrieval_rank_follows_the_scores_not_the_order_the_candidates_come_in(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, SMALL_LOANS, "EIM26142", "EIM26140", "EIM31240", scores=[0.5, 2.0, 0.2])
    assert [feature("retrieval_rank", found[s]) for s in ("EIM26140", "EIM26142", "EIM31240")] == pytest.approx([1.0, 1 / 2, 1 / 3])


def test_linked_from_top_counts_links_from_the_five_best_retrieved_pages_only(slice_settings) -> None:  # noqa: ANN001
    # EIM26140 links to 26137, 26142 and 26145; 26142 to 26137, 26140 and 26145; 26145 to 26137 and 26140
    found = pages(slice_settings, SMALL_LOANS, "EIM26140", "EIM26145", "EIM26142", "EIM31240")
    assert feature("linked_from_top", found["EIM26145"]) == pytest.approx(2 / 5)
    assert feature("linked_from_top", found["EIM26142"]) == pytest.approx(1 / 5)
    assert feature("linked_from_top", found["EIM31240"]) == 0.0
    # the sixth page's links do not count: 26142 is sixth here, so 26145 is linked from 26140 alone
    sixth = pages(slice_settings, SMALL_LOANS, "EIM26140", "EIM26145", "EIM31240", "EIM31205", "EIM31230", "EIM26142")
    assert feature("linked_from_top", sixth["EIM26145"]) == pytest.approx(1 / 5)


# ---- the kind of page against what the question asks ---------------------------------------


def test_example_page_flags_a_worked_example(slice_settings) -> None:  # noqa: ANN001
    found = pages(slice_settings, SMALL_LOANS, "EIM26142", "EIM26140")
    assert feature("example_page", found["EIM26142"]) == 1.0  # "Exemptions: small loans: example"
    assert feature("example_page", found["EIM26140"]) == 0.0


def test_example_page_asked_only_when_the_question_asks_for_an_example(slice_settings) -> None:  # noqa: ANN001
    asked = pages(slice_settings, "Can you give an example of the small loans exemption?", "EIM26142", "EIM26140")
    assert feature("example_page_asked", asked["EIM26142"]) == 1.0 and feature("example_page_asked", asked["EIM26140"]) == 0.0
    assert feature("example_page_asked", pages(slice_settings, SMALL_LOANS, "EIM26142")["EIM26142"]) == 0.0


def test_the_features_read_the_question_as_it_was_read_on_arrival_not_its_text_again(slice_settings) -> None:  # noqa: ANN001
    # A message whose reading asks for an example while its text does not: the feature follows
    # the reading (the record the message carries), so nothing re-parses the text downstream.
    index = CorpusIndex.open(slice_settings)
    query = new_query(id="q", question=SMALL_LOANS, manual=slice_settings.manual)
    query = query.model_copy(update={"reading": read_question("Can you give an example of the small loans exemption?")})
    bundle = PageBundle(section_id="EIM26142", score=1.0, chunks=index.page_chunks("EIM26142"))
    [page] = page_contexts(query, [bundle], slice_settings, index, [])
    assert feature("example_page_asked", page) == 1.0


def test_ended_period_flags_a_title_whose_years_have_ended_unless_the_question_names_a_year(other_pages_settings) -> None:  # noqa: ANN001
    undated = pages(other_pages_settings, "How is van benefit worked out?", "EIM22051", "EIM26140")
    assert feature("ended_period", undated["EIM22051"]) == 1.0  # "Van benefit to 2004/05: general"
    assert feature("ended_period", undated["EIM26140"]) == 0.0
    dated = pages(other_pages_settings, "How was van benefit worked out in 2003-04?", "EIM22051")
    assert feature("ended_period", dated["EIM22051"]) == 0.0


def test_withdrawn_flags_a_page_opening_with_a_withdrawn_rule(other_pages_settings) -> None:  # noqa: ANN001
    found = pages(other_pages_settings, "Is a small lump sum from a pension scheme taxable?", "EIM15425", "EIM26140")
    assert feature("withdrawn", found["EIM15425"]) == 1.0
    assert feature("withdrawn", found["EIM26140"]) == 0.0


def test_contents_page_is_the_share_of_paragraphs_that_are_only_a_link(other_pages_settings, slice_settings) -> None:  # noqa: ANN001
    found = pages(other_pages_settings, "Where is the guidance on residence?", "EIM42800", "EIM26140")
    assert feature("contents_page", found["EIM42800"]) == 1.0  # "EIM43000"
    assert feature("contents_page", found["EIM26140"]) == 0.0
    multiple = pages(slice_settings, "Can I get more than one long service award?", "EIM01503")["EIM01503"]
    assert feature("contents_page", multiple) == pytest.approx(1 / 8)  # one paragraph of eight is a bare "EIM01510."


def test_page_words_is_the_log_of_the_pages_length(other_pages_settings) -> None:  # noqa: ANN001
    found = pages(other_pages_settings, SMALL_LOANS, "EIM42800", "EIM26140")
    assert feature("page_words", found["EIM42800"]) == pytest.approx(math.log(2))  # one word
    assert feature("page_words", found["EIM26140"]) > math.log(100)


def test_figures_for_rate_question_flags_a_page_stating_rates_for_a_question_asking_one(slice_settings) -> None:  # noqa: ANN001
    rate = pages(slice_settings, MILEAGE_RATE, "EIM31240", "EIM31205")
    assert feature("figures_for_rate_question", rate["EIM31240"]) == 1.0  # the statutory rates table
    assert feature("figures_for_rate_question", rate["EIM31205"]) == 0.0  # an overview stating none
    plain = pages(slice_settings, "Do I have to use my own car for work?", "EIM31240")
    assert feature("figures_for_rate_question", plain["EIM31240"]) == 0.0


def test_table_keyed_by_asker_flags_a_table_row_keyed_by_the_askers_date(other_pages_settings) -> None:  # noqa: ANN001
    asked = pages(other_pages_settings, "What was the official rate of interest in 2014-15?", "EIM26104", "EIM26140")
    assert feature("table_keyed_by_asker", asked["EIM26104"]) == 1.0  # the row from 6.4.2014
    assert feature("table_keyed_by_asker", asked["EIM26140"]) == 0.0  # no table
    undated = pages(other_pages_settings, "What is the official rate of interest?", "EIM26104")
    assert feature("table_keyed_by_asker", undated["EIM26104"]) == 0.0  # nothing to key a row by


def test_limit_near_asker_amount_flags_the_limit_the_askers_own_amount_is_measured_against(slice_settings) -> None:  # noqa: ANN001
    asked = "My employer lent me \u00a33,600 interest free for a season ticket. Will I be taxed on it?"
    found = pages(slice_settings, asked, "EIM26140", "EIM31240")
    assert feature("limit_near_asker_amount", found["EIM26140"]) == 1.0  # "does not exceed \u00a35,000"
    assert feature("limit_near_asker_amount", found["EIM31240"]) == 0.0
    # a follow-up read with its subject: the earlier turn's amount is not this turn's
    follow_up = pages(slice_settings, f"And what was the official rate in 2009-10? {asked}", "EIM26140", asked="And what was the official rate in 2009-10?")
    assert feature("limit_near_asker_amount", follow_up["EIM26140"]) == 0.0


def test_title_covers_asker_flags_the_title_naming_the_askers_period_and_band(other_pages_settings) -> None:  # noqa: ANN001
    asked = pages(other_pages_settings, "My car emits 70 g/km. What is the appropriate percentage for 2013-14?", "EIM24610", "EIM22051")
    assert feature("title_covers_asker", asked["EIM24610"]) == 1.0  # "Step 5, 2012/13 to 2014/15: ... between 1-75 g/km"
    assert feature("title_covers_asker", asked["EIM22051"]) == 0.0
    outside = pages(other_pages_settings, "My car emits 70 g/km. What is the appropriate percentage for 2016-17?", "EIM24610")
    assert feature("title_covers_asker", outside["EIM24610"]) == 0.0


# ---- a follow-up's conversation --------------------------------------------------------------


def test_conversation_page_flags_a_page_an_earlier_turn_answered_from(slice_settings) -> None:  # noqa: ANN001
    subject = ConversationSubject(carried=frozenset({"EIM26140"}), linked=frozenset({"EIM26140", "EIM26142"}))
    found = pages(slice_settings, "And for a season ticket?", "EIM26140", "EIM26142", "EIM31240", subject=subject)
    assert [feature("conversation_page", found[s]) for s in ("EIM26140", "EIM26142", "EIM31240")] == [1.0, 0.0, 0.0]
    assert feature("conversation_page", pages(slice_settings, "And for a season ticket?", "EIM26140")["EIM26140"]) == 0.0  # no conversation


def test_conversation_link_flags_a_page_one_link_from_the_conversations_not_the_pages_themselves(slice_settings) -> None:  # noqa: ANN001
    subject = ConversationSubject(carried=frozenset({"EIM26140"}), linked=frozenset({"EIM26140", "EIM26142"}))
    found = pages(slice_settings, "And for a season ticket?", "EIM26140", "EIM26142", "EIM31240", subject=subject)
    assert [feature("conversation_link", found[s]) for s in ("EIM26140", "EIM26142", "EIM31240")] == [0.0, 1.0, 0.0]
