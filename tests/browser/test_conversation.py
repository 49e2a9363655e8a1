"""Conversations in a real browser on the ingested slice: the thread of turns, the permalink
that reopens it, the New conversation button, and an unknown conversation's link."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Visit, ask, last_turn

pytestmark = pytest.mark.browser

MILEAGE = "How much can my employer pay me per mile, tax free, when I drive my own car on business trips?"
MOTORCYCLE = "What about for a motorcycle instead?"
PARTY = "Our staff Christmas party costs £100 a head. Is it a taxable benefit for the employees who attend?"


def conversation_id(visit: Visit) -> str:
    match = re.search(r"[?&]c=([A-Za-z0-9_-]+)", visit.page.url)
    assert match, f"no conversation in the URL {visit.page.url}"
    return match.group(1)


def thread_via_api(visit: Visit, cid: str) -> dict:
    response = httpx.get(f"{visit.base_url}/v1/conversations/{cid}", timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def test_follow_ups_build_a_thread_kept_by_the_api(visit: Visit) -> None:
    page = visit.page
    ask(visit, MILEAGE)
    cid = conversation_id(visit)
    expect(page.locator("#conversation-bar")).to_be_visible()
    expect(page.locator("#conversation-link")).to_have_attribute("href", re.compile(rf"\?c={cid}$"))
    ask(visit, MOTORCYCLE, box="#followup")

    turns = page.locator("#thread > .turn")
    expect(turns).to_have_count(2)
    expect(turns.first).to_have_attribute("data-turn", "1")
    expect(turns.first).to_have_attribute("data-kind", "first")
    expect(turns.last).to_have_attribute("data-turn", "2")
    expect(turns.last).to_have_attribute("data-kind", "follow_up")
    expect(turns.last.locator(".turn-kind")).to_have_text("Follow-up: read with the earlier questions in this conversation.")
    expect(turns.first.locator(".answer")).to_be_visible()  # the first answer stays in the thread
    expect(turns.last.locator(".answer")).to_be_visible()
    assert conversation_id(visit) == cid  # the follow-up went to the same conversation
    stored = thread_via_api(visit, cid)["turns"]
    assert [t["question"] for t in stored] == [MILEAGE, MOTORCYCLE]
    assert stored[1]["follow_up"]["kind"] == "follow_up"
    visit.shot("20-conversation-thread")


def test_the_permalink_reopens_the_conversation_and_continues_it(visit: Visit) -> None:
    page = visit.page
    ask(visit, MILEAGE)
    ask(visit, MOTORCYCLE, box="#followup")
    cid = conversation_id(visit)
    answers = [t.locator(".answer .sentence").count() for t in page.locator("#thread > .turn").all()]

    page.goto(f"{visit.base_url}/?c={cid}")  # a fresh load of the link
    turns = page.locator("#thread > .turn")
    expect(turns).to_have_count(2)
    expect(turns.nth(0).locator(".turn-question")).to_contain_text(MILEAGE)
    expect(turns.nth(1).locator(".turn-question")).to_contain_text(MOTORCYCLE)
    expect(turns.nth(1)).to_have_attribute("data-kind", "follow_up")
    for turn, count in zip(turns.all(), answers):
        expect(turn.locator(".answer .sentence")).to_have_count(count)  # each turn with its whole answer
    expect(page.locator("#followup")).to_be_visible()
    visit.shot("21-conversation-reopened")

    ask(visit, "And if I cycle instead?", box="#followup")
    expect(page.locator("#thread > .turn")).to_have_count(3)
    expect(last_turn(page)).to_have_attribute("data-turn", "3")
    assert [t["turn"] for t in thread_via_api(visit, cid)["turns"]] == [1, 2, 3]


def test_new_conversation_clears_the_thread_and_the_link(visit: Visit) -> None:
    page = visit.page
    ask(visit, MILEAGE)
    first = conversation_id(visit)
    page.click("#new-conversation")
    expect(page.locator("#thread > .turn")).to_have_count(0)
    expect(page.locator("#conversation-bar")).to_be_hidden()
    expect(page.locator("#followup-form")).to_be_hidden()
    expect(page.locator("#question")).to_be_focused()
    assert "c=" not in page.url
    ask(visit, PARTY)
    second = conversation_id(visit)
    assert second != first
    expect(last_turn(page)).to_have_attribute("data-kind", "first")
    assert [t["question"] for t in thread_via_api(visit, first)["turns"]] == [MILEAGE]  # the old one is kept
    assert [t["question"] for t in thread_via_api(visit, second)["turns"]] == [PARTY]


def test_a_link_to_an_unknown_conversation_says_so_and_starts_afresh(visit: Visit) -> None:
    page = visit.page
    page.goto(f"{visit.base_url}/?c=no-such-conversation")
    notice = page.locator("#thread .conversation-missing")
    expect(notice).to_have_text("That conversation has expired or does not exist. Ask a question to start a new one.")
    assert "c=" not in page.url
    ask(visit, MILEAGE)
    expect(page.locator("#thread > .turn")).to_have_count(1)
    conversation_id(visit)


def test_a_follow_up_to_an_expired_conversation_starts_a_new_one(visit: Visit, conversations_dir) -> None:
    page = visit.page
    ask(visit, MILEAGE)
    old = conversation_id(visit)
    (conversations_dir / f"{old}.json").unlink()  # expired (the store forgets it)
    ask(visit, MOTORCYCLE, box="#followup")
    expect(last_turn(page).locator(".conversation-restarted")).to_have_text(
        "The earlier conversation had expired, so this was asked in a new one, on its own."
    )
    expect(last_turn(page).locator(".answer, .refusal")).to_have_count(1)  # answered or refused on its own
    expect(last_turn(page)).to_have_attribute("data-kind", "first")
    new = conversation_id(visit)
    assert new != old
    assert [t["question"] for t in thread_via_api(visit, new)["turns"]] == [MOTORCYCLE]
