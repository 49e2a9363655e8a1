"""The units the answer is composed from: every quotable sentence and table row of the selected
pages (a row reads as a sentence with its column headers), scored by the trained passage ranker
(services/ranking, ``taxnav ranker train``): the probability that it states what answers the
question, from its UNIT_FEATURES (its words and headings, its chunk's closeness in meaning, its
page's probability and place, what it gives, what kind of unit it is)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shared.config import LocalStitchingSettings, Settings
from shared.contracts.pipeline import Query, SelectionResult
from services.providers.local.claims import best_per_page
from services.providers.local.readable import quotable
from services.ranking.model import RankerModel
from services.ranking.passage_features import featured_units, unit_matrix
from shared.index import CorpusIndex
from services.text.units import Unit


def score_units(
    query: Query, selection: SelectionResult, settings: Settings, index: CorpusIndex, model: RankerModel, vector: np.ndarray | None
) -> list[Unit]:
    """Every quotable sentence (or table row) of the selected pages, scored: the passage
    ranker ``model``'s probability that it states what answers the question."""
    units = featured_units(query, selection, settings, index, vector)
    if units:
        scores = model.probability(model.score(unit_matrix(units)))
        for unit, score in zip(units, scores, strict=True):
            unit.score = float(score)
    return units


@dataclass(frozen=True)
class RankedUnits:
    """The scored units of the selected pages as the answer part and the detail choose from them."""

    units: list[Unit]  # every unit, in page order: what a chosen unit's context is read from
    best_first: list[Unit]  # the quotable units, best-scoring first (ties: the better page, then page order)
    floor: float  # relative_floor times the best unit's score (quotable or not): a neighbour joins above a share of it
    page_best: dict[int, float]  # each page's best unit score, pages by their selection rank
    positions: dict[int, int]  # a unit's place in ``units``, by its id()

    def index(self, unit: Unit) -> int:
        """A unit's place in page order."""
        return self.positions[id(unit)]


def rank_units(units: list[Unit], tuning: LocalStitchingSettings) -> RankedUnits | None:
    """The scored units ranked, or None when none can be quoted (the pages say nothing but list
    intros: the verifier refuses). A list intro whose items the chunk does not hold ("There are
    two main aspects to this:" closing a chunk) never stands alone, nor does a list item or a
    broken line whose lead-in or start the page does not give beside it (a chunk boundary fell
    between them): neither is ever quoted."""
    by_score = sorted(units, key=lambda u: (-u.score, u.page_rank, u.order))
    positions = {id(u): i for i, u in enumerate(units)}
    best_first = [u for u in by_score if quotable(units, positions[id(u)], tuning.list_items)]
    if not best_first:
        return None
    return RankedUnits(units, best_first, tuning.relative_floor * by_score[0].score, best_per_page(units), positions)
