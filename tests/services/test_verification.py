"""The verifier: figures must be in the cited text; wording decides supported vs partial;
a differing figure or a flipped 'not' is a contradiction."""

from __future__ import annotations

import pytest

from services.stages.text import checkable_facts
from services.stages.verification import check_claim, enforce, faithfulness, verify
from shared.config import Settings
from shared.contracts.api import Sentence
from shared.contracts.corpus import Chunk, Paragraph
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, Query, SelectionResult

RATE = Paragraph(id="EIM31240#c1.p0", kind="table", text="Kind of vehicle | Business miles | 2011-12 onwards\nCar or van | First 10,000After that | 45p25p\nMotor cycle | All | 24p")
RELOCATION = Paragraph(
    id="EIM03103#c0.p1",
    text="The first \u00a38,000 of qualifying removal benefits and expenses is exempt. The expenses must be incurred by the limitation day.",
)
SMP = Paragraph(id="EIM76360#c0.p0", text="SMP is taxable as employment income under Section 660 ITEPA 2003.")


@pytest.mark.parametrize(
    "text, facts",
    [
        ("The first \u00a38,000 is exempt from 6 April 2011.", {"8000", "2011-04-06"}),
        ("Car or van | First 10,000After that | 45p25p", {"10000", "45p", "25p"}),
        ("2014/15 onwards: \u00a33,090", {"2014-15", "3090"}),
        ("more than five per cent of the share capital", {"5%"}),
        ("the official rate was 3.25% from 6.4.2014", {"3.25%", "2014-04-06"}),
        ("the \u00a330k tax-free treatment", {"30000"}),
        ("see EIM13505 and Section 401 ITEPA 2003, s.62", {"EIM13505", "s401", "2003", "s62"}),
    ],
)
def test_checkable_facts_normalise(text: str, facts: set[str]) -> None:
    assert checkable_facts(text) == facts


def test_verbatim_claim_is_supported() -> None:
    verdict, reason = check_claim("The first \u00a38,000 of qualifying removal benefits and expenses is exempt.", [RELOCATION])
    assert verdict == "supported", reason


def test_verbatim_fragment_without_content_words_is_supported() -> None:
    # the 2014 scrape split sentences over paragraphs: a quoted fragment may have no terms
    para = Paragraph(id="EIM11235#c0.p2", text="EIM11270).")
    assert check_claim("EIM11270).", [para])[0] == "supported"
    assert check_claim("EIM11275).", [para])[0] != "supported"


def test_table_row_is_supported_by_its_table() -> None:
    assert check_claim("Car or van | First 10,000After that | 45p25p", [RATE])[0] == "supported"


def test_changed_amount_is_contradicted() -> None:
    verdict, reason = check_claim("The first \u00a310,000 of qualifying removal benefits and expenses is exempt.", [RELOCATION])
    assert verdict == "contradicted"
    assert "10000" in reason and "8000" in reason


def test_figure_absent_from_source_is_never_supported() -> None:
    verdict, _ = check_claim("Qualifying removal expenses are exempt from 6 April 2015.", [RELOCATION])
    assert verdict in {"partially_supported", "unsupported"}


def test_flipped_negation_is_contradicted() -> None:
    verdict, _ = check_claim("SMP is not taxable as employment income under Section 660 ITEPA 2003.", [SMP])
    assert verdict == "contradicted"


def test_unrelated_claim_is_unsupported() -> None:
    assert check_claim("Company vans are charged at a flat rate each year.", [SMP])[0] == "unsupported"


def test_paraphrase_with_missing_words_is_partial() -> None:
    verdict, _ = check_claim("SMP is taxable as employment income, like other statutory sick payments.", [SMP])
    assert verdict == "partially_supported"


def test_no_citation_is_unsupported() -> None:
    assert check_claim("SMP is taxable.", [])[0] == "unsupported"


def _selection(*paragraphs: Paragraph) -> SelectionResult:
    chunks = [
        Chunk(id=p.id.rsplit(".p", 1)[0], section_id=p.id.split("#")[0], manual="m", position=0, heading_path=["h"], paragraphs=[p], content_hash="x")
        for p in paragraphs
    ]
    return SelectionResult(pages=[PageBundle(section_id=c.section_id, score=1.0, chunks=[c]) for c in chunks])


def test_verify_rejects_citations_outside_the_selection() -> None:
    draft = Draft(
        sentences=[
            DraftSentence(text=SMP.text, citations=[SMP.id]),
            DraftSentence(text=RELOCATION.text, citations=[RELOCATION.id]),  # not selected
        ]
    )
    out = verify(Query(id="q", question="Is SMP taxable?", manual="m"), draft, _selection(SMP), Settings())
    assert [s.verdict for s in out] == ["supported", "unsupported"]
    assert "not a paragraph of the selected pages" in out[1].reason
    assert faithfulness(out) == 0.5


def test_enforce_never_lets_a_provider_upgrade_a_verdict() -> None:
    given = [Sentence(text="a", citations=["x"], verdict="supported", reason="model says so")]
    checked = [Sentence(text="a", citations=["x"], verdict="contradicted", reason="figure differs")]
    assert enforce(given, checked)[0].verdict == "contradicted"
    # a stricter provider verdict stands
    assert enforce(checked, given)[0].verdict == "contradicted"


def test_a_heading_counts_as_cited_text_only_for_the_paragraph_under_it() -> None:
    under = Paragraph(id="EIM76360#c1.p0", text="SMP is not a social security benefit but replacement earnings")
    other = Paragraph(id="EIM76360#c1.p1", text="charged to tax as employment income.")
    chunk = Chunk(
        id="EIM76360#c1", section_id="EIM76360", manual="m", position=1,
        heading_path=["Statutory maternity pay: summary", "SMP is taxable"], paragraphs=[under, other], content_hash="h",
    )
    selection = SelectionResult(pages=[PageBundle(section_id="EIM76360", score=1.0, chunks=[chunk])])
    query = Query(id="q", question="Is SMP taxable?", manual="m")
    draft = Draft(sentences=[DraftSentence(text="SMP is taxable", citations=[under.id]), DraftSentence(text="SMP is taxable", citations=[other.id])])
    verdicts = [s.verdict for s in verify(query, draft, selection, Settings())]
    assert verdicts[0] == "supported" and verdicts[1] != "supported"
    assert check_claim("SMP is taxable", [under])[0] != "supported"  # without the heading the words are not there
    assert check_claim("SMP is taxable", [under], ["SMP is taxable"])[0] == "supported"
