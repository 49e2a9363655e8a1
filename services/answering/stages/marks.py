"""Marks: how sure the answer is, once it is final (after stitching and a follow-up's re-rank).
Each answer claim is marked answering or background by its page's probability of answering
(the page ranker's, against its learned threshold); then the answers model says how likely the
answer part is to answer at all (services/ranking/assurance.py): below its threshold the answer
is one that may not answer, and no claim says it answers."""

from __future__ import annotations

from shared.config import Settings
from shared.contracts.corpus import section_of
from shared.contracts.pipeline import Draft, PipelineState, SelectionResult
from shared.index import CorpusIndex
from services.ranking.assurance import answers_model, assure
from services.ranking.model import RankerModel


class Marks:
    """The ``marks`` stage; the answers model is loaded once, with the stage (a model file that
    is missing or reads other signals is refused here, as at the gateway's start)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model = answers_model(settings) if settings.stitching.assured else None

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState:
        return step(state, self.settings, index, self.model)


def step(state: PipelineState, settings: Settings, index: CorpusIndex, model: RankerModel | None) -> PipelineState:
    if state.draft is None or state.selection is None:
        return state
    mark_relevance(state.draft, state.selection)
    if model is not None and state.selection.answering_threshold is not None:
        assure(state.query, state.selection, state.draft, index, settings, model)
    return state


def mark_relevance(draft: Draft, selection: SelectionResult) -> None:
    """Each answer claim marked as answering or as background by how likely the page ranker
    holds its page to answer (its probability against the ranker's learned threshold); nothing
    when selection had no ranker."""
    if selection.answering_threshold is None:
        return
    probability = {p.section_id: p.score for p in selection.pages}
    for sentence in draft.sentences:
        if sentence.role == "answer":
            sure = max(probability.get(section_of(c), 0.0) for c in sentence.citations)
            sentence.confidence = round(sure, 2)
            sentence.relevance = "answering" if sure >= selection.answering_threshold else "background"
