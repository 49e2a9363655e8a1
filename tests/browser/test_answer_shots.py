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
