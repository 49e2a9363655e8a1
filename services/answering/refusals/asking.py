"""Whether a question asks for today's figure: read by the stale check. Whether a text asks for
a figure at all is services/text/question.py's (``asks_for_figure``), the amounts a text
states services/text/amounts.py's."""

from __future__ import annotations

from services.answering.scope import asks, clauses
from services.text.question import asks_for_figure
from services.text.vocabulary import combos, phrases

# A question about the present: the asker wants today's figure, whatever year the manual is.
_NOW = phrases(
    (
        *combos(("this",), ("", "tax"), ("year", "year's")), "now", "nowadays", "these days", "current", "currently", "today",
        "today's", *combos(("at",), ("", "the"), ("moment", "present")), "for the coming year", "in the coming year",
    ),
    spaced=True,
)


def asks_about_now(question: str) -> bool:
    """An asking clause wants a figure as it stands today ("what is the allowance this
    year?"); "I drove 12,000 miles this year - how much can I claim?" does not: the time
    word is in a statement, not in what is asked."""
    return any(_NOW.search(c) and asks_for_figure(c) for c in clauses(question) if asks(c))
