"""Reciprocal rank fusion and the page window, on hand-made rankings and pages."""

from __future__ import annotations

import pytest

from services.answering.stages.retrieval import fuse
from services.answering.stages.rollup import page_window
from shared.contracts.corpus import Chunk


def test_rrf_scores_are_sums_of_reciprocal_ranks() -> None:
    hits = fuse({"bm25": ["a", "b", "c"], "vector": ["c", "a"]}, rrf_k=60, top_k=12)
    scores = {h.chunk_id: h.score for h in hits}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)
    assert [h.chunk_id for h in hits] == ["a", "c", "b"]
    assert {h.chunk_id: h.source for h in hits} == {"a": "hybrid", "c": "hybrid", "b": "bm25"}


def test_rrf_agreement_beats_a_single_first_place() -> None:
    # 'x' is first in one list only; 'y' is second in both: fusion ranks agreement first
    hits = fuse({"bm25": ["x", "y"], "vector": ["z", "y"]}, rrf_k=60, top_k=3)
    assert [h.chunk_id for h in hits][0] == "y"


def test_each_lists_first_hit_survives_the_cut() -> None:
    # ten chunks both lists agree on outscore 'only-bm25' (first in BM25, absent from vectors)
    agreed = [f"EIM{i}#c0" for i in range(10)]
    hits = fuse({"bm25": ["ONLY#c0", *agreed], "vector": agreed}, rrf_k=60, top_k=5)
    ids = [h.chunk_id for h in hits]
    assert "ONLY#c0" in ids and len(ids) == 5
    assert ids[-1] == "ONLY#c0"  # kept, but still ranked by its own (lower) score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_rrf_cuts_to_top_k_and_ignores_duplicates() -> None:
    hits = fuse({"bm25": ["a", "a", "b", "c", "d"]}, rrf_k=60, top_k=3)
    assert [h.chunk_id for h in hits] == ["a", "b", "c"]
    assert hits[0].score == pytest.approx(1 / 61)


def _chunks(n: int) -> list[Chunk]:
    return [Chunk(id=f"EIM1#c{i}", section_id="EIM1", manual="m", position=i, heading_path=[], paragraphs=[], content_hash="h") for i in range(n)]


def test_page_window_keeps_whole_page_best_first() -> None:
    page = _chunks(4)
    out = page_window(page, {"EIM1#c2": 0.5, "EIM1#c0": 0.1}, limit=8)
    assert [c.position for c in out] == [2, 0, 1, 3]  # the un-hit chunks (the rate table) stay


def test_page_window_cuts_long_pages_around_the_hits() -> None:
    page = _chunks(20)
    out = page_window(page, {"EIM1#c10": 0.9, "EIM1#c2": 0.4}, limit=5)
    assert out[0].position == 10
    positions = {c.position for c in out}
    assert len(out) == 5 and {2, 10} <= positions
    assert positions - {2} <= {8, 9, 10, 11, 12}


def test_page_window_counts_sibling_only_chunks_as_near_not_as_hits() -> None:
    # every chunk of a long page is some hit's sibling; the window keeps the direct hits and
    # then what follows the best one (a worked example continues below its heading)
    page = _chunks(15)
    scores = {f"EIM1#c{i}": 0.006 - 0.0001 * i for i in range(15)} | {"EIM1#c12": 0.027, "EIM1#c5": 0.025}
    out = page_window(page, scores, limit=8, direct={"EIM1#c12", "EIM1#c5"})
    positions = {c.position for c in out}
    assert out[0].position == 12 and len(out) == 8
    assert {5, 12, 13, 14, 11, 10} <= positions  # c13 (after the best) before the siblings' own scores
    assert 0 not in positions and 1 not in positions  # the highest sibling scores, far from the hits
    # without the distinction, sibling scores decide and the continuation is lost
    assert 13 not in {c.position for c in page_window(page, scores, limit=8)}
