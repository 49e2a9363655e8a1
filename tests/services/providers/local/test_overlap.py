"""What a unit would add nothing to: a repeat, one row too many of a table (services/providers/local/overlap.py)."""

from __future__ import annotations

from services.providers.local.overlap import repeats, table_full
from shared.config import LocalStitchingSettings
from shared.contracts.corpus import Paragraph
from tests.services.text.paragraphs import units_of

TUNING = LocalStitchingSettings()  # the defaults the tests run with


def test_a_page_does_not_repeat_its_example_for_each_run_of_years_but_two_pages_may_differ() -> None:
    first = units_of(Paragraph(id="EIM1#c0.p0", text="In the tax year 2003/04 D does 12,000 business miles and is paid 35p per mile."))[0]
    again = units_of(Paragraph(id="EIM1#c0.p1", text="In the tax year 2011-12 E does 12,000 business miles and is paid 35p per mile."))[0]
    other_page = units_of(Paragraph(id="EIM2#c0.p0", text="In the tax year 2011-12 E does 12,000 business miles and is paid 35p per mile."), page_rank=1)[0]
    different = units_of(Paragraph(id="EIM1#c0.p2", text="Employees with two employments add their business miles together."))[0]
    assert repeats(again, [first], TUNING)
    assert not repeats(other_page, [first], TUNING)  # the conflict check needs both pages' statements
    assert not repeats(different, [first], TUNING)
    same_elsewhere = units_of(Paragraph(id="EIM2#c0.p0", text="Employees with two employments add their business miles together."), page_rank=1)[0]
    assert repeats(same_elsewhere, [different], TUNING)  # another page saying the same with the same figures adds nothing


def test_the_answer_quotes_a_few_rows_of_a_table_not_the_whole_table() -> None:
    rows = "\n".join(["Kind | Rate", *(f"Kind {n} | {n}p" for n in range(1, TUNING.table_rows + 3))])
    units = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text=rows), Paragraph(id="EIM1#c0.p1", text="A rule."))
    assert not table_full(units[TUNING.table_rows], units[:TUNING.table_rows - 1], TUNING)
    assert table_full(units[TUNING.table_rows], units[:TUNING.table_rows], TUNING)
    units[TUNING.table_rows].looked_up = True  # the row the asker's own figure picks always may go in
    assert not table_full(units[TUNING.table_rows], units[:TUNING.table_rows], TUNING)
    assert not table_full(units[-1], units[:TUNING.table_rows], TUNING)  # a sentence is never held back by a table


def test_the_cap_on_rows_counts_every_table_of_the_page() -> None:
    # EIM65970 tabulates the mileage rates twice, to 2010-11 and from 2011-12: the answer part
    # takes table_rows rows of that page, not table_rows of each table
    def table(paragraph: str, years: str) -> Paragraph:
        return Paragraph(id=f"EIM1#c0.{paragraph}", kind="table", text="\n".join(["Kind | Rate " + years, *(f"Kind {n} | {n}p" for n in range(1, 4))]))

    units = units_of(table("p0", "to 2010-11"), table("p1", "from 2011-12"))
    first, second = units[:3], units[3:]
    assert not table_full(second[0], first[: TUNING.table_rows - 1], TUNING)
    assert table_full(second[0], [*first, second[1]][: TUNING.table_rows], TUNING)
    other_page = units_of(table("p0", "to 2010-11"), page_rank=1)
    assert not table_full(other_page[0], [*first, *second][: TUNING.table_rows], TUNING)  # another page's table has its own rows
