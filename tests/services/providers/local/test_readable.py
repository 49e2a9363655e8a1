"""What a unit needs beside it to be read right, and whether it can be quoted or open an answer (services/providers/local/readable.py)."""

from __future__ import annotations

from pathlib import Path

from services.providers.local.claims import claims_of
from services.providers.local.readable import context_of, finishes_line, list_intro, minimal_context, quotable, reads_alone
from services.text.units import chunk_units, ends_unfinished, list_items
from shared.config import LocalStitchingSettings
from shared.contracts.corpus import Paragraph
from tests.ingest_worker.test_parser import chunks_of
from tests.services.text.paragraphs import units_of

TUNING = LocalStitchingSettings()  # the defaults the tests run with


def test_a_line_broken_off_the_one_before_it_is_never_quoted_without_it() -> None:
    # EIM01503: the scrape made "Section 323." a list number, and a chunk boundary fell after it
    units = [
        *units_of(Paragraph(id="EIM1#c0.p0", kind="li", text="All earlier awards in respect of service with the same")),
        *units_of(Paragraph(id="EIM1#c1.p0", text="employer count for the purpose of the 10 year test, whether taxed or not.")),
        *units_of(Paragraph(id="EIM1#c1.p1", text="See example")),
        *units_of(Paragraph(id="EIM1#c1.p2", text="EIM01510.")),
    ]
    assert finishes_line(units, 1) and finishes_line(units, 3) and not finishes_line(units, 2)
    assert 0 in context_of(units, 1, 1.0, TUNING) and 1 in context_of(units, 0, 1.0, TUNING)
    claims = claims_of(dict(enumerate(units)))
    assert [c.text for c in claims] == [
        "All earlier awards in respect of service with the same employer count for the purpose of the 10 year test, whether taxed or not.",
        "See example EIM01510.",
    ]
    assert claims[0].citations == ["EIM1#c0.p0", "EIM1#c1.p0"]


def test_a_list_item_is_quoted_whole_and_the_item_cap_counts_items_not_sentences() -> None:
    items = [
        Paragraph(id=f"EIM1#c0.p{n}", kind="li", text=f"a payment of \u00a3{n},000. This is taxable under Section {n}.")
        for n in range(1, 7)
    ]
    units = units_of(Paragraph(id="EIM1#c0.p0", text="The elements of the payment were:"), *items)
    assert len(units) == 13  # the intro, then two sentences per item
    picked = list_items(units, 0, TUNING.list_items)
    # every item's second sentence comes with it ("This is taxable under Section 3" is part of item 3)
    assert sorted({units[j].paragraph.id for j in picked}) == [f"EIM1#c0.p{n}" for n in range(1, TUNING.list_items + 1)]
    assert len(picked) == 2 * TUNING.list_items


def test_a_list_item_is_quoted_with_the_sentence_that_introduces_its_list() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The key features of the exemption are:"),
        *[Paragraph(id=f"EIM1#c0.p{n}", kind="li", text=f"feature number {n}") for n in range(1, TUNING.list_items + 3)],
        Paragraph(id="EIM1#c0.p9", text="A new rule. It stands alone."),
    )
    assert list_intro(units, 2) == 0 and 0 in context_of(units, 2, floor=1.0, tuning=TUNING)
    assert list_intro(units, TUNING.list_items + 1) == 0  # past the items the intro quotes: still read after it
    assert list_intro(units, len(units) - 1) is None  # not a list item
    assert list_intro(units, 0) is None


def test_context_brings_the_verdict_sentence_and_strong_neighbours_but_not_weak_ones() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="Weak opening sentence. A sum of \u00a310,000 for not competing. This is taxable under Section 225."),
        Paragraph(id="EIM1#c0.p1", text="A rule in another paragraph."),
    )
    floor = 0.5
    for unit, score in zip(units, [0.1, 0.9, 0.1, 0.9]):
        unit.score = score
    assert context_of(units, 1, floor, TUNING) == [2]  # the anaphor follows its sentence; the weak one before does not
    units[0].score = TUNING.neighbour_floor * floor  # a neighbour scoring near the floor joins the claim
    assert context_of(units, 1, floor, TUNING) == [0, 2]
    assert 3 not in context_of(units, 2, floor, TUNING)  # never across paragraphs


def test_a_table_row_reads_with_its_headers_and_brings_the_note_the_header_points_to() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", kind="table", text="CO2 emissions (g/km) (see note) | 2014/15\n135 | 20%\n140 | 21%"),
        Paragraph(id="EIM1#c0.p1", text="Other text."),
        Paragraph(id="EIM1#c0.p2", text="Note: The exact CO2 figure is always rounded down to the nearest 5 g/km."),
    )
    assert [u.text for u in units[:2]] == ["135: 2014/15 20%.", "140: 2014/15 21%."]
    assert context_of(units, 1, 0.5, TUNING) == [3]  # the header says "see note"
    plain = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text="Year | Amount\n2014/15 | \u00a33,090"), Paragraph(id="EIM1#c0.p1", text="Note: other."))
    assert context_of(plain, 0, 0.5, TUNING) == []  # no 'see note' in the header: no note


def test_a_line_going_on_from_an_unfinished_one_never_opens_the_answer(corpus_dir: Path) -> None:
    # EIM76185: "... work for an employer but cannot get" / "Statutory Sick Pay, or" / "have been
    # getting Statutory Sick Pay but it has now stopped": the scrape split the item where no join
    # could be told; the second line led an answer to "Do I pay tax on ESA?"
    page = chunks_of(corpus_dir, "EIM76185").chunks
    units = [u for c in page for u in chunk_units(c, 0, TUNING)]
    i = next(i for i, u in enumerate(units) if u.text.startswith("Statutory Sick Pay, or"))
    assert not reads_alone(units, i, TUNING.list_items)
    opening = next(i for i, u in enumerate(units) if u.text.startswith("Employment and Support Allowance (ESA) is"))
    assert reads_alone(units, opening, TUNING.list_items)


def test_a_list_item_after_its_lead_in_and_a_table_row_read_alone_a_this_sentence_does_not() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night in the UK"),
        Paragraph(id="EIM1#c0.p2", text="This is the rule."),
        Paragraph(id="EIM1#c0.p3", kind="table", text="Kind | Rate\nCar | 45p"),
    )
    assert [reads_alone(units, i, TUNING.list_items) for i in range(len(units))] == [True, True, False, True]
    # a line of a worked computation (a table without a header) is read with the rest of it
    computation = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text="Earnings | \u00a322,000 |\nState pension | \u00a33,000 |"))
    assert not any(reads_alone(computation, i, TUNING.list_items) for i in range(len(computation)))
    # an item after a lead-in without its colon goes on from an unfinished line, but that line is its list's lead-in
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts are"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night in the UK"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="\u00a310 per night outside the UK."),
        Paragraph(id="EIM1#c0.p3", text="Spent on"),
        Paragraph(id="EIM1#c0.p4", text="Newspapers, it is exempt."),
    )
    assert [reads_alone(units, i, TUNING.list_items) for i in range(len(units))] == [True, True, True, False]


def test_a_unit_that_cannot_be_read_with_what_the_page_gives_beside_it_is_never_quoted() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night in the UK"),
        Paragraph(id="EIM1#c0.p2", kind="table", text="Kind | Rate\nCar | 45p"),
        Paragraph(id="EIM1#c0.p3", text="There are two main aspects to this:"),
    )
    assert [quotable(units, i, TUNING.list_items) for i in range(len(units))] == [True, True, True, False]  # a lead-in with no items after it
    computation = units_of(Paragraph(id="EIM1#c0.p0", kind="table", text="Earnings | \u00a322,000 |\nState pension | \u00a33,000 |"))
    assert not any(quotable(computation, i, TUNING.list_items) for i in range(len(computation)))  # "Earnings | £22,000": a line of a sum
    # a list item a chunk boundary cut from its lead-in (its chunk opens with it): no lead-in to read it after
    orphan = units_of(Paragraph(id="EIM1#c0.p0", text="the vehicle used must be a car or a van."), Paragraph(id="EIM1#c0.p1", text="A rule that stands alone."))
    assert [quotable(orphan, i, TUNING.list_items) for i in range(len(orphan))] == [False, True]


def test_a_sentence_stopping_mid_line_is_quoted_with_its_rest_or_not_at_all() -> None:
    """A line ending on a comma or on a word no statement ends on ("the", "and", "within") was
    broken off: whatever case the next line opens in, the two are quoted together; with nothing
    after it on its page it is not quoted; nor does it join as an optional neighbour."""
    cut = Paragraph(id="EIM1#c0.p0", text="The employer may recover the cost by deducting 92% of the amount from the")
    rest = Paragraph(id="EIM1#c0.p1", text="National Insurance contributions it pays over each month.")
    units = units_of(cut, rest)
    assert ends_unfinished(units[0]) and not ends_unfinished(units[1])
    assert context_of(units, 0, 1.0, TUNING) == [1] and minimal_context(units, 0, 100, TUNING.list_items) == [0, 1]
    assert minimal_context(units, 0, 15, TUNING.list_items) is None  # the whole sentence does not fit: neither part alone
    assert not quotable(units_of(cut), 0, TUNING.list_items)  # its rest is not on the page
    assert quotable(units, 1, TUNING.list_items)  # the next line still reads as a statement of its own
    for whole in ("The charge is not payable unless the customer opts in", "The amount of the deduction is \u00a380", "It is taxable."):
        assert not ends_unfinished(units_of(Paragraph(id="EIM1#c0.p0", text=whole))[0]), whole
    assert ends_unfinished(units_of(Paragraph(id="EIM1#c0.p0", text="on which such benefits are given,"))[0])
    # a name cut in two ("the United" / "Kingdom"): a capitalised word last, not an acronym
    assert ends_unfinished(units_of(Paragraph(id="EIM1#c0.p0", text="These figures are notified to the Inland"))[0])
    assert not ends_unfinished(units_of(Paragraph(id="EIM1#c0.p0", text="The tax is collected through PAYE"))[0])
    # an optional neighbour that stops mid-line stays out (its rest is not brought for it)
    rule = Paragraph(id="EIM2#c0.p0", text="The rule that answers. A strong sentence that goes on to the")
    page = units_of(rule, Paragraph(id="EIM2#c0.p1", text="Next paragraph of the page."))
    for unit in page:
        unit.score = 1.0
    assert context_of(page, 0, 1.0, TUNING) == []


def test_a_list_item_ending_on_or_brings_the_next_item_across_a_chunk_boundary() -> None:
    # EIM25570: a chunk boundary fell between the two items (within one chunk they are one unit)
    units = [
        *units_of(
            Paragraph(id="EIM1#c0.p0", text="Fuel can be withdrawn:"),
            Paragraph(id="EIM1#c0.p1", kind="li", text="by the employer no longer providing free fuel for private use, or"),
        ),
        *units_of(
            Paragraph(id="EIM1#c1.p0", kind="li", text="by the employer requiring the employee to make good the cost of all private fuel."),
            Paragraph(id="EIM1#c1.p1", text="Note that there is no apportionment for days before provision of free fuel commenced."),
        ),
    ]
    assert ends_unfinished(units[1]) and not ends_unfinished(units[2])
    assert minimal_context(units, 0, 100, 1) == [0, 1, 2]  # the item cap is 1, but the first item goes on into the second
    assert minimal_context(units, 0, 20, 1) is None  # the lead-in and a whole item do not fit: not the lead-in alone
    assert 2 in context_of(units, 1, 1.0, TUNING)
