"""The navigator page in Debian's headless Chromium, driven by Playwright (the test extra):
what the browser tests and `taxnav bench screens` share. The browser, the two widths, asking a
question as a reader does, and what the finished answer card shows.

Never `playwright install`: the browser is the system one (`make chromium`). Playwright is
imported only where it is used, so `taxnav` runs without the test extra.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
ANSWER_TIMEOUT_MS = 120_000  # the page's own polling deadline: a busy machine's first question is slow


def missing(chromium: Path = CHROMIUM) -> str | None:
    """Why the page cannot be driven on this machine, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed: it comes with the test extra (pip install 'taxnav[test]'; make setup does)"
    if not chromium.is_file():
        return f"{chromium} is missing: `make chromium` installs Debian's chromium (never `playwright install`)"
    return None


@contextmanager
def chromium(path: Path = CHROMIUM) -> Iterator[Browser]:
    """Headless Chromium for as long as the block runs. Playwright's sync API keeps an event
    loop in this thread meanwhile: nothing inside may call asyncio.run."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415  (the test extra)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(path), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def ask(page: Page, question: str, box: str = "#question") -> Locator:
    """Type a question, press Enter and wait until its turn has finished; returns the turn.
    The main box starts a new thread, the follow-up box adds a turn to it."""
    from playwright.sync_api import expect  # noqa: PLC0415  (the test extra)

    turns = page.locator("#thread > .turn")
    before = turns.count()
    page.fill(box, question)
    page.press(box, "Enter")
    expect(turns).to_have_count(before + 1 if box == "#followup" or before == 0 else 1)
    expect(turns.last).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    return turns.last


class AnswerCard(BaseModel):
    """What a reader sees of one finished turn, read from the rendered page (not the API)."""

    outcome: Literal["answered", "refused", "error"]
    answer_sentences: int  # the short answer's sentences (shown)
    cited_and_checked: int  # of those, how many show a source marker and a verdict
    answer_before_detail: bool  # the short answer comes first, the detail and sources after it
    detail_sentences: int  # the further sentences under "More from the manual"
    detail_open: bool
    detail_shown: int  # detail sentences visible (none while collapsed)
    as_of: str | None  # the answer's date as shown ("5 March 2024"), None when not shown
    as_of_old: bool  # flagged as long past
    answer_top_px: float | None  # where the first sentence starts, from the top of the page
    first_sentence_on_screen: bool  # wholly inside the viewport as the page is scrolled now
    overflow_px: int  # sideways scroll the page has (0: none)
    smallest_text_px: float | None  # the smallest font size of the answer's text


# One pass over the turn in the page; `shown` means rendered (a closed <details> hides its content
# with content-visibility, which leaves it boxes: checkVisibility() sees through that).
_READ_CARD = """(turn) => {
  const shown = (node) => Boolean(node && node.checkVisibility());
  const answer = turn.querySelector('.answer');
  const sentences = answer ? [...answer.querySelectorAll(':scope > ol.sentences > .sentence')] : [];
  const detail = answer ? answer.querySelector(':scope > details.answer-detail') : null;
  const rows = detail ? [...detail.querySelectorAll('ol.sentences > .sentence')] : [];
  const time = answer ? answer.querySelector('.as-of time') : null;
  const after = answer ? [...answer.querySelectorAll(':scope > details.answer-detail, :scope > .sources')] : [];
  const last = sentences.length ? sentences[sentences.length - 1] : null;
  const texts = answer ? [...answer.querySelectorAll('*')].filter((n) => shown(n) &&
    [...n.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim())) : [];
  const sizes = texts.map((n) => parseFloat(getComputedStyle(n).fontSize));
  return {
    outcome: answer ? 'answered' : (turn.querySelector('.refusal') ? 'refused' : 'error'),
    answer_sentences: sentences.filter(shown).length,
    cited_and_checked: sentences.filter((s) => shown(s.querySelector('button.fn')) && shown(s.querySelector('.verdict-badge'))).length,
    answer_before_detail: Boolean(last) && after.every((n) => last.compareDocumentPosition(n) & Node.DOCUMENT_POSITION_FOLLOWING),
    detail_sentences: rows.length,
    detail_open: Boolean(detail && detail.open),
    detail_shown: rows.filter(shown).length,
    as_of: shown(time) ? time.textContent : null,
    as_of_old: Boolean(answer && answer.querySelector('.as-of.is-old')),
    answer_top_px: sentences.length ? sentences[0].getBoundingClientRect().top + window.scrollY : null,
    first_sentence_on_screen: sentences.length > 0 && sentences[0].getBoundingClientRect().top >= 0 &&
      sentences[0].getBoundingClientRect().bottom <= window.innerHeight,
    overflow_px: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    smallest_text_px: sizes.length ? Math.min(...sizes) : null,
  };
}"""


def read_card(turn: Locator) -> AnswerCard:
    return AnswerCard.model_validate(turn.evaluate(_READ_CARD))
