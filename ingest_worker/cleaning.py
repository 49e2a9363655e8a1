"""Text as the 2014 scrape left it, cleaned: an element's inline text and links, markdown
leftovers stripped (keeping a markdown link's target), spaces the scrape lost put back
(references, statute numbers, dates), what its printf ate restored, and titles decoded."""

from __future__ import annotations

import html
import re

from lxml import etree

from shared.embeddings import english_words

SKIP_TAGS = {"script", "style", "template"}

MARKDOWN_LINK = re.compile(r"\[([^\]\[]{1,200})\]\(([^)\s]{1,500})\)")
MARKDOWN_BOLD = re.compile(r"\*\*|__")
MARKDOWN_HEADING = re.compile(r"^\s*#{1,6}\s*")
# A markdown bullet: "* " opening a line or after a colon ("such as: * trades"), or "*" and
# two or more spaces inside a line (the scrape ran list items into the paragraph before
# them). A footnote star ("£3 million* and") or a product ("100,000 * 180/235") stays.
MARKDOWN_BULLET = re.compile(r"^\s*\*\s+|\s*\*[ \t\u00a0]{2,}|(?<=:)\s*\*\s")
BULLET = "\u2022"  # where a markdown bullet stood, until split_bullets makes it a list item
GLUED_REFERENCE = re.compile(r"(?<=[a-z])(?=[A-Z]{2,5}\d{4,6})")
# Other spaces the scrape lost: after a reference ("EIM20202onwards", "see EIM21850for"),
# between a statute word and its number ("Section102", "ITEPA2003", "Part7A"), a day and its
# month ("6April 2011"), a month and its year ("February2008"), a number and its unit of time
# ("183consecutive days", "21years"); about 160 places on EIM pages.
MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
GLUED_SPACES = tuple(
    re.compile(pattern)
    for pattern in (
        r"\b([A-Z]{2,5}\d{4,6})(?=[a-z]{2,})",
        r"\b(Sections?|sections?|Schedule|Chapter|Part|ITEPA|ICTA|TCGA|ITTOIA)(?=\d)",
        rf"\b(\d{{1,2}})(?={MONTHS}\b)",
        rf"\b({MONTHS})(?=\d{{4}}\b)",
        r"\b(\d{2,3})(?=(?:consecutive|years?|months?|weeks?|days?)\b)",
    )
)
# The 2014 scrape ran the text through a printf, which ate "% f", "% d", "% c" and "% s"
# after a figure: "100% first" became "100 0.000000irst", "100% deduction" "100 0eduction",
# "10% ceiling" "10eiling", "100% subsidiary" "100ubsidiary" (EIM36640's title, EIM74607,
# EIM15413, EIM68450, EIM16070 ...).
PRINTF_PERCENT = re.compile(r"(?<=\d) 0\.000000(?=[a-z])")
PRINTF_DIGIT = re.compile(r"(?<=\d) 0(?=[a-z]{3,}\b)")
PRINTF_EMPTY = re.compile(r"(?<=\d)([a-z]{3,})\b")


def undo_printf(text: str) -> str:
    """Put back what the scrape's printf ate. A conversion that printed nothing ("% c", "% s")
    leaves only the rest of its word glued to the figure, so the letter is the one that makes
    an English word of it (and the glued letters are not a word or unit already: "16.00hrs")."""
    text = PRINTF_DIGIT.sub("% d", PRINTF_PERCENT.sub("% f", text))

    def restore(match: re.Match[str]) -> str:
        rest = match.group(1)
        words = english_words()
        if rest in words:
            return rest
        letter = next((c for c in "cs" if c + rest in words), None)
        return f"% {letter}{rest}" if letter else rest

    return PRINTF_EMPTY.sub(restore, text)


SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


def clean_text(raw: str) -> tuple[str, list[str]]:
    """Collapse whitespace and strip markdown leftovers; returns (text, markdown link targets)."""
    hrefs = [m.group(2) for m in MARKDOWN_LINK.finditer(raw)]
    text = MARKDOWN_LINK.sub(r"\1", raw)
    text = MARKDOWN_BOLD.sub("", text)
    text = GLUED_REFERENCE.sub(" ", text.replace("\u00c2\u00a0", " "))  # a no-break space read as Latin-1 ("businessesÂ & corporations")
    for glued in GLUED_SPACES:
        text = glued.sub(r"\1 ", text)
    text = undo_printf(text)
    lines = [MARKDOWN_HEADING.sub("", line) for line in text.split("\n")]
    lines = [SPACES.sub(" ", MARKDOWN_BULLET.sub(f" {BULLET} ", line)).strip() for line in lines]
    return "\n".join(line for line in lines if line and line != BULLET), hrefs


_TAG = re.compile(r"<[^>]*>")
# A title the scrape filled with a table's cells ("</td> <td>  &#xA3;2,536" on EIM13505, the
# £30,000 threshold page) names nothing of the page.
_TABLE_CELLS = re.compile(r"</?t[dhr]\b", re.I)


def clean_title(raw: str) -> str:
    """A page title as a reader sees it: entities decoded ("employer&#x2019;s" -> "employer's"),
    markup left in it dropped ("Redundancies</p>"), spaces collapsed; "" for a title made of
    table cells (``ingest_worker.ingest`` titles such a page by its opening words)."""
    if _TABLE_CELLS.search(raw):
        return ""
    return " ".join(undo_printf(html.unescape(_TAG.sub(" ", raw))).split())


def inline_text(element: etree._Element, skip: tuple[etree._Element, ...] = ()) -> str:
    """Text of an element's content (not its tail); <br> becomes a line break; ``skip``
    leaves out nested elements (a list item's sub-list) but keeps the text after them."""
    parts: list[str] = []

    def walk(el: etree._Element) -> None:
        if isinstance(el.tag, str) and el.tag not in SKIP_TAGS and el not in skip:
            if el.tag == "br":
                parts.append("\n")
            parts.append(el.text or "")
            for child in el:
                walk(child)
        parts.append(el.tail or "")

    parts.append(element.text or "")
    for child in element:
        walk(child)
    return "".join(parts)


def hrefs_in(element: etree._Element, skip: tuple[etree._Element, ...] = ()) -> list[str]:
    inside_skipped = {id(a) for nested in skip for a in nested.iter("a")}
    return [a.get("href", "") for a in element.iter("a") if a.get("href") and id(a) not in inside_skipped]
