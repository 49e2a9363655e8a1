"""/docs, the API explorer, works offline: real Chromium with every request outside the gateway
blocked sees Swagger UI render the operations from /openapi.json."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Route, expect

from tests.browser.conftest import WIDE, serve_gateway
from tests.conftest import make_settings

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The docs need no index: a gateway on an empty data dir."""
    data_dir: Path = tmp_path_factory.mktemp("docs-data")
    with serve_gateway(make_settings(data_dir)) as url:
        yield url


def test_docs_lists_the_operations_with_the_network_cut_off(browser: Browser, gateway_url: str) -> None:
    context = browser.new_context(viewport=WIDE)
    page = context.new_page()
    foreign: list[str] = []
    errors: list[str] = []

    def offline(route: Route) -> None:
        if route.request.url.startswith(gateway_url + "/"):
            route.continue_()
        else:  # what a machine without internet would do to a CDN request
            foreign.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", offline)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(gateway_url + "/docs")
        operations = page.locator(".opblock-summary-path")
        expect(operations.first).to_be_visible(timeout=30_000)
        paths = {operations.nth(i).inner_text().replace("\u200b", "") for i in range(operations.count())}
        assert {"/v1/questions", "/v1/ingest/runs", "/readyz"} <= paths, paths
        expect(page.locator(".information-container .title")).to_contain_text("Tax Policy Navigator")
    finally:
        context.close()
    assert not foreign, f"/docs requested something outside the gateway: {foreign}"
    assert not errors, errors


def test_docs_page_names_no_cdn(browser: Browser, gateway_url: str) -> None:
    """The HTML itself (noscript included) points only at the gateway."""
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(gateway_url + "/docs")
        links = page.eval_on_selector_all("[href], [src]", "els => els.map(e => e.getAttribute('href') || e.getAttribute('src'))")
        noscript = page.locator("noscript a")
        expect(noscript).to_have_attribute("href", "/openapi.json")
    finally:
        context.close()
    assert links and all(link.startswith("/") and not link.startswith("//") for link in links), links
