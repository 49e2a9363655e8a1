"""The offline provider: table lookup, the lexicon, units and claims, composing the answer (the last tests on a real slice of the manual)."""

from __future__ import annotations

import pytest

from services.providers.local import _lookup_rows
from services.text.lexicon import expand, expansions

CO2_TABLE = [
    "CO2 emissions (g/km) | 2013/14 | 2014/15",
    "130 | 18% | 19%",
    "135 | 19% | 20%",
    "140 | 20% | 21%",
    "145 | 21% | 22%",
    "121-124 | 15% | 16%",
]


def test_lookup_picks_the_band_a_number_falls_in_or_the_last_key_below_it() -> None:
    assert _lookup_rows(CO2_TABLE, [142.0]) == {3}  # 142 g/km is charged as 140
    assert _lookup_rows(CO2_TABLE, [122.0]) == {5}  # inside the 121-124 range
    assert _lookup_rows(CO2_TABLE, [100.0]) == set()  # below every band: no guess
    assert _lookup_rows(CO2_TABLE, []) == set()


def test_lexicon_holds_general_tax_vocabulary_not_eval_wording(corpus_dir) -> None:  # noqa: ANN001
    import json
    import re
    from pathlib import Path

    from services.text.lexicon import LAY_TO_MANUAL

    assert expansions("Is my paternity pay taxed?") == ["statutory paternity pay"]  # not maternity pay
    assert expand("tips and more tips").count("troncs") == 1
    assert "tips troncs" not in expansions("the tipster")  # whole words only
    assert expansions("What is the official rate of interest?") == []
    # no entry matches the wording of a question of the team's eval sets
    eval_dir = corpus_dir.parent / "eval"
    held_out = Path(__file__).resolve().parents[1] / "evaluation" / "heldout_questions.jsonl"
    files = [eval_dir / "questions.jsonl", eval_dir / "dialogs.jsonl", held_out]
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
    questions = [q for row in rows for q in [row.get("question", ""), *(t.get("question", "") for t in row.get("turns", []))] if q]
    assert len(questions) > 60
    for lay, _ in LAY_TO_MANUAL:
        pattern = re.compile(rf"\b(?:{lay})\b", re.I)
        assert not [q for q in questions if pattern.search(q)], lay


def test_acronyms_the_manual_defines_and_their_synonyms() -> None:
    from services.text.terms import CorpusStats, defined_acronyms

    text = (
        "Employers may enter into PAYE settlement agreements (PSAs). Employment and Support Allowance (ESA) "
        "is paid by DWP. Qualifying low emissions cars (QUALECs) have their own rates. See (UK)."
    )
    assert defined_acronyms(text) == [("PSA", "PAYE settlement agreements"), ("ESA", "Employment and Support Allowance")]
    stats = CorpusStats([text])
    assert stats.synonyms("Can we use a PAYE settlement agreement to do it?") == ["psa"]  # singular too
    assert stats.synonyms("Is an agreement on PAYE settlement possible?") == []  # not the phrase
    assert stats.synonyms("Is ESA taxable?") == ["Employment and Support Allowance"]
    assert stats.synonyms("Is my salary taxable?") == []


def test_sentences_split_over_paragraphs_are_joined_but_keep_their_citations() -> None:
    from services.providers.local import chunk_units
    from shared.contracts.corpus import Chunk, Paragraph

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
    units = chunk_units(chunk, page_rank=0)
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


# ---- stitching: what a quoted sentence brings with it, and how quotes become claims --------

from datetime import date  # noqa: E402

from services.providers.local import (  # noqa: E402
    NEIGHBOUR_FLOOR,
    Unit,
    _lookup_date,
    _lookup_numbers,
    LIST_ITEMS,
    claims_of,
    list_intro,
    question_parts,
    context_of,
    is_signpost,
    list_items,
    names_title_subject,
    repeats,
    similarity_floor,
)
from shared.contracts.corpus import Chunk, Paragraph  # noqa: E402


def _units(*paragraphs: Paragraph, page_rank: int = 0) -> list[Unit]:
    from services.providers.local import chunk_units

    chunk = Chunk(id="EIM1#c0", section_id="EIM1", manual="m", position=0, heading_path=[], paragraphs=list(paragraphs), content_hash="h")
    return chunk_units(chunk, page_rank)


def test_consecutive_sentences_of_a_paragraph_make_one_claim_with_one_citation() -> None:
    units = _units(
        Paragraph(id="EIM1#c0.p0", text="The figure of \u00a3150 is not an allowance. Costs above it are taxable. Other text."),
        Paragraph(id="EIM1#c0.p1", text="the employee pays"),  # not a continuation: p0 ended its sentence
        Paragraph(id="EIM1#c0.p2", kind="table", text="Year | Amount\n2013/14 | \u00a3150\n2014/15 | \u00a3160"),
    )
    claims = claims_of({0: units[0], 1: units[1], 3: units[3], 4: units[4], 5: units[5]})
    assert [(c.text, c.citations) for c in claims] == [
        ("The figure of \u00a3150 is not an allowance. Costs above it are taxable.", ["EIM1#c0.p0"]),
        ("the employee pays", ["EIM1#c0.p1"]),
        ("2013/14: amount \u00a3150.", ["EIM1#c0.p2"]),  # a table row is one claim, read with its header
        ("2014/15: amount \u00a3160.", ["EIM1#c0.p2"]),
    ]
    # sentences of one paragraph that are not next to each other are two claims (a quote stays verbatim)
    assert len(claims_of({0: units[0], 2: units[2]})) == 2
    assert {c.role for c in claims_of({0: units[0]}, role="detail")} == {"detail"}


def test_a_sentence_split_over_paragraphs_is_quoted_paragraph_by_paragraph_one_marker_each() -> None:
    units = _units(
        Paragraph(id="EIM1#c0.p0", text="The rule is old. SMP is not a social security benefit but replacement earnings"),
        Paragraph(id="EIM1#c0.p1", text="charged to tax as employment income. It is paid by employers."),
        Paragraph(id="EIM1#c0.p2", text="Another paragraph."),
    )
    assert len(units) == 4 and [p.id for p, _ in units[1].parts] == ["EIM1#c0.p0", "EIM1#c0.p1"]
    claims = claims_of(dict(enumerate(units)))
    assert [(c.text, c.citations) for c in claims] == [
        ("The rule is old. SMP is not a social security benefit but replacement earnings", ["EIM1#c0.p0"]),
        ("charged to tax as employment income. It is paid by employers.", ["EIM1#c0.p1"]),
        ("Another paragraph.", ["EIM1#c0.p2"]),
    ]
    # a piece joins only the sentences next to it: without the first sentence it stands alone
    assert [c.citations for c in claims_of({1: units[1], 2: units[2]})] == [["EIM1#c0.p0"], ["EIM1#c0.p1"]]


def test_list_items_run_on_only_when_the_item_stops_mid_sentence() -> None:
    units = _units(
        Paragraph(id="EIM1#c0.p0", text="The key features of the exemption are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="it is solely an exemption from tax, see EIM31410"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="the employee must be on a business journey"),
        Paragraph(id="EIM1#c0.p3", kind="li", text="the scholarship is provided from a trust fund and"),
        Paragraph(id="EIM1#c0.p4", kind="li", text="it is held by a person in full-time education."),
    )
    assert [[p.id[-2:] for p, _ in u.parts] for u in units] == [["p0"], ["p1"], ["p2"], ["p3", "p4"]]
    assert list_items(units, 0) == [1, 2, 3]  # the items the colon introduces
    assert list_items(units, 1) == []


def test_a_colon_pulls_in_its_list_even_its_lower_case_continuation() -> None:
    units = _units(
        Paragraph(id="EIM1#c0.p0", text="An award is fortuitous if:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="it comes from a trust fund (see EIM30002);"),
        Paragraph(id="EIM1#c0.p2", text="and not more than 25 per cent of the payments are by reason of employment."),
        Paragraph(id="EIM1#c0.p3", text="A new rule starts here."),
    )
    assert [u.text[:5] for u in units] == ["An aw", "it co", "and n", "A new"]
    assert list_items(units, 0) == [1, 2]


def test_a_list_item_is_quoted_whole_and_the_item_cap_counts_items_not_sentences() -> None:
    items = [
        Paragraph(id=f"EIM1#c0.p{n}", kind="li", text=f"a payment of \u00a3{n},000. This is taxable under Section {n}.")
        for n in range(1, 7)
    ]
    units = _units(Paragraph(id="EIM1#c0.p0", text="The elements of the payment were:"), *items)
    assert len(units) == 13  # the intro, then two sentences per item
    picked = list_items(units, 0)
    # every item's second sentence comes with it ("This is taxable under Section 3" is part of item 3)
    assert sorted({units[j].paragraph.id for j in picked}) == [f"EIM1#c0.p{n}" for n in range(1, LIST_ITEMS + 1)]
    assert len(picked) == 2 * LIST_ITEMS


def test_a_list_item_is_quoted_with_the_sentence_that_introduces_its_list() -> None:
    units = _units(
        Paragraph(id="EIM1#c0.p0", text="The key features of the exemption are:"),
        *[Paragraph(id=f"EIM1#c0.p{n}", kind="li", text=f"feature number {n}") for n in range(1, LIST_ITEMS + 3)],
        Paragraph(id="EIM1#c0.p9", text="A new rule. It stands alone."),
    )
    assert list_intro(units, 2) == 0 and 0 in context_of(units, 2, floor=1.0)
    assert list_intro(units, LIST_ITEMS + 1) is None  # past the items the intro quotes
    assert list_intro(units, len(units) - 1) is None  # not a list item
    assert list_intro(units, 0) is None


def test_context_brings_the_verdict_sentence_and_strong_neighbours_but_not_weak_ones() -> None:
    units = _units(
        Paragraph(id="EIM1#c0.p0", text="Weak opening sentence. A sum of \u00a310,000 for not competing. This is taxable under Section 225."),
        Paragraph(id="EIM1#c0.p1", text="A rule in another paragraph."),
    )
    floor = 0.5
    for unit, score in zip(units, [0.1, 0.9, 0.1, 0.9]):
        unit.score = score
    assert context_of(units, 1, floor) == [2]  # the anaphor follows its sentence; the weak one before does not
    units[0].score = NEIGHBOUR_FLOOR * floor  # a neighbour scoring near the floor joins the claim
    assert context_of(units, 1, floor) == [0, 2]
    assert 3 not in context_of(units, 2, floor)  # never across paragraphs


def test_a_table_row_reads_with_its_headers_and_brings_the_note_the_header_points_to() -> None:
    units = _units(
        Paragraph(id="EIM1#c0.p0", kind="table", text="CO2 emissions (g/km) (see note) | 2014/15\n135 | 20%\n140 | 21%"),
        Paragraph(id="EIM1#c0.p1", text="Other text."),
        Paragraph(id="EIM1#c0.p2", text="Note: The exact CO2 figure is always rounded down to the nearest 5 g/km."),
    )
    assert [u.text for u in units[:2]] == ["135: 2014/15 20%.", "140: 2014/15 21%."]
    assert context_of(units, 1, 0.5) == [3]  # the header says "see note"
    plain = _units(Paragraph(id="EIM1#c0.p0", kind="table", text="Year | Amount\n2014/15 | \u00a33,090"), Paragraph(id="EIM1#c0.p1", text="Note: other."))
    assert context_of(plain, 0, 0.5) == []  # no 'see note' in the header: no note


def test_a_page_does_not_repeat_its_example_for_each_run_of_years_but_two_pages_may_differ() -> None:
    first = _units(Paragraph(id="EIM1#c0.p0", text="In the tax year 2003/04 D does 12,000 business miles and is paid 35p per mile."))[0]
    again = _units(Paragraph(id="EIM1#c0.p1", text="In the tax year 2011-12 E does 12,000 business miles and is paid 35p per mile."))[0]
    other_page = _units(Paragraph(id="EIM2#c0.p0", text="In the tax year 2011-12 E does 12,000 business miles and is paid 35p per mile."), page_rank=1)[0]
    different = _units(Paragraph(id="EIM1#c0.p2", text="Employees with two employments add their business miles together."))[0]
    assert repeats(again, [first])
    assert not repeats(other_page, [first])  # the conflict check needs both pages' statements
    assert not repeats(different, [first])
    same_elsewhere = _units(Paragraph(id="EIM2#c0.p0", text="Employees with two employments add their business miles together."), page_rank=1)[0]
    assert repeats(same_elsewhere, [different])  # another page saying the same with the same figures adds nothing


def test_period_tables_are_looked_up_by_the_questions_tax_year_and_amounts_are_not_keys() -> None:
    rates = ["Period from | Period to | Official rate", "6.1.2002 | 5.4.2007 | 5.00%", "6.4.2010 | 5.4.2014 | 4.00%", "6.4.2014 | | 3.25%"]
    assert _lookup_rows(rates, [], date(2014, 4, 6)) == {3}
    assert _lookup_rows(rates, [], date(2012, 4, 6)) == {2}
    assert _lookup_rows(rates, [20.0, 15.0]) == set()  # dates are not numeric bands
    assert _lookup_date("What rate does HMRC use for 2014-15?") == date(2014, 4, 6)
    assert _lookup_date("What rate applies?") is None
    assert _lookup_numbers("A loan of \u00a320,000 in 2014-15 for a car emitting 142g/km") == [142.0]


def test_a_title_names_the_questions_subject_only_as_a_phrase_of_two_words_or_more() -> None:
    from services.text.terms import terms

    def q(text: str) -> str:
        return f" {' '.join(terms(text))} "

    assert names_title_subject(q("I get Employment and Support Allowance. Is it taxed?"), "Employment and Support Allowance: taxation")
    assert not names_title_subject(q("Is support from my employer an allowance?"), "Employment and Support Allowance: taxation")
    assert not names_title_subject(q("Is it just the \u00a310 over the limit?"), "10% limit")  # a figure is not a subject
    assert not names_title_subject(q("Do I pay tax on my car?"), "Cars: general")  # one word names too much


def test_questions_in_the_language_of_jobs_get_a_wider_on_topic_margin() -> None:
    assert similarity_floor("My employer pays my gym membership, is that taxed?") < similarity_floor("How tall is Mount Everest?")


def test_a_heading_that_states_a_rule_is_quotable_with_the_paragraph_under_it() -> None:
    from services.providers.local import chunk_units, states_rule

    assert states_rule("SMP is taxable")
    assert not states_rule("Two or more functions")  # a topic
    assert not states_rule("Is PAYE due on the cash payment")  # a question
    assert not states_rule("The \u00a3150 limit is not an allowance")  # a figure the paragraph may not repeat
    chunk = Chunk(
        id="EIM1#c1", section_id="EIM1", manual="m", position=1, heading_path=["Page", "SMP is taxable"], content_hash="h",
        paragraphs=[Paragraph(id="EIM1#c1.p0", text="SMP is replacement earnings. It is charged to tax.")],
    )
    units = chunk_units(chunk, 0, heading="SMP is taxable")
    assert [(u.text, u.paragraph.id, u.heading) for u in units[:2]] == [
        ("SMP is taxable", "EIM1#c1.p0", True),
        ("SMP is replacement earnings.", "EIM1#c1.p0", False),
    ]
    # the heading is its own claim, never run into the sentence below it
    assert [c.text for c in claims_of(dict(enumerate(units)))] == ["SMP is taxable", "SMP is replacement earnings. It is charged to tax."]


def test_sentences_are_weighed_by_the_manuals_own_name_for_what_the_question_names() -> None:
    from services.providers.local import _weights
    from services.text.terms import CorpusStats

    stats = CorpusStats(
        ["Employment and Support Allowance (ESA) replaced incapacity benefit.", "ESA(IR) is not taxable.", "Salary is taxable.", "Other text."]
    )
    weights = _weights("I get Employment and Support Allowance. Is it taxable?", stats)
    assert "esa" in weights and 0 < weights["esa"] < stats.idf("esa")  # the acronym counts, at less than the asker's words
    assert "esa" not in _weights("Is my salary taxable?", stats)


def test_a_row_is_named_by_the_question_when_its_label_is_made_of_the_questions_terms() -> None:
    from services.providers.local import names_row

    weights = {"car": 1.0, "benefit": 0.5, "compani": 1.0}
    assert names_row(weights, "Car benefit | \u00a32,700 |")
    assert not names_row(weights, "Van benefit | \u00a33,090")  # one label word the question lacks
    assert not names_row(weights, "140 | 20% | 21%")  # a numeric key is the lookup's business


def test_a_sentence_that_only_points_to_another_page_is_a_signpost() -> None:
    assert is_signpost("See EIM74650 for an overview of the state pension lump sum option introduced from 6 April 2005.")
    assert is_signpost("For details of when remuneration is treated as received see EIM42260.")
    assert is_signpost("See NIM02200.")
    # a rule that cites its source, or a sentence that merely mentions seeing, is not
    assert not is_signpost("The charge is imposed on the person entitled to the lump sum (see EIM74651).")
    assert not is_signpost("See the table below for the rates.")
    assert not is_signpost("For cars the rate is 45p a mile, see EIM31240 for the table.")


def test_a_question_is_split_into_the_things_it_asks() -> None:
    assert question_parts("I moved house. How much is tax-free, and is there a deadline?") == ["How much is tax-free", "is there a deadline?"]
    assert question_parts("How is it worked out, what rate applies for 2014-15?") == ["How is it worked out", "what rate applies for 2014-15?"]
    assert question_parts("Is it taxable? Can I claim relief?") == ["Is it taxable?", "Can I claim relief?"]
    # "and" joining two nouns, or a statement, is not a second question
    assert question_parts("Are heating and lighting taxable?") == ["Are heating and lighting taxable?"]
    assert question_parts("My employer pays for it.") == []


# ---- composing the answer: tables as sentences, question kinds, the answer's shape ----------

from services.providers.local import (  # noqa: E402
    ANSWER_CLAIMS,
    ANSWER_WORDS_CAP,
    REPLY_WORDS,
    gives,
    has_header,
    is_illustration,
    lead_first,
    question_kind,
    render_row,
)


def test_a_row_renders_as_a_sentence_with_its_column_headers() -> None:
    header = "Kind of vehicle | Business miles | 2011-12 onwards"
    assert render_row(header, "Car or van | First 10,000 | 45p") == "Car or van: business miles first 10,000, 2011-12 onwards 45p."
    assert render_row(header, "Cycle | All | 20p") == "Cycle: business miles all, 2011-12 onwards 20p."
    # a long cell is introduced by its header and a colon; an acronym or reference keeps its case
    long = render_row("Type of payment | Tax treatment", "Basic allowance | These allowances are taxable as earnings (see EIM00510)")
    assert long == "Basic allowance: tax treatment: These allowances are taxable as earnings (see EIM00510)."
    assert render_row("Item | Guidance", "Death | EIM13600") == "Death: guidance EIM13600."
    assert render_row("", "Home improvements loan | \u00a32,100") == "Home improvements loan: \u00a32,100."  # no header
    assert render_row("Year | Amount | Legislation", "2013/14 | \u00a321,100") == "2013/14: \u00a321,100."  # ragged: cells alone


def test_worked_computations_have_no_header_row_and_continued_rows_keep_their_label() -> None:
    assert has_header(["Kind of vehicle | Rate per mile", "Car or van | 40p"])
    assert not has_header(["cost of whole premises | 300,000 | |", "less | 75,000 | |"])
    units = _units(Paragraph(id="EIM1#c0.p0", kind="table", text="Kind of vehicle | Rate per mile to 2010-11\nCar or van | 40p for the first 10,000 miles\n| 25p after that"))
    assert [u.text for u in units] == ["Car or van: rate per mile to 2010-11: 40p for the first 10,000 miles.", "Car or van: rate per mile to 2010-11 25p after that."]
    computation = _units(Paragraph(id="EIM1#c0.p0", kind="table", text="cost of premises | 300,000\nless | 75,000\n| 225,000"))
    assert [u.text for u in computation] == ["cost of premises: 300,000.", "less: 75,000.", "225,000."]  # no label borrowed


def test_rendered_rows_are_checked_for_real_against_the_table() -> None:
    from services.stages.verification import check_claim

    table = Paragraph(id="EIM1#c0.p0", kind="table", text="Kind of vehicle | Business miles | 2011-12 onwards\nCar or van | First 10,000 | 45p\nCar or van | After that | 25p")
    rendered = _units(table)
    assert [check_claim(u.text, [table])[0] for u in rendered] == ["supported", "supported"]
    assert check_claim("Car or van: business miles first 10,000, 2011-12 onwards 40p.", [table])[0] != "supported"  # a changed figure is caught


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How much can my employer pay me per mile tax-free?", "figure"),
        ("What is the limit on exempt removal expenses?", "figure"),
        ("When must the P11D be filed?", "date"),
        ("How long can a temporary workplace last?", "date"),
        ("Is a works bus taxable?", "yes_no"),
        ("Can I claim relief for my uniform?", "yes_no"),
        ("What counts as a uniform?", "definition"),
        ("What does pooled car mean?", "definition"),
        ("Tell me about pool cars.", "other"),
    ],
)
def test_question_kind(question: str, kind: str) -> None:
    assert question_kind(question) == kind


def test_a_sentence_gives_what_its_kind_of_question_asks() -> None:
    from services.text.figures import checkable_facts

    def check(kind, text):  # noqa: ANN001, ANN202
        return gives(kind, text, checkable_facts(text))

    assert check("figure", "The rate is 45p a mile.") and not check("figure", "See EIM31240 for the rates.")
    assert check("date", "The claim must be made within five years of the end of the tax year.")
    assert check("date", "From 6 April 2011 the exemption is restricted.") and not check("date", "The employer pays the cost.")
    assert check("yes_no", "The benefit is not taxable.") and check("yes_no", "There is no tax charge on a parking space.")
    assert check("definition", "A uniform means a set of clothing of a specialised nature.")
    assert not check("other", "The benefit is not taxable.")


def test_illustrations_are_told_apart_from_rules() -> None:
    assert is_illustration("In Laidler v Perry (42TC351) the employer gave all his employees a voucher.")
    assert is_illustration("A taxpayer tells you that a redundancy payment has been taxed.")
    assert is_illustration("An example might be an employee who is required to make a long business journey.")
    assert is_illustration("Employee A makes a joint suggestion with employee B.")
    assert not is_illustration("An employee is exempt from tax on the first \u00a330,000.")
    assert not is_illustration("Examples include traditional nurse or police uniforms.")


def test_the_run_around_the_lead_comes_first_in_the_manuals_order() -> None:
    units = _units(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts an employer may pay tax free are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night for overnight stays in the UK"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="\u00a310 per night for overnight stays outside the UK."),
        Paragraph(id="EIM1#c0.p3", text="Another rule far below."),
        Paragraph(id="EIM1#c0.p4", text="Yet another rule."),
    )
    claims = lead_first({2: units[2]}, {0: units[0], 1: units[1], 4: units[4]})
    assert [c.citations[0][-2:] for c in claims] == ["p0", "p1", "p2", "p4"]


def test_composed_answer_on_real_pages_is_short_leads_with_the_figure_and_never_ends_on_a_colon(slice_settings) -> None:  # noqa: ANN001
    from services.dispatch import answer
    from shared.contracts.api import QuestionRequest

    for question in (
        "How much can my employer pay me per mile for using my own car without tax?",
        "Is there a tax charge on a works van I take home at weekends?",
        "What counts as a long service award?",
    ):
        result = answer(QuestionRequest(question=question), slice_settings)
        assert result.status == "answered", (question, result.refusal)
        claims = [s for s in result.answer.sentences if s.role == "answer"]
        detail = [s for s in result.answer.sentences if s.role == "detail"]
        words = [len(s.text.split()) for s in claims]
        assert 1 <= len(claims) <= ANSWER_CLAIMS and sum(words) <= ANSWER_WORDS_CAP, (question, words)
        assert sum(words) + sum(len(s.text.split()) for s in detail) <= REPLY_WORDS
        assert len({s.text for s in claims}) == len(claims)  # no claim repeats another
        assert not claims[-1].text.rstrip().endswith(":")  # a list intro never stands alone
        assert all(len(s.citations) == 1 for s in result.answer.sentences)
        assert {s.verdict for s in claims} <= {"supported", "partially_supported"}
    mileage = answer(QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?"), slice_settings)
    first = [s for s in mileage.answer.sentences if s.role == "answer"][0]
    assert "45p" in first.text or "25p" in first.text, first.text  # a figure question: the figure first


def test_the_best_candidates_are_reranked_by_their_own_meaning(slice_settings) -> None:  # noqa: ANN001
    import numpy as np

    from services.pipeline import STAGES, new_state, run_stage
    from services.providers.local import MEANING_CANDIDATES, MEANING_WEIGHT, rerank_by_meaning, score_units
    from shared.contracts.api import QuestionRequest
    from shared.embeddings import base_embedder

    state = new_state(QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?"), slice_settings)
    for stage in STAGES[:4]:
        state = run_stage(stage, state, slice_settings)
    units = score_units(state.query, state.selection, slice_settings)
    before = {id(u): u.score for u in units}
    ranked = rerank_by_meaning(state.query, sorted(units, key=lambda u: -u.score), slice_settings)
    changed = [u for u in ranked if u.score != before[id(u)]]
    assert 0 < len(changed) <= MEANING_CANDIDATES
    question = base_embedder(slice_settings).embed([state.query.question])[0]
    for unit in changed:  # each gains its own cosine with the question, nothing else
        cosine = float(np.dot(base_embedder(slice_settings).embed([unit.text])[0], question))
        assert unit.score - before[id(unit)] == pytest.approx(MEANING_WEIGHT * max(cosine, 0.0), abs=1e-3)
    assert [u.score for u in ranked] == sorted((u.score for u in ranked), reverse=True)


def test_both_pages_selection_ranks_first_are_quoted_in_the_answer(slice_settings) -> None:  # noqa: ANN001
    from services.pipeline import STAGES, new_state, run_stage
    from shared.contracts.api import QuestionRequest
    from shared.contracts.corpus import section_of

    for question in (
        "What are the rules on Exemption for long service testimonial awards: maximum exempt amount?",
    ):
        state = new_state(QuestionRequest(question=question), slice_settings)
        for stage in STAGES[:5]:
            state = run_stage(stage, state, slice_settings)
        first_two = [p.section_id for p in state.selection.pages[:2]]
        cited = {section_of(s.citations[0]) for s in state.draft.sentences if s.role == "answer"}
        assert set(first_two) <= cited, (question, first_two, cited)  # each had only the other page's claims


def test_the_answer_quotes_a_few_rows_of_a_table_not_the_whole_table() -> None:
    from services.providers.local import TABLE_ROWS, table_full

    rows = "\n".join(["Kind | Rate", *(f"Kind {n} | {n}p" for n in range(1, TABLE_ROWS + 3))])
    units = _units(Paragraph(id="EIM1#c0.p0", kind="table", text=rows), Paragraph(id="EIM1#c0.p1", text="A rule."))
    assert not table_full(units[TABLE_ROWS], units[:TABLE_ROWS - 1])
    assert table_full(units[TABLE_ROWS], units[:TABLE_ROWS])
    units[TABLE_ROWS].looked_up = True  # the row the asker's own figure picks always may go in
    assert not table_full(units[TABLE_ROWS], units[:TABLE_ROWS])
    assert not table_full(units[-1], units[:TABLE_ROWS])  # a sentence is never held back by a table


def test_an_example_page_ranks_first_only_when_the_question_asks_for_an_example(slice_settings) -> None:  # noqa: ANN001
    from services.pipeline import STAGES, new_state, run_stage
    from services.providers.local import score_pages
    from shared.contracts.api import QuestionRequest

    def ranking(question: str) -> list[str]:
        state = new_state(QuestionRequest(question=question), slice_settings)
        for stage in STAGES[:3]:
            state = run_stage(stage, state, slice_settings)
        return [s.bundle.section_id for s in sorted(score_pages(state.query, state.rollup, slice_settings), key=lambda s: -s.relevance)]

    asked = ranking("Can you give an example of the small loans exemption?")
    plain = ranking("How does the small loans exemption work?")
    assert asked[0] == "EIM26142", asked[:4]  # "Exemptions: small loans: example"
    assert plain[0] != "EIM26142" and plain.index("EIM26142") > asked.index("EIM26142"), plain[:4]


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("Is there a worked example of the van benefit?", True),
        ("Can you give an example?", True),
        ("How is that benefit worked out?", False),  # asks how, not for an example
        ("How much is the van benefit?", False),
    ],
)
def test_a_question_asks_for_an_example_only_in_so_many_words(question: str, asks: bool) -> None:
    from services.providers.local import _ASKS_EXAMPLE

    assert bool(_ASKS_EXAMPLE.search(question)) is asks
