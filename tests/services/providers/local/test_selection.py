"""Selection: the subject a title names, the on-topic margin, the page features the ranker reads and its order (on a real slice of the manual)."""

from __future__ import annotations

import pytest

import numpy as np

from services.answering.pipeline import STAGES, new_state, run_stage, stages_through
from services.ranking import page_features
from services.ranking.page_features import PAGE_FEATURES, names_title_subject, page_signals
from services.providers.local import selection
from services.providers.local.selection import score_pages, select, similarity_floor
from services.ranking.model import RankerModel, RankerModelError, default_path, load_ranker
from services.ranking.rankers import page_ranker
from services.text.reading import read_question, reread
from services.text.terms import terms
from shared.config import LocalSelectionSettings, Settings
from shared.contracts.api import QuestionRequest
from shared.index import CorpusIndex


def served(settings: Settings) -> tuple[CorpusIndex, RankerModel]:
    """What the local provider gives selection: the question's index and its page ranker."""
    return CorpusIndex.open(settings), page_ranker(settings)


def test_a_title_names_the_questions_subject_only_as_a_phrase_of_two_words_or_more() -> None:
    def q(text: str) -> str:
        return f" {' '.join(terms(text))} "

    assert names_title_subject(q("I get Employment and Support Allowance. Is it taxed?"), "Employment and Support Allowance: taxation")
    assert not names_title_subject(q("Is support from my employer an allowance?"), "Employment and Support Allowance: taxation")
    assert not names_title_subject(q("Is it just the \u00a310 over the limit?"), "10% limit")  # a figure is not a subject
    assert not names_title_subject(q("Do I pay tax on my car?"), "Cars: general")  # one word names too much


def test_questions_in_the_language_of_jobs_get_a_wider_on_topic_margin() -> None:
    tuning = LocalSelectionSettings()
    assert similarity_floor(read_question("My employer pays my gym membership, is that taxed?"), tuning) < similarity_floor(read_question("How tall is Mount Everest?"), tuning)


def test_an_example_page_ranks_near_the_top_only_when_the_question_asks_for_an_example(slice_settings) -> None:  # noqa: ANN001
    def ranking(question: str) -> list[str]:
        state = new_state(QuestionRequest(question=question), slice_settings)
        for stage in stages_through("rollup"):
            state = run_stage(stage, state, slice_settings)
        return [s.bundle.section_id for s in sorted(score_pages(state.query, state.rollup, slice_settings, *served(slice_settings), state.retrieval.query_vector), key=lambda s: -s.relevance)]

    asked = ranking("Can you give an example of the small loans exemption?")
    plain = ranking("How does the small loans exemption work?")
    # "Exemptions: small loans: example": near the top when asked for, below the rule otherwise
    assert asked.index("EIM26142") <= 1, asked[:4]
    assert plain[0] != "EIM26142" and plain.index("EIM26142") >= asked.index("EIM26142"), plain[:4]


def _tuned(settings: Settings, **fields: float) -> Settings:
    local = settings.selection.local.model_copy(update=fields)
    return settings.model_copy(update={"selection": settings.selection.model_copy(update={"local": local})})


def test_the_selection_tuning_comes_from_settings(slice_settings) -> None:  # noqa: ANN001
    state = new_state(QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?"), slice_settings)
    for stage in stages_through("rollup"):
        state = run_stage(stage, state, slice_settings)
    vector = state.retrieval.query_vector
    kept = select(state.query, state.rollup, slice_settings, *served(slice_settings), vector).pages
    one = _tuned(slice_settings, max_pages=1)
    assert len(kept) > 1 and [p.section_id for p in select(state.query, state.rollup, one, *served(one), vector).pages] == [kept[0].section_id]
    off_topic = _tuned(slice_settings, min_similarity=1.1, min_similarity_tied=1.1, title_on_topic=1.01)
    assert select(state.query, state.rollup, off_topic, *served(off_topic), vector).pages == []


def _features(settings: Settings, question: str, asked: str = "") -> dict[str, dict[str, float]]:
    """Each candidate page's features by name, as the ranker reads them."""
    state = _rollup(settings, question)
    query = reread(state.query, state.query.question, own_words=asked)  # a follow-up: the person's own words this turn
    signals = page_signals(query, state.rollup.pages, settings, CorpusIndex.open(settings), state.retrieval.query_vector)
    return {s.bundle.section_id: dict(zip(PAGE_FEATURES, s.features.tolist(), strict=True)) for s in signals}


def test_an_ended_rules_page_is_flagged_only_when_the_question_names_no_year(slice_settings, monkeypatch) -> None:  # noqa: ANN001
    ended = "EIM22790"  # "Van benefit from 2005/06: cash equivalent", as if titled "to 2004/05"
    index = CorpusIndex.open(slice_settings)
    monkeypatch.setattr(page_features, "title_ended", lambda title: title == page_features.page_title(index, ended))
    undated = _features(slice_settings, "How is the cash equivalent of a company van worked out?")
    assert undated[ended]["ended_period"] == 1.0
    assert all(f["ended_period"] == 0.0 for sid, f in undated.items() if sid != ended)
    dated = _features(slice_settings, "How was the cash equivalent of a company van worked out in 2004-05?")
    assert dated[ended]["ended_period"] == 0.0  # the asker names the years it covers


def test_a_page_setting_the_limit_the_askers_amount_is_measured_against_is_flagged(slice_settings) -> None:  # noqa: ANN001
    asked = "My employer lent me \u00a33,600 interest free for a season ticket. Will I be taxed on it?"
    features = _features(slice_settings, asked)
    flagged = {sid for sid, f in features.items() if f["limit_near_asker_amount"] == 1.0}
    assert "EIM26140" in flagged  # "does not exceed \u00a35,000": the small loans limit
    assert len(flagged) < len(features)  # not every page sets such a limit
    unasked = _features(slice_settings, "Will I be taxed on an interest-free season ticket loan from my employer?")
    assert not any(f["limit_near_asker_amount"] for f in unasked.values())  # no amount asked: nothing to measure
    # a follow-up read with its subject: the earlier turn's amount is not this turn's
    follow_up = _features(slice_settings, f"And what was the official rate back in 2009-10? {asked}", "And what was the official rate back in 2009-10?")
    assert not any(f["limit_near_asker_amount"] for f in follow_up.values())


def _rollup(settings: Settings, question: str):  # noqa: ANN202
    state = new_state(QuestionRequest(question=question), settings)
    for stage in stages_through("rollup"):
        state = run_stage(stage, state, settings)
    return state


def test_every_feature_is_computed_for_every_candidate_in_range(slice_settings) -> None:  # noqa: ANN001
    features = _features(slice_settings, "Is a staff Christmas party taxable?")
    assert len(features) > 3
    for page in features.values():
        assert set(page) == set(PAGE_FEATURES) and all(np.isfinite(v) for v in page.values())
        assert 0.0 <= page["title_cosine"] <= 1.0 and 0.0 < page["retrieval_score"] <= 1.0 and 0.0 <= page["term_coverage"] <= 1.0
    # the title's meaning tells the page about parties from one that only shares words with the question
    assert features["EIM21690"]["title_cosine"] > features["EIM01500"]["title_cosine"] + 0.1  # annual parties, long service awards
    assert max(f["retrieval_rank"] for f in features.values()) == 1.0  # retrieval's first page


def test_the_ranker_orders_the_pages_and_calibrates_a_probability_per_page(slice_settings) -> None:  # noqa: ANN001
    state = _rollup(slice_settings, "Is a staff Christmas party taxable?")
    scored = score_pages(state.query, state.rollup, slice_settings, *served(slice_settings), state.retrieval.query_vector)
    by_score = sorted(scored, key=lambda s: -s.score)
    assert [s.relevance for s in by_score] == sorted((s.relevance for s in scored), reverse=True)  # monotone calibration
    assert all(0.0 < s.relevance < 1.0 for s in scored)
    kept = select(state.query, state.rollup, slice_settings, *served(slice_settings), state.retrieval.query_vector).pages
    assert kept[0].section_id == by_score[0].bundle.section_id


def test_a_model_file_with_other_features_stops_selection_with_a_typed_error(slice_settings, tmp_path) -> None:  # noqa: ANN001
    model = load_ranker(default_path("pages"), "pages", PAGE_FEATURES)
    stale = tmp_path / "pages.json"
    stale.write_text(model.model_copy(update={"features": [*model.features[:-1], "bm25_title"]}).model_dump_json())
    state = _rollup(slice_settings, "Is a staff Christmas party taxable?")
    with pytest.raises(RankerModelError, match="bm25_title"):
        score_pages(state.query, state.rollup, _tuned(slice_settings, page_model=stale), *served(_tuned(slice_settings, page_model=stale)), state.retrieval.query_vector)


def test_a_question_that_restates_a_page_title_ranks_that_page_first(slice_settings) -> None:  # noqa: ANN001
    state = _rollup(slice_settings, "What are the rules on Exemptions: small loans?")
    scored = score_pages(state.query, state.rollup, slice_settings, *served(slice_settings), state.retrieval.query_vector)
    assert max(scored, key=lambda s: s.score).bundle.section_id == "EIM26140"
    restated = {s.bundle.section_id: s.title_match for s in scored}
    assert restated["EIM26140"] == pytest.approx(1.0)  # "Exemptions: small loans"
    assert any(0.0 < m < slice_settings.retrieval.title_match_floor for m in restated.values())  # "...: example" and the like


def test_a_question_in_a_pages_own_title_words_is_on_topic_whatever_the_cosine(slice_settings) -> None:  # noqa: ANN001
    """Title evidence: with the cosine floor out of reach, a question whose words a candidate
    page's title holds is still on topic; without that evidence it is not, and a question
    that names nothing in any title stays off topic."""
    def kept(question: str, settings: Settings) -> list[str]:
        state = new_state(QuestionRequest(question=question), settings)
        for stage in stages_through("rollup"):
            state = run_stage(stage, state, settings)
        return [p.section_id for p in select(state.query, state.rollup, settings, *served(settings), state.retrieval.query_vector).pages]

    unreachable = _tuned(slice_settings, min_similarity=1.1, min_similarity_tied=1.1)
    titled = "What are the rules on long service testimonial awards: form of qualifying awards?"
    assert "EIM01502" in kept(titled, unreachable)
    assert kept(titled, _tuned(unreachable, title_on_topic=1.01)) == []
    assert kept("How tall is the tallest mountain in the Alps?", _tuned(slice_settings, min_similarity=1.1, min_similarity_tied=1.1)) == []


def test_a_question_restating_a_title_keeps_that_page_and_only_the_pages_close_to_it(slice_settings) -> None:  # noqa: ANN001
    state = _rollup(slice_settings, "What are the rules on Exemptions: small loans?")
    vector = state.retrieval.query_vector
    scored = {s.bundle.section_id: s for s in score_pages(state.query, state.rollup, slice_settings, *served(slice_settings), vector)}
    kept = [p.section_id for p in select(state.query, state.rollup, slice_settings, *served(slice_settings), vector).pages]
    assert kept[0] == "EIM26140"
    best = scored["EIM26140"].relevance
    floor = slice_settings.retrieval.title_match_floor
    ratio = slice_settings.selection.local.strict_ratio
    assert all(scored[s].relevance >= ratio * best or scored[s].title_match >= floor for s in kept)
    # the same question, its title match out of reach: recall-greedy keeps the pages sharing its words
    unmatched = slice_settings.model_copy(update={"retrieval": slice_settings.retrieval.model_copy(update={"title_match_floor": 1.01})})
    wider = [p.section_id for p in select(state.query, state.rollup, unmatched, *served(unmatched), vector).pages]
    assert set(kept) <= set(wider)


def test_alternatives_are_likely_close_pages_under_another_parent_section(slice_settings) -> None:  # noqa: ANN001
    index = CorpusIndex.open(slice_settings)

    def page(sid: str, p: float) -> selection.PageScore:
        return selection.PageScore(selection.PageBundle(section_id=sid, score=0.0, chunks=[]), 0.0, 0.0, False, p)

    assert index.pages["EIM21690"].breadcrumbs[-1] == index.pages["EIM21691"].breadcrumbs[-1] != index.pages["EIM31400"].breadcrumbs[-1]
    kept = [page("EIM21690", 0.8), page("EIM21691", 0.78), page("EIM31400", 0.7), page("EIM31405", 0.69), page("EIM26140", 0.2)]
    # the party page's sibling is the same subject; the passenger pages another (one of them offered); 0.2 is under the threshold
    assert selection.offered_alternatives(kept, 0.23, index, 0.8) == ["EIM31400"]
    assert selection.offered_alternatives(kept, 0.23, index, 0.9) == []  # not close enough to the best
    assert selection.offered_alternatives([page("EIM21690", 0.2), *kept[1:]], 0.23, index, 0.8) == []  # the best page itself unsure
