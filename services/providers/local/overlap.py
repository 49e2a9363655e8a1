"""Whether a unit would add nothing the answer does not already say: a sentence repeating a
quoted one, or one more row of a table the answer already quotes enough of."""

from __future__ import annotations

from functools import lru_cache

from shared.config import LocalStitchingSettings
from services.text.figures import checkable_facts
from services.text.terms import terms
from services.text.units import Unit


@lru_cache(maxsize=16384)
def _wordset(text: str) -> frozenset[str]:
    """A sentence's terms without its figures (what ``repeats`` compares)."""
    return frozenset(t for t in terms(text) if not any(ch.isdigit() for ch in t))


def table_full(unit: Unit, chosen: list[Unit], tuning: LocalStitchingSettings) -> bool:
    """Whether the answer already quotes tuning.table_rows rows of this row's page's tables: its
    other rows are detail (the answer says what the question asks, not the whole table, nor the
    same rates tabulated again for another run of years, EIM65970), unless this row is the one
    the asker's own figure looks up."""
    return unit.row is not None and not unit.looked_up and sum(c.row is not None and c.page_rank == unit.page_rank for c in chosen) >= tuning.table_rows


def repeats(unit: Unit, chosen: list[Unit], tuning: LocalStitchingSettings) -> bool:
    """Whether a sentence says what a quoted one says: on its own page, but for its figures (a
    page repeats its worked example for each run of tax years); on another page, with the same
    figures. Table rows never repeat each other, and two pages that say it with different
    figures are both quoted (the conflict check needs them)."""
    if unit.row is not None:
        return any(unit.text == c.text for c in chosen)
    mine = _wordset(unit.text)
    return bool(mine) and any(
        c.row is None
        and (c.page_rank == unit.page_rank or checkable_facts(c.text) == checkable_facts(unit.text))
        and len(mine & (theirs := _wordset(c.text))) / len(mine | theirs) >= tuning.same_statement
        for c in chosen
    )
