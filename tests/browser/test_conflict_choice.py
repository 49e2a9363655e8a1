"""Choosing an option on a conflict card, in a real browser: the choice is the next turn of
the conversation, asked under that option's condition (tests/gateway/test_conversation_conflict.py
builds the two-page synthetic manual)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import expect

from shared.config import Settings
from tests.browser.conftest import Visit, ask, last_turn, serve_gateway
from tests.gateway.test_conversation_conflict import QUESTION, choice_settings  # noqa: F401  (the fixture)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def gateway_url(choice_settings: Settings) -> Iterator[str]:  # noqa: F811
    with serve_gateway(choice_settings) as url:
        yield url


def test_a_conflict_option_chosen_on_the_card_is_the_next_turn(visit: Visit) -> None:
    page = visit.page
    ask(visit, QUESTION)
    card = last_turn(page).locator(".refusal")
    expect(card).to_have_attribute("data-category", "conflict")
    choices = card.locator(".conflict-option")
    expect(choices).to_have_count(2)
    day = card.locator(".conflict-option", has_text="day shift workers")
    expect(day).to_contain_text("£80")
    visit.shot("22-conflict-choices")

    day.click()
    turns = page.locator("#thread > .turn")
    expect(turns).to_have_count(2)
    chosen = turns.last
    expect(chosen).to_have_attribute("aria-busy", "false")
    expect(chosen).to_have_attribute("data-turn", "2")
    expect(chosen).to_have_attribute("data-kind", "follow_up")
    expect(chosen.locator(".turn-question")).to_contain_text("Flat rate allowance: day shift workers")
    expect(chosen.locator(".answer")).to_contain_text("£80")
    expect(chosen.locator(".answer")).not_to_contain_text("£120")
    visit.shot("23-conflict-chosen")

    cid = re.search(r"[?&]c=([A-Za-z0-9_-]+)", page.url).group(1)
    stored = httpx.get(f"{visit.base_url}/v1/conversations/{cid}", timeout=30).json()["turns"]
    assert [(t["status"], t["condition"]) for t in stored] == [("refused", None), ("answered", "Flat rate allowance: day shift workers")]
