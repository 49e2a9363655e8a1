"""The text helpers with one home each: a year's first day and a question's sentences."""

from __future__ import annotations

from datetime import date

from services.text.figures import period_start, years_named
from services.text.sentences import question_sentences, split_sentences, statements
from shared.contracts.corpus import Paragraph


def test_a_tax_year_starts_on_6_april_and_a_calendar_year_on_1_january() -> None:
    assert [period_start(y, t) for y, t in years_named("in 2025-26, or from 2027?")] == [date(2025, 4, 6), date(2027, 1, 1)]


def test_a_question_splits_after_end_punctuation_whatever_follows() -> None:
    question = "I cycle to work, e.g. daily. is the allowance taxed?  What about 2024?"
    assert question_sentences(question) == ["I cycle to work, e.g.", "daily.", "is the allowance taxed?", "What about 2024?"]
    # The paragraph splitter keeps abbreviations and needs a capital after the break.
    assert split_sentences(question) == ["I cycle to work, e.g. daily. is the allowance taxed?", "What about 2024?"]


def test_a_table_states_one_row_at_a_time_read_with_its_header() -> None:
    dated_header = Paragraph(id="p", kind="table", text="Vehicle | 2011-12 onwards\nCar or van | 45p\n\nCycle | 20p")
    # each row: its label, then each cell it fills after its column's header
    assert statements(dated_header) == ["Car or van 2011-12 onwards 45p", "Cycle 2011-12 onwards 20p"]
    ticked = Paragraph(id="p", kind="table", text="Item | Eligible | Not accepted as eligible\nSunglasses | 4 |\nSuitcase | | 4")
    assert statements(ticked) == ["Sunglasses Eligible 4", "Suitcase Not accepted as eligible 4"]  # a blank column's header is not the row's
    ragged = Paragraph(id="p", kind="table", text="Vehicle | Rate\nCar | 45p | note")
    assert statements(ragged) == ["Vehicle | Rate Car | 45p | note"]  # cells that do not line up with the header: the header, then the row
    assert statements(dated_header, dated=True) == ["Car or van | 45p (Vehicle | 2011-12 onwards)", "Cycle | 20p (Vehicle | 2011-12 onwards)"]
    plain_header = Paragraph(id="p", kind="table", text="Vehicle | Rate\nCar or van | 45p")
    assert statements(plain_header, dated=True) == ["Car or van | 45p"]  # no years to carry
    sentences = Paragraph(id="p", text="The rate is 45p. It applies from 2011.")
    assert statements(sentences) == statements(sentences, dated=True) == ["The rate is 45p.", "It applies from 2011."]



def test_words_that_point_back_are_read_as_whole_words_of_three_kinds() -> None:
    from services.text.terms import pointing_words  # noqa: PLC0415

    assert pointing_words("Can I apply for that?") == {"refers", "pronoun"}
    assert pointing_words("Do their costs count?") == {"pronoun"}
    assert pointing_words("What is the figure?") == {"definite"}
    assert pointing_words("Is there a theme to them?") == {"pronoun", "refers"}  # 'there', 'them'; 'theme' is no 'the'
    assert pointing_words("Mileage rates for bicycles") == set()


def test_a_dated_fact_is_a_year_a_tax_year_or_a_date() -> None:
    from services.text.figures import dated_fact  # noqa: PLC0415

    assert [dated_fact(f) for f in ("2013", "2013-14", "2013-04-06", "45p", "12345", "EIM31240")] == ["year", "tax_year", "date", None, None, None]
