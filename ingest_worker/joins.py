"""The scrape's split sentences joined back (one <p> per wrapped source line), and markdown
bullets left inside a paragraph made list items of their own."""

from __future__ import annotations

import re

from ingest_worker.blocks import Block
from ingest_worker.cleaning import BULLET
from shared.contracts.corpus import ITEM_LABEL

# A paragraph ends a sentence with . ! ? : ; (maybe followed by closing quotes/brackets).
SENTENCE_END = re.compile(r"[.!?:;][)\]\"'\u2019\u201d\u00bb]*$")
# A continuation starts in lower case or with punctuation that cannot open a sentence; "(a)",
# "ii)", "b." open list items and "[Note ...]" / "(This text has been withheld ...)" are
# editorial asides, so those do not continue a sentence.
CONTINUES = re.compile(
    rf"^(?!{ITEM_LABEL})(?:[a-z,;:.)\]]|\((?!(?:[a-z]|[ivx]+|\d+)\))(?!This (?:text|content))|\[[a-z])"
)
# No paragraph ends on these words (or an open bracket), so what follows continues it even
# when it starts with a capital or a figure (a link "EIM21001", "Chapter 10", "£4,000";
# "(see EIM12978 and" / "EIM13070)."; "Service Charges And" / "Troncs").
DANGLING = re.compile(r"(?:(?:^|\W)(?:a|an|the|of|to|in|on|at|by|for|from|with|into|than|per|via|see|See|and|or|And|Or)|\()$")
STARTS_WORD = re.compile(rf"^(?!{ITEM_LABEL})[\w£$€\"\u201c']")


def _whole_aside(text: str) -> bool:
    """A paragraph that is one bracketed aside, e.g. "(This text has been withheld ... 2000)"."""
    return text[:1] in "([" and text[-1:] in ")]"


def _joins(block: Block, nxt: Block) -> bool:
    if block.kind != "p" or nxt.kind != "p" or block.group != nxt.group:  # <li> items, tables, quotes
        return False
    if SENTENCE_END.search(block.text) or _whole_aside(block.text):
        return False
    return bool(CONTINUES.match(nxt.text) or (DANGLING.search(block.text) and STARTS_WORD.match(nxt.text)))


def join_split_sentences(blocks: list[Block]) -> list[Block]:
    """Join a <p> that stops mid-sentence with the next <p> when that one carries on (lower
    case or continuation punctuation, or any word after a dangling "the" / "(see"). Applied per
    section, so headings never join; tables, real list items and quotes break the chain too."""
    joined: list[Block] = []
    for block in blocks:
        if joined and _joins(joined[-1], block):
            last = joined[-1]
            glue = "" if block.text[0] in ",;:.)]" or last.text[-1] in "([" else " "
            joined[-1] = Block(kind="p", text=last.text + glue + block.text, hrefs=last.hrefs + block.hrefs, group=last.group)
        else:
            joined.append(block)
    return joined


def split_bullets(blocks: list[Block]) -> list[Block]:
    """Each markdown bullet left in a paragraph or list item starts a list item of its own;
    a link goes with the piece that names its target (else with the first piece)."""
    out: list[Block] = []
    for block in blocks:
        if BULLET not in block.text or block.kind in ("table", "pre"):
            out.append(block)
            continue
        pieces = [(i, p.strip()) for i, p in enumerate(block.text.split(BULLET)) if p.strip()]
        made = [Block(kind=block.kind if i == 0 else "li", text=p, hrefs=[], group=block.group) for i, p in pieces]
        for href in block.hrefs:
            target = href.rstrip("/").rsplit("/", 1)[-1].split("#")[-1].upper()
            next((b for b in made if target and target in b.text.upper()), made[0]).hrefs.append(href)
        out += made
    return out
