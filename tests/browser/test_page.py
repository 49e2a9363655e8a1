"""The navigator page in a real browser against the real gateway on the ingested slice.

Each test drives the page as a person would (typing, Enter, clicking, the keyboard) and
checks what it shows against what the API returns for the same question. Screenshots of
each state go to test-artifacts/browser/.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from playwright.sync_api import expect

from taxnav.evaluation.cli import DEFAULT_QUESTIONS
from taxnav.evaluation.questions import EvalQuestion, load_questions
from tests.browser.conftest import Visit, api_result, ask, last_turn

pytestmark = pytest.mark.browser

# The page's wording for each verdict (gateway/static/app.js VERDICTS).
VERDICT_LABELS = {
    "supported": "Supported",
    "partially_supported": "Partly supported",
    "unsupported": "Not supported",
    "contradicted": "Contradicted",
}


def eval_question(qid: str) -> EvalQuestion:
    return next(q for q in load_questions(DEFAULT_QUESTIONS) if q.id == qid)


@pytest.fixture(scope="module")
def mileage_question(gateway_url: str) -> EvalQuestion:
    """D01 (approved mileage rates): answerable from the slice, its gold page is in it."""
    question = eval_question("D01")
    missing = [s for s in question.gold_sections if httpx.get(f"{gateway_url}/v1/pages/{s}", timeout=30).status_code != 200]
    assert not missing, f"the test slice lacks D01's gold pages {missing}"
    return question


def test_answer_shows_each_sentence_with_its_verdict_and_footnotes(visit: Visit, mileage_question: EvalQuestion) -> None:
    page = visit.page
    expected = api_result(visit.base_url, mileage_question.question)
    assert expected["status"] == "answered", expected.get("refusal")
    ask(visit, mileage_question.question)

    # The stages lit up from the event stream, before the answer appeared.
    log = page.evaluate("window.__uiLog")
    lit_before = log[: log.index("result")]
    assert len([e for e in lit_before if e != "stage:Question received"]) == len(expected["trace"])
    assert any(url.endswith("/events") for url in visit.requests)
    turn = last_turn(page)
    turn.locator(".progress summary").click()  # open the (collapsed) stage list for the screenshot
    expect(turn.locator(".stage.is-done")).to_have_count(len(expected["trace"]) + 1)
    for stage_meta in turn.locator(".stage.is-done .stage-meta").all()[1:]:
        expect(stage_meta).to_contain_text(" ms")
    visit.shot("01-answer-with-stages")

    sentences = turn.locator(".sentence")
    expect(sentences).to_have_count(len(expected["answer"]["sentences"]))
    numbers: dict[str, int] = {}
    for row, sentence in zip(sentences.all(), expected["answer"]["sentences"]):
        expect(row.locator(".sentence-text")).to_contain_text(sentence["text"])
        expect(row).to_have_class(re.compile(rf"\bverdict-{sentence['verdict']}\b"))
        expect(row.locator(".verdict-badge")).to_have_text(re.compile(rf"{VERDICT_LABELS[sentence['verdict']]}$"))
        markers = row.locator("button.fn")
        expect(markers).to_have_count(len(sentence["citations"]))
        for marker, pid in zip(markers.all(), sentence["citations"]):
            numbers.setdefault(pid, len(numbers) + 1)
            expect(marker).to_have_text(str(numbers[pid]))
            expect(marker).to_have_attribute("data-paragraph", pid)
    faithfulness = round(expected["answer"]["faithfulness"] * 100)
    expect(turn.locator(".faithfulness")).to_contain_text(f"faithfulness {faithfulness}%")
    expect(page.locator("#followup")).to_be_visible()


def test_footnote_opens_the_cited_paragraph_beside_the_answer(visit: Visit, mileage_question: EvalQuestion) -> None:
    page = visit.page
    expected = api_result(visit.base_url, mileage_question.question)
    citations = {c["paragraph_id"]: c for c in expected["citations"]}
    ask(visit, mileage_question.question)

    first = expected["answer"]["sentences"][0]
    marker = last_turn(page).locator(".sentence").first.locator("button.fn").first
    marker.click()
    panel = page.locator("#source-panel")
    expect(panel).to_be_visible()
    expect(panel).to_be_focused()
    citation = citations[first["citations"][0]]
    expect(page.locator("#source-title")).to_have_text(f"{citation['section_id']}: {citation['title']}")
    expect(page.locator("#source-path li")).to_have_text(citation["heading_path"])
    # The paragraph's own text (highlighting wraps words, never changes them).
    assert page.locator("#source-text").text_content() == citation["text"]
    link = page.locator("#source-link")
    expect(link).to_have_attribute("href", citation["url"])
    assert citation["url"].startswith("https://www.gov.uk/")
    expect(link).to_contain_text(citation["section_id"])
    # The claim's words are highlighted, and only words of the claim.
    marks = page.locator("#source-text mark").all_text_contents()
    assert marks, "nothing of the claim is highlighted in its cited paragraph"
    claim = " ".join(first["text"].lower().split())
    for mark in marks:
        assert " ".join(mark.lower().split()).rstrip("s") in claim, mark
    # Last-updated date, flagged when older than two years.
    updated = datetime.fromisoformat(citation["public_updated_at"])
    old = datetime.now(timezone.utc) - updated > timedelta(days=2 * 365)
    date_line = page.locator("#source-updated")
    expect(date_line).to_contain_text(f"{updated.day} {updated:%B %Y}")
    if old:
        expect(date_line).to_have_class(re.compile(r"\bis-old\b"))
        expect(date_line).to_contain_text("Old page")
    else:
        expect(date_line).not_to_have_class(re.compile(r"\bis-old\b"))
    # Beside the answer on a wide screen: to its right, not below it.
    answer_box = last_turn(page).locator(".answer > ol.sentences").bounding_box()
    panel_box = panel.bounding_box()
    assert panel_box["x"] >= answer_box["x"] + answer_box["width"], (answer_box, panel_box)
    visit.shot("02-source-panel")

    # Escape closes it and gives focus back to the footnote.
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(marker).to_be_focused()


def test_footnotes_work_from_the_keyboard(visit: Visit, mileage_question: EvalQuestion) -> None:
    page = visit.page
    expected = api_result(visit.base_url, mileage_question.question)
    ask(visit, mileage_question.question)
    pids = [pid for s in expected["answer"]["sentences"] for pid in s["citations"]]
    # Tab from the question box reaches the first footnote (nothing focusable is skipped).
    page.focus("#question")
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.locator("button.fn:focus").count():
            break
    expect(page.locator("button.fn:focus")).to_have_attribute("data-paragraph", pids[0])
    marker = page.locator("button.fn").first
    page.keyboard.press("Enter")
    expect(page.locator("#source-panel")).to_be_visible()
    expect(marker).to_have_attribute("aria-expanded", "true")
    expected_title = next(c["title"] for c in expected["citations"] if c["paragraph_id"] == pids[0])
    expect(page.locator("#source-title")).to_contain_text(expected_title)
    page.keyboard.press("Tab")  # focus is in the panel: its close button comes next
    expect(page.locator("#source-close")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#source-panel")).to_be_hidden()


# The eval set's refusals the slice reaches for real, and each card's own heading.
REFUSAL_CARDS = {
    "D41": ("out_of_scope", "Outside what this navigator covers"),  # VAT registration threshold
    "D45": ("malformed", "That could not be read as a question"),  # keyboard mash
    "D48": ("low_coverage", "The manual does not cover this well enough"),  # the OpRA rules (from 2017, after the manual)
    "D49": ("stale", "The manual may be out of date for this"),  # van benefit for 2025-26
}


@pytest.mark.parametrize("qid", sorted(REFUSAL_CARDS))
def test_refusal_shows_the_card_for_its_category(visit: Visit, qid: str) -> None:
    question = eval_question(qid)
    category, heading = REFUSAL_CARDS[qid]
    assert question.refusal == category
    expected = api_result(visit.base_url, question.question)
    assert expected["status"] == "refused" and expected["refusal"]["category"] == category, expected["refusal"]
    ask(visit, question.question)

    turn = last_turn(visit.page)
    card = turn.locator(".refusal")
    expect(card).to_have_count(1)
    expect(card).to_have_attribute("data-category", category)
    expect(card.locator("h3")).to_have_text(re.compile(heading))
    expect(card.locator(".card-message")).to_have_text(f"Why: {expected['refusal']['message']}")
    expect(turn.locator(".sentence")).to_have_count(0)
    if category in ("out_of_scope", "malformed"):
        # The scope guard refused before retrieval: no pipeline stage ran.
        expect(turn.locator(".stage.is-skipped")).to_have_count(turn.locator(".stage").count() - 1)
        expect(turn.locator(".progress summary")).to_have_text(re.compile("refused before searching"))
    if category == "stale":
        evidence = expected["refusal"]["evidence"]
        latest = datetime.fromisoformat(evidence["latest_update"])
        expect(card).to_contain_text(evidence["asked_for"])
        expect(card).to_contain_text(f"{latest.day} {latest:%B %Y}")
        rows = card.locator(".evidence-table tbody tr")
        expect(rows).to_have_count(len(evidence["pages"]))
        for row, page in zip(rows.all(), evidence["pages"]):
            expect(row.locator("a")).to_have_attribute("href", page["url"])
    visit.shot(f"03-refusal-{category}")


def test_empty_question_gets_a_clear_message_and_is_not_sent(visit: Visit) -> None:
    page = visit.page
    for blank in ("", "   \n  "):
        page.fill("#question", blank)
        page.click("#ask-form button[type=submit]")
        error = page.locator("#question-error")
        expect(error).to_be_visible()
        expect(error).to_have_text("Type a question first: the box is empty.")
        expect(page.locator("#question")).to_have_attribute("aria-invalid", "true")
        expect(page.locator("#question")).to_be_focused()
    assert visit.api_posts() == []
    expect(page.locator("#thread > .turn")).to_have_count(0)
    visit.shot("04-empty-question")
    # Typing clears the message.
    page.type("#question", "x")
    expect(page.locator("#question-error")).to_be_hidden()


def test_follow_up_box_sends_the_next_question(visit: Visit, mileage_question: EvalQuestion) -> None:
    page = visit.page
    ask(visit, mileage_question.question)
    gibberish = eval_question("D45")  # malformed: the server's refusal card this time
    ask(visit, gibberish.question, box="#followup")

    turns = page.locator("#thread > .turn")
    expect(turns).to_have_count(2)
    expect(turns.first.locator(".answer")).to_be_visible()  # the first answer stays
    expect(turns.last.locator(".turn-question")).to_contain_text(gibberish.question)
    expect(turns.last.locator(".refusal")).to_have_attribute("data-category", "malformed")
    expect(page.locator("#followup")).to_have_value("")
    assert len(visit.api_posts()) == 2
    visit.shot("05-follow-up-malformed")


def test_api_error_is_shown_with_its_message(visit: Visit) -> None:
    # Over the gateway's body limit: a 413 with a typed message, shown as it came.
    question = "Is my company car taxable? " * 700
    response = httpx.post(f"{visit.base_url}/v1/questions", json={"question": question.strip(), "wait": False}, timeout=30)
    assert response.status_code == 413
    ask(visit, question)
    card = last_turn(visit.page).locator(".card-error")
    expect(card).to_have_attribute("role", "alert")
    expect(card.locator(".error-message")).to_have_text(response.json()["error"]["message"])
    # The echo of a long paste is cut short; the box keeps it whole to edit.
    expect(last_turn(visit.page).locator(".turn-question")).to_contain_text(f"({len(question.strip()):,} characters in all)")
    expect(visit.page.locator("#question")).to_have_value(question)
    visit.shot("06-api-error")


def test_a_dropped_event_stream_falls_back_to_asking_for_the_result(visit: Visit, mileage_question: EvalQuestion) -> None:
    expected = api_result(visit.base_url, mileage_question.question)
    visit.page.route("**/v1/questions/*/events", lambda route: route.abort())  # the stream breaks
    ask(visit, mileage_question.question)
    rows = last_turn(visit.page).locator(".sentence .sentence-text")
    expect(rows).to_have_count(len(expected["answer"]["sentences"]))
    for row, sentence in zip(rows.all(), expected["answer"]["sentences"]):
        expect(row).to_contain_text(sentence["text"])
    assert any(re.search(r"/v1/questions/[\w-]+$", url) for url in visit.requests), "the page never polled for the result"


def test_an_unreachable_service_is_a_clear_message(visit: Visit) -> None:
    visit.page.route("**/questions", lambda route: route.abort("connectionrefused"))
    ask(visit, "Is a company car taxable?")
    card = last_turn(visit.page).locator(".card-error")
    expect(card).to_have_attribute("role", "alert")
    expect(card).to_contain_text("Could not reach the navigator service")
    expect(visit.page.locator("#followup")).to_be_visible()  # the person can simply try again


def test_text_from_the_api_is_never_parsed_as_html(visit: Visit) -> None:
    question = 'Is a <img src=x onerror="alert(1)"> <b>company car</b> taxable?'
    ask(visit, question)
    turn = last_turn(visit.page)
    expect(turn.locator(".turn-question")).to_have_text(f"Question: {question}")
    expect(visit.page.locator("#thread img, #thread .turn-question b")).to_have_count(0)


def test_verdicts_differ_by_more_than_colour(visit: Visit) -> None:
    badges = visit.page.locator(".legend .verdict-badge")
    expect(badges).to_have_count(len(VERDICT_LABELS))
    looks = [
        (badge.locator(".verdict-icon").text_content(), badge.evaluate("b => getComputedStyle(b).borderTopStyle"), badge.text_content())
        for badge in badges.all()
    ]
    for part in range(3):  # icon, border style and words each tell every verdict apart
        assert len({look[part] for look in looks}) == len(looks), looks


def test_phone_width_reads_without_sideways_scrolling(phone_visit: Visit, mileage_question: EvalQuestion) -> None:
    page = phone_visit.page
    ask(phone_visit, mileage_question.question)
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    phone_visit.shot("07-phone-answer")
    page.locator("button.fn").first.click()
    panel = page.locator("#source-panel")
    expect(panel).to_be_in_viewport()
    expect(page.locator("#source-close")).to_be_in_viewport()
    phone_visit.shot("08-phone-source", full_page=False)
