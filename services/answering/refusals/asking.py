"""What a question asks for (a figure, today's figure): read by the stale and conflict checks.
The amounts a text states are services/text/amounts.py's."""

from __future__ import annotations

import re

from services.answering.scope import asks, clauses

# A question that asks for a figure: "how much", "what is the (exempt) amount / rate / limit".
# The figure is what is asked, not a word further on: "what are the rules on mileage rates?"
# asks for rules (no preposition between "what is the" and the figure).
_FIGURE_NOUN = r"(?:rates?|amounts?|limits?|figures?|sums?|allowances?|deductions?|thresholds?|percentages?|values?|charges?|caps?)"
_MODIFIER = r"(?:(?!(?:on|of|for|about|in|to|with|under|and|or)\b)[\w-]+\s+)"
_ASKS_FIGURE = re.compile(
    r"\bhow\s+(?:much|many)\b"
    rf"|\b(?:what|which)(?:'s|\s+(?:is|are|was|were|will\s+be))?\s+(?:the\s+|my\s+|our\s+)?{_MODIFIER}{{0,3}}?{_FIGURE_NOUN}\b"
    rf"|\b(?:current|latest|today's|this\s+year's)\s+{_MODIFIER}{{0,3}}?{_FIGURE_NOUN}\b",
    re.I,
)
# A question about the present: the asker wants today's figure, whatever year the manual is.
_NOW = re.compile(
    r"\b(?:this\s+(?:tax\s+)?year(?:'s)?|now|nowadays|these\s+days|current(?:ly)?|today(?:'s)?|at\s+(?:the\s+)?(?:moment|present)|(?:for|in)\s+the\s+coming\s+year)\b",
    re.I,
)
def asks_for_figure(text: str) -> bool:
    return bool(_ASKS_FIGURE.search(text))


def asks_about_now(question: str) -> bool:
    """An asking clause wants a figure as it stands today ("what is the allowance this
    year?"); "I drove 12,000 miles this year - how much can I claim?" does not: the time
    word is in a statement, not in what is asked."""
    return any(_NOW.search(c) and asks_for_figure(c) for c in clauses(question) if asks(c))
