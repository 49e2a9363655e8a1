"""Quotable units: sentences joined over the scrape's paragraph splits, lists, rule headings, signposts, what a sentence gives."""

from __future__ import annotations

from pathlib import Path

from services.providers.local.claims import claims_of
from services.providers.local.readable import list_intro
from services.text.units import chunk_units, gives, introduces_list, is_illustration, is_label, is_signpost, list_items, states_rule
from services.text.figures import checkable_facts
from shared.config import LocalStitchingSettings
from shared.contracts.corpus import Chunk, Paragraph
from tests.ingest_worker.test_parser import chunks_of
from tests.services.text.paragraphs import units_of

TUNING = LocalStitchingSettings()


def test_sentences_split_over_paragraphs_are_joined_but_keep_their_citations() -> None:
    paragraphs = [
        Paragraph(id="EIM1#c0.p0", text="SMP is not a social security benefit but replacement earnings"),
        Paragraph(id="EIM1#c0.p1", text="charged to tax as employment income."),
        Paragraph(id="EIM1#c0.p2", text="The measure of the charge is the 'proper proportion' (see"),
        Paragraph(id="EIM1#c0.p3", text="EIM30505). A new sentence."),
        Paragraph(id="EIM1#c0.p4", kind="table", text="Year | Amount\n2008/09 onwards | \u00a360"),
        Paragraph(id="EIM1#c0.p5", text="Complete sentence here."),
        Paragraph(id="EIM1#c0.p6", text="Another complete one."),
    ]
    chunk = Chunk(id="EIM1#c0", section_id="EIM1", manual="m", position=0, heading_path=[], paragraphs=paragraphs, content_hash="h")
    units = chunk_units(chunk, 0, TUNING)
    assert [[p.id for p, _ in u.parts] for u in units] == [
        ["EIM1#c0.p0", "EIM1#c0.p1"],  # lower-case continuation
        ["EIM1#c0.p2", "EIM1#c0.p3"],  # an open bracket continues
        ["EIM1#c0.p3"],
        ["EIM1#c0.p4"],  # a table row (its header row is not quoted on its own)
        ["EIM1#c0.p5"],
        ["EIM1#c0.p6"],  # a finished sentence is not continued
    ]
    assert units[0].text == "SMP is not a social security benefit but replacement earnings charged to tax as employment income."
    assert units[3].row == 1 and units[3].text == "2008/09 onwards: amount \u00a360."


def test_list_items_run_on_only_when_the_item_stops_mid_sentence() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The key features of the exemption are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="it is solely an exemption from tax, see EIM31410"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="the employee must be on a business journey"),
        Paragraph(id="EIM1#c0.p3", kind="li", text="the scholarship is provided from a trust fund and"),
        Paragraph(id="EIM1#c0.p4", kind="li", text="it is held by a person in full-time education."),
    )
    assert [[p.id[-2:] for p, _ in u.parts] for u in units] == [["p0"], ["p1"], ["p2"], ["p3", "p4"]]
    assert list_items(units, 0, TUNING.list_items) == [1, 2, 3]  # the items the colon introduces
    assert list_items(units, 1, TUNING.list_items) == []


def test_a_colon_pulls_in_its_list_even_its_lower_case_continuation() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="An award is fortuitous if:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="it comes from a trust fund (see EIM30002);"),
        Paragraph(id="EIM1#c0.p2", text="and not more than 25 per cent of the payments are by reason of employment."),
        Paragraph(id="EIM1#c0.p3", text="A new rule starts here."),
    )
    assert [u.text[:5] for u in units] == ["An aw", "it co", "and n", "A new"]
    assert list_items(units, 0, TUNING.list_items) == [1, 2]


def test_a_heading_that_states_a_rule_is_quotable_with_the_paragraph_under_it() -> None:
    assert states_rule("SMP is taxable")
    assert not states_rule("Two or more functions")  # a topic
    assert not states_rule("Is PAYE due on the cash payment")  # a question
    assert not states_rule("The \u00a3150 limit is not an allowance")  # a figure the paragraph may not repeat
    chunk = Chunk(
        id="EIM1#c1", section_id="EIM1", manual="m", position=1, heading_path=["Page", "SMP is taxable"], content_hash="h",
        paragraphs=[Paragraph(id="EIM1#c1.p0", text="SMP is replacement earnings. It is charged to tax.")],
    )
    units = chunk_units(chunk, 0, TUNING, heading="SMP is taxable")
    assert [(u.text, u.paragraph.id, u.heading) for u in units[:2]] == [
        ("SMP is taxable", "EIM1#c1.p0", True),
        ("SMP is replacement earnings.", "EIM1#c1.p0", False),
    ]
    # the heading is its own claim, never run into the sentence below it
    assert [c.text for c in claims_of(dict(enumerate(units)))] == ["SMP is taxable", "SMP is replacement earnings. It is charged to tax."]


def test_a_sentence_that_only_points_to_another_page_is_a_signpost() -> None:
    assert is_signpost("See EIM74650 for an overview of the state pension lump sum option introduced from 6 April 2005.")
    assert is_signpost("For details of when remuneration is treated as received see EIM42260.")
    assert is_signpost("See NIM02200.")
    # a rule that cites its source, or a sentence that merely mentions seeing, is not
    assert not is_signpost("The charge is imposed on the person entitled to the lump sum (see EIM74651).")
    assert not is_signpost("See the table below for the rates.")
    assert not is_signpost("For cars the rate is 45p a mile, see EIM31240 for the table.")


def test_the_manuals_pointers_to_guidance_elsewhere_are_signposts(corpus_dir: Path) -> None:
    # EIM07900 points to the PAYE manual for troncs (it once led the answer on how troncs
    # are taxed); EIM22745 points to a contents page; neither names a page to the verifier's
    # page-reference check, or needs one
    texts = [u.text for c in chunks_of(corpus_dir, "EIM07900").chunks for u in chunk_units(c, 0, LocalStitchingSettings())]
    pointer = next(t for t in texts if t.startswith("Detailed guidance on troncs"))
    assert is_signpost(pointer)
    assert not any(is_signpost(t) for t in texts if "are taxable as" in t)  # the rule itself is no signpost
    assert is_signpost("Full guidance on van benefit for these years can be found using the contents page at EIM22700.")
    assert is_signpost("Further guidance is set out at the references listed below:")
    assert not is_signpost("Guidance issued by an employer to its staff is not earnings.")


def test_a_sentence_gives_what_its_kind_of_question_asks() -> None:
    def check(kind, text):  # noqa: ANN001, ANN202
        return gives(kind, text, checkable_facts(text))

    assert check("figure", "The rate is 45p a mile.") and not check("figure", "See EIM31240 for the rates.")
    # an amount is money, pence, a percentage or a measure; a count or a statute's year is none
    assert check("figure", "The limit is \u00a38,500 a year.") and check("figure", "The supplement is 3 per cent.")
    assert check("figure", "1997/98: limit (\u00a3) 7,000.") and check("figure", "A car emitting 120 g/km or less.")
    assert not check("figure", "Some tax years have 53 weekly pay days, 27 fortnightly pay days or 14 four weekly pay days.")
    assert not check("figure", "Employees are contracted to work for 40 hours per week.")
    assert not check("figure", "Section 89 ITEPA 2003 was repealed by Schedule 39 para.50(1) of Finance Act 2012.")
    assert check("date", "The claim must be made within five years of the end of the tax year.")
    assert check("date", "From 6 April 2011 the exemption is restricted.") and not check("date", "The employer pays the cost.")
    assert check("yes_no", "The benefit is not taxable.") and check("yes_no", "There is no tax charge on a parking space.")
    assert check("yes_no", "SMP is taxable as earnings.") and check("yes_no", "A deduction can be given under Section 344.")
    assert check("yes_no", "The exemption applies to meals provided in any canteen.") and check("yes_no", "The employer must bear the cost.")
    # a sentence that only names its subject in tax words gives no ruling
    assert not check("yes_no", "In many cases, the taxable pension income for a tax year is the amount accruing in that year.")
    assert not check("yes_no", "The exempt amount for the year is set by the regulations.")
    assert not check("yes_no", "You can find the rates in the table.")
    assert check("definition", "A uniform means a set of clothing of a specialised nature.")
    assert not check("other", "The benefit is not taxable.")


def test_illustrations_are_told_apart_from_rules() -> None:
    assert is_illustration("In Laidler v Perry (42TC351) the employer gave all his employees a voucher.")
    assert is_illustration("A taxpayer tells you that a redundancy payment has been taxed.")
    assert is_illustration("An example might be an employee who is required to make a long business journey.")
    assert is_illustration("Employee A makes a joint suggestion with employee B.")
    assert not is_illustration("An employee is exempt from tax on the first \u00a330,000.")
    assert not is_illustration("Examples include traditional nurse or police uniforms.")


def test_rows_under_one_label_are_one_claim_on_the_real_rate_table(corpus_dir: Path) -> None:
    # EIM31240: the scrape glued "First 10,000After that" / "45p25p"; the parser splits them
    # back into two rows labelled "Car or van", and the second means nothing without the first.
    build = chunks_of(corpus_dir, "EIM31240")
    chunk = next(c for c in build.chunks if c.has_table and "45p" in c.text)
    rows = [u for u in chunk_units(chunk, 0, TUNING) if u.row is not None]
    texts = [u.text for u in rows]
    assert "Car or van: business miles first 10,000, 2011-12 onwards 45p; after that 25p." in texts
    assert "Motor cycle: business miles all, 2011-12 onwards 24p." in texts  # other labels stay rows of their own
    car = next(u for u in rows if u.text.startswith("Car or van"))
    assert (car.row, car.last_row) == (1, 2)


def test_different_labels_are_never_merged_and_a_lookup_finds_the_later_row_of_a_merged_unit() -> None:
    table = Paragraph(id="EIM1#c0.p0", kind="table", text="Band | Rate\nUp to 100 | 1%\nUp to 100 | 2%\nOver 100 | 3%")
    units = units_of(table)
    assert [(u.row, u.last_row, u.text) for u in units] == [
        (1, 2, "Up to 100: rate 1%; 2%."),
        (3, 3, "Over 100: rate 3%."),
    ]


def test_a_row_whose_columns_are_all_blank_is_not_quoted(corpus_dir: Path) -> None:
    # EIM24705's ready reckoner lists "1-75 (unrounded)" and "Zero" with blank columns: those
    # cars' percentages are on EIM24610 and EIM24815; the blank rows state nothing
    table = next(c for c in chunks_of(corpus_dir, "EIM24705").chunks if c.has_table)
    rows = [u.text for u in chunk_units(table, 0, TUNING) if u.row is not None]
    assert not any(r.startswith(("1-75", "Zero")) for r in rows), rows
    assert any(r.startswith("76-79:") and "10%" in r for r in rows), rows


def test_a_lead_in_whose_colon_the_scrape_lost_introduces_its_list_on_the_real_page(corpus_dir: Path) -> None:
    # EIM02730: "The maximum amounts ... an employer may pay tax free are" (no colon), then the
    # items "£5 per night ... in the UK" and "£10 per night ... outside the UK."
    chunk = next(c for c in chunks_of(corpus_dir, "EIM02730").chunks if "tax free are" in c.text)
    units = chunk_units(chunk, 0, TUNING)
    intro = next(i for i, u in enumerate(units) if u.text.startswith("The maximum amounts"))
    outside = next(i for i, u in enumerate(units) if u.text.startswith("\u00a310 per night"))
    assert introduces_list(units[intro]) and units[intro].text.endswith("in the UK")  # joined with its first item
    assert list_items(units, intro, TUNING.list_items) == [outside]
    assert list_intro(units, outside) == intro  # the item is read after its lead-in
    # a sentence that ends its statement before a list item does not introduce it
    after = next(i for i, u in enumerate(units) if u.text.startswith("If a payment"))
    assert not introduces_list(units[after]) and list_intro(units, after) is None


def test_a_finished_sentence_before_an_item_is_no_lead_in() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The rule applies to all employees."),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night in the UK"),
        Paragraph(id="EIM1#c0.p2", text="The maximum amounts are"),
        Paragraph(id="EIM1#c0.p3", kind="li", text="\u00a35 per night in the UK"),
    )
    assert [introduces_list(u) for u in units] == [False, False, True]


def test_a_line_that_only_names_a_topic_is_a_label(corpus_dir: Path) -> None:
    # EIM45255 lists the tests an award must pass as bare lines of text ("The award of
    # deferred remuneration", "Possibility of partial revocation"): they once stood in an
    # answer's first claims; its sentences are no labels
    units = [u for c in chunks_of(corpus_dir, "EIM45255").chunks for u in chunk_units(c, 0, LocalStitchingSettings())]
    labels = [u.text for u in units if is_label(u)]
    assert "Possibility of partial revocation" in labels and "The award of deferred remuneration" in labels
    assert not any(is_label(u) for u in units if u.text.startswith("The award of deferred remuneration must pass"))
    row, item = units_of(
        Paragraph(id="EIM1#c0.p0", kind="table", text="Kind | Rate\nCycle | 20p"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="Cycle helmets"),
    )
    assert not is_label(row) and not is_label(item)  # a table row, a list item (what a list holds)


def test_a_notice_that_text_was_withheld_is_never_a_unit(corpus_dir: Path) -> None:
    # EIM71319: "(This text has been withheld because of exemptions in the Freedom of
    # Information Act 2000)" once stood in an answer on agency workers' travel
    units = [u for c in chunks_of(corpus_dir, "EIM71319").chunks for u in chunk_units(c, 0, LocalStitchingSettings())]
    assert units and not any("withheld" in u.text for u in units)
    assert any(u.text.startswith("Where construction industry workers are supplied by agencies") for u in units)


def test_a_worked_example_is_told_by_one_test_wherever_the_manual_names_it() -> None:
    from services.text.units import gives_example, names_example, opens_example, opens_with_anaphor, under_example  # noqa: PLC0415

    assert names_example("Car benefit: examples") and not names_example("Car benefit: exemptions")
    assert under_example(["Employment Income Manual", "Example 2"]) and not under_example(["Employment Income Manual", "Vans"])
    assert opens_example("  Example: deferred bonus") and not opens_example("For example, a bonus")
    assert gives_example("For example, a bonus of £500") and gives_example("e.g. a bonus") and not gives_example("The example shows")
    assert opens_with_anaphor("This is taxable.") and not opens_with_anaphor("However, this is taxable.")
    assert is_signpost("See EIM74650 for an overview.") and is_signpost("Detailed guidance on troncs is provided in the PAYE Online Manual")
    assert not is_signpost("See below.")
