"""How the scorer reads a reply's text: key facts, groundedness, claims that read alone (taxnav/evaluation/matching.py)."""

from __future__ import annotations

import pytest

from services.text.figures import checkable_facts
from taxnav.evaluation.matching import claim_grounded, key_fact_found

MILEAGE_ROW = "Car or van First 10,000 After that 45p 25p"


@pytest.mark.parametrize(
    ("fact", "text", "found"),
    [
        ("3,090", "The van benefit is &#xA3;3,090 from 2007-08.", True),  # entity-decoded £ amount
        ("£4 per week", "up to £4 per week without receipts", True),
        ("£4 per week", "up to 4 per week", True),  # £ signs are dropped on both sides
        ("5p", "the rate is 45p per mile", False),  # not inside a longer figure
        ("5p", "5p per passenger per mile", True),
        ("5,000", "limit of £15,000", False),
        ("5,000", "£5,000.50", False),
        ("Cycle helmets", "cycle   helmets are included", True),  # case and spaces folded
        ("employer's", "the employer\u2019s scheme", True),  # curly apostrophe folded
        ("rounded down", "rounded up", False),
        ("rate", "a separate charge", False),
        ("25p", "Car or van | First 10,000After that | 45p25p", True),  # the scrape's run-together cells
        ("45p", "45p25p", True),
        ("10,000", "First 10,000After that", True),
        ("3%", "a 3% supplement", True),
        ("3%", "a 13% rate", False),
        ("£1022", "The basic FRE ... is £1,022.", True),  # thousands commas or none: one figure
        ("1,022", "a deduction of £1022 a year", True),
        ("1,022", "a deduction of £11,022 a year", False),
        ("1,02", "£1,022", False),  # a comma that is no thousands separator stays
        ("15p", "a 15 pence per working day exemption", True),  # pence and per cent in words or symbols
        ("15 pence", "exceeding 15p per day", True),
        ("10 per cent", "a 10% ceiling", True),
        ("5%", "more than 25 per cent", False),
        ("5p", "five pence", False),  # a number in words stays a word
    ],
)
def test_key_fact_found(fact, text, found):
    assert key_fact_found(fact, text) is found


def test_claim_with_a_number_missing_from_its_paragraph_is_not_grounded():
    grounded, missing = claim_grounded("Cars get 45p for the first 12,000 miles.", [MILEAGE_ROW], checkable_facts)
    assert not grounded and missing == ["12000"]


def test_claim_grounded_when_all_figures_are_in_the_cited_text():
    claim = "Cars and vans get 45p a mile for the first 10,000 business miles and 25p after that."
    assert claim_grounded(claim, [MILEAGE_ROW], checkable_facts) == (True, [])
    # figures may come from any of the cited paragraphs
    assert claim_grounded("Van benefit is £3,090 (see EIM22790).", ["&#xA3;3,090", "EIM22790"], checkable_facts)[0]


def test_claim_without_a_resolvable_citation_is_not_grounded():
    assert claim_grounded("No figures here.", [], checkable_facts) == (False, ["no resolvable citation"])


def test_a_claim_reads_alone_only_when_it_starts_and_ends_as_a_sentence_does() -> None:
    from taxnav.evaluation.matching import reads_alone

    fragments = [
        "201(3) ITEPA 2003 (see EIM20502).",  # the rest of a sentence the scrape split
        "338.",
        "use use list price",
        "it is a widespread custom for such presents to be given and",  # a list item without its lead-in
        "This is because of the deeming provision in Section",
    ]
    whole = [
        "Christmas presents in cash from persons other than the employer are taxable earnings if: it is a widespread custom.",
        "\u00a3150 per head is the limit.",
        "6.4.2010: period to 5.4.2014, official rate 4.00%.",  # a table row rendered under its label
        "Car or van: First 10,000 business miles: 45p.",
    ]
    assert [reads_alone(t) for t in fragments] == [False] * len(fragments)
    assert [reads_alone(t) for t in whole] == [True] * len(whole)
