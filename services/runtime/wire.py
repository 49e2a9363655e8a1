"""The PipelineState as it crosses a Celery hop between two stage workers (distributed mode
only: embedded mode never serialises the state).

From rollup on, the page bundles carry whole chunks (text and paragraphs): most of the
envelope (~120 KB after rollup for a typical question), though every worker holds the same
chunks in its CorpusIndex. On the wire a bundle names its chunks and the receiving worker
takes them from its own index:

    state_json = encode(state, settings)                  # sending worker
    wire = WireState.model_validate_json(state_json)      # receiving worker: query id first,
    state = rebuild(wire, index)                          # then the chunks from the index the
                                                          # hop's stages read (may raise IndexChanged)

A chunk id means one text only within one index generation (an ingest may rewrite a page
under the same ids, or drop it), so the wire names the generation the ids resolve in:
- the sender sends the chunks whole, as before, when its state's chunks are not the serving
  generation's (an ingest swapped generations while its stages ran);
- the receiver raises IndexChanged (503, ask again) when it serves another generation or
  lacks a chunk: never chunks of another generation passed off as the ones that were ranked.
Plain PipelineState JSON (the gateway's first message, the whole-chunks case) parses as is.
"""

from __future__ import annotations

from typing import TypeVar

from services.errors import IndexChanged
from services.answering.pipeline import answering_for
from shared.config import Settings
from shared.contracts.corpus import Chunk
from shared.contracts.pipeline import PipelineState, RollupResult, SelectionResult
from shared.index import CorpusIndex

Pages = TypeVar("Pages", RollupResult, SelectionResult)


class WireState(PipelineState):
    """A PipelineState whose page bundles may travel with their chunks emptied."""

    # Set when they were: the generation the ids resolve in, and each page's chunk ids, in
    # the order of rollup.pages and selection.pages.
    generation: str | None = None
    rollup_chunk_ids: list[list[str]] | None = None
    selection_chunk_ids: list[list[str]] | None = None


def encode(state: PipelineState, settings: Settings) -> str:
    pages = [p for result in (state.rollup, state.selection) if result for p in result.pages]
    if not any(p.chunks for p in pages):
        return state.model_dump_json()
    # the generation serving now, not the one the hop's stages read: an ingest may have
    # swapped them since
    index = answering_for(settings).open(state.query.manual)
    # The stages put the index's own chunk objects in the bundles, so `is` settles it at
    # once; an equal chunk (an unchanged page in a newer generation) names the same text.
    if not all(index.chunks.get(c.id) is c or index.chunks.get(c.id) == c for p in pages for c in p.chunks):
        return state.model_dump_json()  # an ingest swapped generations while the stages ran
    wire = WireState(
        **(_fields(state) | {"rollup": _emptied(state.rollup), "selection": _emptied(state.selection)}),
        generation=index.generation,
        rollup_chunk_ids=_ids(state.rollup),
        selection_chunk_ids=_ids(state.selection),
    )
    return wire.model_dump_json()


def rebuild(wire: WireState, index: CorpusIndex | None) -> PipelineState:
    """The state the sender had, its chunks taken from ``index`` (the receiving hop's, opened
    once for its stages; None only for a state whose chunks came whole); raises IndexChanged
    rather than substitute other chunks."""
    state = PipelineState(**_fields(wire))
    if wire.generation is None:
        return state  # the chunks came whole
    assert index is not None, "a state sent as chunk ids is rebuilt from the receiving hop's index"
    if index.generation != wire.generation:
        raise IndexChanged(
            f"the {state.query.manual} index changed generation ({wire.generation} -> {index.generation}) "
            "while the question was in flight; ask again"
        )

    def chunks(ids: list[str]) -> list[Chunk]:
        found = [index.chunks.get(cid) for cid in ids]
        missing = [cid for cid, chunk in zip(ids, found, strict=True) if chunk is None]
        if missing:
            raise IndexChanged(f"chunks {missing} are not in generation {index.generation} of {state.query.manual}; ask again")
        return found  # type: ignore[return-value]  (none is None)

    if state.rollup is not None and wire.rollup_chunk_ids is not None:
        state.rollup = _filled(state.rollup, [chunks(ids) for ids in wire.rollup_chunk_ids])
    if state.selection is not None and wire.selection_chunk_ids is not None:
        state.selection = _filled(state.selection, [chunks(ids) for ids in wire.selection_chunk_ids])
    return state


def _fields(state: PipelineState) -> dict[str, object]:
    return {name: getattr(state, name) for name in PipelineState.model_fields}


def _ids(result: RollupResult | SelectionResult | None) -> list[list[str]] | None:
    return None if result is None else [[c.id for c in p.chunks] for p in result.pages]


def _emptied(result: Pages | None) -> Pages | None:
    return None if result is None else _filled(result, [[] for _ in result.pages])


def _filled(result: Pages, chunks: list[list[Chunk]]) -> Pages:
    pages = [page.model_copy(update={"chunks": c}) for page, c in zip(result.pages, chunks, strict=True)]
    return result.model_copy(update={"pages": pages})
