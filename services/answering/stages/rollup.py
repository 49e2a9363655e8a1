"""Page rollup: group the hits by page and keep the WHOLE page, best chunk first.

The first design kept only the chunks that were hits and so dropped the rate table sitting
between two hits; ``rollup.whole_page = False`` keeps that variant for ablations. A page
longer than ``max_chunks_per_page`` keeps its hit chunks and then the chunks nearest the
best one (the chunks after it first: a worked example goes on below its heading). Chunks
that only a sibling edge brought in count as near, not as hits: every chunk of a page is
some hit's sibling.
"""

from __future__ import annotations

from shared.config import Settings
from shared.contracts.corpus import Chunk
from shared.contracts.pipeline import ExpansionResult, PageBundle, PipelineState, Query, RollupResult
from shared.index import CorpusIndex


def page_window(page: list[Chunk], scores: dict[str, float], limit: int, direct: set[str] | None = None) -> list[Chunk]:
    """At most ``limit`` chunks of a page: the best-scoring chunk first, then the page's
    other chunks in page order (``direct`` hits, by default every scored chunk, then those
    nearest the best chunk, the following one before the preceding one, when it must cut)."""
    if not page:
        return []
    direct = set(scores) if direct is None else direct
    best = max(page, key=lambda c: (scores.get(c.id, -1.0), -c.position))
    if len(page) > limit:
        keep = sorted((c for c in page if c.id in direct), key=lambda c: -scores.get(c.id, 0.0))[:limit]
        rest = sorted(
            (c for c in page if c.id not in direct),
            key=lambda c: (abs(c.position - best.position), c.position < best.position, -scores.get(c.id, 0.0)),
        )
        keep = keep + rest[: limit - len(keep)]
        page = sorted(keep, key=lambda c: c.position)
    return [best] + [c for c in page if c.id != best.id]


def rollup(query: Query, expansion: ExpansionResult, settings: Settings, index: CorpusIndex) -> RollupResult:
    del query  # the hits name their chunks; the index holds their pages
    cfg = settings.rollup
    scores: dict[str, float] = {}
    direct: set[str] = set()
    for hit in expansion.hits:
        if hit.chunk_id in index.chunks:
            scores[hit.chunk_id] = max(scores.get(hit.chunk_id, 0.0), hit.score)
            if hit.source != "sibling":
                direct.add(hit.chunk_id)
    by_page: dict[str, list[str]] = {}
    for cid in scores:
        by_page.setdefault(index.chunks[cid].section_id, []).append(cid)
    bundles: list[PageBundle] = []
    for section, cids in by_page.items():
        if cfg.whole_page:
            chunks = page_window(index.page_chunks(section), scores, cfg.max_chunks_per_page, direct)
        else:
            chunks = [index.chunks[c] for c in sorted(cids, key=lambda c: -scores[c])][: cfg.max_chunks_per_page]
        bundles.append(PageBundle(section_id=section, score=max(scores[c] for c in cids), chunks=chunks))
    bundles.sort(key=lambda b: (-b.score, b.section_id))
    return RollupResult(pages=bundles)


class Rollup:
    """The stage: the hits grouped by page, each page whole (or windowed), best page first."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState:
        assert state.expansion is not None
        state.rollup = rollup(state.query, state.expansion, self.settings, index)
        return state
