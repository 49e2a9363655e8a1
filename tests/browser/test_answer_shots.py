"""Three answers on the ingested slice, at desktop and phone width: the short answer, its
date, the detail collapsed; screenshots under test-artifacts/browser/ (answer-<id>-<width>.png)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Visit, api_result, ask, last_turn
from tests.browser.test_page import eval_question

pytestmark = pytest.mark.browser

# answerable from the slice: mileage rates (a table), passenger payments, homeworking
SHOWN = ("D01", "D03", "D21")


def _check_and_shoot(visit: Visit, qid: str, width: str) -> None:
    question = eval_question(qid).question
    expected = api_result(visit.base_url, question)
    assert expected["status"] == "answered", expected.get("refusal")
    ask(visit, question)
    turn = last_turn(visit.page)
    answer = [s for s in expected["answer"]["sentences"] if s["role"] == "answer"]
    expect(turn.locator(".answer > ol.sentences > .sentence")).to_have_count(len(answer))
    expect(turn.locator(".answer > ol.sentences > .sentence").first).to_be_in_viewport()
    expect(turn.locator(".answer .as-of time")).to_be_visible()
    detail = turn.locator(".answer > details.answer-detail")
    if any(s["role"] == "detail" for s in expected["answer"]["sentences"]):
        expect(detail).not_to_have_attribute("open", "")
        expect(detail.locator("summary")).to_be_visible()
    # nothing pushes the page sideways at this width
    overflow = visit.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{qid} at {width}: {overflow}px of sideways scroll"
    visit.shot(f"answer-{qid}-{width}")


@pytest.mark.parametrize("qid", SHOWN)
def test_answer_at_desktop_width(visit: Visit, qid: str) -> None:
    _check_and_shoot(visit, qid, "desktop")


@pytest.mark.parametrize("qid", SHOWN)
def test_answer_at_phone_width(phone_visit: Visit, qid: str) -> None:
    _check_and_shoot(phone_visit, qid, "phone")
