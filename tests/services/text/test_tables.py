"""Tables: the row a question's figure or date looks up, rows rendered as sentences and checked against the table."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from services.text.tables import (
    Measure, has_header, header_rows, key_unit, lookup_date, lookup_numbers, lookup_rows, names_row, render_row, rows_of,
    title_covers, title_ended,
)
from services.answering.stages.verification import check_claim
from shared.config import LocalStitchingSettings
from shared.contracts.corpus import Paragraph
from tests.ingest_worker.test_parser import chunks_of
from tests.services.text.paragraphs import units_of

SHORT_CELL_WORDS = LocalStitchingSettings().short_cell_words

CO2_TABLE = [
    "CO2 emissions (g/km) | 2013/14 | 2014/15",
    "130 | 18% | 19%",
    "135 | 19% | 20%",
    "140 | 20% | 21%",
    "145 | 21% | 22%",
    "121-124 | 15% | 16%",
]


def test_lookup_picks_the_band_a_number_falls_in_or_the_last_key_below_it() -> None:
    assert lookup_rows(CO2_TABLE, [Measure(142.0)]) == {3}  # 142 g/km is charged as 140
    assert lookup_rows(CO2_TABLE, [Measure(122.0)]) == {5}  # inside the 121-124 range
    assert lookup_rows(CO2_TABLE, [Measure(100.0)]) == set()  # below every band: no guess
    assert lookup_rows(CO2_TABLE, []) == set()


def test_period_tables_are_looked_up_by_the_questions_tax_year_and_amounts_are_not_keys() -> None:
    rates = ["Period from | Period to | Official rate", "6.1.2002 | 5.4.2007 | 5.00%", "6.4.2010 | 5.4.2014 | 4.00%", "6.4.2014 | | 3.25%"]
    assert lookup_rows(rates, [], date(2014, 4, 6)) == {3}
    assert lookup_rows(rates, [], date(2012, 4, 6)) == {2}
    assert lookup_rows(rates, [Measure(20.0), Measure(15.0)]) == set()  # dates are not numeric bands
    assert lookup_date("What rate does HMRC use for 2014-15?") == date(2014, 4, 6)
    assert lookup_date("What rate applies?") is None
    assert lookup_numbers("A loan of \u00a320,000 in 2014-15 for a car emitting 142g/km") == [Measure(142.0, "g/km")]


def test_a_row_is_named_by_the_question_when_its_label_is_made_of_the_questions_terms() -> None:
    weights = {"car": 1.0, "benefit": 0.5, "compani": 1.0}
    assert names_row(weights, "Car benefit | \u00a32,700 |")
    assert not names_row(weights, "Van benefit | \u00a33,090")  # one label word the question lacks
    assert not names_row(weights, "140 | 20% | 21%")  # a numeric key is the lookup's business


def test_a_row_renders_as_a_sentence_with_its_column_headers() -> None:
    header = "Kind of vehicle | Business miles | 2011-12 onwards"
    assert render_row(header, "Car or van | First 10,000 | 45p", SHORT_CELL_WORDS) == "Car or van: business miles first 10,000, 2011-12 onwards 45p."
    assert render_row(header, "Cycle | All | 20p", SHORT_CELL_WORDS) == "Cycle: business miles all, 2011-12 onwards 20p."
    # a long cell is introduced by its header and a colon; an acronym or reference keeps its case
    long = render_row("Type of payment | Tax treatment", "Basic allowance | These allowances are taxable as earnings (see EIM00510)", SHORT_CELL_WORDS)
    assert long == "Basic allowance: tax treatment: These allowances are taxable as earnings (see EIM00510)."
    assert render_row("Item | Guidance", "Death | EIM13600", SHORT_CELL_WORDS) == "Death: guidance EIM13600."
    assert render_row("", "Home improvements loan | \u00a32,100", SHORT_CELL_WORDS) == "Home improvements loan: \u00a32,100."  # no header
    assert render_row("Year | Amount | Legislation", "2013/14 | \u00a321,100", SHORT_CELL_WORDS) == "2013/14: \u00a321,100."  # ragged: cells alone
    # a label that is a sentence of its own: the cells follow as the next sentence, not after a colon
    circumstance = render_row("Circumstances | Tax treatment", "The employer pays the hospital. | The amount paid is taxable as earnings.", SHORT_CELL_WORDS)
    assert circumstance == "The employer pays the hospital. Tax treatment: The amount paid is taxable as earnings."


def test_worked_computations_have_no_header_row_and_continued_rows_keep_their_label() -> None:
    assert has_header(["Kind of vehicle | Rate per mile", "Car or van | 40p"])
    assert not has_header(["cost of whole premises | 300,000 | |", "less | 75,000 | |"])
    units = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text="Kind of vehicle | Rate per mile to 2010-11\nCar or van | 40p for the first 10,000 miles\n| 25p after that"))
    assert [u.text for u in units] == ["Car or van: rate per mile to 2010-11: 40p for the first 10,000 miles.", "Car or van: rate per mile to 2010-11 25p after that."]
    computation = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text="cost of premises | 300,000\nless | 75,000\n| 225,000"))
    assert [u.text for u in computation] == ["cost of premises: 300,000.", "less: 75,000.", "225,000."]  # no label borrowed


def test_rendered_rows_are_checked_for_real_against_the_table() -> None:
    table = Paragraph(id="EIM1#c0.p0", kind="table", text="Kind of vehicle | Business miles | 2011-12 onwards\nCar or van | First 10,000 | 45p\nCar or van | After that | 25p")
    rendered = units_of(table)
    assert [check_claim(u.text, [table])[0] for u in rendered] == ["supported"]  # both rows under one label: one claim
    assert check_claim("Car or van: business miles first 10,000, 2011-12 onwards 45p; after that 35p.", [table])[0] != "supported"
    assert check_claim("Car or van: business miles first 10,000, 2011-12 onwards 40p.", [table])[0] != "supported"  # a changed figure is caught


def test_a_title_covers_the_askers_year_and_band_only_when_it_states_them_and_none_excludes_them() -> None:
    asked = "My company car emits 70g/km. What appropriate percentage applies in 2013-14?"
    numbers, when = lookup_numbers(asked), lookup_date(asked)
    assert title_covers("Step 5, 2012/13 to 2014/15: cars with CO2 emissions between 1-75 g/km", numbers, when)
    assert not title_covers("Step 5, 2012/13 to 2014/15: cars with CO2 emissions between 76-94 g/km", numbers, when)  # the band excludes 70
    assert not title_covers("Step 5, 2008/09 to 2011/12: qualifying low emissions cars (QUALECs)", numbers, when)  # the period ends before
    assert title_covers("Step 5, 2008/09 to 2011/12: qualifying low emissions cars (QUALECs)", numbers, lookup_date("in 2010-11"))
    assert not title_covers("Step 5, 2008/09 onwards: cars", numbers, when)  # one year named is no period
    assert not title_covers("Exemptions: small loans", numbers, when)  # states neither


def test_a_title_bounding_its_rule_by_an_end_year_is_an_ended_rule() -> None:
    # real titles of the manual: ended periods in its several spellings
    assert title_ended("Van benefit to 2004/05: general")
    assert title_ended("Step 5, 2002/03 to 2010/11: type P, petrol-powered cars")
    assert title_ended("Partial exemption; general; years up to and including 2005/06")
    assert title_ended("Entitlement to the deduction for non-UK resident seafarers: years prior to 2011/12: how to claim")
    assert title_ended("Childcare vouchers: exemption from 6 April 2005 to 5 April 2011")
    # a current rule, an event's date (which cases a rule covers) and a statute's year are not ends
    assert not title_ended("Step 5, 2011/12 onwards: ready reckoner for type A cars from 2011/12")
    assert not title_ended("Van benefit from 2005/06: cash equivalent")
    assert not title_ended("Restricted securities: conditional shares acquired before 16 April 2003")
    assert not title_ended("Living accommodation: Section 106 ITEPA 2003: amount of benefit")


def test_a_number_looks_up_only_a_table_keyed_in_its_own_unit(corpus_dir: Path) -> None:
    # the real tables: EIM24950 keys its rows by engine size in cc, EIM24700 by CO2 in g/km
    def table_rows(section: str) -> list[str]:
        table = next(p for c in chunks_of(corpus_dir, section).chunks for p in c.paragraphs if p.kind == "table")
        return rows_of(table)

    engines, co2 = table_rows("EIM24950"), table_rows("EIM24700")
    assert key_unit(engines[0]) == "cc" and key_unit(co2[0]) == "g/km"
    assert lookup_numbers("a car emitting 142 g/km with a 1200cc engine") == [Measure(142.0, "g/km"), Measure(1200.0, "cc")]
    assert lookup_rows(engines, lookup_numbers("My car emits 70g/km")) == set()  # 70 g/km is no engine size
    assert engines[min(lookup_rows(engines, lookup_numbers("My car has a 1200cc engine")))].startswith("0 to 1,400")
    assert engines[min(lookup_rows(engines, lookup_numbers("an engine of 1500")))].startswith("1,401 to 2,000")  # no unit: any table; keys read with their commas
    assert engines[min(lookup_rows(engines, lookup_numbers("a 1,800cc engine")))].startswith("1,401 to 2,000")  # a unit makes '1,800' a key, not an amount
    assert lookup_numbers("I earn 45,000 a year") == []  # thousands without a unit are an amount
    assert co2[min(lookup_rows(co2, lookup_numbers("My car emits 142g/km")))].startswith("140")


def test_a_second_header_row_heads_the_columns_under_the_first_ones_spans(corpus_dir: Path) -> None:
    # EIM71325 heads its fare table by period, then by allowance: a row reads with both
    table = next(p for c in chunks_of(corpus_dir, "EIM71325").chunks for p in c.paragraphs if p.kind == "table" and "2 July 2012 -" in p.text.splitlines()[0])
    header, count = header_rows(rows_of(table))
    assert count == 2 and header.split(" | ")[1:3] == ["2 July 2012 - travelling allowance (taxed)", "2 July 2012 - fare allowance (not taxed)"]
    rows = [u.text for u in units_of(table) if u.row is not None]
    assert "30: 2 July 2012 - travelling allowance (taxed) \u00a32.62, 2 July 2012 - fare allowance (not taxed) \u00a37.35." in rows
    assert not any(r.startswith("Distance (km)") for r in rows)  # the second header row is not quoted as a row
    assert header_rows(["Kind of vehicle | Business miles | 2011-12 onwards", "Car or van | First 10,000 | 45p"]) == ("Kind of vehicle | Business miles | 2011-12 onwards", 1)
    assert header_rows(["| (a) | (b)", "| Typewriter | Projector", "Cost | 1 | 2"])[1] == 1  # no label over the keys: not a header pair


def test_a_one_column_table_has_no_header_and_its_first_line_is_quoted(corpus_dir: Path) -> None:
    # EIM50051 lists the pilots' deductions as one-column lines joined by "plus": the first, the
    # £1022 flat rate deduction, is the answer to "is there a set yearly amount", not a header
    table = next(p for c in chunks_of(corpus_dir, "EIM50051").chunks for p in c.paragraphs if p.kind == "table")
    assert header_rows(rows_of(table)) == ("", 0)
    rows = [u.text for u in units_of(table) if u.row is not None]
    assert any(r.startswith("A FRE deduction of \u00a31022 per year") for r in rows), rows
    assert header_rows(["Kind | Rate", "Car | 45p"])[1] == 1  # a table with columns keeps its header


def test_a_table_of_periods_keyed_in_words_or_by_tax_year_is_looked_up_by_the_questions_year() -> None:
    # EIM71340 keys its lodging allowances by worded periods; EIM22705 and others by tax year
    worded = ["Period | Allowance per night", "1 January 2004 - 31 December 2004 | £25.00", "1 January 2005 - 5 March 2006 | £26.00", "6 March 2006 - 4 March 2007 | £28.00"]
    assert lookup_rows(worded, lookup_numbers("working away in 2005"), lookup_date("working away in 2005")) == {2}
    assert lookup_rows(worded, [], lookup_date("back in 2006-07")) == {3}  # the period 6 April 2006 falls in
    assert lookup_rows(worded, [], lookup_date("in 2001")) == set()  # before every period: no guess
    # a worded period is no numeric band: "1,800cc" does not fall between 1 and 2004
    assert lookup_rows(worded, lookup_numbers("a 1,800cc engine")) == set()
    by_year = ["Year | Charge", "2005/06 | £500", "2007/08 onwards | £3,000"]
    assert lookup_rows(by_year, [], lookup_date("what was it in 2006-07?")) == {1}
    assert lookup_rows(by_year, [], lookup_date("and in 2010-11?")) == {2}


def test_a_month_the_question_names_looks_up_the_period_it_falls_in() -> None:
    # EIM71327 keys its allowances by periods starting in October
    rows = ["Period | Allowance (per night)", "3 October 2005 - October 2006 | £28.10", "October 2006 - September 2007 | £28.60"]
    assert lookup_date("And what was it back in December 2006?") == date(2006, 12, 1)
    assert lookup_date("from 6 April 2010 to 5 April 2011") == date(2011, 4, 5)  # the latest it names
    assert lookup_rows(rows, [], lookup_date("And what was it back in December 2006?")) == {2}
    assert lookup_rows(rows, [], lookup_date("And what was it in 2006?")) == {1}  # a bare year: its first day
