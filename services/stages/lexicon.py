"""Everyday words for employment-tax things, mapped to the words the manual uses.

People ask about their "boss", a "perk", a "work phone" or a "leaving present"; the manual
says employer, benefit, mobile telephone, long service award. Keyword retrieval and the
lexical scores only meet the manual's pages if the question also carries the manual's words,
so ``expand`` adds them (the embedding sees the question as asked).
"""

from __future__ import annotations

import re

# lay phrase (regex, matched case-insensitively on word boundaries) -> the manual's words
LAY_TO_MANUAL: tuple[tuple[str, str], ...] = (
    (r"boss(?:es)?|firm|company i work for|work(?= gave| pays| paid| provides)", "employer"),
    (r"perks?|freebies?|fringe benefits?", "benefit in kind"),
    (r"work trips?|business trips?|work journeys?|site visits?", "business travel journeys"),
    (r"per mile|a mile|mileage", "mileage allowance payments"),
    (r"caps?|capped|ceiling|upper limit", "limit maximum"),
    (r"iphones?|smartphones?|work phones?|mobiles?|cell ?phones?", "mobile phone telephone"),
    (r"husband|wife|spouse|partner|children|kids|son|daughter", "family household member"),
    (r"presents?|gifts?", "gift award"),
    (r"years'? (?:of )?service|long[- ]service|work anniversary", "long service award"),
    (r"christmas (?:do|party|parties|dinner|lunch)|staff (?:party|do)|annual (?:do|party)", "annual function party"),
    (r"leaving (?:package|payment|do)|pay ?off|golden handshake|severance", "termination payment"),
    (r"made redundant|laid off|redundancy", "redundancy payment"),
    (r"work(?:ing)? from home|home ?work(?:ing|er)?|wfh", "homeworking household expenses"),
    (r"heating|electricity|gas bills?|utilities", "heating lighting"),
    (r"caretaker|live-in|tied (?:house|cottage)|lives? on site", "job-related accommodation"),
    (r"(?:lets|let) me live|(?:company|employer'?s?|rent-free) (?:house|flat|home)|home provided", "living accommodation"),
    (r"lunch(?:es)?|meals?|canteen|food", "meals canteen"),
    (r"uniforms?|work clothes|overalls", "uniform protective clothing"),
    (r"bikes?|bicycles?|cycle to work", "cycle"),
    (r"laptops?|computers?", "computer equipment"),
    (r"gym|sports club", "sports facilities"),
    (r"childcare|nursery|creche", "childcare vouchers"),
    (r"health (?:check|screening)|medical check", "medical check-up health screening"),
    (r"health insurance|medical insurance|private medical|bupa", "medical insurance premium"),
    (r"company car|work car|car (?:through|from) work", "car benefit"),
    (r"company van|works van|work van", "van benefit"),
    (r"petrol|diesel|fuel card|fuel", "fuel benefit"),
    (r"interest[- ]free|cheap loan|low[- ]interest", "beneficial loan"),
    (r"season ticket", "season ticket loan"),
    (r"moving (?:house|home)|relocat\w*|removal", "relocation removal expenses"),
    (r"expenses? claims?|reimburse\w*|receipts?", "expenses payments"),
    (r"maternity", "statutory maternity pay"),
    (r"paternity", "statutory paternity pay"),
    (r"shares|share options?|stock options?|shareholding", "securities share"),
    (r"staff ideas?|ideas? scheme", "staff suggestion scheme"),
    (r"tips?|gratuit\w*|service charges?", "tips troncs"),
    (r"university|degree course|college course", "full-time course"),
    (r"scholarships?|school fees", "scholarship"),
    (r"swap(?:ping)? (?:some )?(?:salary|pay)|give up (?:some )?(?:salary|pay)", "salary sacrifice"),
    (r"director'?s? (?:and officers'? )?(?:liability )?insurance|d&o", "liability insurance"),
    (r"lower[- ]paid|under[- ]\u00a3?8,?500", "lower paid employment"),
    (r"p11ds?", "P11D return"),
    (r"suppliers?|customers?|clients?", "third party"),
)
_COMPILED = tuple((re.compile(rf"\b(?:{lay})\b", re.I), manual) for lay, manual in LAY_TO_MANUAL)


def expansions(question: str) -> list[str]:
    """The manual's words for the everyday words in a question (none repeated)."""
    return list(dict.fromkeys(manual for pattern, manual in _COMPILED if pattern.search(question)))


def expand(question: str) -> str:
    """The question followed by the manual's words for its everyday words."""
    extra = expansions(question)
    return question + (" " + " ".join(extra) if extra else "")
