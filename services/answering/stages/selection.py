"""Selection: keep the pages that could answer (the provider decides), then what those pages
lack for the question: nothing relevant, the question's own subject not in the manual, a rule
dated after the manual (low_coverage's evidence), a tax year or today's figure later than every
answering page (stale's). The stage records what it found (``SelectionFinding``); whether that
refuses is decided in services/answering/refusals/decide.py.

``selection.strategy``: ``recall_greedy`` (default: a page with a rate table answers a
rate question even without the question's words; two pages on one rule are both kept) or
``strict`` (the first design's precision-first choice, kept for ablations).
"""

from __future__ import annotations

from shared.config import Settings
from shared.contracts.pipeline import PipelineState, RollupResult
from shared.contracts.refusals import SelectionFinding
from shared.index import CorpusIndex
from services.providers.base import Provider, SelectRequest
from services.answering.refusals import coverage
from services.answering.refusals.stale import stale_evidence
from services.text.terms import corpus_stats


class Selection:
    """The stage: the provider keeps the pages that could answer; then what they lack."""

    def __init__(self, settings: Settings, provider: Provider) -> None:
        self.settings = settings
        self.provider = provider

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState:
        return step(state, self.settings, self.provider, index)


def step(state: PipelineState, settings: Settings, provider: Provider, index: CorpusIndex) -> PipelineState:
    state = _select(state, settings, provider, index)
    # No later stage reads the candidates' texts (the kept pages travel in state.selection):
    # drop them so the envelope crossing the remaining Celery hops stays small.
    assert state.rollup is not None
    state.rollup = RollupResult(pages=[p.model_copy(update={"chunks": []}) for p in state.rollup.pages])
    return state


def _select(state: PipelineState, settings: Settings, provider: Provider, index: CorpusIndex) -> PipelineState:
    del settings  # the provider was built with them
    assert state.rollup is not None
    query = state.query
    if not state.rollup.pages:
        state.selection = None
        state.findings.selection = SelectionFinding()  # nothing in the manual matches
        return state
    vector = state.retrieval.query_vector if state.retrieval is not None else []
    context = state.context
    subject = {"carried": context.carried_sections, "linked": context.linked_sections} if context is not None else {}
    selection = provider.select(SelectRequest(query=query, rollup=state.rollup, query_vector=vector, **subject), index)
    state.selection = selection
    found = SelectionFinding(candidates=[p.section_id for p in state.rollup.pages], kept=[p.section_id for p in selection.pages])
    state.findings.selection = found
    if not selection.pages:
        return state  # no page close enough: no pages to read for what they lack
    # every candidate page, not only the kept ones: whether the manual states the amount a
    # question names its rule by should not hang on a close call in selection
    evidence = [" ".join([*c.heading_path[-2:], c.text]) for page in state.rollup.pages for c in page.chunks]
    found.missing_subjects = coverage.missing_subjects(query.question, corpus_stats(index), evidence)
    lead_paragraphs = [p.chunks[0].paragraphs[0].id for p in selection.pages if p.chunks and p.chunks[0].paragraphs]
    answering = [c for page in state.rollup.pages for c in page.chunks]  # every candidate: a figure page may miss selection
    pages = [index.pages[p.section_id] for p in selection.pages]
    found.later_rule = coverage.later_rule(query.question, pages)
    found.stale = stale_evidence(query.question, pages, lead_paragraphs[:3], answering, known_pages=index.pages)
    return state
