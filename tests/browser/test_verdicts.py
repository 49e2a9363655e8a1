"""Every verdict as the page shows it, from the real pipeline on the slice with the
``mistral`` provider talking to the Mistral STAND-IN (tests/support/mistral_standin.py; the
real API is not reachable here). The offline provider quotes the manual, so its sentences
are always supported; a model's verdicts are the way the others reach a user.

The stand-in model keeps every page, quotes the first sentence of the first paragraphs it
is given, and judges the claims supported, partly supported, unsupported and contradicted
in turn. The deterministic figure check still runs over its verdicts (it can only lower them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from ingest_worker.ingest import run_ingest
from services.providers.prompts import SELECT_SYSTEM, STITCH_SYSTEM, VERIFY_SYSTEM
from shared.config import ModelSettings, Settings, VerificationSettings
from tests.browser.conftest import Visit, api_result, ask, last_turn, serve_gateway
from tests.conftest import EIM, SLICE_SECTIONS, make_settings
from tests.support.mistral_standin import MistralStandin, Reply

pytestmark = pytest.mark.browser

VERDICTS = ["supported", "partially_supported", "unsupported", "contradicted"]
QUESTION = "How much can my employer pay me per mile for using my own car for work without tax?"
FAILING_QUESTION = "Can my employer pay the passenger rate for a colleague in my car?"  # the model is down for it


def model(body: dict) -> str | Reply:
    """The stand-in chat model's replies for selection, stitching and verification."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    if FAILING_QUESTION in user:
        return Reply(status=503, raw=json.dumps({"message": "stand-in: model unavailable"}))
    if system.startswith(SELECT_SYSTEM):
        return json.dumps({"keep": re.findall(r"^## (\S+)$", user, re.M)})
    if system == STITCH_SYSTEM:
        sentences = []
        for pid, text in re.findall(r"^\[([^\]\s]+)\] (.+)$", user, re.M):
            first = re.match(r"(.{30,240}?\.)(?:\s|$)", text)
            if first:
                sentences.append({"text": first.group(1), "citations": [pid]})
            if len(sentences) == len(VERDICTS):
                break
        return json.dumps({"sentences": sentences})
    assert system == VERIFY_SYSTEM, system
    claims = len(re.findall(r"^Claim \d+:", user, re.M))
    verdicts = [VERDICTS[i % len(VERDICTS)] for i in range(claims)]
    return json.dumps({"verdicts": [{"index": i, "verdict": v, "reason": f"the stand-in model judged it {v}"} for i, v in enumerate(verdicts)]})


@pytest.fixture(scope="module")
def standin() -> Iterator[MistralStandin]:
    with MistralStandin() as server:
        server.chat_handler = model
        yield server


@pytest.fixture(scope="module")
def mistral_settings(standin: MistralStandin, tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path) -> Settings:
    data_dir = tmp_path_factory.mktemp("mistral-slice")
    settings = make_settings(data_dir, data_dir / "embeddings").model_copy(
        update={
            "models": ModelSettings(provider="mistral", mistral_api_key=standin.api_key, mistral_server_url=standin.base_url, max_retries=0),
            # One claim in four is supported: a floor below that lets the answer through, so
            # the page shows every verdict instead of a refusal.
            "verification": VerificationSettings(faithfulness_floor=0.2),
        }
    )
    run_ingest(settings, str(corpus_dir), EIM, sections=set(SLICE_SECTIONS))
    return settings


@pytest.fixture(scope="module")
def gateway_url(mistral_settings: Settings) -> Iterator[str]:
    with serve_gateway(mistral_settings) as url:
        yield url


def test_each_verdict_is_marked_and_partial_never_looks_supported(visit: Visit) -> None:
    page = visit.page
    expected = api_result(visit.base_url, QUESTION)
    assert expected["status"] == "answered", expected.get("refusal")
    verdicts = [s["verdict"] for s in expected["answer"]["sentences"]]
    assert verdicts == VERDICTS, verdicts
    assert {s["role"] for s in expected["answer"]["sentences"]} == {"answer"}  # the model writes no detail part
    ask(visit, QUESTION)

    rows = last_turn(page).locator(".sentence")
    expect(rows).to_have_count(len(VERDICTS))
    # an answer without detail sentences has no "More from the manual" section
    expect(last_turn(page).locator(".answer-detail")).to_have_count(0)
    expect(last_turn(page)).not_to_contain_text("More from the manual")
    for row, sentence in zip(rows.all(), expected["answer"]["sentences"]):
        expect(row).to_have_class(re.compile(rf"\bverdict-{sentence['verdict']}\b"))
        expect(row.locator(".reason")).to_have_text(sentence["reason"])
    expect(last_turn(page).locator(".faithfulness")).to_contain_text("1 of 4 sentences fully supported")

    def look(row) -> dict:
        return row.evaluate(
            """r => ({border: getComputedStyle(r).borderLeftStyle, background: getComputedStyle(r).backgroundColor,
                      icon: r.querySelector('.verdict-icon').textContent, words: r.querySelector('.verdict-badge').textContent})"""
        )

    looks = [look(row) for row in rows.all()]
    supported, partial = looks[0], looks[1]
    assert "Partly supported" in partial["words"] and "Supported" in supported["words"]
    for key in ("border", "background", "icon", "words"):
        assert partial[key] != supported[key], (key, supported, partial)
    for key in ("border", "icon", "words"):  # not by colour alone: every verdict differs in these
        assert len({item[key] for item in looks}) == len(looks), (key, looks)

    # The partly supported claim's source opens like any other.
    rows.nth(1).locator("button.fn").first.click()
    expect(page.locator("#source-panel")).to_be_visible()
    cited = expected["answer"]["sentences"][1]["citations"][0]
    citation = next(c for c in expected["citations"] if c["paragraph_id"] == cited)
    assert page.locator("#source-text").text_content() == citation["text"]
    expect(page.locator("#source-text mark")).not_to_have_count(0)
    visit.shot("10-every-verdict")


def test_every_verdict_reads_at_phone_width(phone_visit: Visit) -> None:
    ask(phone_visit, QUESTION)
    expect(last_turn(phone_visit.page).locator(".sentence")).to_have_count(len(VERDICTS))
    assert phone_visit.page.evaluate("document.documentElement.scrollWidth") <= phone_visit.page.viewport_size["width"]
    phone_visit.shot("11-phone-every-verdict")


@pytest.mark.parametrize("stream", ["events", "polling"])
def test_a_failed_pipeline_shows_the_typed_error(visit: Visit, stream: str) -> None:
    """The model fails: the gateway ends the question with a typed error, which the page
    shows whether it hears it on the event stream or, the stream broken, by asking."""
    response = httpx.post(f"{visit.base_url}/v1/questions", json={"question": FAILING_QUESTION}, timeout=60)
    assert response.status_code == 502, response.text
    message = response.json()["error"]["message"]
    if stream == "polling":
        visit.page.route("**/v1/questions/*/events", lambda route: route.abort())
    ask(visit, FAILING_QUESTION)
    card = last_turn(visit.page).locator(".card-error")
    expect(card).to_have_attribute("role", "alert")
    expect(card.locator(".error-message")).to_have_text(message)
    if stream == "events":
        visit.shot("12-pipeline-error")
