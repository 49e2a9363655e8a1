"""Parser and chunker on real pages (and on the odd HTML the three manuals contain)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest_worker.chunker import MAX_CHARS, build_chunks, chunk_embed_text, content_hash, embed_text
from ingest_worker.ingest import build_page
from ingest_worker.cleaning import clean_text
from ingest_worker.parser import parse_body
from tests.conftest import EIM


def page(corpus_dir: Path, section: str, manual: str = EIM) -> dict:
    return json.loads((corpus_dir / manual / f"{section.lower()}.json").read_text())


def chunks_of(corpus_dir: Path, section: str, manual: str = EIM):  # noqa: ANN201
    doc = page(corpus_dir, section, manual)
    titles = {"EIM31200": "Employees using own vehicles: contents"}
    build, parsed = build_page(doc, section, manual, "Employment Income Manual", titles, None)
    assert parsed
    return build


def test_eim31240_rate_table_stays_whole_with_its_heading(corpus_dir: Path) -> None:
    build = chunks_of(corpus_dir, "EIM31240")
    tables = [c for c in build.chunks if c.has_table and "45p" in c.text]
    assert len(tables) == 1
    chunk = tables[0]
    assert chunk.heading_path[-1] == "From 2011-12"
    assert chunk.heading_path[-2] == "Section 230(2) ITEPA 2003"
    table = next(p for p in chunk.paragraphs if p.kind == "table")
    rows = table.text.split("\n")
    assert rows[0] == "Kind of vehicle | Business miles | 2011-12 onwards"  # markdown ** stripped
    # the scrape lost the cells' line breaks ("First 10,000After that" | "45p25p"): one row per line
    assert "Car or van | First 10,000 | 45p" in rows and "Car or van | After that | 25p" in rows
    assert "Motor cycle | All | 24p" in rows and "Cycle | All | 20p" in rows
    # The heading is part of what gets embedded and BM25-indexed for that chunk.
    assert "From 2011-12" in chunk_embed_text(chunk, build.page)


def test_heading_path_and_stable_ids(corpus_dir: Path) -> None:
    build = chunks_of(corpus_dir, "EIM31240")
    first = build.chunks[0]
    assert first.id == "EIM31240#c0"
    assert first.heading_path[:3] == [
        "Employment Income Manual",
        "Employees using own vehicles: contents",
        "Employees using own vehicles for work: statutory mileage rates 2002/03 onwards: kinds of vehicle",
    ]
    assert [p.id for p in first.paragraphs] == ["EIM31240#c0.p0", "EIM31240#c0.p1"]
    assert first.paragraphs[1].text == "The statutory rates are:"
    assert build.page.chunk_ids == [c.id for c in build.chunks]
    assert [c.position for c in build.chunks] == list(range(len(build.chunks)))
    last = build.chunks[-1]
    assert last.heading_path[-1] == "Kinds of vehicle"
    assert [p.kind for p in last.paragraphs] == ["p", "li", "li", "li", "p", "p"]  # "cars and vans*   motor cycles" split
    # Same input, same ids and hashes: ids survive a re-ingest of an unchanged page.
    again = chunks_of(corpus_dir, "EIM31240")
    assert [(c.id, c.content_hash) for c in again.chunks] == [(c.id, c.content_hash) for c in build.chunks]


def test_page_metadata_is_kept(corpus_dir: Path) -> None:
    build = chunks_of(corpus_dir, "EIM01476")
    assert build.page.public_updated_at.isoformat() == "2014-09-08T00:00:00+00:00"
    assert build.page.breadcrumbs == ["EIM00500"]
    assert build.page.base_path == "/hmrc-internal-manuals/employment-income-manual/eim01476"
    assert any("£4 per week" in p.text for c in build.chunks for p in c.paragraphs)


def test_contents_page_with_empty_body_has_no_chunks(corpus_dir: Path) -> None:
    assert chunks_of(corpus_dir, "EIM31200").chunks == []


def test_long_sections_split_between_blocks_never_inside(corpus_dir: Path) -> None:
    build = chunks_of(corpus_dir, "EIM77010")  # a long page
    assert len(build.chunks) > 5
    for chunk in build.chunks:
        assert len(chunk.text) <= MAX_CHARS or len(chunk.paragraphs) == 1
    body_text = " ".join(" ".join(c.text.split()) for c in build.chunks)
    assert "Top of page" not in body_text


def test_headings_nest_and_reset() -> None:
    html = (
        "<p>intro</p><h2>A</h2><p>a</p><h3>A1</h3><p>a1</p><h4>A1x</h4><p>a1x</p>"
        "<h3>A2</h3><p>a2</p><h2>B</h2><h3>B1</h3><p>b1</p><h5>minor</h5><p>still b1</p>"
    )
    sections = parse_body(html)
    assert [s.headings for s in sections] == [[], ["A"], ["A", "A1"], ["A", "A1", "A1x"], ["A", "A2"], ["B", "B1"]]
    assert [b.kind for b in sections[-1].blocks] == ["p", "heading", "p"]  # h5 stays inside


def test_lists_nested_lists_blockquotes_and_loose_text() -> None:
    html = (
        "<ul><li>one <a href='/x'>link</a><ul><li>one.a</li></ul> tail</li><li>two</li></ul>"
        "<blockquote><p>quoted</p></blockquote><div>loose <strong>bold</strong> text<br>line two</div>"
        "<pre>code  block\n  kept</pre>"
    )
    blocks = parse_body(html)[0].blocks
    assert [(b.kind, b.text) for b in blocks] == [
        ("li", "one link tail"),
        ("li", "one.a"),
        ("li", "two"),
        ("p", "quoted"),
        ("p", "loose bold text line two"),
        ("pre", "code block\nkept"),
    ]
    assert blocks[0].hrefs == ["/x"] and blocks[1].hrefs == []


def test_markdown_leftovers_become_text_and_links() -> None:
    text, hrefs = clean_text("see **[EIM21740](/guidance/employment-income-manual/EIM21740)** now")
    assert text == "see EIM21740 now"
    assert hrefs == ["/guidance/employment-income-manual/EIM21740"]


def test_empty_and_whitespace_bodies() -> None:
    assert parse_body("") == []
    assert parse_body("  \n ") == []
    assert parse_body("<h2>Only a heading</h2>") == []


@pytest.mark.parametrize(("manual", "section"), [("business-income-manual", "BIM00510"), ("self-assessment-manual", "SAM001")])
def test_other_manuals_parse(corpus_dir: Path, manual: str, section: str) -> None:
    doc = page(corpus_dir, section, manual)
    build, _ = build_page(doc, section, manual, manual, {}, None)
    assert build.chunks and all(c.manual == manual for c in build.chunks)


def test_content_hash_follows_the_embedded_text() -> None:
    assert content_hash(embed_text("T", ["h"], "body")) != content_hash(embed_text("T", ["other"], "body"))
    chunks, _ = build_chunks("EIM1", EIM, ["M", "T"], "T", parse_body("<h2>h</h2><p>body</p>"))
    assert chunks[0].content_hash == content_hash(embed_text("T", ["h"], "body"))


# ---- repairs of the 2014 scrape, each on the real page that shows it ----


def blocks_of(corpus_dir: Path, section: str) -> list:  # noqa: ANN201
    return [b for s in parse_body(page(corpus_dir, section)["details"]["body"]) for b in s.blocks]


def test_markdown_bullets_inside_a_list_item_become_items(corpus_dir: Path) -> None:
    # EIM31240: "<li>cars and vans*   motor cycles</li>"
    texts = [(b.kind, b.text) for b in blocks_of(corpus_dir, "EIM31240")]
    assert ("li", "cars and vans") in texts and ("li", "motor cycles") in texts
    assert not any("*" in t for _, t in texts)


def test_a_bullet_item_wrapped_over_two_paragraphs_stays_whole(corpus_dir: Path) -> None:
    # EIM20202: "<p>hours ... are worked and\n*   at least three-quarters of those hours for</p><p>the companies as a whole.</p>"
    texts = [b.text for b in blocks_of(corpus_dir, "EIM20202")]
    assert "at least three-quarters of those hours for the companies as a whole." in texts
    assert any(t.endswith("for that company are worked and") for t in texts)


def test_glued_reference_gets_its_space_and_link_stays_with_its_item(corpus_dir: Path) -> None:
    # EIM13500: "... before the threshold is applied*   payments ... circumstances (seeEIM13530)."
    items = [b for b in blocks_of(corpus_dir, "EIM13500") if b.kind == "li"]
    item = next(b for b in items if "aggregated" in b.text)
    assert item.text == "payments and benefits must be aggregated in some circumstances (see EIM13530)."
    first = next(b for b in items if "provision of assets" in b.text)
    assert any(h.endswith("eim13020") for h in first.hrefs) and not any(h.endswith("eim13020") for h in item.hrefs)


def test_a_bullet_after_a_colon_starts_an_item(corpus_dir: Path) -> None:
    # EIM32575: "... applies to the employees of concerns such as: * trades"
    texts = [(b.kind, b.text) for b in blocks_of(corpus_dir, "EIM32575")]
    assert ("li", "trades") in texts or any(k == "li" and t.startswith("trades") for k, t in texts)
    assert not any("* " in t for _, t in texts)


def test_a_page_whose_title_is_table_cells_is_titled_by_its_opening_words(corpus_dir: Path) -> None:
    build = chunks_of(corpus_dir, "EIM13505")  # the £30,000 threshold page, titled "</td> <td> &#xA3;2,536" in the scrape
    assert build.page.title == "Section 403(1) ITEPA 2003 states that a payment or benefit…"
    assert chunks_of(corpus_dir, "EIM70400").page.title == "Redundancies"
    # EIM24700 opens with a heading naming its statute: the title is its first paragraph's words
    assert chunks_of(corpus_dir, "EIM24700").page.title == "This page relates to step 5 of the method statement\u2026"


def test_ingested_page_title_is_clean(corpus_dir: Path) -> None:
    section = next(
        f.stem.upper() for f in sorted((corpus_dir / EIM).glob("eim*.json")) if "&#x2019;" in json.loads(f.read_text()).get("title", "")
    )
    assert "&#x" not in chunks_of(corpus_dir, section).page.title


def test_a_heading_that_heads_nothing_leads_the_next_sections_text(corpus_dir: Path) -> None:
    # EIM21668 opens with two h2s: the withdrawal notice, then the statutory instrument's
    # number over the text; the notice was lost with its empty section
    sections = parse_body(page(corpus_dir, "EIM21668")["details"]["body"])
    assert sections[0].headings == ["S.I.2002 No. 205"]
    assert sections[0].blocks[0].text == "THIS RELIEF WAS WITHDRAWN FROM 6 APRIL 2013"
    assert sections[0].blocks[1].text.startswith("Some employers designate")
    build = chunks_of(corpus_dir, "EIM21668")
    assert build.chunks[0].paragraphs[0].text == "THIS RELIEF WAS WITHDRAWN FROM 6 APRIL 2013"


def test_headings_heading_nothing_are_kept_in_order_and_sub_headings_still_nest() -> None:
    html = (
        "<h2>A</h2><h2>B <a href='/eim1'>EIM1</a></h2><h2>C</h2><p>c</p>"  # A and B head nothing
        "<h2>D</h2><h3>D1</h3><p>d1</p>"  # D heads D1: a trail, as before
        "<h3>E</h3><h2>F</h2><p>f</p>"  # E heads nothing: a line under F
    )
    sections = parse_body(html)
    assert [s.headings for s in sections] == [["C"], ["D", "D1"], ["F"]]
    assert [b.text for b in sections[0].blocks] == ["A", "B EIM1", "c"]
    assert sections[0].blocks[1].hrefs == ["/eim1"]  # the heading's link goes with its line
    assert [b.text for b in sections[2].blocks] == ["E", "f"]
