"""Graph expansion: one hop from the top hits along the manual's own links.

- cross-reference edges (page to page, the "see EIMnnnnn" links): the target page's
  best-matching chunk comes in;
- same-section sibling edges (chunk to chunk within a page).

A neighbour enters at ``score(source) * decay * match`` with 0 < decay < 1 and match in
(0, 1], so it always ranks strictly below the hit that brought it; a chunk that is already a
hit keeps its own (higher) score.
"""

from __future__ import annotations

import numpy as np

from shared.config import Settings
from shared.contracts.pipeline import ExpansionResult, PipelineState, Query, RetrievalResult, ScoredChunk
from shared.index import CorpusIndex
from services.stages.text import query_terms, terms

XREF_CHUNKS = 1  # chunks a cross-referenced page contributes (rollup brings in the rest)
MIN_MATCH = 0.05  # floor so an unrelated target still enters below its source, not at zero


def chunk_match(index: CorpusIndex, chunk_id: str, query_vector: np.ndarray | None, qterms: set[str]) -> float:
    """How well a chunk matches the question, in (0, 1]: cosine when there is a query
    vector, otherwise the share of the question's terms the chunk contains."""
    if query_vector is not None:
        sim = float(np.dot(index.chunk_vector(chunk_id), query_vector))
    else:
        chunk = index.chunks[chunk_id]
        text_terms = set(terms(chunk.text + " " + " ".join(chunk.heading_path)))
        sim = len(qterms & text_terms) / len(qterms) if qterms else 0.0
    return min(1.0, max(MIN_MATCH, sim))


def expand(query: Query, retrieval: RetrievalResult, settings: Settings) -> ExpansionResult:
    cfg = settings.expansion
    hits = {h.chunk_id: h for h in retrieval.hits}
    if not cfg.enabled or not hits:
        return ExpansionResult(hits=list(retrieval.hits))
    index = CorpusIndex.open(settings, query.manual)
    decay = min(max(cfg.decay, 0.01), 0.99)
    vector = np.asarray(retrieval.query_vector, dtype=np.float32) if retrieval.query_vector else None
    qterms = set(query_terms(query.question))
    found: dict[str, ScoredChunk] = {}

    def offer(candidate: ScoredChunk) -> None:
        if candidate.chunk_id in hits:
            return
        best = found.get(candidate.chunk_id)
        if best is None or candidate.score > best.score:
            found[candidate.chunk_id] = candidate

    seeds = sorted(retrieval.hits, key=lambda h: -h.score)[: cfg.seeds]
    for seed in seeds:
        for sib in index.siblings(seed.chunk_id):
            if sib in index.chunks:
                offer(ScoredChunk(chunk_id=sib, score=seed.score * decay * chunk_match(index, sib, vector, qterms), source="sibling", via=seed.chunk_id))
        section = index.chunks[seed.chunk_id].section_id
        targets = dict.fromkeys(
            x.target_section for x in index.xrefs_from(section) if x.target_manual == query.manual and x.target_section != section and x.target_section in index.pages
        )
        for target in targets:
            scored = sorted(((chunk_match(index, c.id, vector, qterms), c.id) for c in index.page_chunks(target)), reverse=True)
            for match, cid in scored[:XREF_CHUNKS]:
                offer(ScoredChunk(chunk_id=cid, score=seed.score * decay * match, source="xref", via=section))
    merged = list(retrieval.hits) + list(found.values())
    merged.sort(key=lambda h: (-h.score, h.chunk_id))
    return ExpansionResult(hits=merged)


def step(state: PipelineState, settings: Settings) -> PipelineState:
    assert state.retrieval is not None
    state.expansion = expand(state.query, state.retrieval, settings)
    return state
