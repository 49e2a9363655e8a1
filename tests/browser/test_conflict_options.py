"""The conflict card's options in a real browser, on the two-page synthetic manual whose pages
give different figures for the same allowance (tests/gateway/test_conflict_api.py builds it):
each option is a button carrying its condition; choosing one asks the question again with
that condition, and the condition settles it."""

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
