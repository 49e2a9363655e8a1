"""Graph expansion: one hop from the top hits along the manual's own links.

- cross-reference edges (page to page, the "see EIMnnnnn" links): the target page's
  best-matching chunk comes in;
- same-section sibling edges (chunk to chunk within a page).

A neighbour enters at ``score(source) * decay * match`` with 0 < decay < 1 and match in
(0, 1], so it always ranks strictly below the hit that brought it; a chunk that is already a
hit keeps its own (higher) score.

Then one co-citation step: a page that several candidate pages (hits and neighbours) link
to, but that none of them is, enters the same way below the best page linking to it. The
manual's detail pages all send the reader to the page that states the figure ("see
EIM26104" for the official rate), which is often two links from the question's words.
"""

from __future__ import annotations

import numpy as np

from shared.config import Settings
from shared.contracts.pipeline import ExpansionResult, PipelineState, Query, RetrievalResult, ScoredChunk
from shared.index import CorpusIndex
from services.text.terms import terms

XREF_CHUNKS = 1  # chunks a cross-referenced page contributes (rollup brings in the rest)
MIN_MATCH = 0.05  # floor so an unrelated target still enters below its source, not at zero
COCITED_MIN = 2  # distinct candidate pages that must link to a page for it to come in


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


def cocited(index: CorpusIndex, candidates: list[ScoredChunk], manual: str) -> dict[str, tuple[float, str]]:
    """Pages outside the candidates that at least COCITED_MIN candidate pages link to, each
    with the best linking page's score and id."""
    best: dict[str, tuple[float, str]] = {}  # candidate page -> (its best score, that chunk)
    for hit in candidates:
        section = index.chunks[hit.chunk_id].section_id
        if section not in best or hit.score > best[section][0]:
            best[section] = (hit.score, hit.chunk_id)
    linkers: dict[str, list[str]] = {}
    for section in best:
        for target in {x.target_section for x in index.xrefs_from(section) if x.target_manual == manual}:
            if target not in best and target in index.pages:
                linkers.setdefault(target, []).append(section)
    out = {}
    for target, sources in linkers.items():
        if len(sources) >= COCITED_MIN and index.page_chunks(target):
            via = max(sources, key=lambda s: best[s][0])
            out[target] = (best[via][0], via)
    return out


def expand(query: Query, retrieval: RetrievalResult, settings: Settings, index: CorpusIndex) -> ExpansionResult:
    cfg = settings.expansion
    hits = {h.chunk_id: h for h in retrieval.hits}
    if not cfg.enabled or not hits:
        return ExpansionResult(hits=list(retrieval.hits))
    decay = min(max(cfg.decay, 0.01), 0.99)
    vector = np.asarray(retrieval.query_vector, dtype=np.float32) if retrieval.query_vector else None
    qterms = set(query.reading.own_terms)
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
    candidates = list(retrieval.hits) + list(found.values())
    for target, (score, via) in cocited(index, candidates, query.manual).items():
        match, cid = max((chunk_match(index, c.id, vector, qterms), c.id) for c in index.page_chunks(target))
        offer(ScoredChunk(chunk_id=cid, score=score * decay * match, source="xref", via=via))
    merged = list(retrieval.hits) + list(found.values())
    merged.sort(key=lambda h: (-h.score, h.chunk_id))
    return ExpansionResult(hits=merged)


class Expansion:
    """The stage: one hop from the top hits along the manual's links, then co-citation."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState:
        assert state.retrieval is not None
        state.expansion = expand(state.query, state.retrieval, self.settings, index)
        return state
