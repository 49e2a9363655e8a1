"""The answer part: the best unit with what it needs to be read right (the lead), then the units
scoring near it from its page (a rate question's row for its case first), and one statement from
each of the pages selection ranked first and from any lower page whose best unit competes with
the lead page's (the others are detail), within the answer shape (``settings.stitching.shape``:
at most ``claims`` claims, about ``words`` words, the lead alone up to ``words_cap``), ordered
by claims.py."""

from __future__ import annotations

from dataclasses import dataclass

from shared.config import AnswerShape, LocalStitchingSettings
from shared.contracts.pipeline import DraftSentence
from services.providers.local.claims import claims_of, figure_first, items_joined, lead_first, without_lone_intros
from services.providers.local.overlap import repeats, table_full
from services.providers.local.ranked import RankedUnits
from services.providers.local.readable import (
    context_of, ended_notice, list_intro, minimal_context, reads_alone, word_count,
)
from services.text.question import QuestionKind
from services.text.units import DEPENDENT, Unit


@dataclass(frozen=True)
class AnswerPart:
    """The answer part's claims, and the units they quote by their place in page order (the
    detail quotes none of them again)."""

    claims: list[DraftSentence]
    quoted: dict[int, Unit]


def lead_candidates(pool: RankedUnits, tuning: LocalStitchingSettings, shape: AnswerShape) -> list[Unit]:
    """The units that may lead, best first: those of the pages selection ranked first, or a row
    keyed by the asker's own figure (it answers from whichever page holds its table); and of
    those, the ones within the answer's hard cap (a table cell holding a whole list is left to
    the detail, which has room for it). A filter that would leave none is not applied."""
    on_first_pages = [u for u in pool.best_first if u.page_rank < tuning.answer_pages or u.looked_up] or pool.best_first
    return [u for u in on_first_pages if len(u.text.split()) <= shape.words_cap] or on_first_pages


def choose_lead(pool: RankedUnits, tuning: LocalStitchingSettings, shape: AnswerShape) -> Unit:
    """The unit the answer opens with: the best candidate, or the best one that reads on its own
    (does not lean on the sentence before it) unless that scores well below the best. An unasked
    worked example or a signpost never leads while another candidate reads alone."""
    candidates = lead_candidates(pool, tuning, shape)
    best = candidates[0]
    standalone = next((u for u in candidates if reads_alone(pool.units, pool.index(u), tuning.list_items)), best)
    return standalone if standalone.score >= tuning.lead_standalone * best.score or best.aside else best


def lead_with_context(pool: RankedUnits, lead: int, tuning: LocalStitchingSettings, shape: AnswerShape) -> list[int]:
    """The lead (``lead``, its place in page order) with what it needs beside it, table rows
    aside; when that takes it past the hard cap or the claims, only the least it needs."""
    units = pool.units
    full = [j for j in [lead, *context_of(units, lead, pool.floor, tuning)] if units[j].row is None or j == lead]
    if word_count(units[j] for j in full) > shape.words_cap or len(claims_of({j: units[j] for j in full})) > shape.claims:
        return minimal_context(units, lead, shape.words_cap, tuning.list_items) or [lead]
    return full


def answer_size(lead_units: dict[int, Unit], others: dict[int, Unit]) -> tuple[int, int]:
    """The claims and the words of an answer part quoting the lead's units and ``others``."""
    claims = claims_of(lead_units) + claims_of(others)
    return len(claims), sum(len(c.text.split()) for c in claims)


def following(pool: RankedUnits, lead: int, lead_ids: list[int], tuning: LocalStitchingSettings) -> set[int]:
    """The units right after the lead (and what it brought) in its chunk: the manual states a rule
    and then its conditions, so these are weighed up for the answer part."""
    after = max(lead_ids)
    units = pool.units
    return {
        j for j in range(after + 1, min(after + 1 + tuning.following_units, len(units)))
        if units[j].page_rank == units[lead].page_rank and units[j].order[0] == units[lead].order[0]
    }


def weighed_score(unit: Unit, follows_lead: bool, tuning: LocalStitchingSettings) -> float:
    """A unit's score as the answer part weighs it (up when it follows the lead in its chunk)."""
    return unit.score * (tuning.following_factor if follows_lead else 1.0)


def near_the_lead(
    pool: RankedUnits, lead: Unit, lead_ids: list[int], contenders: list[Unit], tuning: LocalStitchingSettings, shape: AnswerShape
) -> dict[int, Unit]:
    """What else the answer part quotes besides the lead's units: the contenders scoring near the
    lead (weighed), best first, each with its context (or the least it needs) while the answer
    stays within ``shape.claims`` and ``shape.words``; a unit adding nothing (a repeat, one row
    too many of a table) is passed over, and another page than the lead's adds its one best
    statement (``tuning.other_page_units``): the lead's page states the rule. A rate question's
    row (``Unit.rate_row``) that is its page's best unit and scores near the lead comes first:
    it is the figure asked for, and a better-scoring side rule must not take its room."""
    units = pool.units
    lead_units = {j: units[j] for j in lead_ids}
    follows = following(pool, pool.index(lead), lead_ids, tuning)
    floor = tuning.answer_floor * lead.score

    def weighed(u: Unit) -> float:
        return weighed_score(u, pool.index(u) in follows, tuning)

    def asked_rate(u: Unit) -> bool:
        return u.rate_row and u.score >= pool.page_best[u.page_rank] and weighed(u) >= floor

    rest: dict[int, Unit] = {}
    for unit in sorted(contenders, key=lambda u: (not asked_rate(u), -weighed(u))):
        i = pool.index(unit)
        if weighed(unit) < floor:
            break
        quoted = [*lead_units.values(), *rest.values()]
        if i in lead_units or i in rest or repeats(unit, quoted, tuning) or table_full(unit, quoted, tuning):
            continue
        if unit.page_rank != lead.page_rank and sum(u.page_rank == unit.page_rank for u in rest.values()) >= tuning.other_page_units:
            continue
        _, words = answer_size(lead_units, rest)
        if words >= shape.words:
            break
        for need in ([i, *context_of(units, i, pool.floor, tuning)], minimal_context(units, i, shape.words - words, tuning.list_items)):
            if need is None:
                continue
            extra = {j: units[j] for j in need if j not in lead_units}
            claims, total = answer_size(lead_units, {**rest, **extra})
            if claims <= shape.claims and total <= shape.words:
                rest.update(extra)
                break
    return rest


def from_each_page(
    pool: RankedUnits, pages: set[int], lead_ids: list[int], near: dict[int, Unit], tuning: LocalStitchingSettings, shape: AnswerShape
) -> dict[int, Unit]:
    """``near`` with a statement from each of the answer's pages it does not quote yet (two pages
    on one rule are both quoted), the page saying most first, while there is room: the best
    unit of the page with the least it needs. The pages selection ranked first are quoted
    whatever their best unit scores and may take the hard cap; a page that only competes needs
    the floor and comes in within the answer's usual size."""
    units = pool.units
    lead_units = {j: units[j] for j in lead_ids}
    rest = dict(near)
    for rank in sorted(pages, key=lambda r: -pool.page_best[r]):
        if any(u.page_rank == rank for u in [*lead_units.values(), *rest.values()]):
            continue
        best = next((u for u in pool.best_first if u.page_rank == rank and (u.score >= pool.floor or rank < tuning.quoted_pages) and not u.aside), None)
        need = minimal_context(units, pool.index(best), shape.words_cap, tuning.list_items) if best is not None else None
        if need is None:
            continue
        extra = {j: units[j] for j in need if j not in lead_units}
        claims, total = answer_size(lead_units, {**rest, **extra})
        budget = shape.words_cap if rank < tuning.answer_pages else shape.words
        if claims <= shape.claims and total <= budget:
            rest.update(extra)
    return rest


def lead_start(units: list[Unit], lead: int, lead_ids: list[int]) -> int:
    """Where the answer starts reading: at the lead, or before it at what it is read after (its
    list's intro, the sentence it leans on, the sentences before it in its paragraph: a
    paragraph is quoted from where it starts to say it) and its page's notice that the rule has
    ended (read before the rule as it stood)."""
    intro, leans = list_intro(units, lead), bool(DEPENDENT.search(units[lead].text))
    notice = ended_notice(units, lead) if units[lead].row is None else None
    return min(
        j for j in lead_ids
        if j >= lead or j in (intro, notice) or leans or units[j].last_paragraph.id == units[lead].paragraph.id
    )


def competing_pages(page_best: dict[int, float], lead_page: int, compete: float, first: int) -> set[int]:
    """The pages the answer part may quote: the lead's, the ``first`` pages selection ranked
    best, and any lower-ranked page whose best unit scores at least ``compete`` of the lead
    page's best. Selection keeps every page that could answer (recall first), and its order
    lowers a page's sentences' scores: a lower page whose sentence still rivals the lead's
    answers the question too (a rate on the page after the rule's); the rest is detail."""
    bar = compete * page_best.get(lead_page, 0.0)
    return {lead_page} | {rank for rank, best in page_best.items() if rank < first or best >= bar}


def answer_part(pool: RankedUnits, kind: QuestionKind, tuning: LocalStitchingSettings, shape: AnswerShape) -> AnswerPart:
    """The lead with its context, what scores near it, a statement from each of the answer's
    pages; read from the lead (after what it needs before it), a figure question's figure first.
    A signpost or a worked example nobody asked for is detail: the answer part states the rule."""
    lead = choose_lead(pool, tuning, shape)
    lead_index = pool.index(lead)
    lead_ids = lead_with_context(pool, lead_index, tuning, shape)
    pages = competing_pages(pool.page_best, lead.page_rank, tuning.page_compete, tuning.quoted_pages)
    contenders = [u for u in pool.best_first if u is not lead and (u.page_rank in pages or u.looked_up) and not u.aside]
    near = near_the_lead(pool, lead, lead_ids, contenders, tuning, shape)
    others = from_each_page(pool, pages, lead_ids, near, tuning, shape)
    quoted = {**{j: pool.units[j] for j in lead_ids}, **others}
    ordered = lead_first(lead_index, lead_start(pool.units, lead_index, lead_ids), quoted)
    claims = figure_first(kind, without_lone_intros(items_joined(ordered), tuning.lead_in_words), quoted)
    return AnswerPart(claims=claims, quoted=quoted)
