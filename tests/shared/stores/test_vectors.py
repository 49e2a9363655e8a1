"""The embedded vector store searches exactly in memory: it ranks the slice's chunks as
qdrant-client's local mode (cosine) does, and handles the edges."""

from __future__ import annotations

import json

import numpy as np
import pytest
from qdrant_client import QdrantClient

from shared.index import CorpusIndex
from shared.stores.vectors import IDS_FILE, VECTORS_FILE, EmbeddedVectorStore, QdrantVectorStore, VectorStoreError


@pytest.mark.parametrize("query", ["mileage allowance payments", "staff christmas party", "van fuel benefit", "small loans"])
def test_ranks_as_qdrant_local_mode_does(slice_settings, query):
    index = CorpusIndex.open(slice_settings)
    ids = json.loads((index.path / IDS_FILE).read_text())
    reference = QdrantVectorStore(QdrantClient(":memory:"), index.manual, index.generation)
    reference.build(ids, np.load(index.path / VECTORS_FILE))
    vector = index.embed_query(query)
    ours, theirs = EmbeddedVectorStore(index.path, index.manual, index.generation).search(vector, 12), reference.search(vector, 12)
    assert [c for c, _ in ours] == [c for c, _ in theirs]
    assert np.allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-5)


def test_edges_k_ties_unnormalised_and_missing(tmp_path):
    store = EmbeddedVectorStore(tmp_path / "g", "m", "g1")
    with pytest.raises(VectorStoreError):
        store.search([1.0, 0.0], 1)
    store.build(["a", "b", "c"], np.array([[2.0, 0.0], [0.0, 3.0], [1.0, 0.0]], dtype=np.float32))
    assert store.search([5.0, 0.0], 0) == []
    best = store.search([5.0, 0.0], 10)  # k past the size: every chunk, best first
    assert [c for c, _ in best] == ["a", "c", "b"]  # a and c tie at cosine 1: by row
    assert best[0][1] == pytest.approx(1.0) and best[2][1] == pytest.approx(0.0)
    assert store.vector("b") == pytest.approx(np.array([0.0, 1.0])) and store.vector("z") is None


def test_the_store_caps_blas_threads_as_configured(tmp_path):
    from threadpoolctl import threadpool_info, threadpool_limits  # noqa: PLC0415

    with threadpool_limits(limits=2, user_api="blas"):  # as a process starts on two cores; restored after
        store = EmbeddedVectorStore(tmp_path / "g", "m", "g1", blas_threads=1)
        store.build(["a", "b"], np.eye(2, dtype=np.float32))
        assert [c for c, _ in store.search([1.0, 0.0], 1)] == ["a"]
        assert {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"} == {1}
