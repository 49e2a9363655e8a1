"""stale's evidence: the manual covers the rule, but the question asks for a year or figure
later than the answering pages' last update: a named tax year that starts after every page's
update, or "this year / now / current" asked of a figure the manual gives only for years long
past. The evidence carries the latest figures the manual has, with year and citation.

``stale_evidence`` says what it found; services/answering/refusals/decide.py refuses with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime

from shared.contracts.corpus import Chunk, Page, Paragraph, section_of
from shared.contracts.refusals import LatestFigure, PageRef, StaleEvidence
from services.answering.refusals.asking import asks_about_now
from services.answering.scope import asks, clauses
from services.text.amounts import amounts
from services.text.question import asks_for_figure
from services.text.figures import period_start, years_named
from services.text.sentences import statements
from services.text.reading import opening
from services.text.terms import query_terms, terms
from services.text.units import under_example

CURRENT_YEAR = "the current year"  # what a "this year / now" question asks for (StaleEvidence.asked_for)

LONG_PAST_YEARS = 2  # a figure whose latest year is more than this before today is long past
LATEST_FIGURES = 3


def year_label(year: int, tax_year: bool) -> str:
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
                    dated.append((year, year_label(year, tax_year), statement, paragraph))
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
    return frozenset(c.id for c in chunks if under_example(c.heading_path[-3:]))


# How a clause opens when it asks for a value for its period, not yes or no about a rule:
# "what's the charge for 2025-26?", "and for the 2027-28 tax year?", "how much in 2026?".
_VALUE_OPENERS = ("what", "which", "for", "in", "from", "during")


def asks_for_a_value(clause: str) -> bool:
    said = opening(clause, 4)
    return bool(said) and (said[0].startswith(_VALUE_OPENERS) or said[:2] in (["how", "much"], ["how", "many"]))


def asked_years(question: str) -> list[tuple[int, bool]]:
    """The years (and tax years) the question asks a figure for: named in a clause that asks,
    when the question asks for a figure or that clause asks for a value for its period. A year
    in the asker's story ("I was made redundant in November 2020. Do I pay tax on it?") dates
    what happened, not the figure wanted; nor does one in a yes-or-no question about a rule
    ("if he leaves during 2022/23, should the P11D show it pro rata?")."""
    asking = [c for c in clauses(question) if asks(c)]
    figure = any(asks_for_figure(c) for c in asking)
    return [year for c in asking if figure or asks_for_a_value(c) for year in years_named(c)]


def stale_evidence(
    question: str,
    pages: list[Page],
    paragraph_ids: list[str] | None = None,
    chunks: Sequence[Chunk] = (),
    today: date | None = None,
    known_pages: Mapping[str, Page] | None = None,
) -> StaleEvidence | None:
    """What the manual has instead, when every period the question names starts after the
    newest answering page, or when it asks for today's figure and the answering pages
    (``chunks``) give their figures only for years long past; else None."""
    if not pages:
        return None
    latest: datetime = max(p.public_updated_at for p in pages)
    named = asked_years(question)
    if named:
        later = [(y, t) for y, t in named if period_start(y, t) > latest.date()]
        if not later or len(later) < len(named):
            return None
        asked_for = ", ".join(year_label(y, t) for y, t in later)
        figures = latest_figures(question, chunks, example_chunks(chunks))[1]
    else:
        if not asks_about_now(question):
            return None
        year, figures = latest_figures(question, chunks, example_chunks(chunks))
        now = today or date.today()
        if year is None or year >= now.year - LONG_PAST_YEARS:
            return None
        asked_for = CURRENT_YEAR
    shown = {f.section_id for f in figures} | {section_of(p) for p in paragraph_ids or []}
    # a figure may come from a candidate page selection left out: name its page too
    lookup = {**(known_pages or {}), **{p.section_id: p for p in pages}}
    named_pages = [p for p in pages if p.section_id in shown or not shown]
    named_pages += [lookup[s] for s in sorted(shown - {p.section_id for p in named_pages}) if s in lookup]
    return StaleEvidence(
        asked_for=asked_for,
        latest_update=latest,
        pages=[
            PageRef(section_id=p.section_id, title=p.title, url=p.url, manual=p.manual, public_updated_at=p.public_updated_at)
            for p in named_pages
        ],
        paragraph_ids=paragraph_ids or [],
        latest_figures=figures,
    )
