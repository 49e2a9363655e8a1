"""Dense vectors over chunks, behind one interface.

- distributed: a Qdrant server (``QdrantClient(url=...)``), one collection per ingest
  generation, ``<prefix>-<manual>-<generation>``, behind the alias ``<prefix>-<manual>``.
- embedded: the generation directory holds ``vectors.npy`` + ``vector_ids.json``, searched
  exactly in memory (cosine, one matrix product). qdrant-client's local mode, which this
  used to load them into, took 300 ms a search at 10x the EIM (56,000 chunks) and commits
  per point on disk; the Qdrant adapter's contract tests still run against local mode.
"""

from __future__ import annotations

import json
import threading
import uuid
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

COLLECTION_PREFIX = "taxnav"
UPLOAD_BATCH = 256
# Chunk vectors a server-backed store keeps (a generation's vectors never change): about
# 1.5 KB each at 384 dims, so a few MB, enough for the pages of many questions in flight.
CACHED_VECTORS = 8192
VECTORS_FILE = "vectors.npy"
IDS_FILE = "vector_ids.json"


class VectorStoreError(RuntimeError):
    pass


class VectorStore(ABC):
    remote = False  # each fetch a round trip to a server: worth fetching a stage's vectors at once

    @abstractmethod
    def build(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Store a new generation's vectors (row i belongs to chunk ``ids[i]``)."""

    @abstractmethod
    def search(self, vector: Sequence[float] | np.ndarray, k: int) -> list[tuple[str, float]]:
        """Top ``k`` (chunk id, cosine similarity), best first."""

    @abstractmethod
    def vector(self, chunk_id: str) -> np.ndarray | None:
        """The stored vector of one chunk (None if unknown)."""

    def vectors(self, chunk_ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of many chunks (unknown ones left out), in as few round trips
        as the store allows: a stage fetches all it will score at once."""
        found = {cid: self.vector(cid) for cid in dict.fromkeys(chunk_ids)}
        return {cid: v for cid, v in found.items() if v is not None}

    def publish(self) -> None:
        """Make this generation the one searches read (no-op where the generation dir does it)."""


def collection_name(manual: str, generation: str) -> str:
    return f"{COLLECTION_PREFIX}-{manual}-{generation}".lower()


def alias_name(manual: str) -> str:
    return f"{COLLECTION_PREFIX}-{manual}".lower()


def point_id(chunk_id: str) -> str:
    """Qdrant ids are integers or UUIDs: a UUID derived from the chunk id, stable across runs."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"taxnav:{chunk_id}"))


class QdrantVectorStore(VectorStore):
    """A generation's collection (``generation`` given) or the serving alias (None)."""

    remote = True

    def __init__(self, client: Any, manual: str, generation: str | None = None):
        self.client = client
        self.manual = manual
        self.alias = alias_name(manual)
        self.collection = collection_name(manual, generation) if generation else self.alias
        # Only a generation's own collection is immutable; the alias may move to another.
        self._cache: OrderedDict[str, np.ndarray] | None = OrderedDict() if generation else None
        self._cache_lock = threading.Lock()

    @classmethod
    def connect(cls, url: str, manual: str, generation: str | None = None, timeout_s: float = 10.0) -> QdrantVectorStore:
        from qdrant_client import QdrantClient

        return cls(QdrantClient(url=url, timeout=int(max(1, timeout_s)), check_compatibility=False), manual, generation)

    def build(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        from qdrant_client import models

        if self.collection == self.alias:
            raise VectorStoreError("build() needs a generation (a collection of its own), not the alias")
        if len(ids) != len(vectors):
            raise VectorStoreError(f"{len(ids)} ids for {len(vectors)} vectors")
        if self.client.collection_exists(self.collection):
            self.client.delete_collection(self.collection)
        dims = int(vectors.shape[1]) if len(vectors) else 1
        self.client.create_collection(
            self.collection, vectors_config=models.VectorParams(size=dims, distance=models.Distance.COSINE)
        )
        for start in range(0, len(ids), UPLOAD_BATCH):
            points = [
                models.PointStruct(
                    id=point_id(cid), vector=vectors[start + i].tolist(), payload={"chunk_id": cid}
                )
                for i, cid in enumerate(ids[start : start + UPLOAD_BATCH])
            ]
            self.client.upsert(self.collection, points=points, wait=True)

    def search(self, vector: Sequence[float] | np.ndarray, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        response = self.client.query_points(
            self.collection, query=np.asarray(vector, dtype=np.float32).tolist(), limit=k, with_payload=["chunk_id"]
        )
        return [(point.payload["chunk_id"], float(point.score)) for point in response.points]

    def vector(self, chunk_id: str) -> np.ndarray | None:
        return self.vectors([chunk_id]).get(chunk_id)

    def vectors(self, chunk_ids: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(chunk_ids))
        with self._cache_lock:
            known = {cid: self._cache[cid] for cid in wanted if self._cache is not None and cid in self._cache}
        missing = [cid for cid in wanted if cid not in known]
        if missing:  # one retrieve for all of them
            by_point = {point_id(cid): cid for cid in missing}
            found = self.client.retrieve(self.collection, ids=list(by_point), with_vectors=True, with_payload=False)
            fetched = {by_point[str(p.id)]: np.asarray(p.vector, dtype=np.float32) for p in found if p.vector is not None}
            known.update(fetched)
            if self._cache is not None:
                with self._cache_lock:
                    self._cache.update(fetched)
                    while len(self._cache) > CACHED_VECTORS:
                        self._cache.popitem(last=False)
        return known

    def publish(self) -> None:
        """Swap the alias onto this generation in one call. The collection it pointed at stays
        (readers that opened that generation finish on it); older generations are dropped."""
        from qdrant_client import models

        previous = [a.collection_name for a in self.client.get_aliases().aliases if a.alias_name == self.alias]
        operations: list[Any] = []
        if previous:
            operations.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=self.alias)))
        operations.append(
            models.CreateAliasOperation(create_alias=models.CreateAlias(collection_name=self.collection, alias_name=self.alias))
        )
        self.client.update_collection_aliases(change_aliases_operations=operations)
        for collection in self.client.get_collections().collections:
            name = collection.name
            if name.startswith(f"{self.alias}-") and name != self.collection and name not in previous:
                self.client.delete_collection(name)


def limit_blas_threads(threads: int) -> None:
    """Cap the BLAS library's threads in this process (settings.stores.blas_threads says why):
    the search's matrix-vector product is the process's only large BLAS call."""
    from threadpoolctl import threadpool_limits  # noqa: PLC0415  (only where vectors are searched in memory)

    threadpool_limits(limits=threads, user_api="blas")


class EmbeddedVectorStore(VectorStore):
    """Vectors persisted as numpy files in a generation directory, searched exactly in memory:
    one matrix product ranks every chunk (20 ms for 56,000 chunks here, where qdrant-client's
    local mode took 300 ms and warns past 20,000 points)."""

    def __init__(self, directory: str | Path, manual: str, generation: str, blas_threads: int = 0):
        self.manual = manual
        self.generation = generation
        self.directory = Path(directory)
        self.blas_threads = blas_threads
        self._ids: list[str] | None = None
        self._matrix: np.ndarray | None = None  # rows L2-normalised: a dot product is the cosine
        self._row: dict[str, int] = {}
        self._load_lock = threading.Lock()

    def build(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        if len(ids) != len(vectors):
            raise VectorStoreError(f"{len(ids)} ids for {len(vectors)} vectors")
        self.directory.mkdir(parents=True, exist_ok=True)
        np.save(self.directory / VECTORS_FILE, np.asarray(vectors, dtype=np.float32))
        (self.directory / IDS_FILE).write_text(json.dumps(list(ids)), encoding="utf-8")
        self.unload()

    @property
    def loaded(self) -> bool:
        return self._ids is not None

    def unload(self) -> None:
        """Forget the loaded vectors (the next read loads them again)."""
        self._ids, self._matrix = None, None

    def _load(self) -> None:
        # Concurrent first searches (the gateway answers on several threads) must never see a
        # half-loaded store: fill private names, publish the ids last, under a lock.
        if self._ids is not None:
            return
        with self._load_lock:
            if self._ids is not None:
                return
            try:
                ids = json.loads((self.directory / IDS_FILE).read_text(encoding="utf-8"))
                matrix = np.load(self.directory / VECTORS_FILE).astype(np.float32, copy=False)
            except FileNotFoundError as exc:
                raise VectorStoreError(f"no vectors in {self.directory}") from exc
            if self.blas_threads:
                limit_blas_threads(self.blas_threads)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True) if len(matrix) else np.ones((0, 1), np.float32)
            self._matrix = matrix / np.where(norms == 0, 1, norms)
            self._row = {cid: i for i, cid in enumerate(ids)}
            self._ids = ids

    def search(self, vector: Sequence[float] | np.ndarray, k: int) -> list[tuple[str, float]]:
        self._load()
        if not self._ids or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        query = query / (np.linalg.norm(query) or 1.0)
        scores = self._matrix @ query
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]  # best first, ties by row
        return [(self._ids[i], float(scores[i])) for i in top]

    def vector(self, chunk_id: str) -> np.ndarray | None:
        self._load()
        row = self._row.get(chunk_id)
        return None if row is None or self._matrix is None else self._matrix[row]

    def publish(self) -> None:
        pass  # the generation directory's symlink swap publishes it
