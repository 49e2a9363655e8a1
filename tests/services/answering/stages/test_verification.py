"""The verifier: figures must be in the cited text; wording decides supported vs partial;
a differing figure or a flipped 'not' is a contradiction."""

from __future__ import annotations

import json

import pytest

from services.text.units import chunk_units
from services.text.figures import checkable_facts
from services.answering.stages.verification import check_claim, faithfulness, verify
from services.providers.base import enforce
from shared.config import LocalStitchingSettings, Settings
from shared.contracts.api import Sentence
from shared.contracts.corpus import Chunk, Paragraph
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, SelectionResult
from services.text.reading import new_query

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
        # a statute's year names the statute (a reference, not the number 2003 a figure question wants)
        ("see EIM13505 and Section 401 ITEPA 2003, s.62", {"EIM13505", "s401", "ITEPA 2003", "s62"}),
        ("repealed by Finance Act 2012 from 2013, under ICTA 1988", {"ACT 2012", "2013", "ICTA 1988"}),
        # a statute named at the end of one table line does not take the next line's tax year
        ("| Section 150(1) ITEPA\n2008/09 to 2009/10 | \u00a316,900", {"s150", "2008-09", "2009-10", "16900"}),
        ("FA 2008/09", {"2008-09"}),
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


def test_a_statute_named_with_the_wrong_year_is_not_supported() -> None:
    # SMP: "... under Section 660 ITEPA 2003." A rendering that names ITEPA 2004 cites a law the paragraph does not.
    verdict, reason = check_claim("SMP is taxable as employment income under Section 660 ITEPA 2004.", [SMP])
    assert verdict != "supported" and "ITEPA 2004" in reason
    assert check_claim("SMP is taxable as employment income under Section 660 ITEPA 2003.", [SMP])[0] == "supported"


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
    out = verify(new_query(id="q", question="Is SMP taxable?", manual="m"), draft, _selection(SMP), Settings())
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
    query = new_query(id="q", question="Is SMP taxable?", manual="m")
    draft = Draft(sentences=[DraftSentence(text="SMP is taxable", citations=[under.id]), DraftSentence(text="SMP is taxable", citations=[other.id])])
    verdicts = [s.verdict for s in verify(query, draft, selection, Settings())]
    assert verdicts[0] == "supported" and verdicts[1] != "supported"
    assert check_claim("SMP is taxable", [under])[0] != "supported"  # without the heading the words are not there
    assert check_claim("SMP is taxable", [under], ["SMP is taxable"])[0] == "supported"


# ---------------------------------------------------------------- real pages (../shared/corpus)
#
# Rendered claims (not verbatim quotes) checked against the paragraphs the parser makes of
# real EIM pages: one test per verdict label, and the low-faithfulness refusal reached.


def _real_selection(corpus_dir, *sections: str) -> SelectionResult:
    from tests.ingest_worker.test_parser import chunks_of  # noqa: PLC0415  (parses a real page)

    return SelectionResult(
        pages=[PageBundle(section_id=s, score=1.0, chunks=chunks_of(corpus_dir, s).chunks) for s in sections]
    )


def _scraped_table(corpus_dir, section: str, contains: str, pid: str) -> Paragraph:
    """A table of a real page as the 2014 scrape stores it (cells joined " | ", rows by line),
    before any repair at ingest: its cells may be glued ("First 10,000After that", "45p25p")."""
    import lxml.html  # noqa: PLC0415

    from tests.conftest import EIM  # noqa: PLC0415

    body = json.loads((corpus_dir / EIM / f"{section.lower()}.json").read_text())["details"]["body"]
    root = lxml.html.fragment_fromstring(body, create_parent="div")
    for table in root.iter("table"):
        rows = [" | ".join(" ".join(td.text_content().split()) for td in tr.iter("td")) for tr in table.iter("tr")]
        text = "\n".join(r for r in rows if r.strip(" |"))
        if contains in text:
            return Paragraph(id=pid, kind="table", text=text)
    raise AssertionError(f"no table of {section} holds {contains!r}")


MILEAGE_TABLE = "EIM31240#c1.p0"  # "Kind of vehicle | Business miles | 2011-12 onwards\nCar or van | First 10,000After that | 45p25p ..."
ROW_RENDERED = "Car or van, 2011-12 onwards: first 10,000 business miles 45p, after that 25p"


def _check_real(corpus_dir, claim: str, pid: str) -> tuple[str, str]:
    selection = _real_selection(corpus_dir, pid.split("#")[0])
    draft = Draft(sentences=[DraftSentence(text=claim, citations=[pid])])
    [out] = verify(new_query(id="q", question="q", manual="m"), draft, selection, Settings())
    return out.verdict, out.reason


def test_real_verbatim_quote_is_supported_as_quoted(corpus_dir) -> None:
    quote = "The legislation exempts from tax the first £8,000 of removal expenses and benefits to which Section 271 ITEPA 2003 applies."
    assert _check_real(corpus_dir, quote, "EIM03103#c0.p0") == ("supported", "quoted")


def test_real_table_row_rendering_is_supported_by_its_table_glued_or_repaired(corpus_dir) -> None:
    # as the parser gives the page (repaired at ingest or not)
    verdict, reason = _check_real(corpus_dir, ROW_RENDERED, MILEAGE_TABLE)
    assert verdict == "supported" and reason.startswith("rendered:"), reason
    verdict, _ = _check_real(corpus_dir, "Motor cycle, 2011-12 onwards: all business miles 24p", MILEAGE_TABLE)
    assert verdict == "supported"
    # as the 2014 scrape stored it, cells glued: the normalised figures still match
    scraped = _scraped_table(corpus_dir, "EIM31240", "2011-12 onwards", MILEAGE_TABLE)
    assert "First 10,000After that | 45p25p" in scraped.text
    verdict, reason = check_claim(ROW_RENDERED, [scraped], ["From 2011-12"])
    assert verdict == "supported" and reason.startswith("rendered:"), reason
    verdict, reason = check_claim(ROW_RENDERED.replace("45p", "40p"), [scraped], ["From 2011-12"])
    assert verdict == "contradicted" and "45p" in reason


def test_every_rendered_row_of_a_real_rate_table_is_supported_by_it(corpus_dir) -> None:
    # EIM25580's car fuel benefit table: its first row ends "Section 150(1) ITEPA" and the
    # next starts "2008/09 to 2009/10"; the rendered row for 2008/09 was once marked unsupported
    from tests.ingest_worker.test_parser import chunks_of  # noqa: PLC0415  (parses a real page)

    rows = [u for c in chunks_of(corpus_dir, "EIM25580").chunks for u in chunk_units(c, 0, LocalStitchingSettings()) if u.row]
    assert len(rows) == 6 and rows[1].text.startswith("2008/09 to 2009/10")
    for row in rows:
        assert _check_real(corpus_dir, row.text, row.paragraph.id)[0] == "supported", row.text


def _rendered_rows(corpus_dir, section: str) -> dict[str, object]:
    from tests.ingest_worker.test_parser import chunks_of  # noqa: PLC0415  (parses a real page)

    return {u.cells.split("|")[0].strip(): u for c in chunks_of(corpus_dir, section).chunks for u in chunk_units(c, 0, LocalStitchingSettings()) if u.row}


def test_a_rows_claim_is_read_against_the_headers_of_the_columns_it_fills(corpus_dir) -> None:
    # EIM50059 ticks each item in one of two columns, "... eligible for relief" and "... HMRC
    # does not accept as eligible for relief": the "not" of the column a row leaves blank is
    # not the row's (every ticked-eligible row was once marked contradicted)
    rows = _rendered_rows(corpus_dir, "EIM50059")
    for label in ("Uniform cleaning", "Sunglasses", "Flight case", "Suitcase", "Watch"):
        row = rows[label]
        assert _check_real(corpus_dir, row.text, row.paragraph.id)[0] == "supported", row.text
    # a rendering that moves an item to the other column still contradicts the row
    wrong = rows["Suitcase"].text.replace("HMRC does not accept as eligible", "eligible")
    assert "not" not in wrong and _check_real(corpus_dir, wrong, rows["Suitcase"].paragraph.id)[0] == "contradicted"
    # EIM13970: the labels' header ("Period when not resident ...") says nothing of the total
    total = _rendered_rows(corpus_dir, "EIM13970")["Total foreign service"]
    assert _check_real(corpus_dir, total.text, total.paragraph.id)[0] == "supported", total.text


def test_a_rows_claim_is_read_against_its_own_row_among_rows_sharing_its_words(corpus_dir) -> None:
    # EIM40003 tabulates residence statuses that share their words ("Resident, ordinarily
    # resident and domiciled", "Resident but not ordinarily resident"): each row's rendering is
    # supported; one that drops its row's "not" contradicts that row
    rows = _rendered_rows(corpus_dir, "EIM40003")
    for label in ("Resident, ordinarily resident but not domiciled", "Resident but not ordinarily resident", "Resident, ordinarily resident and domiciled"):
        row = rows[label]
        assert _check_real(corpus_dir, row.text, row.paragraph.id)[0] == "supported", row.text
    flipped = rows["Resident but not ordinarily resident"].text.replace("but not ordinarily", "but ordinarily")
    assert _check_real(corpus_dir, flipped, rows["Resident but not ordinarily resident"].paragraph.id)[0] == "contradicted"


def test_a_numbered_sentence_is_quoted_with_its_number(corpus_dir) -> None:
    # EIM33108 quotes a dictionary: "... place, post. 2. To take up one's position, post
    # oneself." The "2." was dropped, so sentences quoted together were no longer verbatim
    from tests.ingest_worker.test_parser import chunks_of  # noqa: PLC0415

    units = [u for c in chunks_of(corpus_dir, "EIM33108").chunks for u in chunk_units(c, 0, LocalStitchingSettings())]
    numbered = next(u for u in units if "To take up one" in u.text)
    assert numbered.text.startswith("2. To take up")
    run = [u for u in units if u.paragraph.id == numbered.paragraph.id]
    claim = " ".join(u.text for u in run)
    assert _check_real(corpus_dir, claim, numbered.paragraph.id) == ("supported", "quoted")


def test_real_rendering_with_a_changed_figure_is_contradicted(corpus_dir) -> None:
    verdict, reason = _check_real(corpus_dir, ROW_RENDERED.replace("45p", "40p"), MILEAGE_TABLE)
    assert verdict == "contradicted" and reason == f"says 40p where {MILEAGE_TABLE} says 45p"
    verdict, reason = _check_real(corpus_dir, ROW_RENDERED.replace("10,000", "12,000"), MILEAGE_TABLE)
    assert verdict == "contradicted" and "says 12000" in reason and "10000" in reason
    # a changed amount in a shortened sentence
    verdict, reason = _check_real(corpus_dir, "The first £10,000 of removal expenses is exempt from tax.", "EIM03103#c0.p0")
    assert verdict == "contradicted" and "8000" in reason


def test_real_rendering_with_a_figure_the_page_lacks_is_unsupported(corpus_dir) -> None:
    # a figure added to a rendered row that the cited paragraph never states, with nothing to
    # contradict (no other date in the row): unsupported, not partially supported
    verdict, reason = _check_real(corpus_dir, ROW_RENDERED + " from 6 April 2016", MILEAGE_TABLE)
    assert verdict == "unsupported" and reason == f"2016-04-06 not in {MILEAGE_TABLE}"
    # the right figure cited to the wrong paragraph of the same page
    verdict, _ = _check_real(corpus_dir, ROW_RENDERED, "EIM31240#c0.p0")
    assert verdict == "unsupported"


def test_real_rendering_with_terms_the_page_lacks_is_partially_supported(corpus_dir) -> None:
    verdict, reason = _check_real(corpus_dir, "Car or van, 2011-12 onwards: 45p per business mile for charity volunteers", MILEAGE_TABLE)
    assert verdict == "partially_supported" and "chariti" in reason and "volunt" in reason
    # shortened with every term kept: supported
    assert _check_real(corpus_dir, "The first £8,000 of removal expenses and benefits is exempt from tax.", "EIM03103#c0.p0")[0] == "supported"


def test_real_rendering_that_flips_the_rule_is_contradicted(corpus_dir) -> None:
    verdict, reason = _check_real(corpus_dir, "National Insurance contributions are not payable on SMP.", "EIM76360#c1.p3")
    assert verdict == "contradicted" and "negation" in reason


def test_real_answer_with_changed_figures_falls_below_the_floor_and_is_refused(corpus_dir) -> None:
    from services.answering.stages import verification  # noqa: PLC0415

    selection = _real_selection(corpus_dir, "EIM31240", "EIM03103")
    query = new_query(id="q", question="How much per mile is tax-free?", manual="m")

    def state_for(*claims: tuple[str, str]):
        from shared.contracts.pipeline import PipelineState  # noqa: PLC0415

        draft = Draft(sentences=[DraftSentence(text=t, citations=[pid]) for t, pid in claims])
        return PipelineState(query=query, selection=selection, draft=draft)

    from services.providers.local import LocalProvider  # noqa: PLC0415

    from services.answering.refusals import decide  # noqa: PLC0415

    good = verification.step(state_for((ROW_RENDERED, MILEAGE_TABLE)), Settings(), LocalProvider(Settings()))
    assert decide.refusal(good, Settings()) is None and good.verification.faithfulness == 1.0

    bad = verification.step(
        state_for(
            (ROW_RENDERED.replace("45p", "40p"), MILEAGE_TABLE),
            ("Motor cycle, 2011-12 onwards: all business miles 24p", MILEAGE_TABLE),
            ("The first £10,000 of removal expenses is exempt from tax.", "EIM03103#c0.p0"),
        ),
        Settings(),
        LocalProvider(Settings()),
    )
    assert bad.verification.faithfulness == pytest.approx(1 / 3)
    refusal = decide.refusal(bad, Settings())  # the stage measured; the refusal module holds it to the floor
    assert refusal is not None and refusal.category == "low_coverage"
    assert refusal.evidence.verdicts == {"contradicted": 2, "supported": 1}
    assert refusal.evidence.floor == Settings().verification.faithfulness_floor


def test_real_rendering_of_cells_the_scrape_glued_together_is_supported(corpus_dir) -> None:
    # EIM65920's table as scraped lists "Basic allowanceAttendance allowanceSpecial
    # responsibility allowance...": the rendered row names one of the glued cells ("special"
    # is nowhere else in the table)
    table = _scraped_table(corpus_dir, "EIM65920", "Type of payment", "EIM65920#c1.p0")
    assert "allowanceSpecial responsibility" in table.text
    claim = "Special responsibility allowance: these allowances are taxable as earnings from the office held by the recipient (see EIM00510 onwards)."
    verdict, reason = check_claim(claim, [table])
    assert verdict == "supported", reason
    # a cell the table does not list is not
    verdict, reason = check_claim(claim.replace("Special", "Mayoral"), [table])
    assert verdict == "partially_supported" and "mayor" in reason
    # the page as the parser gives it supports the same rendering
    assert _check_real(corpus_dir, claim, "EIM65920#c1.p0")[0] == "supported"
