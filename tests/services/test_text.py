"""The text helpers with one home each: a year's first day and a question's sentences."""

from __future__ import annotations

from datetime import date

from services.text.figures import period_start, years_named
from services.text.sentences import question_sentences, split_sentences


def test_a_tax_year_starts_on_6_april_and_a_calendar_year_on_1_january() -> None:
    assert [period_start(y, t) for y, t in years_named("in 2025-26, or from 2027?")] == [date(2025, 4, 6), date(2027, 1, 1)]


def test_a_question_splits_after_end_punctuation_whatever_follows() -> None:
    question = "I cycle to work, e.g. daily. is the allowance taxed?  What about 2024?"
    assert question_sentences(question) == ["I cycle to work, e.g.", "daily.", "is the allowance taxed?", "What about 2024?"]
    # The paragraph splitter keeps abbreviations and needs a capital after the break.
    assert split_sentences(question) == ["I cycle to work, e.g. daily. is the allowance taxed?", "What about 2024?"]
