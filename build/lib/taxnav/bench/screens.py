"""`taxnav bench screens`: the page answering given questions at desktop and phone width,
photographed twice: the screen as the answer lands (`-screen.png`) and the whole page; what each
shows (taxnav.browser.AnswerCard) is written beside the PNGs as screens.json, so a reviewer can
look at the pictures and a script can read the checks.

A real gateway (`taxnav serve`, embedded) on the data dir, which is only read: the page's
conversations go to a temporary folder.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from shared.cli_common import Exit
from shared.config import Settings
from shared.generation import ingested_manuals
from taxnav import browser
from taxnav.bench import write_report
from taxnav.bench.common import warm_gateway

if TYPE_CHECKING:
    from playwright.sync_api import Browser

WIDTHS = {"desktop": browser.DESKTOP, "phone": browser.PHONE}


def shot_name(number: int, question: str) -> str:
    """``01-how-much-can-my-employer-pay``: the question's order, then its first words."""
    words = re.findall(r"[a-z0-9]+", question.lower())[:6]
    return f"{number:02d}-{'-'.join(words) or 'question'}"


class Shot(browser.AnswerCard):
    """One question at one width: its two PNGs and what the page showed (a row of screens.json)."""

    question: str
    width: str
    viewport: dict[str, int]
    png: str  # the whole page, from the top
    screen_png: str  # the screen the reader is left looking at once the answer lands


def shoot(chrome: Browser, base_url: str, question: str, path_stem: Path) -> list[Shot]:
    """The question asked afresh at each width, photographed once it is answered."""
    shots = []
    for width, viewport in WIDTHS.items():
        context = chrome.new_context(viewport=viewport)
        try:
            page = context.new_page()
            page.goto(base_url + "/")
            turn = browser.ask(page, question)
            card = browser.read_card(turn)  # as the reader is left looking at it
            screen = path_stem.with_name(f"{path_stem.name}-{width}-screen.png")
            page.screenshot(path=str(screen))
            page.evaluate("window.scrollTo(0, 0)")
            png = path_stem.with_name(f"{path_stem.name}-{width}.png")
            page.screenshot(path=str(png), full_page=True)
        finally:
            context.close()
        shots.append(Shot(question=question, width=width, viewport=viewport, png=str(png), screen_png=str(screen), **card.model_dump()))
        print(f"{png}: {card.outcome}, {card.answer_sentences} answer sentences, as of {card.as_of}, "
              f"detail {'open' if card.detail_open else 'collapsed'} ({card.detail_sentences}), sideways scroll {card.overflow_px}px")
    return shots


def run(args: argparse.Namespace, settings: Settings) -> int:
    if settings.manual not in ingested_manuals(settings):
        print(f"taxnav bench screens: no index for manual {settings.manual!r} in {settings.data_dir}; run `taxnav ingest` first", file=sys.stderr)
        return Exit.USAGE
    chromium = Path(args.chromium)
    problem = browser.missing(chromium)
    if problem:
        print(f"taxnav bench screens: {problem}", file=sys.stderr)
        return Exit.USAGE
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data_dir = str(settings.data_dir)
    with tempfile.TemporaryDirectory(prefix="taxnav-screens-") as conversations:
        env = {"TAXNAV_MODE": "embedded", "TAXNAV_DATA_DIR": data_dir, "TAXNAV_CONVERSATIONS__DIR": conversations}
        with warm_gateway(data_dir, env, args.question) as (base_url, _), browser.chromium(chromium) as chrome:
            shots = [shot for n, q in enumerate(args.question, start=1) for shot in shoot(chrome, base_url, q, out / shot_name(n, q))]
    write_report({"data_dir": data_dir, "shots": [shot.model_dump() for shot in shots]}, out / "screens.json")
    return Exit.OK
