"""Stitching: the answer as claims, each with one citation marker (the paragraph it quotes)
drawn only from the selected pages; then the conflict check over what the answer would say.
The stage records what it found (``StitchingFinding``: no claim, or conflicting figures);
whether that refuses is decided in services/answering/refusals/decide.py."""

from __future__ import annotations

from shared.config import Settings
from shared.contracts.corpus import Chunk, Paragraph, section_of
from shared.contracts.pipeline import DraftSentence, PipelineState
from shared.contracts.refusals import StitchingFinding
from shared.index import CorpusIndex
from services.providers.base import Provider, StitchRequest
from services.text.amounts import amounts
from services.answering.refusals.conflict import Case, conflict_evidence, could_conflict, own_words
from services.text.sentences import split_sentences
from services.text.units import under_example
from services.text.terms import query_terms, terms
from services.providers.base import paragraphs_of


class Stitching:
    """The stage: the provider drafts the answer from the selected pages; then the conflict check."""

    def __init__(self, settings: Settings, provider: Provider) -> None:
        self.settings = settings
        self.provider = provider

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState:
        return step(state, self.settings, self.provider, index)


def step(state: PipelineState, settings: Settings, provider: Provider, index: CorpusIndex) -> PipelineState:
    del settings  # the provider was built with them
    assert state.selection is not None
    vector = state.retrieval.query_vector if state.retrieval is not None else []
    draft = provider.stitch(StitchRequest(query=state.query, selection=state.selection, query_vector=vector), index)
    state.draft = draft
    found = StitchingFinding(searched=[p.section_id for p in state.selection.pages], claims=len(draft.sentences))
    state.findings.stitching = found
    if not draft.sentences or not could_conflict(state.query.question):
        return state  # no claim to compare, or (most questions) no figure asked: no need to read every page for its case
    examples = frozenset(
        p.id
        for page in state.selection.pages
        for chunk in page.chunks
        if _is_example(chunk)
        for p in chunk.paragraphs
    )
    paragraphs = paragraphs_of(state.selection)
    candidates, candidate_paragraphs = candidate_statements(state.query.question, index, state.selection.dropped)
    sections = [p.section_id for p in state.selection.pages] + list(dict.fromkeys(section_of(s.citations[0]) for s in candidates))
    found.conflict = conflict_evidence(
        state.query.question, draft, {**paragraphs, **candidate_paragraphs}, examples, cases(index, sections), candidates
    )
    return state


def _is_example(chunk: Chunk) -> bool:
    return under_example(chunk.heading_path)


def candidate_statements(question: str, index: CorpusIndex, dropped: list[str]) -> tuple[list[DraftSentence], dict[str, Paragraph]]:
    """The sentences stating an amount on the candidate pages selection left out whose
    title names a term of the question (a page on the asked subject, for another case: the
    nurses' laundering page beside the general one), with their paragraphs by id. Worked
    examples, tables and headings are left out as in the answer's own check."""
    asked = set(query_terms(question))
    sentences: list[DraftSentence] = []
    found: dict[str, Paragraph] = {}
    for section in dropped:
        page = index.pages.get(section)
        if page is None or not asked & set(terms(page.title)):
            continue
        for chunk in index.page_chunks(section):
            if _is_example(chunk):
                continue
            for paragraph in chunk.paragraphs:
                if paragraph.kind in {"table", "heading"}:
                    continue
                for sentence in split_sentences(paragraph.text):
                    if amounts(sentence):
                        sentences.append(DraftSentence(text=sentence, citations=[paragraph.id]))
                        found[paragraph.id] = paragraph
    return sentences, found


def cases(index: CorpusIndex, sections: list[str]) -> dict[str, Case]:
    """What each page is about (a conflict's options name them)."""
    out = {}
    for section in sections:
        chunks = index.page_chunks(section)
        first = next((p.text for c in chunks for p in c.paragraphs if p.kind != "heading"), "")
        lead = split_sentences(first)[0] if first else ""
        out[section] = Case(title=index.pages[section].title, lead=lead, text=own_words([c.text for c in chunks]))
    return out
