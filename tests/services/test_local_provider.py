"""Pieces of the offline provider that need no index: table lookup, the lay-word lexicon."""

from __future__ import annotations

from services.providers.local import _lookup_rows
from services.stages.lexicon import expand, expansions

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


def test_lexicon_adds_the_manuals_words_once() -> None:
    assert "mobile telephone" in expansions("Work gave me an iPhone - is it a perk?")
    assert "benefit in kind" in expansions("Work gave me an iPhone - is it a perk?")
    assert expansions("What is the official rate of interest?") == []
    assert expand("my boss and my boss").count("employer") == 1
    # whole words only: 'toolbar' is not 'tools', 'mobiles' is a mobile
    assert "tools" not in expansions("the toolbar")
    assert "mobile telephone" in expansions("two mobiles")


def test_acronyms_the_manual_defines_and_their_synonyms() -> None:
    from services.stages.text import CorpusStats, defined_acronyms

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
        ["EIM1#c0.p4"],
        ["EIM1#c0.p4"],
        ["EIM1#c0.p5"],
        ["EIM1#c0.p6"],  # a finished sentence is not continued
    ]
    assert units[0].text == "SMP is not a social security benefit but replacement earnings charged to tax as employment income."
    assert [u.row for u in units[3:5]] == [0, 1]
