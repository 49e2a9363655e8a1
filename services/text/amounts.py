"""Amounts in text: money, pence and percentages as a rule or an asker states them, read one
way (``AMOUNT``) and seen two ways: the pounds as numbers (``pounds``: "£5,000" -> 5000.0,
"£30k" -> 30000.0), and every amount as its normalised text (``amounts``: "£5,000" ->
"£5000", "45p", "21%"). Whether one amount is near another, and whether a sentence sets a
limit near the asker's own."""

from __future__ import annotations

import re

from services.text.vocabulary import phrases

# An amount: pounds ("£5,000", "£30k", "£2 million"), pence ("45p") or a percentage ("21%",
# "21 per cent"). Pence and percentages stand alone: not the tail of a word or of a number
# ("EIM45p"; "1.5p" is read whole, never as "5p").
AMOUNT = re.compile(
    r"\u00a3\s?(?P<pounds>\d[\d,]*(?:\.\d+)?)(?:\s?(?P<scale>k|m|million)\b)?"
    r"|(?<![\w.])\d+(?:\.\d+)?p\b|(?<![\w.])\d+(?:\.\d+)?\s?(?:%|per\s?cent\b)",
    re.I,
)


def pounds(text: str) -> list[float]:
    """The pounds amounts a text states, as numbers ('£5,000' -> 5000.0, '£30k' -> 30000.0;
    '£2m' -> 2.0: only thousands are scaled)."""
    return [
        float(m.group("pounds").replace(",", "")) * (1000 if (m.group("scale") or "").lower() == "k" else 1)
        for m in AMOUNT.finditer(text)
        if m.group("pounds")
    ]


def amounts(text: str) -> list[str]:
    """The amounts a text states, normalised ('£5,000' -> '£5000', '45p', '21%'); an escaped
    pound sign ('&#xA3;5') reads as one."""
    out = []
    for m in AMOUNT.finditer(text.replace("&#xA3;", "\u00a3")):
        a = "".join(ch for ch in m.group(0) if not ch.isspace() and ch != ",")
        out.append(a.lower().replace("percent", "%").replace("per", ""))
    return out


def kind(amount: str) -> str:
    """pounds, percent or pence: only amounts of one kind compare."""
    return "pounds" if amount.startswith("\u00a3") else "percent" if amount.endswith("%") else "pence"


def near_amount(asked: list[float], stated: list[float]) -> bool:
    """Whether the text states a different amount of the same order as one the asker gives."""
    return any(a != b and 0.4 <= b / a <= 2.5 for a in asked if a > 0 for b in stated)


# Words that make an amount a limit the asker's own is measured against ("does not exceed
# £5,000", "the £30,000 threshold", "up to £150 a head", "the first £500").
_LIMIT_WORDS = phrases(
    (
        "exceed", "exceeds", "exceeding", "not more than", "no more than", "more than", "less than", "up to", "at least",
        "at most", "limit", "threshold", "maximum", "minimum", "ceiling", "cap", "capped", "first \u00a3", "below", "above",
        "over", "under",
    )
)


def states_limit_near(asked: list[float], sentence: str) -> bool:
    """Whether a sentence sets a limit of the same order as an amount the asker gives (a £3,600
    loan against the £5,000 small-loans limit): the rule the asker's figure is measured against."""
    return bool(asked) and bool(_LIMIT_WORDS.search(sentence)) and near_amount(asked, pounds(sentence))
