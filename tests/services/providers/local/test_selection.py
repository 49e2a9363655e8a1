"""Selection: the subject a title names, the on-topic margin, example pages (the last on a real slice of the manual)."""

from __future__ import annotations

import pytest

from services.pipeline import STAGES, new_state, run_stage
from services.providers.local import selection
from services.providers.local.selection import names_title_subject, score_pages, select, similarity_floor
from services.text.terms import terms
from shared.config import LocalSelectionSettings, Settings
from shared.contracts.api import QuestionRequest
from shared.index import CorpusIndex


def test_a_title_names_the_questions_subject_only_as_a_phrase_of_two_words_or_more() -> None:
    def q(text: str) -> str:
        return f" {' '.join(terms(text))} "

    assert names_title_subject(q("I get Employment and Support Allowance. Is it taxed?"), "Employment and Support Allowance: taxation")
    assert not names_title_subject(q("Is support from my employer an allowance?"), "Employment and Support Allowance: taxation")
    assert not names_title_subject(q("Is it just the \u00a310 over the limit?"), "10% limit")  # a figure is not a subject
    assert not names_title_subject(q("Do I pay tax on my car?"), "Cars: general")  # one word names too much


def test_questions_in_the_language_of_jobs_get_a_wider_on_topic_margin() -> None:
    tuning = LocalSelectionSettings()
    assert similarity_floor("My employer pays my gym membership, is that taxed?", tuning) < similarity_floor("How tall is Mount Everest?", tuning)


def test_an_example_page_ranks_first_only_when_the_question_asks_for_an_example(slice_settings) -> None:  # noqa: ANN001
    def ranking(question: str) -> list[str]:
        state = new_state(QuestionRequest(question=question), slice_settings)
        for stage in STAGES[:3]:
            state = run_stage(stage, state, slice_settings)
        return [s.bundle.section_id for s in sorted(score_pages(state.query, state.rollup, slice_settings, state.retrieval.query_vector), key=lambda s: -s.relevance)]

    asked = ranking("Can you give an example of the small loans exemption?")
    plain = ranking("How does the small loans exemption work?")
    assert asked[0] == "EIM26142", asked[:4]  # "Exemptions: small loans: example"
    assert plain[0] != "EIM26142" and plain.index("EIM26142") > asked.index("EIM26142"), plain[:4]


def _tuned(settings: Settings, **fields: float) -> Settings:
    local = settings.selection.local.model_copy(update=fields)
    return settings.model_copy(update={"selection": settings.selection.model_copy(update={"local": local})})


def test_the_selection_tuning_comes_from_settings(slice_settings) -> None:  # noqa: ANN001
    state = new_state(QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?"), slice_settings)
    for stage in STAGES[:3]:
        state = run_stage(stage, state, slice_settings)
    vector = state.retrieval.query_vector
    kept = select(state.query, state.rollup, slice_settings, vector).pages
    one = _tuned(slice_settings, max_pages=1)
    assert len(kept) > 1 and [p.section_id for p in select(state.query, state.rollup, one, vector).pages] == [kept[0].section_id]
    off_topic = _tuned(slice_settings, min_relevance=10.0)
    assert select(state.query, state.rollup, off_topic, vector).pages == []


def test_an_ended_rules_page_is_scaled_down_only_when_the_question_names_no_year(slice_settings, monkeypatch) -> None:  # noqa: ANN001
    # no link authority nor title embedding, so a page's relevance is its own
    plain = _tuned(slice_settings, authority_weight=0.0, title_meaning_weight=0.0)
    ended = "EIM22790"  # "Van benefit from 2005/06: cash equivalent", as if titled "to 2004/05"

    def relevance(question: str, titled_ended: bool) -> dict[str, float]:
        monkeypatch.setattr(selection, "title_ended", lambda title: titled_ended and title == selection.page_title(index, ended))
        state = _rollup(plain, question)
        return {s.bundle.section_id: s.relevance for s in score_pages(state.query, state.rollup, plain, state.retrieval.query_vector)}

    index = CorpusIndex.open(plain)
    undated = "How is the cash equivalent of a company van worked out?"
    before, after = relevance(undated, False), relevance(undated, True)
    assert after[ended] == pytest.approx(before[ended] * plain.selection.local.ended_page_factor)
    assert all(after[sid] == pytest.approx(value) for sid, value in before.items() if sid != ended)
    dated = "How was the cash equivalent of a company van worked out in 2004-05?"
    assert relevance(dated, True)[ended] == pytest.approx(relevance(dated, False)[ended])  # the asker names the years it covers


def test_a_page_setting_the_limit_the_askers_amount_is_measured_against_gains_the_limit_bonus(slice_settings) -> None:  # noqa: ANN001
    plain = _tuned(slice_settings, authority_weight=0.0, title_meaning_weight=0.0, limit_bonus=0.0)
    bonus = _tuned(slice_settings, authority_weight=0.0, title_meaning_weight=0.0, limit_bonus=0.2)

    def relevance(settings: Settings, question: str) -> dict[str, float]:
        state = _rollup(settings, question)
        return {s.bundle.section_id: s.relevance for s in score_pages(state.query, state.rollup, settings, state.retrieval.query_vector)}

    asked = "My employer lent me \u00a33,600 interest free for a season ticket. Will I be taxed on it?"
    before, after = relevance(plain, asked), relevance(bonus, asked)
    gained = {sid for sid in before if after[sid] == pytest.approx(before[sid] + 0.2)}
    assert "EIM26140" in gained  # "does not exceed \u00a35,000": the small loans limit
    assert all(after[sid] == pytest.approx(before[sid]) for sid in before if sid not in gained)
    assert len(gained) < len(before)  # not every page sets such a limit
    unasked = "Will I be taxed on an interest-free season ticket loan from my employer?"
    assert relevance(bonus, unasked) == pytest.approx(relevance(plain, unasked))  # no amount asked: nothing to measure
    # a follow-up read with its subject ("... 2009-10? <the first turn>"): the earlier turn's amount is not this turn's
    state = _rollup(bonus, f"And what was the official rate back in 2009-10? {asked}")
    follow_up = {s.bundle.section_id: s.relevance for s in score_pages(state.query, state.rollup, bonus, state.retrieval.query_vector, "And what was the official rate back in 2009-10?")}
    without = {s.bundle.section_id: s.relevance for s in score_pages(state.query, state.rollup, plain, state.retrieval.query_vector)}
    assert follow_up == pytest.approx(without)


def _rollup(settings: Settings, question: str):  # noqa: ANN202
    state = new_state(QuestionRequest(question=question), settings)
    for stage in STAGES[:3]:
        state = run_stage(stage, state, settings)
    return state


def test_the_title_meaning_signal_is_off_at_weight_zero_and_asks_no_model(slice_settings, monkeypatch) -> None:  # noqa: ANN001
    import services.providers.local.selection as selection

    def refuse(*_args: object) -> None:
        raise AssertionError("title meaning computed while turned off")

    state = _rollup(slice_settings, "Is a staff Christmas party taxable?")
    off = _tuned(slice_settings, title_meaning_weight=0.0)
    monkeypatch.setattr(selection, "closeness", refuse)
    scored = score_pages(state.query, state.rollup, off, state.retrieval.query_vector)
    assert scored and all(s.title_meaning is None for s in scored)


def test_the_title_meaning_adds_its_weighted_cosine_to_each_page(slice_settings) -> None:  # noqa: ANN001
    state = _rollup(slice_settings, "Is a staff Christmas party taxable?")
    vector = state.retrieval.query_vector
    # without the link share (spread over the candidates) and the example factor, the signal adds exactly
    off = _tuned(slice_settings, title_meaning_weight=0.0, authority_weight=0.0, example_page_factor=1.0)
    base = {s.bundle.section_id: s.relevance for s in score_pages(state.query, state.rollup, off, vector)}
    on = score_pages(state.query, state.rollup, _tuned(off, title_meaning_weight=0.5, title_meaning_floor=0.3, title_meaning_pages=100), vector)
    assert {s.bundle.section_id for s in on} == set(base)
    for s in on:
        assert s.title_meaning is not None and 0.0 <= s.title_meaning <= 1.0
        assert s.relevance == pytest.approx(base[s.bundle.section_id] + 0.5 * max(0.0, s.title_meaning - 0.3))
    meaning = {s.bundle.section_id: s.title_meaning or 0.0 for s in on}
    assert meaning["EIM21690"] > meaning["EIM01500"] + 0.1  # annual parties, long service awards


def test_only_the_leading_pages_titles_are_embedded(slice_settings) -> None:  # noqa: ANN001
    state = _rollup(slice_settings, "Is a staff Christmas party taxable?")
    vector = state.retrieval.query_vector
    base = sorted(score_pages(state.query, state.rollup, _tuned(slice_settings, title_meaning_weight=0.0), vector), key=lambda s: -s.relevance)
    on = score_pages(state.query, state.rollup, _tuned(slice_settings, title_meaning_pages=2), vector)
    assert len(on) > 2
    assert {s.bundle.section_id for s in on if s.title_meaning is not None} == {s.bundle.section_id for s in base[:2]}


def test_a_question_that_restates_a_page_title_ranks_that_page_first(slice_settings) -> None:  # noqa: ANN001
    state = _rollup(slice_settings, "What are the rules on Exemptions: small loans?")

    def first(settings: Settings) -> str:
        return max(score_pages(state.query, state.rollup, settings, state.retrieval.query_vector), key=lambda s: s.relevance).bundle.section_id

    assert first(slice_settings) == "EIM26140"
    # either signal alone finds it: the title's meaning, or its words being the question's
    assert first(_tuned(slice_settings, title_restated_bonus=0.0)) == "EIM26140"
    assert first(_tuned(slice_settings, title_meaning_weight=0.0)) == "EIM26140"
    # the words alone, without either, rank another page first
    assert first(_tuned(slice_settings, title_meaning_weight=0.0, title_restated_bonus=0.0)) != "EIM26140"


def test_a_question_in_a_pages_own_title_words_is_on_topic_whatever_the_cosine(slice_settings) -> None:  # noqa: ANN001
    """Title evidence: with the cosine floor out of reach, a question whose words a candidate
    page's title holds is still on topic; without that evidence it is not, and a question
    that names nothing in any title stays off topic."""
    def kept(question: str, settings: Settings) -> list[str]:
        state = new_state(QuestionRequest(question=question), settings)
        for stage in STAGES[:3]:
            state = run_stage(stage, state, settings)
        return [p.section_id for p in select(state.query, state.rollup, settings, state.retrieval.query_vector).pages]

    unreachable = _tuned(slice_settings, min_similarity=1.1, min_similarity_tied=1.1)
    titled = "What are the rules on long service testimonial awards: form of qualifying awards?"
    assert "EIM01502" in kept(titled, unreachable)
    assert kept(titled, _tuned(unreachable, title_on_topic=1.01)) == []
    assert kept("How tall is the tallest mountain in the Alps?", _tuned(slice_settings, min_similarity=1.1, min_similarity_tied=1.1)) == []


def test_a_restated_title_adds_its_weighted_match_and_a_partial_match_nothing(slice_settings) -> None:  # noqa: ANN001
    state = _rollup(slice_settings, "What are the rules on Exemptions: small loans?")
    vector = state.retrieval.query_vector
    # without the link share (spread over the candidates), the title's meaning and the example factor, the bonus adds exactly
    off = _tuned(slice_settings, title_restated_bonus=0.0, title_meaning_weight=0.0, authority_weight=0.0, example_page_factor=1.0)
    base = {s.bundle.section_id: s.relevance for s in score_pages(state.query, state.rollup, off, vector)}
    on = {s.bundle.section_id: s for s in score_pages(state.query, state.rollup, _tuned(off, title_restated_bonus=0.5), vector)}
    floor = slice_settings.retrieval.title_match_floor
    assert on["EIM26140"].title_match == pytest.approx(1.0)  # "Exemptions: small loans"
    assert any(0.0 < s.title_match < floor for s in on.values())  # "Exemptions: small loans: example" and the like
    for sid, s in on.items():
        assert s.relevance == pytest.approx(base[sid] + (0.5 * s.title_match if s.title_match >= floor else 0.0))


def test_a_question_restating_a_title_keeps_that_page_and_only_the_pages_close_to_it(slice_settings) -> None:  # noqa: ANN001
    state = _rollup(slice_settings, "What are the rules on Exemptions: small loans?")
    vector = state.retrieval.query_vector
    scored = {s.bundle.section_id: s for s in score_pages(state.query, state.rollup, slice_settings, vector)}
    kept = [p.section_id for p in select(state.query, state.rollup, slice_settings, vector).pages]
    assert kept[0] == "EIM26140"
    best = scored["EIM26140"].relevance
    floor = slice_settings.retrieval.title_match_floor
    ratio = slice_settings.selection.local.strict_ratio
    assert all(scored[s].relevance >= ratio * best or scored[s].title_match >= floor for s in kept)
    # the same question, its title match out of reach: recall-greedy keeps the pages sharing its words
    unmatched = slice_settings.model_copy(update={"retrieval": slice_settings.retrieval.model_copy(update={"title_match_floor": 1.01})})
    wider = [p.section_id for p in select(state.query, state.rollup, unmatched, vector).pages]
    assert len(wider) > len(kept)
