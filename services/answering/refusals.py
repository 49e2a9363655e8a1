"""Typed refusals that need the evidence: low_coverage, stale, conflict.

(``malformed`` and ``out_of_scope`` come from the scope guard, services/answering/scope.py.)
Each category means one thing (shared/contracts/refusals.py has the evidence models):

- low_coverage: the rule, relief or amount asked about does not appear in the manual: nothing
  relevant survives selection, or the question's own subject (a scheme named by its
  acronym, a rule named by its amount) is nowhere in the manual or the answering pages.
  A rule that came after the manual's wording is low_coverage, not stale: the manual never
  had it.
- stale: the manual covers the rule, but the question asks for a year or figure later than
  the answering pages' last update: a named tax year that starts after every page's update,
  or "this year / now / current" asked of a figure the manual gives only for years long
  past. The evidence carries the latest figures the manual has, with year and citation.
- conflict: the answer's pages give different values for the asked quantity under
  conditions (the pages' subjects: an occupation, a kind of vehicle, ...) that the question
  does not settle. Only a question that asks for a figure can conflict, only statements of
  a rule (not worked examples, headings or table rows keyed by anything but a period) count,
  the pages may be any the question retrieved (not only those selection kept), and a
  difference in wording alone ("is" / "is not", step 1 / step 5) is never a conflict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime

from pydantic import BaseModel

from shared.contracts.api import Refusal
from shared.contracts.corpus import Chunk, Page, Paragraph, section_of
from shared.contracts.pipeline import Draft, DraftSentence
from shared.contracts.refusals import (
    ConflictEvidence,
    ConflictOption,
    ConflictParagraph,
    LatestFigure,
    LowCoverageEvidence,
    PageRef,
    StaleEvidence,
)
from services.answering.scope import asks, clauses
from services.text.figures import checkable_facts, period_start, years_named
from services.text.sentences import split_sentences, statements
from services.text.terms import CorpusStats, query_terms, terms

# ---- low_coverage ---------------------------------------------------------------------

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


def missing_subjects(question: str, stats: CorpusStats, evidence: Sequence[str]) -> list[str]:
    """The question's named subjects the manual does not contain.

    Acronyms must occur somewhere in the manual, or be the initials of a name it spells
    out (ECA: "Electrical Contractors' Association"); an amount that names a rule must occur in
    the candidate pages for the question (``evidence``, one text per passage), in a passage
    about what the rule is named for ("the £50 trivial benefits exemption" needs £50 where
    trivial benefits are: the manual has many '£50's, but not in the right place).
    """
    missing = []
    for acronym in dict.fromkeys(a for a in _SCHEME_ACRONYM.findall(question) if _asks_about_acronym(question, a)):
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


_MONTH = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_RULE = r"(?:rules?|scheme|regime|arrangements?|exemptions?|relief|allowance|charge|legislation|provisions?|levy|cap|test|treatment|changes?|reforms?)"
# Nouns that name one rule, never a figure or the law for a period: "the exemption from April
# 2016" dates the exemption, where "the allowance from April 2026" asks for a later period's
# figure and "the rules from April 2020" for the law as it stood then (stale when later).
_RULE_ONLY = r"(?:scheme|regime|exemption|relief|reform)"
# A bare year that dates a rule: "the 2019 loan charge", "the April 2017 exemption", "the
# relief introduced in 2016", "the exemption from April 2016" (not "for 2025-26" or "in the
# 2025 tax year": those ask for a period).
_DATED_RULE = re.compile(
    rf"\b(?:the|a|an|its)\s+(?:(?:\d{{1,2}}\s+)?{_MONTH}\s+)?(?P<y1>(?:19|20)\d{{2}})(?![-/\u2013]\d)\s+(?!tax\s+year|year)(?:[\w-]+\s+){{0,3}}?{_RULE}\b"
    rf"|\b{_RULE}\s+(?:[\w-]+\s+){{0,4}}?(?:introduced|brought\s+in|came\s+in|started|new)\s+(?:in\s+|on\s+|from\s+)?(?:(?:\d{{1,2}}\s+)?{_MONTH}\s+)?(?P<y2>(?:19|20)\d{{2}})(?![-/\u2013]\d)"
    rf"|\b{_RULE_ONLY}\s+(?:from|since)\s+(?:(?:\d{{1,2}}\s+)?{_MONTH}\s+)?(?P<y3>(?:19|20)\d{{2}})(?![-/\u2013]\d)",
    re.I,
)


def later_rule(question: str, pages: list[Page]) -> Refusal | None:
    """low_coverage for a rule the question dates after the manual's last update ("the 2019
    loan charge"): the manual cannot contain it. (A later *period* asked of a rule the manual
    has is ``stale``, not this.)"""
    if not pages:
        return None
    latest = max(p.public_updated_at for p in pages).date()
    for m in _DATED_RULE.finditer(question):
        year = int(m.group("y1") or m.group("y2") or m.group("y3"))
        if date(year, 1, 1) > latest:
            return low_coverage(
                f"The question is about a rule dated {year}, after the manual's pages were last updated ({latest.isoformat()}): the manual does not contain it.",
                missing=[m.group(0)],
                searched=[p.section_id for p in pages],
            )
    return None


def low_coverage(message: str, **evidence: object) -> Refusal:
    return Refusal(category="low_coverage", message=message, evidence=LowCoverageEvidence.model_validate(evidence))


# ---- what a question asks for ---------------------------------------------------------

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
# An amount a rule states: pounds, pence or a percentage.
_AMOUNT = re.compile(
    r"(?:\u00a3|&#xA3;)\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|million)\b)?|(?<![\w.])\d+(?:\.\d+)?p\b|(?<![\w.])\d+(?:\.\d+)?\s?(?:%|per\s?cent\b)",
    re.I,
)


def asks_for_figure(text: str) -> bool:
    return bool(_ASKS_FIGURE.search(text))


def asks_about_now(question: str) -> bool:
    """An asking clause wants a figure as it stands today ("what is the allowance this
    year?"); "I drove 12,000 miles this year - how much can I claim?" does not: the time
    word is in a statement, not in what is asked."""
    return any(_NOW.search(c) and asks_for_figure(c) for c in clauses(question) if asks(c))


def amounts(text: str) -> list[str]:
    """The amounts a text states, normalised ('£5,000' -> '£5000', '45p', '21%')."""
    out = []
    for m in _AMOUNT.finditer(text.replace("&#xA3;", "\u00a3")):
        a = re.sub(r"\s+|,", "", m.group(0)).lower().replace("percent", "%").replace("per", "")
        out.append(a)
    return out


def _kind(amount: str) -> str:
    return "pounds" if amount.startswith("\u00a3") else "percent" if amount.endswith("%") else "pence"


# ---- stale ----------------------------------------------------------------------------

LONG_PAST_YEARS = 2  # a figure whose latest year is more than this before today is long past
LATEST_FIGURES = 3


def _year_label(year: int, tax_year: bool) -> str:
    return f"{year}-{(year + 1) % 100:02d}" if tax_year else str(year)


def latest_figures(question: str, chunks: Sequence[Chunk], illustrative: frozenset[str] = frozenset()) -> tuple[int | None, list[LatestFigure]]:
    """The statements of the answering pages that tie an amount to a year, in passages on
    the question's subject (a term of the question in the passage or its headings), for the
    latest year they name: what the manual says most recently. Worked examples
    (``illustrative`` chunk ids) are left out: their years are the example's. (None, [])
    when no such figure is tied to a year (the figure is not year-specific)."""
    asked = set(query_terms(question))
    dated: list[tuple[int, str, str, Paragraph]] = []
    for chunk in chunks:
        if chunk.id in illustrative or not asked & set(terms(" ".join(chunk.heading_path[-2:]) + " " + chunk.text)):
            continue
        introduced: list[tuple[int, bool]] = []  # the years of a lead-in ("the rates from 6 April 2009 are:")
        for paragraph in chunk.paragraphs:
            if paragraph.kind == "heading":
                continue
            for statement in statements(paragraph, dated=True):
                named = years_named(statement) or (introduced if paragraph.kind in {"table", "li"} else [])
                if named and amounts(statement):
                    year, tax_year = max(named)
                    dated.append((year, _year_label(year, tax_year), statement, paragraph))
            if paragraph.kind == "p":
                introduced = years_named(paragraph.text) if paragraph.text.rstrip().endswith(":") else []
    if not dated:
        return None, []
    latest = max(y for y, *_ in dated)
    figures = [
        LatestFigure(text=text, year=label, paragraph_id=p.id, section_id=section_of(p.id))
        for y, label, text, p in dated
        if y == latest
    ]
    return latest, list({f.text: f for f in figures}.values())[:LATEST_FIGURES]


def example_chunks(chunks: Sequence[Chunk]) -> frozenset[str]:
    """Chunks under a heading that names an example (worked examples carry made-up years)."""
    return frozenset(c.id for c in chunks if "example" in " ".join(c.heading_path[-3:]).lower())


def stale(
    question: str,
    pages: list[Page],
    paragraph_ids: list[str] | None = None,
    chunks: Sequence[Chunk] = (),
    today: date | None = None,
    known_pages: Mapping[str, Page] | None = None,
) -> Refusal | None:
    """Refuse when every period the question names starts after the newest answering page,
    or when it asks for today's figure and the answering pages (``chunks``) give their
    figures only for years long past."""
    if not pages:
        return None
    latest: datetime = max(p.public_updated_at for p in pages)
    named = years_named(question)
    if named:
        later = [(y, t) for y, t in named if period_start(y, t) > latest.date()]
        if not later or len(later) < len(named):
            return None
        asked_for = ", ".join(_year_label(y, t) for y, t in later)
        figures = latest_figures(question, chunks, example_chunks(chunks))[1]
        message = f"The question asks about {asked_for}, but the manual pages that answer it were last updated on {latest.date().isoformat()}."
    else:
        if not asks_about_now(question):
            return None
        year, figures = latest_figures(question, chunks, example_chunks(chunks))
        now = today or date.today()
        if year is None or year >= now.year - LONG_PAST_YEARS:
            return None
        asked_for = "the current year"
        message = (
            f"The question asks for today's figure, but the latest figure the manual gives is for {figures[0].year} "
            f"(its pages were last updated on {latest.date().isoformat()})."
        )
    shown = {f.section_id for f in figures} | {section_of(p) for p in paragraph_ids or []}
    # a figure may come from a candidate page selection left out: name its page too
    lookup = {**(known_pages or {}), **{p.section_id: p for p in pages}}
    named_pages = [p for p in pages if p.section_id in shown or not shown]
    named_pages += [lookup[s] for s in sorted(shown - {p.section_id for p in named_pages}) if s in lookup]
    return Refusal(
        category="stale",
        message=message,
        evidence=StaleEvidence(
            asked_for=asked_for,
            latest_update=latest,
            pages=[
                PageRef(section_id=p.section_id, title=p.title, url=p.url, manual=p.manual, public_updated_at=p.public_updated_at)
                for p in named_pages
            ],
            paragraph_ids=paragraph_ids or [],
            latest_figures=figures,
        ),
    )


# ---- conflict -------------------------------------------------------------------------

# Two statements speak of one quantity when every word of the shorter one (at least two) is
# in the longer one: "The amount of the deduction is £80" / "The amount of the flat rate
# expense deduction is £100 per year". "Mileage payments are exempt up to 45p" / "Passenger
# payments are exempt up to 5p" each name their own subject: two quantities, no conflict.
MIN_SHARED_WORDS = 2


class Case(BaseModel):
    """What a page is about, as a conflict option's condition: its title, and its own words
    (which tell whether the question already names this case)."""

    title: str
    lead: str  # the page's first sentence: names the case where titles are alike
    text: str  # the page's own sentences (``own_words``)


# A sentence that sends the reader to another page ("... for nurses, see EIM67210").
_POINTER = re.compile(r"\b(?:see|at)\s+(?:also\s+)?[A-Z]{2,5}\d{3,6}[A-Z]?\b")


def own_words(texts: Sequence[str]) -> str:
    """A page's sentences that speak of its own case: a sentence pointing to another page
    speaks of that page's (the general laundering page names nurses only to send them to
    theirs, and "I'm a nurse" still chooses the nurses' case)."""
    return " ".join(s for text in texts for s in split_sentences(text) if not _POINTER.search(s))


def _words_only(text: str) -> set[str]:
    return {t for t in terms(text) if not any(ch.isdigit() for ch in t)}


def _label(case: Case, other: Case) -> str:
    """The page title when both titles have words of their own, else the page's first
    sentence (two pages both titled "laundering uniforms" differ in whom they are for)."""
    mine, theirs = _words_only(case.title), _words_only(other.title)
    return case.title if mine - theirs and theirs - mine else case.lead or case.title


def _settles(question: str, case: Case, other: Case, label: str) -> bool:
    """The question names this case: its label (a chosen option asks again with it), or a
    word of its title or first sentence that the other page never uses of its own case."""
    if " ".join(label.lower().split()) in " ".join(question.lower().split()):
        return True
    theirs = _words_only(" ".join([other.title, other.lead, other.text]))
    return bool(_words_only(question) & (_words_only(case.title + " " + case.lead) - theirs))


def _periods(text: str) -> frozenset[tuple[int, bool]]:
    return frozenset(years_named(text))


def could_conflict(question: str) -> bool:
    """Only a question asking for a figure, and naming no year, can get a conflict refusal."""
    return asks_for_figure(question) and not years_named(question)


Stated = tuple[DraftSentence, frozenset[str]]
_GIVES_EXAMPLE = re.compile(r"\W*(?:for\s+example|for\s+instance|e\.?g\.?)\b", re.I)


def _conflicting(question: str, a: Stated, b: Stated, cases: dict[str, Case], b_states_a: bool = False) -> tuple[str, str] | None:
    """The two cases' labels when statements ``a`` and ``b`` give different amounts for one
    quantity on two pages the question does not choose between; else None. ``b_states_a``:
    ``b`` must say everything ``a`` says (a left-out page restating the answer's quantity for
    its own case; a shorter sentence there, "R is a rate of 5p per mile", names too little)."""
    (sa, fa), (sb, fb) = a, b
    pa, pb = section_of(sa.citations[0]), section_of(sb.citations[0])
    if pa == pb or fa == fb or _kind(next(iter(fa))) != _kind(next(iter(fb))):
        return None
    if _periods(sa.text) and _periods(sb.text) and (not _periods(sa.text) & _periods(sb.text) or fa <= fb or fb <= fa):
        return None  # two periods of one rule, or one rule's figures by period, told twice ("£3 ... and £2 per week" / "£2 per week")
    wa, wb = _words_only(sa.text), _words_only(sb.text)
    if len(wa & wb) < MIN_SHARED_WORDS or (wa - wb and wb - wa) or (b_states_a and wa - wb):
        return None
    ca = cases.get(pa, Case(title=pa, lead="", text=sa.text))
    cb = cases.get(pb, Case(title=pb, lead="", text=sb.text))
    if b_states_a:
        # a left-out page is a rival case only when its title is as much about the question
        # as the answering page's ("car first registered before 1998" is not, beside "car
        # without an approved CO2 emissions figure", asked about a car with no CO2 figure)
        asked = set(query_terms(question))
        if len(asked & set(terms(cb.title))) < len(asked & set(terms(ca.title))):
            return None
    la, lb = _label(ca, cb), _label(cb, ca)
    if _settles(question, ca, cb, la) or _settles(question, cb, ca, lb):
        return None
    return la, lb


def conflict(
    question: str,
    draft: Draft,
    paragraphs: dict[str, Paragraph],
    illustrative: frozenset[str] = frozenset(),
    cases: dict[str, Case] | None = None,
    candidates: Sequence[DraftSentence] = (),
) -> Refusal | None:
    """The answer's pages give different amounts for what the question asks, in cases
    (``cases``: section id -> what the page is about) the question does not settle; or None.

    Only a question asking for a figure, and naming no year, can conflict. Two statements
    from different pages conflict when both state amounts of one kind (pounds, pence, per
    cent), the amounts differ, they speak of the same quantity (the words of one are all in
    the other), they are not two periods of one rule (both dated, with no period in common),
    and the question names neither page's case. Worked examples (``illustrative``) and
    headings never count; a table row counts only when it names its period ("2008/09
    onwards: amount per year \u00a360"): a row keyed by anything else is that case's own figure.

    ``candidates``: statements of pages retrieval found for the question that selection
    left out (``candidate_statements``). Whether the manual states the asked quantity for
    another case should not hang on a close call in selection, so an answer statement is
    also checked against these (never two candidates against each other: the answer must
    state the quantity itself). Every further statement that conflicts with one of the
    first two is an option too (the general rate, nurses, fire officers, ...)."""
    if not could_conflict(question):
        return None
    cases = cases or {}

    def stated(sentences: Sequence[DraftSentence]) -> list[Stated]:
        out = []
        for s in sentences:
            if s.role != "answer" or not s.citations:
                continue
            cited = paragraphs.get(s.citations[0])
            if cited is None or cited.kind == "heading" or s.citations[0] in illustrative:
                continue
            if cited.kind == "table" and not years_named(s.text):
                continue
            if _GIVES_EXAMPLE.match(s.text):
                continue  # an illustration's figures are the example's, as in a worked example
            found = amounts(s.text)
            if found and len({_kind(x) for x in found}) == 1:
                out.append((s, frozenset(found)))
        return out

    statements = stated(draft.sentences)
    others = stated(candidates)
    for i, a in enumerate(statements):
        for b in [*statements[i + 1 :], *others]:
            labels = _conflicting(question, a, b, cases, b_states_a=b in others)
            if labels is None:
                continue
            chosen = [(a, labels[0]), (b, labels[1])]
            for c in [*statements, *others]:
                pages = {section_of(x.citations[0]) for (x, _), _ in chosen}
                if section_of(c[0].citations[0]) in pages:
                    continue
                extra = next((found for found in (_conflicting(question, x, c, cases, b_states_a=c in others) for x, _ in chosen) if found), None)
                if extra is not None:
                    chosen.append((c, extra[1]))
            return _conflict_refusal(chosen, paragraphs)
    return None


def _conflict_refusal(chosen: list[tuple[Stated, str]], paragraphs: dict[str, Paragraph]) -> Refusal:
    options = [
        ConflictOption(condition=label, value=", ".join(sorted(found)), paragraph_id=s.citations[0], section_id=section_of(s.citations[0]))
        for (s, found), label in chosen
    ]
    ids = [o.paragraph_id for o in options]
    values = [frozenset(found) for (_, found), _ in chosen]
    return Refusal(
        category="conflict",
        message="The manual gives different figures for this in different cases, and the question does not say which case applies: choose one.",
        evidence=ConflictEvidence(
            options=options,
            paragraph_ids=ids,
            paragraphs=[ConflictParagraph(paragraph_id=c, section_id=section_of(c), text=paragraphs[c].text) for c in ids],
            statements=[s.text for (s, _), _ in chosen],
            what_would_decide="which case is yours: " + " or ".join(f"{o.condition} ({o.value})" for o in options),
            differing=sorted(frozenset.union(*values) - frozenset.intersection(*values)),
        ),
    )
