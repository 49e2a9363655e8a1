"""Stitching: the answer as claims, each with one citation marker (the paragraph it quotes)
drawn only from the selected pages; then the conflict check over what the answer would say."""

from __future__ import annotations

from shared.config import Settings
from shared.contracts.pipeline import PipelineState
from shared.index import CorpusIndex
from services.providers.base import Provider, StitchRequest
from services import refusals
from services.text.sentences import split_sentences
from services.stages.verification import paragraphs_of


def step(state: PipelineState, settings: Settings, provider: Provider) -> PipelineState:
    assert state.selection is not None
    vector = state.retrieval.query_vector if state.retrieval is not None else []
    draft = provider.stitch(StitchRequest(query=state.query, selection=state.selection, query_vector=vector))
    state.draft = draft
    if not draft.sentences:
        state.refusal = refusals.low_coverage(
            "The selected pages contain no sentence that answers the question.",
            searched=[p.section_id for p in state.selection.pages],
        )
        return state
    if not refusals.could_conflict(state.query.question):
        return state  # most questions: no need to read every selected page for its case
    examples = frozenset(
        p.id
        for page in state.selection.pages
        for chunk in page.chunks
        if "example" in " ".join(chunk.heading_path).lower()
        for p in chunk.paragraphs
    )
    state.refusal = refusals.conflict(state.query.question, draft, paragraphs_of(state.selection), examples, cases(state, settings))
    return state


def cases(state: PipelineState, settings: Settings) -> dict[str, refusals.Case]:
    """What each selected page is about (a conflict's options name them)."""
    assert state.selection is not None
    index = CorpusIndex.open(settings, state.query.manual)
    out = {}
    for page in state.selection.pages:
        chunks = index.page_chunks(page.section_id)
        first = next((p.text for c in chunks for p in c.paragraphs if p.kind != "heading"), "")
        lead = split_sentences(first)[0] if first else ""
        out[page.section_id] = refusals.Case(title=index.pages[page.section_id].title, lead=lead, text=" ".join(c.text for c in chunks))
    return out
