"""The answer, its date, and after it "More from the manual": the local provider's detail
sentences (role "detail") on the ingested slice, collapsed until opened, checked against what
the API returns for the same question."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Visit, api_result, ask, last_turn
from tests.browser.test_page import eval_question

pytestmark = pytest.mark.browser

WITH_DETAIL = "D01"  # approved mileage rates: the answer, then more from the pages it cites
# (an answer without detail, from the mistral provider: tests/browser/test_verdicts.py)


def footnote_numbers(sentences: list[dict]) -> list[list[int]]:
    """Each sentence's footnote numbers, a paragraph numbered at its first citation."""
    numbers: dict[str, int] = {}
    return [[numbers.setdefault(pid, len(numbers) + 1) for pid in s["citations"]] for s in sentences]


def test_detail_sentences_follow_the_answer_under_their_own_heading(visit: Visit) -> None:
    question = eval_question(WITH_DETAIL).question
    expected = api_result(visit.base_url, question)
    assert expected["status"] == "answered", expected.get("refusal")
    sentences = expected["answer"]["sentences"]
    roles = [s["role"] for s in sentences]
    answer = [s for s in sentences if s["role"] == "answer"]
    details = [s for s in sentences if s["role"] == "detail"]
    assert answer and details and roles == ["answer"] * len(answer) + ["detail"] * len(details), roles
    numbers = footnote_numbers(answer + details)
    answer_count = len({pid for s in answer for pid in s["citations"]})
    # A detail sentence cites a paragraph the answer does not: its footnote numbers on.
    first_new = next(n for ns in numbers[len(answer) :] for n in ns if n > answer_count)
    assert first_new == answer_count + 1, numbers
    ask(visit, question)

    turn = last_turn(visit.page)
    # Each row's text is the sentence then its footnote numbers.
    shown = [" ".join([s["text"], *map(str, ns)]) for s, ns in zip(answer + details, numbers)]
    expect(turn.locator(".answer > ol.sentences > .sentence .sentence-text")).to_have_text(shown[: len(answer)])
    section = turn.locator(".answer > details.answer-detail")
    expect(section).to_have_count(1)
    summary = section.locator("summary")
    expect(summary).to_have_text(f"More from the manual ({len(details)} sentence{'' if len(details) == 1 else 's'})")
    # Collapsed: the detail sentences are in the page but not shown until the summary is opened.
    rows = section.locator("ol.sentences > .sentence")
    expect(section).not_to_have_attribute("open", "")
    expect(rows.first).to_be_hidden()
    summary.click()
    expect(section).to_have_attribute("open", "")
    expect(rows.first).to_be_visible()
    expect(rows.locator(".sentence-text")).to_have_text(shown[len(answer) :])
    for row, sentence in zip(rows.all(), details):
        for marker, pid in zip(row.locator("button.fn").all(), sentence["citations"], strict=True):
            expect(marker).to_have_attribute("data-paragraph", pid)
    # The detail comes after the answer's list; at this width the sources list is beside them
    # (on a phone, under them: tests/browser/test_layout.py).
    answer_list, detail_box, sources = (turn.locator(s).bounding_box() for s in (".answer > ol.sentences", ".answer-detail", ".answer .sources"))
    assert answer_list["y"] + answer_list["height"] <= detail_box["y"], (answer_list, detail_box)
    assert sources["x"] >= detail_box["x"] + detail_box["width"], (detail_box, sources)

    # The first newly cited paragraph's footnote opens it under its continued number.
    pid = next(p for s, ns in zip(details, numbers[len(answer) :]) for p, n in zip(s["citations"], ns) if n == first_new)
    marker = section.locator(f'button.fn[data-paragraph="{pid}"]').first
    expect(marker).to_have_text(str(first_new))
    marker.click()
    expect(visit.page.locator("#source-number")).to_have_text(f"[{first_new}]")
    citation = next(c for c in expected["citations"] if c["paragraph_id"] == pid)
    assert visit.page.locator("#source-text").text_content() == citation["text"]
    visit.page.keyboard.press("Escape")
    visit.shot("13-answer-detail")
    # and it closes again from the keyboard
    summary.focus()
    visit.page.keyboard.press("Enter")
    expect(section).not_to_have_attribute("open", "")
    expect(rows.first).to_be_hidden()


def test_the_answer_shows_how_old_its_figures_are(visit: Visit) -> None:
    question = eval_question(WITH_DETAIL).question
    expected = api_result(visit.base_url, question)
    as_of = expected["answer"]["as_of"]
    # the API's as_of is the newest date of the pages cited (the slice's pages are from 2014)
    assert as_of == max(c["public_updated_at"] for c in expected["citations"]), as_of
    ask(visit, question)
    shown = last_turn(visit.page).locator(".answer > .answer-head > .as-of")
    expect(shown).to_have_count(1)
    expect(shown.locator("time")).to_have_attribute("datetime", as_of)
    day = datetime.fromisoformat(as_of)
    expect(shown.locator("time")).to_have_text(f"{day.day} {day:%B %Y}")
    # long past: the page says so beside the date
    expect(shown).to_have_class("as-of is-old")
    expect(shown).to_contain_text(re.compile(r"Old figures: as of .*, \d+ years ago"))
    # beside the answer's heading, above its first sentence
    head, first = (last_turn(visit.page).locator(s).first.bounding_box() for s in (".answer-heading", ".answer > ol.sentences"))
    date_box = shown.bounding_box()
    assert date_box["y"] < first["y"] and abs(date_box["y"] - head["y"]) < 40, (head, date_box, first)


def test_the_count_of_supported_sentences_follows_the_answer_and_counts_the_detail_apart(visit: Visit) -> None:
    question = eval_question(WITH_DETAIL).question
    expected = api_result(visit.base_url, question)
    sentences = expected["answer"]["sentences"]
    answer = [s for s in sentences if s["role"] == "answer"]
    details = [s for s in sentences if s["role"] == "detail"]
    supported = lambda part: sum(s["verdict"] == "supported" for s in part)  # noqa: E731
    ask(visit, question)
    turn = last_turn(visit.page)
    line = turn.locator(".answer > .faithfulness")
    expect(line).to_have_text(
        f"{supported(answer)} of {len(answer)} sentences fully supported by their sources; "
        f"{supported(details)} of {len(details)} in the detail below "
        f"(faithfulness {round(expected['answer']['faithfulness'] * 100)}% over all {len(sentences)})."
    )
    # after the answer's sentences, before the detail
    answer_list, count, detail = (turn.locator(s).bounding_box() for s in (".answer > ol.sentences", ".answer > .faithfulness", ".answer-detail"))
    assert answer_list["y"] + answer_list["height"] <= count["y"] < detail["y"], (answer_list, count, detail)


def test_sources_list_their_markers_in_one_column_and_the_page_names_aligned(visit: Visit) -> None:
    question = eval_question(WITH_DETAIL).question
    expected = api_result(visit.base_url, question)
    ask(visit, question)
    rows = last_turn(visit.page).locator(".sources .source-list > li")
    section_of = {c["paragraph_id"]: c["section_id"] for c in expected["citations"]}
    pages = list(dict.fromkeys(section_of[pid] for s in expected["answer"]["sentences"] for pid in s["citations"]))  # first cited first
    expect(rows).to_have_count(len(pages))
    assert len(pages) >= 2, pages
    names = [row.locator(":scope > :last-child").bounding_box() for row in rows.all()]
    markers = [row.locator(".source-markers").bounding_box() for row in rows.all()]
    assert len({round(n["x"]) for n in names}) == 1, names  # every name starts at the same place
    assert all(m["x"] + m["width"] <= n["x"] for m, n in zip(markers, names)), (markers, names)
    for row, section in zip(rows.all(), pages):
        expect(row.locator(":scope > :last-child")).to_contain_text(f"{section}: ")


def test_verdict_reasons_name_footnotes_not_paragraph_ids(visit: Visit) -> None:
    question = eval_question(WITH_DETAIL).question
    expected = api_result(visit.base_url, question)
    sentences = expected["answer"]["sentences"]
    numbers = {pid: n for ns, s in zip(footnote_numbers(sentences), sentences) for pid, n in zip(s["citations"], ns)}
    reasoned = [s for s in sentences if s["reason"]]
    naming = [s for s in reasoned if any(pid in s["reason"] for pid in numbers)]
    assert naming and any(s["reason"] == "quoted" for s in reasoned), [s["reason"] for s in sentences]
    ask(visit, question)
    turn = last_turn(visit.page)
    turn.locator(".answer-detail > summary").click()
    shown = turn.locator(".sentence .reason").all_text_contents()
    assert len(shown) == len(reasoned)
    for text, sentence in zip(shown, reasoned):
        if sentence["reason"] == "quoted":
            assert text == "quoted word for word from its source", text
            continue
        want = sentence["reason"]
        for pid, n in numbers.items():
            want = want.replace(pid, f"source [{n}]")
        assert text == want and "#c" not in text, (text, sentence["reason"])
