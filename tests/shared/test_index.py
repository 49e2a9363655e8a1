"""CorpusIndex over the session's EIM slice: the interface the question pipeline reads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shared.config import Settings
from shared.generation import CHUNKS, ChunkFile, load_generation, load_graph, serving_path
from shared.index import CollectionNotFound, CorpusIndex, IndexMismatch
from tests.conftest import EIM, SLICE_SECTIONS


@pytest.fixture(scope="module")
def index(slice_settings: Settings) -> CorpusIndex:
    return CorpusIndex.open(slice_settings)


def test_open_is_cached_and_names_its_generation(index: CorpusIndex, slice_settings: Settings) -> None:
    assert CorpusIndex.open(slice_settings, EIM) is index
    assert index.manual == EIM and index.generation.startswith("g")
    assert set(index.pages) == set(SLICE_SECTIONS)
    assert index.title == "Employment Income Manual"


def test_an_unchanged_serving_link_is_not_resolved_again(index: CorpusIndex, slice_settings: Settings, monkeypatch) -> None:
    """Stages open the index many times a question: while the link names the same generation,
    open() is one readlink (resolving the link is what costs)."""
    import shared.index as module  # noqa: PLC0415

    CorpusIndex.open(slice_settings)

    def resolving(*_: object) -> None:
        raise AssertionError("the serving link was resolved again")

    monkeypatch.setattr(module, "serving_path", resolving)
    assert CorpusIndex.open(slice_settings) is index


def test_bm25_search_ranks_the_rate_table_page_first(index: CorpusIndex) -> None:
    hits = index.bm25_search("statutory mileage rates for motor cycles and cycles: 24p, 20p", 5)  # the rows split by ingest made a near-tie with EIM31205 on the words alone
    assert hits[0][0].startswith("EIM31240#")
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert index.bm25_search("the of and", 5) == []  # stop words only: nothing to match
    assert index.bm25_search("", 5) == []


def test_vector_search_understands_paraphrase(index: CorpusIndex) -> None:
    hits = index.vector_search("my employer lends me money interest free, is that taxable?", 5)
    assert {cid.split("#")[0] for cid, _ in hits} & {"EIM26140", "EIM26137", "EIM26102", "EIM26142", "EIM26145"}
    assert all(-1.0 <= s <= 1.0 for _, s in hits)
    query = np.asarray(index.embed_query("loans to employees"))
    assert query.shape == (384,) and abs(np.linalg.norm(query) - 1) < 1e-4
    top = hits[0][0]
    assert abs(float(index.chunk_vector(top) @ np.asarray(index.embed_query("my employer lends me money interest free, is that taxable?"))) - hits[0][1]) < 1e-3


def test_chunk_vector_unknown_id(index: CorpusIndex) -> None:
    with pytest.raises(KeyError):
        index.chunk_vector("EIM99999#c0")


def test_page_chunks_siblings_paragraphs(index: CorpusIndex) -> None:
    chunks = index.page_chunks("EIM31240")
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert index.siblings(chunks[1].id) == [c.id for c in chunks if c.id != chunks[1].id]
    table_chunk = next(c for c in chunks if c.has_table and "45p" in c.text)
    paragraph = index.paragraph(table_chunk.paragraphs[0].id)
    assert paragraph.kind == "table" and "45p" in paragraph.text
    assert index.page_chunks("EIM31200") == []  # a contents page: no body
    assert index.page_chunks("EIM99999") == []
    assert index.siblings("EIM99999#c0") == []
    with pytest.raises(KeyError):
        index.paragraph("EIM31240#c0.p99")


def test_xrefs_from_carry_the_linking_paragraph(index: CorpusIndex) -> None:
    refs = index.xrefs_from("EIM31240")
    targets = {r.target_section: r for r in refs}
    assert {"EIM31230", "EIM31330", "EIM31280"} <= set(targets)
    assert index.paragraph(targets["EIM31280"].paragraph_id).text.endswith("(see EIM31280).")
    assert index.graph.has_edge("EIM31240", "EIM31230")
    assert index.xrefs_from("EIM99999") == []


def test_reopens_when_a_new_generation_is_swapped_in(tmp_path: Path, corpus_dir: Path, settings_for) -> None:  # noqa: ANN001
    from ingest_worker.ingest import run_ingest

    settings = settings_for(tmp_path / "data")
    run_ingest(settings, str(corpus_dir), EIM, sections={"EIM31240", "EIM31230"})
    first = CorpusIndex.open(settings)
    run_ingest(settings, str(corpus_dir), EIM, sections={"EIM31240", "EIM31230", "EIM31330"})
    second = CorpusIndex.open(settings)
    assert second is not first and second.generation != first.generation
    assert "EIM31330" in second.pages and "EIM31330" not in first.pages


def test_missing_collection_and_wrong_embedder_are_clear_errors(tmp_path: Path, slice_settings: Settings) -> None:
    with pytest.raises(CollectionNotFound, match="taxnav ingest"):
        CorpusIndex.open(Settings(data_dir=tmp_path))
    other = slice_settings.model_copy(deep=True)
    other.models.provider = "mistral"
    other.models.mistral_api_key = "key"
    with pytest.raises(IndexMismatch, match="re-ingest"):
        CorpusIndex(other, EIM, CorpusIndex.open(slice_settings).path).embed_query("x")


def test_chunks_and_graph_are_read_when_first_needed(slice_settings: Settings) -> None:
    """A manual consulted only to route a question reads a few of its chunks and never its
    graph: each chunk is parsed at its first read, the graph at its first use, and what they
    give is what reading the whole generation gives."""
    path = serving_path(slice_settings, EIM)
    index = CorpusIndex(slice_settings, EIM, path)  # a fresh one, not the cached
    whole = load_generation(path).chunks
    assert "graph" not in vars(index)
    assert list(index.chunks) == list(whole) and len(index.chunks) == len(whole)
    first = next(iter(whole))
    assert index.chunks[first] == whole[first] and index.chunks[first] is index.chunks[first]  # parsed once
    assert "EIM99999#c0" not in index.chunks and index.chunks.get("EIM99999#c0") is None
    with pytest.raises(KeyError):
        index.chunks["EIM99999#c0"]
    assert dict(index.chunks.items()) == whole
    assert "graph" not in vars(index)
    chunks = index.page_chunks("EIM31240")
    assert index.siblings(chunks[0].id) == [c.id for c in chunks[1:]]
    assert set(index.graph.edges) == set(load_graph(path).edges)


def test_a_chunk_line_written_otherwise_is_still_found(tmp_path: Path, index: CorpusIndex) -> None:
    """Lines are indexed by the id the ingest writes first; a line whose id is not first (an
    older or hand-made file) is parsed whole instead."""
    chunk = index.page_chunks("EIM31240")[0]
    reordered = json.dumps({k: v for k, v in reversed(chunk.model_dump(mode="json").items())})
    (tmp_path / CHUNKS).write_text(reordered + "\n\n" + index.page_chunks("EIM31240")[1].model_dump_json() + "\n", encoding="utf-8")
    found = ChunkFile(tmp_path)
    assert list(found) == [chunk.id, index.page_chunks("EIM31240")[1].id]
    assert found[chunk.id] == chunk
