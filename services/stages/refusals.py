"""Typed refusals that need the evidence: low_coverage, stale, conflict.

(``malformed`` and ``out_of_scope`` come from the scope guard, before retrieval.)

- low_coverage: nothing relevant survives selection, or the question's own subject (a
  scheme named by its acronym, a rule named by its amount) is nowhere in the manual or the
  pages that would answer.
- stale: the question names a tax year that starts after the last update of every page
  that could answer it.
- conflict: two selected pages state different figures (or opposite treatments) in
  otherwise the same words, and the question does not say which applies.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime

from shared.contracts.api import Refusal
from shared.contracts.corpus import Page, Paragraph, section_of
from shared.contracts.pipeline import Draft
from services.stages.text import CorpusStats, checkable_facts, has_negation, terms, years_named, words

# ---- low_coverage ---------------------------------------------------------------------

# A scheme or rule named by an acronym with at least two capitals ("OpRA", "PSA", "SAYE").
_ACRONYM = re.compile(r"\b(?=[A-Za-z]*[A-Z][a-z]*[A-Z])[A-Za-z]{2,8}\b")
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


def _names_subject(question: str, acronym: str) -> bool:
    """Whether the question is about what the acronym names (the OpRA rules, under the PSA
    scheme, 'optional remuneration arrangement (OpRA)'), not merely mentioning it in passing
    ("a body like the ICAEW")."""
    a = re.escape(acronym)
    return bool(
        re.search(rf"\({a}\)|\b{a}s?\s+{_RULE_NOUNS}\b|\bunder\s+(?:the\s+|an?\s+)?(?:\w+\s+){{0,3}}{a}\b", question)
    )


def missing_subjects(question: str, stats: CorpusStats, evidence: Sequence[str]) -> list[str]:
    """The question's named subjects the manual does not contain.

    Acronyms must occur somewhere in the manual; an amount that names a rule must occur in
    the candidate pages for the question (``evidence``, one text per passage), in a passage
    about what the rule is named for ("the £50 trivial benefits exemption" needs £50 where
    trivial benefits are: the manual has many '£50's, but not in the right place).
    """
    missing = []
    for acronym in dict.fromkeys(a for a in _ACRONYM.findall(question) if _names_subject(question, a)):
        forms = {acronym.lower(), acronym.lower() + "s"}
        if acronym.endswith("s") and acronym[:-1].isupper():
            forms.add(acronym[:-1].lower())  # PSAs -> PSA
        if not forms & stats.vocab:
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


def low_coverage(message: str, **evidence: object) -> Refusal:
    return Refusal(category="low_coverage", message=message, evidence=dict(evidence))


# ---- stale ----------------------------------------------------------------------------


def _period_start(year: int, tax_year: bool) -> date:
    return date(year, 4, 6) if tax_year else date(year, 1, 1)


def stale(question: str, pages: list[Page], paragraph_ids: list[str] | None = None) -> Refusal | None:
    """Refuse when every named period starts after the newest of the answering pages."""
    named = years_named(question)
    if not named or not pages:
        return None
    latest: datetime = max(p.public_updated_at for p in pages)
    later = [(y, t) for y, t in named if _period_start(y, t) > latest.date()]
    if not later or len(later) < len(named):
        return None
    label = ", ".join(f"{y}-{(y + 1) % 100:02d}" if t else str(y) for y, t in later)
    return Refusal(
        category="stale",
        message=f"The question asks about {label}, but the manual pages that answer it were last updated on {latest.date().isoformat()}.",
        evidence={
            "asked_for": label,
            "latest_update": latest.isoformat(),
            "pages": [
                {"section_id": p.section_id, "title": p.title, "url": p.url, "public_updated_at": p.public_updated_at.isoformat()}
                for p in pages
            ],
            "paragraph_ids": paragraph_ids or [],
        },
    )


# ---- conflict -------------------------------------------------------------------------

SAME_STATEMENT = 0.75  # Jaccard of the non-numeric terms of two sentences
_FIGURE = re.compile(r"^\d[\d.]*(?:%|p)?$")
_YEARISH = re.compile(r"^(?:19|20)\d{2}(?:-\d{2}(?:-\d{2})?)?$")


def _words_only(text: str) -> set[str]:
    return {t for t in terms(text) if not any(ch.isdigit() for ch in t)}


def conflict(
    question: str, draft: Draft, paragraphs: dict[str, Paragraph], illustrative: frozenset[str] = frozenset()
) -> Refusal | None:
    """Two cited sentences from different pages that say the same thing with different
    figures (or one with 'not'), when the question names no period that would decide it.

    Only statements of a rule can conflict: table rows and worked examples
    (``illustrative`` paragraph ids) carry each case's own made-up figures."""
    if years_named(question):
        return None
    sentences = [
        s
        for s in draft.sentences
        if s.citations
        and not any(c in illustrative or (c in paragraphs and paragraphs[c].kind == "table") for c in s.citations)
    ]
    for i, a in enumerate(sentences):
        for b in sentences[i + 1 :]:
            if {section_of(c) for c in a.citations} & {section_of(c) for c in b.citations}:
                continue
            wa, wb = _words_only(a.text), _words_only(b.text)
            if not wa or not wb or len(wa & wb) / len(wa | wb) < SAME_STATEMENT:
                continue
            fa, fb = checkable_facts(a.text), checkable_facts(b.text)
            figures_a = {f for f in fa if _FIGURE.match(f) and not _YEARISH.match(f)}
            figures_b = {f for f in fb if _FIGURE.match(f) and not _YEARISH.match(f)}
            periods_differ = {f for f in fa if _YEARISH.match(f)} != {f for f in fb if _YEARISH.match(f)}
            differ_figures = figures_a and figures_b and figures_a != figures_b and not periods_differ
            differ_treatment = has_negation(a.text) != has_negation(b.text) and not (fa ^ fb)
            if not (differ_figures or differ_treatment):
                continue
            what = "different figures" if differ_figures else "opposite treatments"
            return Refusal(
                category="conflict",
                message=f"Two pages of the manual give {what} for the same thing, and the question does not say which case applies.",
                evidence={
                    "paragraph_ids": [a.citations[0], b.citations[0]],
                    "paragraphs": [
                        {"paragraph_id": c, "section_id": section_of(c), "text": paragraphs[c].text if c in paragraphs else ""}
                        for c in (a.citations[0], b.citations[0])
                    ],
                    "statements": [a.text, b.text],
                    "what_would_decide": "the tax year and the circumstances each page applies to, which the question does not give",
                    "differing": sorted((figures_a ^ figures_b) if differ_figures else {w for w in words(a.text + " " + b.text) if w in {"not", "no", "never"}}),
                },
            )
    return None
