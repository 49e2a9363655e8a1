"""Store adapters: BM25 (tantivy | OpenSearch) and vectors (qdrant-client local | Qdrant server).

``settings.stores.backend`` picks the pair (auto: servers in distributed mode); both factories
take the generation they read or build.
"""

from __future__ import annotations

from pathlib import Path

from shared.config import Settings
from shared.stores.bm25 import Bm25Store, OpenSearchBm25Store, TantivyBm25Store
from shared.stores.vectors import EmbeddedVectorStore, QdrantVectorStore, VectorStore

BM25_DIR = "bm25"


def uses_servers(settings: Settings) -> bool:
    backend = settings.stores.backend
    return backend == "servers" or (backend == "auto" and settings.mode == "distributed")


def bm25_store(settings: Settings, manual: str, generation_dir: Path, generation: str) -> Bm25Store:
    if uses_servers(settings):
        return OpenSearchBm25Store(settings.stores.opensearch_url, manual, generation, settings.stores.request_timeout_s)
    return TantivyBm25Store(generation_dir / BM25_DIR)


def vector_store(settings: Settings, manual: str, generation_dir: Path, generation: str) -> VectorStore:
    if uses_servers(settings):
        return QdrantVectorStore.connect(settings.stores.qdrant_url, manual, generation, settings.stores.request_timeout_s)
    return EmbeddedVectorStore(generation_dir, manual, generation, blas_threads=settings.stores.blas_threads)


__all__ = ["Bm25Store", "VectorStore", "bm25_store", "uses_servers", "vector_store"]
