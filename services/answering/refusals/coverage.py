"""low_coverage's evidence: what the question is about that the manual does not contain.

- A subject the question names that is nowhere in the manual or its candidate pages: a
  scheme named by its acronym, a rule named by its amount (``missing_subjects``).
- A rule the question dates after the manual's last update (``later_rule``): low_coverage,
  not stale, as the manual never had it. (A later *period* asked of a rule the manual has is
  stale: services/answering/refusals/stale.py.)

Each check says what it found; services/answering/refusals/decide.py says whether it refuses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from shared.contracts.corpus import Page
from shared.contracts.refusals import LaterRule
from services.text.figures import MONTH, checkable_facts
from services.text.terms import CorpusStats, defined_acronyms, terms

# A scheme or rule named by an acronym with at least two capitals ("OpRA", "PSA", "SAYE").
_SCHEME_ACRONYM = re.compile(r"\b(?=[A-Za-z]*[A-Z][a-z]*[A-Z])[A-Za-z]{2,8}\b")
# A rule named by its amount: "the £500 exemption", "the £30k tax-free treatment", "the
# £50 trivial benefits exemption" (the words between name what the rule is about).
_AMOUNT_RULE = re.compile(
    r"\u00a3\s?\d[\d,.]*\s?k?\b\s+((?:[a-z][\w'-]*\s+){0,3}?)"
    r"(?:exemptions?|allowances?|limits?|thresholds?|reliefs?|rules?|treatment|caps?|bands?|disregards?|schemes?)\b",
    re.I,
)
# Words that say how a rule applies, not what it is about.
_GENERIC_RULE_WORDS = frozenset(terms("tax free tax-free annual yearly monthly weekly daily per statutory new old basic general standard flat fixed"))


_RULE_NOUNS = r"(?:rules?|scheme|regime|arrangements?|exemption|relief|allowance|charge|legislation|provisions?)"


def _asks_about_acronym(question: str, acronym: str) -> bool:
    """Whether the question is about what the acronym names (the OpRA rules, under the PSA
    scheme, 'optional remuneration arrangement (OpRA)'), not merely mentioning it in passing
    ("a body like the ICAEW")."""
    a = re.escape(acronym)
    return bool(
        re.search(rf"\({a}\)|\b{a}s?\s+{_RULE_NOUNS}\b|\bunder\s+(?:the\s+|an?\s+)?(?:\w+\s+){{0,3}}{a}\b", question)
    )


def _in_manual(name: str, stats: CorpusStats) -> bool:
    """Whether the manual uses every word of a name the question spells out (at least two)."""
    named = terms(name)
    return len(named) >= 2 and all(stats.df.get(t, 0) for t in named)


def missing_subjects(question: str, stats: CorpusStats, evidence: Sequence[str]) -> list[str]:
    """The question's named subjects the manual does not contain.

    Acronyms must occur somewhere in the manual, or be the initials of a name it spells
    out (ECA: "Electrical Contractors' Association"); an amount that names a rule must occur in
    the candidate pages for the question (``evidence``, one text per passage), in a passage
    about what the rule is named for ("the £50 trivial benefits exemption" needs £50 where
    trivial benefits are: the manual has many '£50's, but not in the right place).
    """
    missing = []
    spelled_out = {acronym for acronym, name in defined_acronyms(question, linking_letters=True) if _in_manual(name, stats)}
    for acronym in dict.fromkeys(a for a in _SCHEME_ACRONYM.findall(question) if _asks_about_acronym(question, a)):
        if acronym in spelled_out:  # "a benefit in kind (BIK)": the question names it in the manual's words
            continue
        forms = {acronym.lower(), acronym.lower() + "s"}
        if acronym.endswith("s") and acronym[:-1].isupper():
            forms.add(acronym[:-1].lower())  # PSAs -> PSA
        if not forms & stats.vocab and not forms & stats.initials:  # nor a name it spells out in full
            missing.append(acronym)
    named = list(_AMOUNT_RULE.finditer(question))
    if named:
        passages = [(checkable_facts(text), set(terms(text))) for text in evidence]
        for m in named:
            facts = checkable_facts(m.group(0))
            about = set(terms(m.group(1))) - _GENERIC_RULE_WORDS
            if facts and not any(facts <= stated and about <= words_ for stated, words_ in passages):
                missing.append(m.group(0))
    return missing


_RULE = r"(?:rules?|scheme|regime|arrangements?|exemptions?|relief|allowance|charge|legislation|provisions?|levy|cap|test|treatment|changes?|reforms?)"
# Nouns that name one rule, never a figure or the law for a period: "the exemption from April
# 2016" dates the exemption, where "the allowance from April 2026" asks for a later period's
# figure and "the rules from April 2020" for the law as it stood then (stale when later).
_RULE_ONLY = r"(?:scheme|regime|exemption|relief|reform)"
# A bare year that dates a rule: "the 2019 loan charge", "the April 2017 exemption", "the
# relief introduced in 2016", "the exemption from April 2016" (not "for 2025-26" or "in the
# 2025 tax year": those ask for a period).
_DATED_RULE = re.compile(
    rf"\b(?:the|a|an|its)\s+(?:(?:\d{{1,2}}\s+)?{MONTH}\s+)?(?P<y1>(?:19|20)\d{{2}})(?![-/\u2013]\d)\s+(?!tax\s+year|year)(?:[\w-]+\s+){{0,3}}?{_RULE}\b"
    rf"|\b{_RULE}\s+(?:[\w-]+\s+){{0,4}}?(?:introduced|brought\s+in|came\s+in|started|new)\s+(?:in\s+|on\s+|from\s+)?(?:(?:\d{{1,2}}\s+)?{MONTH}\s+)?(?P<y2>(?:19|20)\d{{2}})(?![-/\u2013]\d)"
    rf"|\b{_RULE_ONLY}\s+(?:from|since)\s+(?:(?:\d{{1,2}}\s+)?{MONTH}\s+)?(?P<y3>(?:19|20)\d{{2}})(?![-/\u2013]\d)",
    re.I,
)


def later_rule(question: str, pages: list[Page]) -> LaterRule | None:
    """The first rule the question dates after the newest answering page's update ("the 2019
    loan charge"): the manual cannot contain it; or None."""
    if not pages:
        return None
    latest = max(p.public_updated_at for p in pages).date()
    for m in _DATED_RULE.finditer(question):
        year = int(m.group("y1") or m.group("y2") or m.group("y3"))
        if date(year, 1, 1) > latest:
            return LaterRule(named=m.group(0), year=year, latest_update=latest)
    return None
