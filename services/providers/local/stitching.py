"""Stitching: the local provider's draft, composed from the selected pages' own sentences and
table rows (a row reads as a sentence with its column headers), each scored by the trained
passage ranker (ranked.py). A unit that cannot be read with what the page gives beside it (a
list item cut from its lead-in, a line of a worked computation) is never quoted, and a signpost
or a worked example nobody asked for is left to the detail (readable.py). The answer part
(answer_part.py) is the best unit with what it needs to be read right (a list intro with its
items, an item with its intro, "This is taxable under ..."), then the units scoring near it
from its page, and one statement from each of the two best pages and from any lower page whose
best unit competes with the lead page's, within the answer shape every provider keeps
(``settings.stitching.shape``: at most six claims and about 120 words). The detail (detail.py)
follows, the next units above its floor, the whole reply within 350 words. Each claim cites
exactly one paragraph (claims.py): consecutive sentences of one paragraph make one claim; a
sentence the 2014 scrape split over paragraphs is scored as one but quoted paragraph by
paragraph; a heading that states a rule ("SMP is taxable") is quoted with the id of the
paragraph under it; a rendered row cites its table."""

from __future__ import annotations

from shared.config import Settings
from shared.contracts.pipeline import Draft, Query, SelectionResult
from shared.index import CorpusIndex
from shared.meaning import question_vector
from services.providers.local.answer_part import answer_part
from services.providers.local.detail import detail_part
from services.providers.local.ranked import rank_units, score_units
from services.ranking.model import RankerModel


def stitch(query: Query, selection: SelectionResult, settings: Settings, index: CorpusIndex, model: RankerModel, carried_vector: list[float]) -> Draft:
    """The answer part: the best-scoring unit first (scored for the kind of thing the question
    asks), then what else scores near it, in the manual's order, within the answer shape; then
    the detail, the next units above its floor, so that the whole reply stays within
    ``stitching.local.reply_words``. No quotable unit: an empty draft (the verifier refuses).
    ``model``: the passage ranker, loaded once by the provider."""
    tuning = settings.stitching.local
    vector = question_vector(index, query.question, carried_vector) if settings.retrieval.use_vectors else None
    pool = rank_units(score_units(query, selection, settings, index, model, vector), tuning)
    if pool is None:
        return Draft(sentences=[])
    answer = answer_part(pool, query.reading.kind, tuning, settings.stitching.shape)
    return Draft(sentences=[*answer.claims, *detail_part(pool, answer, tuning)])
