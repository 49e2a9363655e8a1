"""The conflict card in a real browser, on the two-page synthetic manual whose pages give
different figures for the same allowance (tests/gateway/test_conflict_api.py builds it):
the EIM copy itself has no such pair the pipeline reaches. Each option is a button carrying
its condition; choosing one asks the question again with that condition, which settles it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from shared.config import Settings
from tests.browser.conftest import Visit, api_result, ask, last_turn, serve_gateway
from tests.gateway.test_conflict_api import conflict_settings  # noqa: F401  (the fixture)

pytestmark = pytest.mark.browser

QUESTION = "What is the exempt amount for a long service award?"


@pytest.fixture(scope="module")
def gateway_url(conflict_settings: Settings) -> Iterator[str]:  # noqa: F811
    with serve_gateway(conflict_settings) as url:
        yield url


def test_conflict_card_shows_both_paragraphs_side_by_side_and_what_would_decide(visit: Visit) -> None:
    expected = api_result(visit.base_url, QUESTION)
    assert expected["status"] == "refused" and expected["refusal"]["category"] == "conflict", expected
    evidence = expected["refusal"]["evidence"]
    citations = {c["paragraph_id"]: c for c in expected["citations"]}
    ask(visit, QUESTION)

    card = last_turn(visit.page).locator(".refusal")
    expect(card).to_have_attribute("data-category", "conflict")
    expect(card.locator("h3")).to_contain_text("The manual gives different answers")
    sides = card.locator(".side-by-side > .side")
    expect(sides).to_have_count(2)
    for side, pid, statement in zip(sides.all(), evidence["paragraph_ids"], evidence["statements"]):
        citation = citations[pid]
        expect(side.locator(".side-says")).to_have_text(f"Says: {statement}")
        expect(side.locator("blockquote")).to_have_text(citation["text"])
        expect(side.locator("h4")).to_have_text(f"{citation['section_id']}: {citation['title']}")
        expect(side.locator("a")).to_have_attribute("href", citation["url"])
    # Side by side on a wide screen: level with each other, the second to the right.
    left, right = (side.bounding_box() for side in sides.all())
    assert abs(left["y"] - right["y"]) < 2 and right["x"] >= left["x"] + left["width"], (left, right)
    expect(card.locator(".decider")).to_contain_text(evidence["what_would_decide"])
    for figure in evidence["differing"]:
        expect(card.locator(".card-evidence")).to_contain_text(figure)
    visit.shot("03-refusal-conflict")


def test_conflict_card_stacks_at_phone_width(phone_visit: Visit) -> None:
    ask(phone_visit, QUESTION)
    sides = last_turn(phone_visit.page).locator(".side-by-side > .side").all()
    top, below = (side.bounding_box() for side in sides)
    assert below["y"] >= top["y"] + top["height"], (top, below)
    assert phone_visit.page.evaluate("document.documentElement.scrollWidth") <= phone_visit.page.viewport_size["width"]
    phone_visit.shot("09-phone-conflict")


def test_conflict_options_are_choices_that_ask_again_with_the_condition(visit: Visit) -> None:
    expected = api_result(visit.base_url, QUESTION)
    assert expected["refusal"]["category"] == "conflict", expected
    options = expected["refusal"]["evidence"]["options"]
    assert [set(o) for o in options] == [{"condition", "value", "paragraph_id", "section_id"}] * 2
    ask(visit, QUESTION)

    buttons = last_turn(visit.page).locator(".refusal .conflict-option")
    expect(buttons).to_have_count(2)
    for button, option in zip(buttons.all(), options):
        expect(button).to_have_attribute("data-condition", option["condition"])
        expect(button.locator(".option-value")).to_have_text(option["value"])
    visit.shot("refusal-conflict-options")

    buttons.first.click()
    turns = visit.page.locator("#thread > .turn")
    expect(turns).to_have_count(2)
    expect(turns.last).to_have_attribute("aria-busy", "false")
    expect(turns.last.locator(".turn-question")).to_contain_text(options[0]["condition"])
    # the condition settles which case applies: no second conflict card
    expect(turns.last.locator(".refusal-conflict")).to_have_count(0)
    again = api_result(visit.base_url, f"{QUESTION} ({options[0]['condition']})")
    assert not (again["status"] == "refused" and again["refusal"]["category"] == "conflict"), again
