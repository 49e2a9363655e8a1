"""Sentences the 2014 scrape split over several <p> are joined back at parse time (ingest_worker/joins.py), on real
EIM pages; real list items, asides, headings and tables are never joined."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest_worker.parser import parse_body
from tests.conftest import EIM
from tests.ingest_worker.test_parser import chunks_of


def blocks_of(corpus_dir: Path, section: str) -> list[tuple[str, str]]:
    doc = json.loads((corpus_dir / EIM / f"{section.lower()}.json").read_text())
    return [(b.kind, b.text) for s in parse_body(doc["details"]["body"]) for b in s.blocks]


def test_eim30501_sentence_split_over_seven_paragraphs_is_one_paragraph(corpus_dir: Path) -> None:
    build = chunks_of(corpus_dir, "EIM30501")
    paragraphs = [p for c in build.chunks for p in c.paragraphs]
    assert len(paragraphs) == 4  # 15 <p> in the HTML
    assert [p.id for p in paragraphs] == [f"{c.id}.p{i}" for c in build.chunks for i in range(len(c.paragraphs))]
    second = paragraphs[1].text
    assert second.startswith("Where an employer meets the liability for a director")
    assert (
        "arise in respect of the benefit of the insurance cover (see EIM21001 onwards). The measure of the "
        "charge is the 'proper proportion' (see EIM21200) of the premium: that is, that proportion of the "
        "overall premium that is attributable to the cover provided for that director or employee."
    ) in second
    assert paragraphs[2].text == (
        "Where a former employer meets a liability after the directorship or employment has ceased "
        "the amount may be also be chargeable as employment income."
    )
    # A fragment ending "(see" carries on into a link that starts with a capital.
    assert paragraphs[3].text == "In some circumstances relief is due against these charges, see EIM30505."
    # The joined paragraph keeps every link of its fragments, so cross-references still point at it.
    refs = {(r.start, r.paragraph_id) for r in build.refs}
    for target in ("EIM00580", "EIM20007", "EIM21001", "EIM21200"):
        assert (target, paragraphs[1].id) in refs
    assert ("EIM30505", paragraphs[3].id) in refs


def test_eim34002_intro_joined_but_items_inside_li_stay_apart(corpus_dir: Path) -> None:
    blocks = blocks_of(corpus_dir, "EIM34002")
    intro = "The main rules that provide a deduction for employees' travelling expenses will usually apply in the following circumstances:"
    at = blocks.index(("p", intro))  # three <p> fragments, one sentence
    # <li><p>...</p></li>: each item ends without a full stop and the next starts in lower
    # case, but they are separate list items.
    assert blocks[at + 1 : at + 4] == [
        ("p", "travelling appointments, see EIM32366"),
        ("p", "overseas conferences and study tours, see EIM31950"),
        ("p", "travel between group employments, see EIM32035."),
    ]


def test_eim11845_see_fragment_joins_a_capitalised_link(corpus_dir: Path) -> None:
    texts = [t for _, t in blocks_of(corpus_dir, "EIM11845")]
    assert (
        "For example, PAYE is due on a voucher for 100 gold bars because the gold bars are a readily "
        "convertible asset (see EIM11855). Whereas PAYE is not generally due on a non-transferrable store "
        "gift voucher because neither the voucher nor the item that may be obtained using the voucher "
        "would be a readily convertible asset."
    ) in texts


def test_real_list_items_and_text_after_a_list_are_not_joined(corpus_dir: Path) -> None:
    blocks = blocks_of(corpus_dir, "EIM22015")
    at = blocks.index(("li", "all employees generally or"))
    assert blocks[at + 1] == ("li", "generally to all employees at a particular location")
    assert blocks[at + 2] == ("p", "subject to an exception relating to relevant low-paid employees (see EIM22016).")


def test_withheld_asides_stay_separate(corpus_dir: Path) -> None:
    withheld = "(This text has been withheld because of exemptions in the Freedom of Information Act 2000)"
    # The scrape split each aside over two <p>; each is rejoined, but two asides never merge.
    assert blocks_of(corpus_dir, "EIM12010").count(("p", withheld)) == 2


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        # A <p> ending ':' introduces a list: its first item stays apart.
        ("<p>The conditions are:</p><p>the employee is resident</p>", ["The conditions are:", "the employee is resident"]),
        # Finished sentences, also behind a closing quote or bracket.
        ("<p>He said \"no.\"</p><p>then left (see EIM1.)</p><p>and so on</p>",
         ["He said \"no.\"", "then left (see EIM1.)", "and so on"]),
        # Never across a heading (h2-h4 open a section; h5 is a block) or a table.
        ("<p>the rate is</p><h3>Rates</h3><p>paid monthly</p>", ["the rate is", "paid monthly"]),
        ("<p>the rate is</p><h5>Rates</h5><p>paid monthly</p>", ["the rate is", "Rates", "paid monthly"]),
        ("<p>the rate is</p><table><tr><td>45p</td></tr></table><p>per mile</p>", ["the rate is", "45p", "per mile"]),
        # Nor into a quotation, nor onto enumerated items or editorial notes.
        ("<p>Lord Reid said</p><blockquote><p>that it was</p></blockquote>", ["Lord Reid said", "that it was"]),
        ("<p>is met where</p><p>(a) the employee</p><p>[Note: see EIM1]</p>", ["is met where", "(a) the employee", "[Note: see EIM1]"]),
        ("<p>a. check the UTR</p><p>b. reissue the return</p><p>ii) the rest</p>", ["a. check the UTR", "b. reissue the return", "ii) the rest"]),
        ("<p>set the signal on Record A</p><p>9. If the details differ</p>", ["set the signal on Record A", "9. If the details differ"]),
        ("<p>(This text has been withheld)</p><p>(see EIM1)</p>", ["(This text has been withheld)", "(see EIM1)"]),
        # A capital after an ordinary word is a new paragraph; only after "the", "(see" etc. it carries on.
        ("<p>Example</p><p>Mr A is paid</p><p>by the</p><p>Employer (see</p><p>EIM2). A loan (</p><p>EIM3) is</p>",
         ["Example", "Mr A is paid by the Employer (see EIM2). A loan (EIM3) is"]),
    ],
)
def test_edge_cases(html: str, expected: list[str]) -> None:
    assert [b.text for s in parse_body(html) for b in s.blocks] == expected


def test_joined_fragments_keep_their_links_in_order() -> None:
    (section,) = parse_body("<p>charges arise (see <a href='/a'>A</a>) on the</p><p>cover (see <a href='/b'>B</a>).</p>")
    assert [(b.text, b.hrefs) for b in section.blocks] == [("charges arise (see A) on the cover (see B).", ["/a", "/b"])]


def test_a_heading_the_scrape_split_is_joined_with_its_tail(corpus_dir: Path) -> None:
    headings = [s.headings[-1] for s in parse_body(json.loads((corpus_dir / EIM / "eim11819.json").read_text())["details"]["body"]) if s.headings]
    assert "Is PAYE due on the cash payment by the overseas intermediary?" in headings
    build = chunks_of(corpus_dir, "EIM31230")
    assert "The approved amount for mileage allowance payments (the approved amount)" in [c.heading_path[-1] for c in build.chunks]
    # the tail is not left behind as a paragraph
    assert not any(p.text == "approved amount)" for c in build.chunks for p in c.paragraphs)


@pytest.mark.parametrize(
    "html, heading, first",
    [
        ("<h3>Liability on the alternative precise method</h3><p>a) Car loan</p>", "Liability on the alternative precise method", "a) Car loan"),
        ("<h3>Is PAYE due?</h3><p>yes, on the whole payment.</p>", "Is PAYE due?", "yes, on the whole payment."),
        ("<h3>Travel</h3><p>the employee may deduct the full cost of business travel in the performance of the duties of the employment.</p>",
         "Travel", "the employee may deduct the full cost of business travel in the performance of the duties of the employment."),
        ("<h3>Cars</h3><p>Cars are taxed.</p><p>available to family</p>", "Cars", "Cars are taxed."),
    ],
)
def test_what_follows_a_heading_is_not_taken_for_its_tail(html: str, heading: str, first: str) -> None:
    section = [s for s in parse_body(html) if s.headings][0]
    assert section.headings[-1] == heading
    assert section.blocks[0].text == first


@pytest.mark.parametrize(
    ("section", "joined"),
    [
        # "... search for “Tips, Gratuities, Service Charges And" / "Troncs “."
        ("EIM07900", "search for \u201cTips, Gratuities, Service Charges And Troncs \u201c."),
        # "(see EIM12978 and" / "EIM13070)."
        ("EIM13924", "(see EIM12978 and EIM13070)."),
    ],
)
def test_a_fragment_ending_on_and_or_or_goes_on_into_the_next(corpus_dir: Path, section: str, joined: str) -> None:
    assert any(joined in t for _, t in blocks_of(corpus_dir, section))
