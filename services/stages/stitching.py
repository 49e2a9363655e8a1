"""Stitching: the answer as claims, each with one citation marker (the paragraph it quotes)
drawn only from the selected pages; then the conflict check over what the answer would say."""

from __future__ import annotations

from shared.config import Settings
from shared.contracts.pipeline import PipelineState
from shared.index import CorpusIndex
from services.providers import get_provider
from services.stages import refusals
from services.stages.verification import paragraphs_of


def step(state: PipelineState, settings: Settings) -> PipelineState:
    assert state.selection is not None
    draft = get_provider(settings).stitch(state.query, state.selection, settings)
    state.draft = draft
    if not draft.sentences:
        state.refusal = refusals.low_coverage(
            "The selected pages contain no sentence that answers the question.",
            searched=[p.section_id for p in state.selection.pages],
        )
        return state
    examples = frozenset(
        p.id
        for page in state.selection.pages
        for chunk in page.chunks
        if "example" in " ".join(chunk.heading_path).lower()
        for p in chunk.paragraphs
    )
    index = CorpusIndex.open(settings, state.query.manual)
    subjects = {p.section_id: index.pages[p.section_id].title for p in state.selection.pages if p.section_id in index.pages}
    state.refusal = refusals.conflict(state.query.question, draft, paragraphs_of(state.selection), examples, subjects)
    return state
