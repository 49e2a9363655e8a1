"""Fixtures for the browser tests: the real gateway on the ingested test slice, served by
uvicorn on a free port, and Debian's headless Chromium driven by Playwright.

Never `playwright install`: the browser is the system one (.ci/run installs `chromium`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page

from gateway.app import create_app
from shared.config import Settings
from taxnav import browser as chrome
from tests.support.gateway import served

WIDE, PHONE = chrome.DESKTOP, chrome.PHONE
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"

# Records, in order, when a pipeline stage row lights up and when a result card appears, so a
# test can tell stages lit from the event stream (before the result) from stages filled in
# afterwards from the result's trace. Installed before the page's own script runs.
STAGE_LOG_SCRIPT = """
window.__uiLog = [];
new MutationObserver((records) => {
  for (const r of records) {
    const t = r.target;
    if (r.type === 'attributes' && t.classList && t.classList.contains('stage') && t.classList.contains('is-done')) {
      window.__uiLog.push('stage:' + t.querySelector('.stage-label').textContent);
    }
    for (const n of r.addedNodes || []) {
      if (n.nodeType === 1 && n.matches('.answer, .refusal, .card-error')) window.__uiLog.push('result');
    }
  }
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['class'] });
"""


@contextmanager
def serve_gateway(settings: Settings) -> Iterator[str]:
    """The real gateway app (pipeline in process) for ``settings``, over real HTTP."""
    with served(create_app(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def conversations_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the page's conversations are kept: the shared slice is only read."""
    return tmp_path_factory.mktemp("conversations")


@pytest.fixture(scope="module")
def gateway_url(slice_settings: Settings, conversations_dir: Path) -> Iterator[str]:
    """The gateway on the ingested slice (a test module may override this fixture)."""
    settings = slice_settings.model_copy(deep=True)
    settings.conversations.dir = conversations_dir
    with serve_gateway(settings) as url:
        yield url


@pytest.fixture(scope="module")
def browser(gateway_url: str) -> Iterator[Browser]:
    """Module scope: Playwright's sync API keeps an event loop running in this thread, so
    nothing may call asyncio.run (the slice's ingest does) while it is up; the gateway, and
    with it the slice, is therefore ready first and the browser closes with the module."""
    problem = chrome.missing()
    if problem:
        pytest.fail(problem)
    with chrome.chromium() as browser:
        yield browser


@dataclass
class Visit:
    """One page load and everything it did that a test may need to check."""

    page: Page
    base_url: str
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def shot(self, name: str, full_page: bool = True) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def api_posts(self) -> list[str]:
        """Questions sent: to /v1/questions or to a conversation's /questions."""
        return [url for url in self.requests if url.rstrip("/").endswith("/questions")]


def _open(browser: Browser, base_url: str, viewport: dict[str, int]) -> Iterator[Visit]:
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(60_000)  # the first question warms the embedder
    visit = Visit(page=page, base_url=base_url)
    page.on("request", lambda request: visit.requests.append(request.url))
    page.on("dialog", lambda dialog: (visit.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: visit.errors.append(f"uncaught: {error}"))
    # A failed fetch is expected in error tests (the page shows it); CSP violations and
    # script errors are not.
    page.on(
        "console",
        lambda msg: visit.errors.append(msg.text) if msg.type == "error" and not msg.text.startswith("Failed to load resource") else None,
    )
    page.add_init_script(script=STAGE_LOG_SCRIPT)
    page.goto(base_url + "/")
    yield visit
    context.close()
    assert not visit.dialogs, f"a dialog opened (script ran from data?): {visit.dialogs}"
    assert not visit.errors, f"errors in the page: {visit.errors}"
    foreign = [url for url in visit.requests if not url.startswith(base_url + "/") and not url.startswith("data:")]
    assert not foreign, f"the page requested something outside the gateway: {foreign}"


@pytest.fixture
def visit(browser: Browser, gateway_url: str) -> Iterator[Visit]:
    yield from _open(browser, gateway_url, WIDE)


@pytest.fixture
def phone_visit(browser: Browser, gateway_url: str) -> Iterator[Visit]:
    yield from _open(browser, gateway_url, PHONE)


# ---- helpers the browser tests share


def api_result(base_url: str, question: str) -> dict:
    """What the API itself answers for a question (the pipeline is deterministic)."""
    response = httpx.post(f"{base_url}/v1/questions", json={"question": question, "wait": True}, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def ask(visit: Visit, question: str, box: str = "#question") -> None:
    """Type a question, press Enter, wait until its turn has finished."""
    chrome.ask(visit.page, question, box)


def last_turn(page: Page) -> Locator:
    return page.locator("#thread > .turn").last
