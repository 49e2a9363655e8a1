"""The serving generation of one manual's collection, as the question pipeline reads it.

    index = CorpusIndex.open(settings)             # settings.manual's collection
    index.bm25_search("mileage rates", 12)         # [(chunk_id, score), ...]
    index.vector_search("mileage rates", 12)
    index.page_chunks("EIM31240"); index.xrefs_from("EIM31240"); index.paragraph("EIM31240#c2.p0")

``open`` is cached per (data dir, manual, mode) and re-opens by itself once an ingest has
swapped a new generation in, so long-running processes always serve the newest whole one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path

import networkx as nx
import numpy as np

from shared.config import Settings
from shared.contracts.corpus import Chunk, CrossRef, Page, Paragraph, chunk_of, section_of
from shared.contracts.corpus import chunk_id as chunk_id_of
from shared.embeddings import base_embedder, embedder_identity
from shared.generation import (
    CURRENT,
    ChunkFile,
    canonical_manual,
    collection_dir,
    load_graph,
    load_manifest,
    load_pages,
    load_xrefs,
    serving_path,
)
from shared.heap import paused, refreeze
from shared.stores import bm25_store, uses_servers, vector_store


class CollectionNotFound(LookupError):
    """No ingested collection for this manual in the data dir (run ``taxnav ingest``)."""


class IndexMismatch(RuntimeError):
    """The configured embedder is not the one the collection was built with."""


class CorpusIndex:
    _cache: dict[tuple[str, str, str], CorpusIndex] = {}
    _by_pointer: dict[tuple[str, str, bool], tuple[str | None, CorpusIndex]] = {}  # (data dir as spelled, manual, servers)
    _lock = threading.Lock()

    def __init__(self, settings: Settings, manual: str, path: Path):
        manifest = load_manifest(path)
        self.settings = settings
        self.manual = manual
        self.path = path
        self.generation: str = manifest.generation
        self.title: str = manifest.title
        self.embed_model: str = manifest.embed_model
        self.vector_level = manifest.vectors
        with paused():
            self.pages: dict[str, Page] = load_pages(path)
            self.chunks: Mapping[str, Chunk] = ChunkFile(path)  # each parsed when first read
            self._xrefs: dict[str, list[CrossRef]] = {}
            for ref in load_xrefs(path):
                self._xrefs.setdefault(ref.source_section, []).append(ref)
        self._bm25 = bm25_store(settings, manual, path, self.generation)
        self._vectors = vector_store(settings, manual, path, self.generation)

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The chunks' sibling and cross-reference edges, loaded when first needed: a manual
        consulted only to route a question never reads them."""
        with paused():
            return load_graph(self.path)

    @classmethod
    def open(cls, settings: Settings, manual: str | None = None) -> CorpusIndex:
        manual = canonical_manual(manual or settings.manual)
        # A stage opens the index many times per question: while the serving link still names
        # the generation last opened (one readlink), that index is it; resolving the link and
        # the data dir cost a dozen syscalls a time.
        spelled = (str(settings.data_dir), manual, uses_servers(settings))
        try:
            pointer = os.readlink(collection_dir(settings, manual) / CURRENT)
        except OSError:
            pointer = None
        known = cls._by_pointer.get(spelled)
        if known is not None and pointer is not None and known[0] == pointer:
            return known[1]
        index = cls._open(settings, manual)
        loaded = known is None or known[1] is not index
        known = None  # nor this frame nor the table may hold the old index at the collection below
        cls._by_pointer[spelled] = (pointer, index)
        if loaded:
            refreeze()
        return index

    @classmethod
    def _open(cls, settings: Settings, manual: str) -> CorpusIndex:
        path = serving_path(settings, manual)
        if path is None:
            raise CollectionNotFound(f"no ingested collection for {manual} (run `taxnav ingest`)")
        # The serving link must stay inside the manual's collection directory.
        if not path.is_relative_to(collection_dir(settings, manual).resolve()):
            raise CollectionNotFound(f"the serving generation of {manual} lies outside its collection directory")
        key = (str(Path(settings.data_dir).resolve()), manual, str(uses_servers(settings)))
        with cls._lock:
            cached = cls._cache.get(key)
            if cached is None or cached.path != path:
                cached = cls(settings, manual, path)
                cls._cache[key] = cached
            return cached

    # --- search -------------------------------------------------------------------------------
    def bm25_search(self, query: str, k: int) -> list[tuple[str, float]]:
        return self._bm25.search(query, k)

    def embed_query(self, text: str) -> list[float]:
        model, _ = embedder_identity(self.settings)
        if model != self.embed_model:
            raise IndexMismatch(f"collection {self.manual} was embedded with {self.embed_model}, not {model}; re-ingest")
        return base_embedder(self.settings).embed([text])[0].tolist()

    def vector_search(self, query_text: str, k: int) -> list[tuple[str, float]]:
        return self.search_vector(self.embed_query(query_text), k)

    def search_vector(self, vector: list[float] | np.ndarray, k: int) -> list[tuple[str, float]]:
        """Nearest chunks to an already-embedded query (see ``embed_query``)."""
        return self._vectors.search(vector, k)

    def chunk_vector(self, chunk_id: str) -> np.ndarray:
        """The chunk's vector; in a routing-only manual (one vector per page, kept under the
        page's first chunk: settings.ingest.page_vectors) its page's. KeyError when neither is
        stored (a manual indexed for keywords only)."""
        vector = self._vectors.vector(chunk_id)
        if vector is None:
            vector = self._vectors.vector(chunk_id_of(section_of(chunk_id), 0))
        if vector is None:
            raise KeyError(chunk_id)
        return vector

    @property
    def vectors_remote(self) -> bool:
        """Whether the vectors live on a server (each fetch a round trip)."""
        return self._vectors.remote

    def chunk_vectors(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        """Many chunks' vectors in one round trip (a server-backed store keeps them, so the
        stage's own ``chunk_vector`` calls that follow are served from memory)."""
        return self._vectors.vectors(chunk_ids)

    def pages_in_play(self, section_ids: list[str], hops: int = 0) -> list[str]:
        """Chunk ids of these pages and of the pages up to ``hops`` cross-references away:
        what a stage may score (expansion follows links two deep: a link's target, then the
        pages several candidates cite; rollup, selection and stitching stay on their pages)."""
        sections = dict.fromkeys(s for s in section_ids if s in self.pages)
        frontier = list(sections)
        for _ in range(hops):
            reached = [x.target_section for s in frontier for x in self._xrefs.get(s, []) if x.target_section in self.pages]
            frontier = [s for s in dict.fromkeys(reached) if s not in sections]
            sections.update(dict.fromkeys(frontier))
        return [cid for section in sections for cid in self.pages[section].chunk_ids]

    # --- structure ----------------------------------------------------------------------------
    def xrefs_from(self, section_id: str) -> list[CrossRef]:
        return list(self._xrefs.get(section_id, []))

    def siblings(self, chunk_id: str) -> list[str]:
        """Other chunks of the same page, in page order."""
        if chunk_id not in self.graph:
            return []
        found = {n for n, data in self.graph[chunk_id].items() if data.get("kind") == "sibling"}
        return [c for c in self.pages[section_of(chunk_id)].chunk_ids if c in found] if found else []

    def page_chunks(self, section_id: str) -> list[Chunk]:
        page = self.pages.get(section_id)
        return [self.chunks[c] for c in page.chunk_ids] if page else []

    def paragraph(self, paragraph_id: str) -> Paragraph:
        chunk = self.chunks.get(chunk_of(paragraph_id))
        if chunk is not None:
            for paragraph in chunk.paragraphs:
                if paragraph.id == paragraph_id:
                    return paragraph
        raise KeyError(paragraph_id)
