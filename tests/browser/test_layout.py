"""The first screen's layout and a table source: at desktop width the header is one row, the
old-figures banner one line and the sources list beside the answer (covered by a source when
one opens); on a phone the sources follow the answer. A table paragraph opens as a table, its
quoted rows marked and nothing else."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Visit, api_result, ask, last_turn
from tests.browser.test_page import eval_question

pytestmark = pytest.mark.browser

MILEAGE = "D01"  # approved mileage rates: a sentence of its answer renders rows of EIM31240's rate table


def test_at_desktop_width_the_sources_list_is_beside_the_answer_under_a_compact_header(visit: Visit) -> None:
    page = visit.page
    ask(visit, eval_question(MILEAGE).question)
    turn = last_turn(page)
    header = page.locator(".site-header").bounding_box()
    assert header["height"] < 80, header  # the name and the tagline on one row
    banner = turn.locator(".answer .as-of.is-old")
    line = float(banner.evaluate("(n) => parseFloat(getComputedStyle(n).lineHeight)"))
    assert banner.bounding_box()["height"] < 2 * line, banner.bounding_box()  # one line
    expect(banner).to_contain_text("Old figures")
    sentences, sources = (turn.locator(s) for s in (".answer > ol.sentences", ".answer > .sources"))
    expect(sources.locator(".source-list > li").first).to_be_visible()
    first, beside, heading = sentences.bounding_box(), sources.bounding_box(), turn.locator(".answer-heading").bounding_box()
    assert beside["x"] >= first["x"] + first["width"], (first, beside)  # to the right, not below
    assert abs(beside["y"] - heading["y"]) < 40, (heading, beside)  # level with the answer's heading
    # From the top of the page, the first screen shows the whole first sentence and the sources.
    page.evaluate("window.scrollTo(0, 0)")
    expect(turn.locator(".answer > ol.sentences > .sentence").first).to_be_in_viewport(ratio=1)
    expect(sources.locator("h4")).to_be_in_viewport()
    visit.shot("layout-desktop-first-screen", full_page=False)
    # A source opened covers the right column; closed, the list is back.
    turn.locator(".sentence").first.locator("button.fn").first.click()
    panel = page.locator("#source-panel")
    expect(panel).to_be_visible()
    assert panel.bounding_box()["x"] >= first["x"] + first["width"] - 1, panel.bounding_box()
    panel.locator("#source-close").click()
    expect(panel).to_be_hidden()


def test_on_a_phone_the_sources_follow_the_answer(phone_visit: Visit) -> None:
    ask(phone_visit, eval_question(MILEAGE).question)
    turn = last_turn(phone_visit.page)
    detail, sources = (turn.locator(s).bounding_box() for s in (".answer-detail", ".answer > .sources"))
    assert sources["y"] >= detail["y"] + detail["height"], (detail, sources)
    assert abs(sources["x"] - detail["x"]) < 2, (detail, sources)


def test_a_table_paragraph_opens_as_a_table_with_the_quoted_rows_marked(visit: Visit) -> None:
    page = visit.page
    question = eval_question(MILEAGE).question
    expected = api_result(visit.base_url, question)
    tables = {c["paragraph_id"]: c for c in expected["citations"] if c["kind"] == "table"}
    first = next(s for s in expected["answer"]["sentences"] if s["citations"] and s["citations"][0] in tables)
    citation = tables[first["citations"][0]]
    assert citation["header_rows"] == 1 and all(c["header_rows"] == 0 for c in expected["citations"] if c["kind"] != "table"), citation
    rows = [[cell.strip() for cell in line.split("|")] for line in citation["text"].splitlines() if line.strip()]
    ask(visit, question)
    turn = last_turn(page)
    if first["role"] == "detail":
        turn.locator(".answer-detail > summary").click()
    turn.locator(f'button.fn[data-paragraph="{citation["paragraph_id"]}"]').first.click()
    table = page.locator("#source-text table")
    expect(table).to_have_count(1)
    shown = lambda cells: [" ".join(t.split()) for t in cells.all_inner_texts()]  # noqa: E731  (as rendered: the hidden separators left out)
    assert shown(table.locator("thead th")) == rows[0]
    expect(table.locator("tbody tr")).to_have_count(len(rows) - 1)
    for row, cells in zip(table.locator("tbody tr").all(), rows[1:], strict=True):
        assert shown(row.locator("td")) == cells
    # The rows the sentence renders are marked, cell by cell; no other row, no header.
    claim = " ".join(first["text"].lower().split())
    quoted = table.locator("tbody tr.is-quoted")
    expect(quoted).not_to_have_count(0)
    assert quoted.count() < len(rows) - 1, "every row is marked"
    for row in quoted.all():
        for cell in shown(row.locator("td")):
            assert cell.lower() in claim, (cell, claim)
    expect(table.locator("thead mark")).to_have_count(0)
    expect(table.locator("tbody tr:not(.is-quoted) mark")).to_have_count(0)
    expect(page.locator("#source-claim-label")).to_contain_text("Rows the sentence quotes")
    # Still the paragraph's own text (the separators stay, hidden).
    assert page.locator("#source-text").text_content() == citation["text"]
    visit.shot("layout-table-source", full_page=False)
