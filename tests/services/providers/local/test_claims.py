"""How chosen units become claims, and in what order (services/providers/local/claims.py)."""

from __future__ import annotations

from pathlib import Path

from services.providers.local.claims import (
    claim_can_lead, claims_of, figure_first, items_by_score, items_joined, lead_first, units_quoted_in, without_lone_intros,
)
from services.providers.local.readable import quotable
from services.text.units import chunk_units
from shared.config import LocalStitchingSettings
from shared.contracts.corpus import Paragraph
from shared.contracts.pipeline import DraftSentence
from tests.ingest_worker.test_parser import chunks_of
from tests.services.text.paragraphs import units_of

TUNING = LocalStitchingSettings()  # the defaults the tests run with


def test_consecutive_sentences_of_a_paragraph_make_one_claim_with_one_citation() -> None:
    units = units_of(
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


def test_a_sentence_split_over_paragraphs_is_one_claim_citing_each_paragraph() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The rule is old. SMP is not a social security benefit but replacement earnings"),
        Paragraph(id="EIM1#c0.p1", text="charged to tax as employment income. It is paid by employers."),
        Paragraph(id="EIM1#c0.p2", text="Another paragraph."),
    )
    assert len(units) == 4 and [p.id for p, _ in units[1].parts] == ["EIM1#c0.p0", "EIM1#c0.p1"]
    claims = claims_of(dict(enumerate(units)))
    assert [(c.text, c.citations) for c in claims] == [
        ("The rule is old. SMP is not a social security benefit but replacement earnings charged to tax as employment income. It is paid by employers.", ["EIM1#c0.p0", "EIM1#c0.p1"]),
        ("Another paragraph.", ["EIM1#c0.p2"]),
    ]
    # the split sentence alone is still whole: one claim citing both its paragraphs, never "charged to tax ..." alone
    assert [c.citations for c in claims_of({1: units[1]})] == [["EIM1#c0.p0", "EIM1#c0.p1"]]


def test_the_run_around_the_lead_comes_first_in_the_manuals_order() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts an employer may pay tax free are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="\u00a35 per night for overnight stays in the UK"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="\u00a310 per night for overnight stays outside the UK."),
        Paragraph(id="EIM1#c0.p3", text="Another rule far below."),
        Paragraph(id="EIM1#c0.p4", text="Yet another rule."),
    )
    claims = lead_first(2, 0, {0: units[0], 1: units[1], 2: units[2], 4: units[4]})
    # the list's lead-in and its items are one claim, the rule far below another
    assert [[c[-2:] for c in claim.citations] for claim in claims] == [["p0", "p1", "p2"], ["p4"]]


def test_the_lead_comes_before_what_only_precedes_it_and_other_pages_come_best_first() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="A general sentence about the subject."),
        Paragraph(id="EIM1#c0.p1", text="The rule that answers the question."),
        Paragraph(id="EIM1#c0.p2", text="Its first condition."),
        Paragraph(id="EIM1#c0.p3", text="A later exception on the page."),
    )
    other = units_of(Paragraph(id="EIM2#c0.p0", text="Another page's weaker point."), Paragraph(id="EIM2#c0.p1", text="Its stronger point."), page_rank=1)
    third = units_of(Paragraph(id="EIM3#c0.p0", text="A third page's point."), page_rank=2)
    chosen = dict(enumerate([*units, *other, *third]))
    for unit, score in zip(chosen.values(), [0.9, 1.0, 0.8, 0.7, 0.5, 0.6, 0.95]):
        unit.score = score
    claims = lead_first(1, 1, chosen)
    # the lead and what follows it, the lead page's other sentences in order, then the other pages by their best
    assert [c.citations[0] for c in claims] == [
        "EIM1#c0.p1", "EIM1#c0.p2", "EIM1#c0.p3", "EIM1#c0.p0", "EIM3#c0.p0", "EIM2#c0.p0", "EIM2#c0.p1",
    ]
    assert [c.citations[0] for c in lead_first(1, 0, chosen)][:2] == ["EIM1#c0.p0", "EIM1#c0.p1"]  # a sentence the lead leans on stays before it


def test_another_pages_sentences_keep_the_manuals_order_when_not_adjacent() -> None:
    # EIM13900 quoted after the lead's page: "You make enquiries and find that the elements of
    # the payment were:" (p1) and its fourth item (p5) are two runs; the item scores higher but
    # is read after its lead-in
    lead = units_of(Paragraph(id="EIM1#c0.p0", text="The rule that answers the question."))
    other = units_of(
        Paragraph(id="EIM2#c0.p0", text="The elements of the payment were:"),
        *[Paragraph(id=f"EIM2#c0.p{n}", kind="li", text=f"an item number {n}.") for n in range(1, 5)],
        page_rank=1,
    )
    chosen = {0: lead[0], 1: other[0], 5: other[4]}
    for unit, score in zip(chosen.values(), [1.0, 0.5, 0.9]):
        unit.score = score
    assert [c.citations[0] for c in lead_first(0, 0, chosen)] == ["EIM1#c0.p0", "EIM2#c0.p0", "EIM2#c0.p4"]


def test_a_lists_items_are_read_best_first_after_their_lead_in_on_a_real_page(corpus_dir: Path) -> None:
    # EIM21715: "Small gifts ... are exempt from tax if the following conditions are met:" and
    # five conditions; the one a question about a gift's cost turns on ("does not exceed £250",
    # with its VAT sentence) is the fifth
    page = chunks_of(corpus_dir, "EIM21715").chunks
    units = [u for c in page for u in chunk_units(c, 0, TUNING)]
    intro = next(i for i, u in enumerate(units) if u.text.endswith("conditions are met:"))
    cost = next(i for i, u in enumerate(units) if "does not exceed" in u.text)
    after = next(i for i, u in enumerate(units) if u.text.startswith("Where the cost of a gift"))
    run = list(range(intro, after + 1))
    chosen = {j: units[j] for j in run}
    for j in run:
        units[j].score = 0.5
    units[cost].score, units[after].score = 0.9, 1.0
    order = items_by_score(run, chosen)
    # the lead-in first, the £250 item with its next sentence, the other items in order; the
    # sentence after the list stays after it however well it scores
    assert order == [intro, cost, cost + 1, *range(intro + 1, cost), after]
    claims = claims_of(chosen, order=order)
    # one claim: the lead-in, then the £250 condition first among its items
    assert claims[0].text.startswith(units[intro].text) and claims[0].citations[1] == "EIM21715#c0.p6"
    assert claims[0].text.index("the total cost to the donor") < min(claims[0].text.index(units[j].text) for j in range(intro + 1, cost))
    assert claims[-1].text.startswith("Where the cost of a gift")
    assert [c.citations[0] for c in claims_of(chosen)] == sorted(c.citations[0] for c in claims_of(chosen))  # no order: the manual's


def test_a_lettered_lists_items_keep_their_order() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The charge is worked out in three steps:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="(a) take the cash equivalent"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="(b) deduct what the employee made good"),
        Paragraph(id="EIM1#c0.p3", kind="li", text="(c) apply the rate of tax."),
    )
    chosen = dict(enumerate(units))
    for unit, score in zip(units, [0.5, 0.2, 0.3, 0.9]):
        unit.score = score
    assert items_by_score(list(chosen), chosen) == [0, 1, 2, 3]
    plain = units_of(*(Paragraph(id=p.id, kind=p.kind, text=p.text.split(") ", 1)[-1]) for u in units for p, _ in u.parts))
    for unit, score in zip(plain, [0.5, 0.2, 0.3, 0.9]):
        unit.score = score
    assert items_by_score([0, 1, 2, 3], dict(enumerate(plain))) == [0, 3, 2, 1]


def test_a_lists_items_joined_by_or_keep_their_order() -> None:
    # EIM10100-like: chunk boundaries split the items, each but the last running on into the next
    units = [
        *units_of(Paragraph(id="EIM1#c0.p0", text="Fuel can be withdrawn:"), Paragraph(id="EIM1#c0.p1", kind="li", text="by the employer no longer providing free fuel, or")),
        *units_of(Paragraph(id="EIM1#c1.p0", kind="li", text="by the employer requiring the employee to make good all private fuel.")),
    ]
    chosen = dict(enumerate(units))
    for unit, score in zip(units, [0.5, 0.2, 0.9]):
        unit.score = score
    assert items_by_score(list(chosen), chosen) == [0, 1, 2]  # not [0, 2, 1]: that would end on ", or"
    assert claims_of(chosen, order=items_by_score(list(chosen), chosen))[-1].text.endswith("private fuel.")


def test_a_list_intro_whose_items_are_not_quoted_next_to_it_is_left_out() -> None:
    def claim(text: str, cite: str) -> DraftSentence:
        return DraftSentence(text=text, citations=[cite], role="answer")

    intro, item = claim("There are two main aspects to this:", "EIM1#c0.p3"), claim("the first aspect", "EIM1#c0.p4")
    later = claim("For example, an employer pays 50p a mile.", "EIM1#c1.p0")
    assert without_lone_intros([intro, item], TUNING.lead_in_words) == [intro, item]  # with its first item
    assert without_lone_intros([intro, claim("a later item", "EIM1#c0.p6")], TUNING.lead_in_words)[0] == intro  # or a later one
    assert without_lone_intros([intro, later], TUNING.lead_in_words) == [later]  # followed by something else
    assert without_lone_intros([later, intro], TUNING.lead_in_words) == [later]  # last
    assert without_lone_intros([intro, claim("the first aspect", "EIM2#c0.p4")], TUNING.lead_in_words) == [claim("the first aspect", "EIM2#c0.p4")]  # another page
    rule = claim("The exemption covers certain pensions paid in consequence of disablement caused by injury if:", "EIM1#c0.p3")
    assert without_lone_intros([rule, later], TUNING.lead_in_words) == [rule, later]  # a rule that introduces its conditions says something itself


def test_a_figure_question_is_answered_by_a_figure_first_that_reads_on_its_own() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="Many employers pay a round sum mileage allowance, expressed as x pence per mile."),
        Paragraph(id="EIM1#c0.p1", text="For example, an employer pays 60p a mile to an employee."),
        Paragraph(id="EIM1#c0.p2", text="The payments are exempt if they do not exceed:"),
        Paragraph(id="EIM1#c0.p3", kind="li", text="45p a mile for the first 10,000 business miles"),
        Paragraph(id="EIM1#c1.p0", kind="table", text="Kind of vehicle | Business miles | 2011-12 onwards\nMotor cycle | All | 24p\nCar or van | First 10,000 | 45p"),
    )
    for unit, score in zip(units, (1.0, 0.9, 0.8, 0.7, 0.5, 0.6), strict=True):
        unit.score = score
    units[1].example = True  # what stitching marks a worked example
    chosen = dict(enumerate(units))
    claims = claims_of(chosen)
    led = figure_first("figure", claims, chosen)
    # the list's lead-in with its item is one claim that reads on its own and states the figure;
    # the example does not lead
    assert led[0].text == "The payments are exempt if they do not exceed: 45p a mile for the first 10,000 business miles"
    assert sorted(c.text for c in led) == sorted(c.text for c in claims)  # moved, nothing lost
    units[2].score, units[3].score = 0.4, 0.3  # the table's row now scores best of the claims giving a figure
    assert figure_first("figure", claims, chosen)[0].text.startswith("Car or van:")
    assert figure_first("yes_no", claims, chosen) == claims  # only a figure question
    assert figure_first("figure", led, chosen) == led  # a first claim with a figure stays
    no_row = {i: u for i, u in chosen.items() if u.row is None}
    no_row[1].example, no_row[3].example = True, True  # the item stands in a worked example now: nothing giving a figure reads alone
    assert figure_first("figure", claims_of(no_row), no_row) == claims_of(no_row)  # the order stays
    # nor does a line of a worked computation lead (EIM74652: "State pension | £3,000" before the rate the question asks)
    worked = units_of(
        Paragraph(id="EIM3#c0.p0", text="The lump sum is taxed at the highest rate that applies to the individual's total income."),
        Paragraph(id="EIM3#c1.p0", kind="table", text="Earnings | \u00a322,000 |\nState pension | \u00a33,000 |"),
    )
    chosen = dict(enumerate(worked))
    assert figure_first("figure", claims_of(chosen), chosen) == claims_of(chosen)
    # a page's notice that its rule has ended is read first, figure or none (EIM02650's repeal of the 15p exemption)
    ended = units_of(
        Paragraph(id="EIM2#c0.p0", text="Section 89 ITEPA 2003 was repealed by Finance Act 2012 with effect from the tax year 2013-14."),
        Paragraph(id="EIM2#c0.p1", text="There is a 15p per working day exemption on some meal vouchers."),
    )
    chosen = dict(enumerate(ended))
    assert figure_first("figure", claims_of(chosen), chosen) == claims_of(chosen)


def test_an_item_quoted_apart_from_its_lead_in_joins_it_and_a_crumb_is_never_quoted() -> None:
    claims = [
        DraftSentence(text="In a case where property is transferred the request should:", citations=["EIM1#c0.p0"]),
        DraftSentence(text="attach a copy of any tenancy agreement in force.", citations=["EIM1#c0.p3"]),
        DraftSentence(text="A new rule that stands alone.", citations=["EIM1#c0.p4"]),
        DraftSentence(text="another item of the list on that page.", citations=["EIM1#c0.p5"]),
        DraftSentence(text="a line in lower case from another page.", citations=["EIM2#c0.p0"]),
    ]
    joined = items_joined(claims)
    assert [c.text for c in joined] == [
        "In a case where property is transferred the request should: attach a copy of any tenancy agreement in force.",
        "A new rule that stands alone. another item of the list on that page.",  # its page's claim before it: read after it
        "a line in lower case from another page.",  # nothing of its page before it: left as it is (quotable keeps such lines out)
    ]
    assert joined[0].citations == ["EIM1#c0.p0", "EIM1#c0.p3"]
    crumbs = units_of(Paragraph(id="EIM1#c0.p0", text="Example 1"), Paragraph(id="EIM1#c0.p1", text="See EIM24360."), Paragraph(id="EIM1#c0.p2", text="This is taxable."))
    assert [quotable(crumbs, i, TUNING.list_items) for i in range(len(crumbs))] == [False, False, True]


def test_a_claim_leads_when_it_reads_on_its_own() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The approved amount is 45p a mile."),
        Paragraph(id="EIM1#c0.p1", text="This is the rule for cars."),
        Paragraph(id="EIM1#c0.p2", kind="table", text="Kind | Rate\nCar | 45p"),
    )
    chosen = dict(enumerate(units))
    claims = claims_of(chosen)
    assert [units_quoted_in(c, chosen) for c in claims] == [[units[0]], [units[1]], [units[2]]]
    assert claim_can_lead(claims[2], [units[2]])  # a table row with its header
    assert claim_can_lead(DraftSentence(text=units[0].text, citations=["EIM1#c0.p0"]), [units[0]])
    assert not claim_can_lead(DraftSentence(text=units[1].text, citations=["EIM1#c0.p0"]), [units[1]])  # leans on the one before
    assert not claim_can_lead(claims[2], [])
    units[0].example = True
    assert not claim_can_lead(DraftSentence(text=units[0].text, citations=["EIM1#c0.p0"]), [units[0]])  # a worked example
