"""The passage ranker's features, one by one, on the sentences and table rows of real pages:
each read through the extractor by its name, on a unit that has the property and one that does
not (the slice of the manual, and a few real pages the slice lacks: conftest.py)."""

from __future__ import annotations

import math

import pytest

from services.ranking.model import default_path, load_ranker
from services.ranking.passage_features import UNIT_EXTRACTOR, UNIT_FEATURES, UnitContext, featured_units, unit_contexts, unit_matrix
from shared.config import Settings
from shared.contracts.pipeline import PageBundle, SelectionResult
from services.text.reading import new_query
from shared.index import CorpusIndex
from shared.meaning import question_vector

MOTOR_CYCLES = "What are the statutory mileage rates for motor cycles?"
CAR_RATE = "What is the approved mileage rate for a car?"
SMALL_LOANS = "How does the small loans exemption work?"


def _selection(settings: Settings, section_ids: tuple[str, ...]) -> SelectionResult:
    """The pages as selection keeps them, best first (the page ranker's probabilities 0.9, 0.7, ...)."""
    index = CorpusIndex.open(settings)
    return SelectionResult(pages=[PageBundle(section_id=s, score=0.9 - 0.2 * i, chunks=index.page_chunks(s)) for i, s in enumerate(section_ids)])


def units(settings: Settings, question: str, *section_ids: str, vectors: bool = True, asked: str = "") -> list[UnitContext]:
    """Every quotable unit of the pages ``section_ids`` (selected in that order) as the passage
    features read it; ``asked``: the person's own words, when the question searched reads more."""
    query = new_query(id="test", question=question, manual=settings.manual, own_words=asked)
    vector = question_vector(CorpusIndex.open(settings), question, []) if vectors else None
    return list(unit_contexts(query, _selection(settings, section_ids), settings, CorpusIndex.open(settings), vector))


def unit(found: list[UnitContext], starts: str, page: str | None = None) -> UnitContext:
    """The first unit whose text starts with ``starts`` (on ``page``, when given)."""
    matches = [u for u in found if u.unit.text.startswith(starts) and page in (None, u.chunk.bundle.section_id)]
    assert matches, f"no unit starts {starts!r}"
    return matches[0]


def feature(name: str, context: UnitContext) -> float:
    return UNIT_EXTRACTOR[name].value(context)


# ---- the extractor as the service, training and the model files read it -------------------


def test_the_unit_features_are_the_extractors_names_in_the_order_the_model_file_lists() -> None:
    assert UNIT_FEATURES == UNIT_EXTRACTOR.names and len(UNIT_FEATURES) == 25
    assert tuple(load_ranker(default_path("passages"), "passages", UNIT_FEATURES).features) == UNIT_EXTRACTOR.names
    assert all(f.about for f in UNIT_EXTRACTOR)


def test_featured_units_carry_the_extractors_values_and_the_matrix_reads_them_in_order(slice_settings) -> None:  # noqa: ANN001
    query = new_query(id="test", question=SMALL_LOANS, manual=slice_settings.manual)
    vector = question_vector(CorpusIndex.open(slice_settings), SMALL_LOANS, [])
    selection = _selection(slice_settings, ("EIM26140", "EIM26142"))
    featured = featured_units(query, selection, slice_settings, CorpusIndex.open(slice_settings), vector)
    contexts = list(unit_contexts(query, _selection(slice_settings, ("EIM26140", "EIM26142")), slice_settings, CorpusIndex.open(slice_settings), vector))
    assert [u.text for u in featured] == [c.unit.text for c in contexts]
    assert [list(u.features) for u in featured] == [list(UNIT_FEATURES)] * len(featured)
    assert unit_matrix(featured).tobytes() == UNIT_EXTRACTOR.matrix(contexts).tobytes()
    assert [(u.looked_up, u.aside) for u in featured] == [(c.looked_up, c.aside) for c in contexts]
    assert any(u.aside for u in featured) and not all(u.aside for u in featured)


# ---- the question's words and meaning ---------------------------------------------------------


def test_terms_is_the_share_of_the_questions_terms_a_unit_holds_a_list_lead_in_with_its_items(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, MOTOR_CYCLES, "EIM31240")
    assert feature("terms", unit(found, "Motor cycle: business miles")) > feature("terms", unit(found, "Car or van: business miles")) == 0.0
    assert feature("terms", unit(found, "This rule is amended")) == 0.0
    # "As the tables show, vehicles ... are grouped into" names no motor cycle; its items do
    assert feature("terms", unit(found, "As the tables show")) == feature("terms", unit(found, "motor cycles")) > 0.3


def test_log_terms_is_the_log_of_the_units_length_in_terms(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, MOTOR_CYCLES, "EIM31240")
    assert feature("log_terms", unit(found, "cycles.")) == pytest.approx(math.log(2))
    assert feature("log_terms", unit(found, "motor cycles")) == pytest.approx(math.log(3))
    assert feature("log_terms", unit(found, "Statutory mileage rates are used")) > math.log(10)


def test_heading_terms_is_the_share_the_chunks_headings_add_to_the_units_own(slice_settings) -> None:  # noqa: ANN001
    # the first chunk is headed "... statutory mileage rates 2002/03 onwards: kinds of vehicle"
    found = units(slice_settings, MOTOR_CYCLES, "EIM31240")
    assert feature("heading_terms", unit(found, "They are also used")) > 0.3  # statutory, rates: in the heading alone
    assert feature("heading_terms", unit(found, "Statutory mileage rates are used")) == 0.0  # says them itself
    assert feature("heading_terms", unit(found, "Motor cycle: business miles")) == 0.0  # headed "From 2011-12"


def test_chunk_cosine_is_the_units_chunks_closeness_in_meaning(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, MOTOR_CYCLES, "EIM31240", "EIM26140")
    table = [u for u in found if u.unit.row is not None and u.chunk.bundle.section_id == "EIM31240"]
    assert len({feature("chunk_cosine", u) for u in table}) == 1  # one chunk, one cosine
    assert feature("chunk_cosine", table[0]) > feature("chunk_cosine", unit(found, "No tax is chargeable")) + 0.3
    assert {feature("chunk_cosine", u) for u in units(slice_settings, MOTOR_CYCLES, "EIM31240", vectors=False)} == {0.0}


# ---- its page and its place --------------------------------------------------------------------


def test_page_probability_is_the_page_rankers_probability_for_its_page(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, SMALL_LOANS, "EIM26140", "EIM26142")
    assert {feature("page_probability", u) for u in found if u.chunk.rank == 0} == {0.9}
    assert [feature("page_probability", u) for u in found if u.chunk.rank == 1] == pytest.approx([0.7] * sum(u.chunk.rank == 1 for u in found))


def test_page_place_is_one_over_one_plus_its_pages_rank(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, SMALL_LOANS, "EIM26140", "EIM26142")
    assert feature("page_place", unit(found, "No tax is chargeable")) == 1.0
    assert {feature("page_place", u) for u in found if u.chunk.bundle.section_id == "EIM26142"} == {0.5}


def test_place_on_page_counts_from_each_pages_first_unit(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, SMALL_LOANS, "EIM26140", "EIM26142")
    first_page = [feature("place_on_page", u) for u in found if u.chunk.rank == 0]
    assert first_page[:3] == [1.0, 1 / 2, 1 / 3] and len(first_page) > 3
    second_page = [feature("place_on_page", u) for u in found if u.chunk.rank == 1]
    assert second_page[:2] == [1.0, 1 / 2]  # the count starts again on the next page


# ---- what it gives --------------------------------------------------------------------------------


def test_rate_figure_flags_a_figure_for_a_question_asking_a_rate(slice_settings) -> None:  # noqa: ANN001
    rate = units(slice_settings, CAR_RATE, "EIM31240")
    assert feature("rate_figure", unit(rate, "Motor cycle: business miles")) == 1.0  # 24p
    assert feature("rate_figure", unit(rate, "The statutory rates are:")) == 0.0
    plain = units(slice_settings, "Do I have to use my own car for work?", "EIM31240")
    assert feature("rate_figure", unit(plain, "Motor cycle: business miles")) == 0.0


def test_question_figure_flags_a_unit_stating_a_figure_the_question_names(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, "How are 12,000 business miles in my own car taxed?", "EIM31355")
    assert feature("question_figure", unit(found, "In the tax year 2003/04 D does 12,000")) == 1.0
    assert feature("question_figure", unit(found, "In the tax year 2003/04 B does 5,000")) == 0.0


def test_near_asker_amount_flags_an_amount_of_the_order_of_the_askers(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, "My employer lent me \u00a33,600 for a season ticket. Is it taxed?", "EIM26140")
    assert feature("near_asker_amount", unit(found, "No tax is chargeable")) == 1.0  # "does not exceed \u00a35,000"
    assert feature("near_asker_amount", unit(found, "However, in practice")) == 0.0
    assert feature("near_asker_amount", unit(units(slice_settings, SMALL_LOANS, "EIM26140"), "No tax is chargeable")) == 0.0
    # a follow-up read with its subject: the earlier turn's amount is not this turn's (as the page feature reads it)
    follow_up = units(slice_settings, "And what was the official rate in 2009-10? My employer lent me \u00a33,600 for a season ticket.", "EIM26140", asked="And what was the official rate in 2009-10?")
    assert feature("near_asker_amount", unit(follow_up, "No tax is chargeable")) == 0.0


def test_looked_up_row_flags_the_table_row_the_askers_date_falls_in(other_pages_settings) -> None:  # noqa: ANN001
    found = units(other_pages_settings, "What was the official rate of interest in 2014-15?", "EIM26104")
    rows = {u.unit.text: feature("looked_up_row", u) for u in found if u.unit.row}
    assert [text for text, looked_up in rows.items() if looked_up == 1.0] == [next(t for t in rows if t.startswith("6.4.2014"))]
    assert len(rows) > 3


def test_row_names_subject_flags_a_table_row_labelled_in_the_questions_terms(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, "What is the mileage rate for a motor cycle?", "EIM31240")
    assert feature("row_names_subject", unit(found, "Motor cycle: business miles")) == 1.0
    assert feature("row_names_subject", unit(found, "Car or van: business miles")) == 0.0
    assert feature("row_names_subject", unit(found, "motor cycles")) == 0.0  # a list item, no table row


def test_gives_kind_flags_a_unit_giving_the_kind_of_thing_asked(slice_settings) -> None:  # noqa: ANN001
    figure = units(slice_settings, CAR_RATE, "EIM31240")
    assert feature("gives_kind", unit(figure, "Motor cycle: business miles")) == 1.0  # a figure, for a figure question
    assert feature("gives_kind", unit(figure, "This rule is amended")) == 0.0
    ruling = units(slice_settings, "Is a loan of \u00a34,000 from my employer taxable?", "EIM26140")
    assert feature("gives_kind", unit(ruling, "No tax is chargeable")) == 1.0  # a ruling, for a yes/no question


# ---- what kind of unit it is ---------------------------------------------------------------------


def test_signpost_flags_a_unit_that_only_points_elsewhere(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, SMALL_LOANS, "EIM26140")
    assert feature("signpost", unit(found, "See EIM26142 for an example")) == 1.0
    assert feature("signpost", unit(found, "No tax is chargeable")) == 0.0


def test_unasked_example_flags_a_worked_example_unless_asked_for_or_working_the_askers_figures(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, "How are 12,000 business miles in my own car taxed?", "EIM31355")
    assert feature("unasked_example", unit(found, "Employee B uses their own car")) == 1.0
    assert feature("unasked_example", unit(found, "In the tax year 2003/04 D does 12,000")) == 0.0  # the asker's own figure
    asked = units(slice_settings, "Can you give an example of mileage allowance payments?", "EIM31355")
    assert feature("unasked_example", unit(asked, "Employee B uses their own car")) == 0.0
    assert feature("unasked_example", unit(units(slice_settings, CAR_RATE, "EIM31240"), "Statutory mileage rates are used")) == 0.0


def test_table_row_flags_a_row_of_a_table(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, CAR_RATE, "EIM31240")
    assert feature("table_row", unit(found, "Motor cycle: business miles")) == 1.0
    assert feature("table_row", unit(found, "The statutory rates are:")) == 0.0


def test_computation_line_flags_a_row_of_a_table_naming_no_columns(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, CAR_RATE, "EIM31355", "EIM31240")
    assert feature("computation_line", unit(found, "MAPs received: 5,000 x 44p")) == 1.0
    assert feature("computation_line", unit(found, "Motor cycle: business miles")) == 0.0  # a rate table names its columns
    assert feature("computation_line", unit(found, "Employee B uses their own car")) == 0.0


def test_leans_on_previous_flags_a_sentence_that_reads_only_after_the_one_before(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, CAR_RATE, "EIM31240")
    assert feature("leans_on_previous", unit(found, "They are also used")) == 1.0
    assert feature("leans_on_previous", unit(found, "Statutory mileage rates are used")) == 0.0


def test_list_lead_in_flags_a_unit_introducing_a_list(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, CAR_RATE, "EIM31240")
    assert feature("list_lead_in", unit(found, "The statutory rates are:")) == 1.0
    assert feature("list_lead_in", unit(found, "As the tables show")) == 1.0  # its colon lost, it runs on into "cars and vans"
    assert feature("list_lead_in", unit(found, "Statutory mileage rates are used")) == 0.0


def test_list_item_flags_an_item_of_a_list(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, CAR_RATE, "EIM31240")
    assert feature("list_item", unit(found, "cars and vans")) == 1.0
    assert feature("list_item", unit(found, "As the tables show")) == 0.0
    assert feature("list_item", unit(found, "Motor cycle: business miles")) == 0.0  # a table row is no list item


def test_ended_rule_flags_a_unit_saying_a_rule_was_withdrawn(other_pages_settings) -> None:  # noqa: ANN001
    found = units(other_pages_settings, "Is a small lump sum from a pension scheme taxable?", "EIM15425", "EIM26140")
    ended = [u for u in found if feature("ended_rule", u) == 1.0]
    assert ended and all("withdrawn" in u.unit.text for u in ended)
    assert feature("ended_rule", unit(found, "No tax is chargeable")) == 0.0


def test_best_rate_row_flags_the_best_row_of_a_rate_table_for_a_rate_question(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, CAR_RATE, "EIM31240", "EIM31355")
    best = [u.unit.text for u in found if feature("best_rate_row", u) == 1.0]
    assert len(best) == 1 and best[0].startswith("Car or van: business miles first 10,000")  # not a computation's line
    plain = units(slice_settings, "Do I have to use my own car for work?", "EIM31240")
    assert not any(feature("best_rate_row", u) for u in plain)
    # the answer part reads it as the unit's rate_row (services/providers/local/answer_part.py)
    query = new_query(id="q", question=CAR_RATE, manual=slice_settings.manual)
    featured = featured_units(query, _selection(slice_settings, ("EIM31240", "EIM31355")), slice_settings, CorpusIndex.open(slice_settings), None)
    assert [u.text for u in featured if u.rate_row] == best


# ---- its terms and cosine again, as they count for an aside and on a likely page -------------------


def test_terms_if_aside_repeats_the_terms_of_a_signpost_or_unasked_example_only(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, "When do loans exceed the small loans limit of \u00a35,000?", "EIM26140")
    signpost = unit(found, "See EIM26145 where the total balance")
    assert feature("terms_if_aside", signpost) == feature("terms", signpost) > 0.0
    rule = unit(found, "No tax is chargeable")
    assert feature("terms", rule) > 0.0 and feature("terms_if_aside", rule) == 0.0


def test_cosine_if_aside_repeats_the_chunks_cosine_for_an_aside_only(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, SMALL_LOANS, "EIM26140")
    signpost = unit(found, "See EIM26142 for an example")
    assert feature("cosine_if_aside", signpost) == feature("chunk_cosine", signpost) > 0.0
    rule = unit(found, "No tax is chargeable")
    assert feature("chunk_cosine", rule) > 0.0 and feature("cosine_if_aside", rule) == 0.0


def test_terms_x_page_probability_weighs_the_terms_by_the_pages_probability(slice_settings) -> None:  # noqa: ANN001
    found = units(slice_settings, SMALL_LOANS, "EIM26142", "EIM26140")  # 26140 second: probability 0.7
    rule = unit(found, "No tax is chargeable")
    assert feature("terms", rule) > 0.0
    assert feature("terms_x_page_probability", rule) == pytest.approx(0.7 * feature("terms", rule))
