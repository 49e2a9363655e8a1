"""Routing to another manual in a real browser, on real pages of all three manuals (a few
of each, ingested once for the module): a question the Business Income Manual answers is
refused out_of_scope with a card that names that manual and links its pages on GOV.UK."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from ingest_worker.ingest import run_ingest
from shared.config import Settings
from tests.browser.conftest import Visit, api_result, ask, last_turn, serve_gateway
from tests.conftest import small_corpus

pytestmark = pytest.mark.browser

PAGES = {
    "employment-income-manual": ["EIM13505", "EIM13500", "EIM32760", "EIM32815", "EIM01472", "EIM01476", "EIM21690"],
    "business-income-manual": ["BIM85600", "BIM85601", "BIM85605", "BIM85615", "BIM85620", "BIM85625", "BIM47805", "BIM47820"],
    "self-assessment-manual": ["SAM100130", "SAM100136", "SAM120550", "SAM31100"],
}
FARMING = "After how many consecutive years of farming losses does relief against my other income stop?"


@pytest.fixture(scope="module")
def three_manuals(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path, settings_for: Callable[..., Settings]) -> Settings:
    source = small_corpus(corpus_dir, tmp_path_factory.mktemp("three-corpus"), PAGES)
    settings = settings_for(tmp_path_factory.mktemp("three-data"))
    for manual in PAGES:
        run_ingest(settings, str(source), manual)
    return settings


@pytest.fixture(scope="module")
def gateway_url(three_manuals: Settings) -> Iterator[str]:
    with serve_gateway(three_manuals) as url:
        yield url


def test_a_business_question_is_routed_to_the_business_income_manual(visit: Visit) -> None:
    expected = api_result(visit.base_url, FARMING)
    assert expected["status"] == "refused" and expected["refusal"]["category"] == "out_of_scope", expected
    routes = expected["refusal"]["evidence"]["routes"]
    assert routes and routes[0]["manual"] == "business-income-manual"
    assert any(p["section_id"].startswith("BIM856") for p in routes[0]["pages"])
    assert "Business Income Manual" in expected["refusal"]["message"]
    ask(visit, FARMING)

    card = last_turn(visit.page).locator(".refusal")
    expect(card).to_have_attribute("data-category", "out_of_scope")
    route = card.locator('.routes .route[data-manual="business-income-manual"]')
    expect(route).to_have_count(1)
    links = route.locator("a.route-page")
    expect(links).to_have_count(len(routes[0]["pages"]))
    for link, page in zip(links.all(), routes[0]["pages"]):
        expect(link).to_have_attribute("href", page["url"])
        expect(link).to_contain_text(page["section_id"])
    visit.shot("refusal-out-of-scope-routed")


def test_an_employment_question_is_answered_and_not_routed(visit: Visit) -> None:
    result = api_result(visit.base_url, "How much can my employer pay me each week towards household costs when I work from home?")
    assert result["status"] == "answered" and result["routes"] == [], result.get("refusal")


def test_the_route_card_fits_a_phone(phone_visit: Visit) -> None:
    ask(phone_visit, FARMING)
    expect(last_turn(phone_visit.page).locator(".routes a.route-page").first).to_be_visible()
    assert phone_visit.page.evaluate("document.documentElement.scrollWidth") <= phone_visit.page.viewport_size["width"]
    phone_visit.shot("phone-refusal-out-of-scope-routed")


def test_the_stale_card_shows_the_latest_figures_with_their_year_and_paragraph(visit: Visit) -> None:
    question = "What is the homeworking allowance this year?"
    expected = api_result(visit.base_url, question)
    assert expected["status"] == "refused" and expected["refusal"]["category"] == "stale", expected.get("refusal")
    figures = expected["refusal"]["evidence"]["latest_figures"]
    assert figures and all(f["year"] == "2012" for f in figures)
    ask(visit, question)
    items = last_turn(visit.page).locator(".refusal .latest-figure")
    expect(items).to_have_count(len(figures))
    for item, figure in zip(items.all(), figures):
        expect(item).to_have_attribute("data-year", figure["year"])
        expect(item.locator("q")).to_have_text(figure["text"])
        expect(item.locator("button")).to_contain_text(figure["section_id"])
    visit.shot("refusal-stale-latest-figures")
