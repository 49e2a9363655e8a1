"""How the scorer reads a reply's text: whether a claim reads alone, the reading windows, and
whether a key fact is stated (figures written one way, not inside a longer number or word)
or a claim's checkable facts are in the text it cites."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Sequence

FactsFn = Callable[[str], set[str]]


# A claim a person can read alone starts as a sentence does (a capital, a pound sign, a quote
# mark or bracket) or as a rendered table row does, its label and a colon ("6.4.2010: ...",
# "rotary engine: 2009/10 235"), and does not stop on a word that needs more ("... given and",
# "... in Section", "... as follows,").
_SENTENCE_START = re.compile(r"^(?:[\"'\u2018\u201c(\[]?[A-Z\u00a3]|[^:;]{1,30}:\s)")
_NEEDS_MORE = re.compile(
    r"(?:\b(?:and|or|but|nor|of|the|to|for|by|with|in|on|at|a|an|than|that|which|where|if|is|are|Section|Schedule|paragraph|regulation)|[,(\u2013-])$",
)


def reads_alone(claim: str) -> bool:
    """Whether a claim can be read on its own (not "201(3) ITEPA 2003 (see EIM20502).", "338.",
    "it is a widespread custom for such presents to be given and")."""
    text = claim.strip()
    return len(text.split()) >= 3 and bool(_SENTENCE_START.match(text)) and not _NEEDS_MORE.search(text)


REPLY_WINDOW_WORDS = 350  # a longer reply earns nothing past this word
LEAD_WINDOW_WORDS = 60  # what a reader takes in at a glance


def first_words(text: str, limit: int) -> str:
    return " ".join(text.split()[:limit])


def word_count(text: str) -> int:
    return len(text.split())



_FOLD = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\xa0": " ", "£": ""}
)


_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_PENCE = re.compile(r"(?<=\d) ?pence\b", re.I)
_PERCENT = re.compile(r"(?<=\d) ?(?:per ?cent|percent)\b", re.I)


def normalise_text(text: str) -> str:
    """Entities decoded, quotes and dashes folded, £ dropped, case and spaces folded, and one
    figure written one way: a number's thousands commas dropped ("£1,022" is "£1022"), pence
    and per cent as symbols ("15 pence" is "15p", "10 per cent" is "10%")."""
    text = _THOUSANDS.sub("", html.unescape(text).translate(_FOLD))
    return " ".join(_PERCENT.sub("%", _PENCE.sub("p", text)).casefold().split())


_NO_LETTER_BEFORE = r"(?<![^\W\d_])"
_NO_LETTER_AFTER = r"(?![^\W\d_])"


def key_fact_found(fact: str, answer_text: str) -> bool:
    needle = normalise_text(fact)
    if not needle:
        return True
    # Not inside a longer number or word ("5p" is not in "45p", "5,000" not in "15,000" or
    # "5,000.50", "rate" not in "separate"), but the scrape's run-together cells still count:
    # "25p" is in "45p25p" and "10,000" in "First 10,000After that", as on the page itself.
    before = r"(?<!\d)(?<!\d[.,])" if needle[0].isdigit() else _NO_LETTER_BEFORE if needle[0].isalpha() else ""
    after = r"(?!\d)(?![.,]\d)" if needle[-1].isdigit() else _NO_LETTER_AFTER if needle[-1].isalpha() else ""
    return re.search(before + re.escape(needle) + after, normalise_text(answer_text)) is not None


def facts_in_texts(facts: Sequence[str], texts: Iterable[str]) -> list[str]:
    """The facts some text states (e.g. missing key facts that a selected page does state)."""
    texts = list(texts)
    return [f for f in facts if any(key_fact_found(f, t) for t in texts)]


def claim_grounded(claim: str, cited_texts: Sequence[str], facts: FactsFn) -> tuple[bool, list[str]]:
    """Whether every checkable fact of the claim appears in its cited text; the missing ones."""
    if not cited_texts:
        return False, ["no resolvable citation"]
    available: set[str] = set()
    for text in cited_texts:
        available |= facts(text)
    missing = sorted(facts(claim) - available)
    return not missing, missing
