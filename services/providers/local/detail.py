"""The detail after the answer part: the next units above its own floor, each with what it needs
beside it, at most ``tuning.detail_per_page`` from one page, the whole reply within
``tuning.reply_words``. It is collapsed until opened, so it may reach further down than the
answer part."""

from __future__ import annotations

from shared.config import LocalStitchingSettings
from shared.contracts.pipeline import DraftSentence
from services.providers.local.answer_part import AnswerPart
from services.providers.local.claims import claims_of, items_joined, without_lone_intros
from services.providers.local.overlap import repeats
from services.providers.local.ranked import RankedUnits
from services.providers.local.readable import context_of, list_intro, word_count
from services.text.units import Unit


def cut_from_answer(units: list[Unit], j: int, answer: dict[int, Unit]) -> bool:
    """Whether unit ``j`` is an item of a list, or the rest of a line, that the answer part
    quotes: alone in the detail it would read as a fragment."""
    return units[j].row is None and units[j].text[:1].islower() and (list_intro(units, j) in answer or j - 1 in answer)


def detail_part(pool: RankedUnits, answer: AnswerPart, tuning: LocalStitchingSettings) -> list[DraftSentence]:
    """The detail's claims: the best units the answer part does not quote, nor repeat, above
    ``tuning.detail_floor`` of the best unit's score, with their context, while the reply has
    room."""
    units = pool.units
    floor = tuning.detail_floor * pool.best_first[0].score
    room = tuning.reply_words - sum(len(c.text.split()) for c in answer.claims)
    detail: dict[int, Unit] = {}
    per_page: dict[int, int] = {}
    for unit in pool.best_first:
        if unit.score < floor or room <= 0:
            break
        i = pool.index(unit)
        if i in answer.quoted or i in detail or per_page.get(unit.page_rank, 0) >= tuning.detail_per_page:
            continue
        if repeats(unit, [*answer.quoted.values(), *detail.values()], tuning):
            continue
        need = [j for j in [i, *context_of(units, i, pool.floor, tuning)] if j not in answer.quoted and j not in detail]
        if any(cut_from_answer(units, j, answer.quoted) for j in need):
            continue
        cost = word_count(units[j] for j in need)
        if cost <= room:
            room -= cost
            per_page[unit.page_rank] = per_page.get(unit.page_rank, 0) + 1
            detail.update({j: units[j] for j in need})
    return without_lone_intros(items_joined(claims_of(detail, role="detail")), tuning.lead_in_words)
