"""Tables as text: cells on one line, glued rows split back (ingest_worker/table_text.py), each on the real page that shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest_worker.parser import parse_body
from ingest_worker.table_text import split_glued_row
from tests.ingest_worker.test_parser import blocks_of, page


def test_markdown_headings_and_bullets_inside_table_cells(corpus_dir: Path) -> None:
    table = next(b for b in blocks_of(corpus_dir, "EIM13500") if b.kind == "table")
    rows = table.text.splitlines()
    assert rows[0] == "Threshold, exception, relief or reduction etc | Notes | Guidance"  # was "### Threshold ..."
    benefits = next(r for r in rows if r.startswith("Benefits connected with"))
    assert benefits.startswith("Benefits connected with: taxable cars and vans and HGVs; mobile phones; computer equipment; Note: ")
    assert "#" not in table.text and "*" not in table.text


def test_glued_cells_without_a_partner_are_joined_by_semicolons(corpus_dir: Path) -> None:
    # EIM65920: one cell held four allowances on four lost lines, beside one tax treatment
    table = next(b for b in blocks_of(corpus_dir, "EIM65920") if b.kind == "table")
    assert "Basic allowance; Attendance allowance; Special responsibility allowance; Conference attendance allowance | These allowances" in table.text


def test_a_cells_wrapped_prose_reads_as_one_line_and_its_separate_lines_stay_apart(corpus_dir: Path) -> None:
    # EIM01550: the source wrapped each long cell over several lines ("The hospital etc bills" /
    # "the employee for the treatment. The employer pays the" / "hospital.")
    rows = next(b for b in blocks_of(corpus_dir, "EIM01550") if b.kind == "table").text.splitlines()
    assert rows[1] == (
        "The hospital etc bills the employee for the treatment. The employer pays the hospital. | The employer has discharged "
        "the employee's debt, so the amount paid is taxable as earnings within Section 62 ITEPA 2003. See EIM00580. This "
        "applies to all employees and office holders."
    )
    # a line that ends its statement, or a capitalised line after a full phrase, is a line of its own
    assert "Car or van | After that | 25p" in next(b for b in blocks_of(corpus_dir, "EIM31240") if b.kind == "table" and "45p" in b.text).text


def _table_lines(corpus_dir: Path, section: str) -> list[str]:
    return [line for b in blocks_of(corpus_dir, section) if b.kind == "table" for line in b.text.splitlines()]


@pytest.mark.parametrize(
    ("section", "reads", "not_reads"),
    [
        ("EIM10220", "Section 62 ITEPA 2003", "ITEPA; 2003"),  # a figure after a word
        ("EIM40003", "Section 15 (See Note 1)", "Note; 1"),  # a bracket still open
        ("EIM40003", "Performed in the United Kingdom", "the United; Kingdom"),  # a name going on
        ("EIM74001", "The House of Commons Members Fund", "Commons; Members"),
        ("EIM13970", "21 January 1990 to 15 July 1996", "15; July"),  # a month after a day
        ("EIM06641", "\u00a32,000 + \u00a31,000", "+; "),  # an operator
        ("EIM13830", "Payment in lieu of notice (PILON).", "notice; (PILON)"),  # a bracketed aside
        ("EIM13005", "(see EIM12978). Note that Section 62", "EIM12978).; Note"),  # a new sentence, not "; "
    ],
)
def test_a_cells_wrapped_lines_read_as_one(corpus_dir: Path, section: str, reads: str, not_reads: str) -> None:
    lines = _table_lines(corpus_dir, section)
    assert any(reads in line for line in lines), reads
    assert not any(not_reads in line for line in lines)


def test_a_cells_separate_lines_stay_apart(corpus_dir: Path) -> None:
    # a list of ranks in one cell (EIM70200), the two lines of a header cell (EIM71330)
    assert "Chief Officer; Chief Engineer; Second Engineer | \u00a3135" in "\n".join(_table_lines(corpus_dir, "EIM70200"))
    assert any(line.startswith("Period; Distance |") for line in _table_lines(corpus_dir, "EIM71330"))


@pytest.mark.parametrize(
    ("cells", "rows"),
    [
        (["Car or van", "First 10,000After that", "45p25p"], [["Car or van", "First 10,000", "45p"], ["Car or van", "After that", "25p"]]),
        (["Herbert v McQuade (4TC489)", "x"], [["Herbert v McQuade (4TC489)", "x"]]),  # a name, not a glue
        (["Motor cycle", "All", "24p"], [["Motor cycle", "All", "24p"]]),
        (["A", "OneTwo", "1p2p3p"], [["A", "One; Two", "1p; 2p; 3p"]]),  # counts differ: no row split
    ],
)
def test_split_glued_row(cells: list[str], rows: list[list[str]]) -> None:
    assert split_glued_row(cells) == rows


def test_a_table_the_scrape_emptied_under_its_column_names_is_dropped_with_its_heading(corpus_dir: Path) -> None:
    # EIM31240's 2002-03 to 2010-11 rates: four rows of empty cells under "Kind of vehicle |
    # Business miles | 2002/03 -2010-11"; quoted, the names read as a statement of nothing
    sections = parse_body(page(corpus_dir, "EIM31240")["details"]["body"])
    tables = [b.text for s in sections for b in s.blocks if b.kind == "table"]
    assert len(tables) == 1 and tables[0].startswith("Kind of vehicle | Business miles | 2011-12 onwards")
    assert not any("2010-11" in h for s in sections for h in s.headings)
    assert all(b.text != "For 2002-03 to 2010-11" for s in sections for b in s.blocks)
    # a computation's one line above empty rows is kept (EIM26221)
    lines = [b.text for b in blocks_of(corpus_dir, "EIM26221") if b.kind == "table"]
    assert any(line.startswith("£9,000 x 4.83% x 4") for line in lines)
