"""Three answers on the ingested slice, at desktop and phone width, read as a reader sees them
(taxnav.browser.read_card): the short answer first, each of its sentences cited and checked, its
date, the detail collapsed, nothing wider than the screen; screenshots under
test-artifacts/browser/ (answer-<id>-<width>.png)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from taxnav.browser import AnswerCard, read_card
from tests.browser.conftest import Visit, api_result, ask, last_turn
from tests.browser.test_page import eval_question

pytestmark = pytest.mark.browser

# answerable from the slice: mileage rates (a table), passenger payments, homeworking
SHOWN = ("D01", "D03", "D21")


def _check_and_shoot(visit: Visit, qid: str, width: str) -> AnswerCard:
    question = eval_question(qid).question
    expected = api_result(visit.base_url, question)
    assert expected["status"] == "answered", expected.get("refusal")
    ask(visit, question)
    turn = last_turn(visit.page)
    expect(turn.locator(".answer > ol.sentences > .sentence").first).to_be_in_viewport()
    card = read_card(turn)
    sentences = expected["answer"]["sentences"]
    answer = [s for s in sentences if s["role"] == "answer"]
    assert card.outcome == "answered" and card.answer_sentences == len(answer), card
    assert card.cited_and_checked == card.answer_sentences and card.answer_before_detail, card
    assert card.as_of, card
    assert card.detail_sentences == len(sentences) - len(answer), card
    if card.detail_sentences:
        assert not card.detail_open and card.detail_shown == 0, card
    assert card.overflow_px <= 0, f"{qid} at {width}: {card.overflow_px}px of sideways scroll"
    visit.shot(f"answer-{qid}-{width}")
    return card


@pytest.mark.parametrize("qid", SHOWN)
def test_answer_at_desktop_width(visit: Visit, qid: str) -> None:
    _check_and_shoot(visit, qid, "desktop")


@pytest.mark.parametrize("qid", SHOWN)
def test_answer_at_phone_width(phone_visit: Visit, qid: str) -> None:
    _check_and_shoot(phone_visit, qid, "phone")


def test_at_phone_width_the_answer_lands_on_screen_dated_with_its_detail_closed(phone_visit: Visit) -> None:
    """What a phone reader is left looking at once the answer lands, without scrolling: its first
    sentence whole on screen, the date flagged as old (the slice's pages are from 2014), the
    detail closed, nothing wider than the screen, the question boxes as wide as the form."""
    page = phone_visit.page
    question = eval_question("D01").question
    ask(phone_visit, question)
    turn = last_turn(page)
    card = read_card(turn)
    assert card.first_sentence_on_screen and page.evaluate("window.scrollY") > 0, card
    # focus left the question box (a phone's keyboard would cover the answer) for the question asked
    expect(turn.locator(".turn-question")).to_be_focused()
    assert card.as_of and card.as_of_old, card
    flag = turn.locator(".as-of .old-flag")
    expect(flag).to_be_visible()
    expect(flag).to_have_text("⚠ Old figures: ")
    assert card.detail_sentences and not card.detail_open and card.detail_shown == 0, card
    assert card.overflow_px <= 0 and card.smallest_text_px >= 12, card
    for box, form in (("#question", "#ask-form"), ("#followup", "#followup-form")):
        box_width, form_width = (page.locator(s).bounding_box()["width"] for s in (box, form))
        assert box_width >= form_width - 1, (box, box_width, form_width)
    phone_visit.shot("answer-D01-phone-screen", full_page=False)
    # opened, the detail shows and still fits the screen's width
    turn.locator(".answer-detail > summary").click()
    opened = read_card(turn)
    assert opened.detail_open and opened.detail_shown == opened.detail_sentences and opened.overflow_px <= 0, opened


def test_at_desktop_width_a_page_already_showing_the_answer_is_not_scrolled(visit: Visit) -> None:
    ask(visit, eval_question("D01").question)
    card = read_card(last_turn(visit.page))
    assert card.first_sentence_on_screen and visit.page.evaluate("window.scrollY") == 0, card
    expect(visit.page.locator("#question")).to_be_focused()  # nothing moved: the box keeps the focus
