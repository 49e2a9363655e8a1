"""BM25 over chunks, behind one interface: tantivy on disk (embedded) or OpenSearch (distributed).

Both analyse text the same way: lowercase, English stop words, English (Porter) stemmer, and
both score a query as OR-ed analysed terms over one ``text`` field, so embedded and
distributed rankings agree (tantivy's BM25 is Lucene's; its scores are ~2.2x OpenSearch's).

Each ingest generation gets its own index: tantivy in the generation directory, OpenSearch
as ``<prefix>-<manual>-<generation>`` behind the alias ``<prefix>-<manual>``, swapped in one
``_aliases`` call when the generation is published.
"""

from __future__ import annotations

import logging
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from shared.analysis import english_analyzer
from shared.fs import process_temp_dir, writable

log = logging.getLogger(__name__)

ANALYZER = "en_taxnav"
INDEX_PREFIX = "taxnav"


class Bm25Doc(BaseModel):
    id: str  # chunk id
    section_id: str
    text: str


class Bm25Error(RuntimeError):
    pass


class Bm25Store(ABC):
    @abstractmethod
    def build(self, docs: Iterable[Bm25Doc]) -> int:
        """Index every doc of a new generation (the store starts empty); returns the count."""

    @abstractmethod
    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Top ``k`` (chunk id, score), best first; [] for a query with no indexable term."""

    def publish(self) -> None:
        """Make this generation the one searches read (no-op where the generation dir does it)."""


# --- tantivy (embedded) -----------------------------------------------------------------------


class TantivyBm25Store(Bm25Store):
    """A tantivy index in ``path`` (one directory per generation)."""

    def __init__(self, path: str | Path):
        import tantivy

        self.path = Path(path)
        self._tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("section_id", stored=True, tokenizer_name="raw")
        builder.add_text_field("text", stored=False, tokenizer_name=ANALYZER, index_option="freq")
        self.schema = builder.build()
        self.analyzer = english_analyzer(drop_stopwords=True)
        self._index: Any = None

    def _open(self, create: bool) -> Any:
        if self._index is None:
            if create:
                if self.path.exists():
                    shutil.rmtree(self.path)
                self.path.mkdir(parents=True)
            elif not self.path.is_dir():
                raise Bm25Error(f"no BM25 index at {self.path}")
            path = self.path if create or writable(self.path) else self._copy()
            index = self._tantivy.Index(self.schema, path=str(path), reuse=not create)
            index.register_tokenizer(ANALYZER, self.analyzer)
            self._index = index
        return self._index

    def _copy(self) -> Path:
        """A private copy of a read-only index: tantivy takes a lock file beside the index even
        to read it. A generation never changes once written, so the copy stays true."""
        copy = process_temp_dir("taxnav-bm25-") / self.path.name
        shutil.copytree(self.path, copy)
        log.warning("bm25: %s is read-only; searching a copy in %s (tantivy writes a lock file to read)", self.path, copy)
        return copy

    def build(self, docs: Iterable[Bm25Doc]) -> int:
        index = self._open(create=True)
        writer = index.writer(heap_size=64_000_000, num_threads=1)
        count = 0
        for doc in docs:
            writer.add_document(self._tantivy.Document(id=doc.id, section_id=doc.section_id, text=doc.text))
            count += 1
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return count

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        index = self._open(create=False)
        terms = list(dict.fromkeys(self.analyzer.analyze(query)))
        if not terms or k <= 0:
            return []
        tantivy = self._tantivy
        subqueries = [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "text", term)) for term in terms]
        searcher = index.searcher()
        hits = searcher.search(tantivy.Query.boolean_query(subqueries), limit=k, count=False).hits
        return [(searcher.doc(address)["id"][0], float(score)) for score, address in hits]

    def analyze(self, text: str) -> list[str]:
        return list(self.analyzer.analyze(text))


# --- OpenSearch (distributed) -----------------------------------------------------------------

# The index body: the built-in ``english`` analyzer is exactly lowercase + English stop words +
# Porter stemmer (plus possessive removal), the chain the tantivy store mirrors.
INDEX_BODY: dict[str, Any] = {
    "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}},
    "mappings": {
        "dynamic": "strict",
        "properties": {
            "id": {"type": "keyword"},
            "section_id": {"type": "keyword"},
            "text": {"type": "text", "analyzer": "english"},
        },
    },
}
BULK_BATCH = 500


def index_name(manual: str, generation: str) -> str:
    return f"{INDEX_PREFIX}-{manual}-{generation}".lower()


def alias_name(manual: str) -> str:
    return f"{INDEX_PREFIX}-{manual}".lower()


def search_body(query: str, k: int) -> dict[str, Any]:
    return {"size": k, "_source": ["id"], "query": {"match": {"text": {"query": query, "operator": "or"}}}}


def bulk_actions(index: str, docs: Sequence[Bm25Doc]) -> list[dict[str, Any]]:
    """NDJSON bulk lines: an ``index`` action then the document, per chunk."""
    lines: list[dict[str, Any]] = []
    for doc in docs:
        lines.append({"index": {"_index": index, "_id": doc.id}})
        lines.append({"id": doc.id, "section_id": doc.section_id, "text": doc.text})
    return lines


class OpenSearchBm25Store(Bm25Store):
    """One OpenSearch index per generation behind a per-manual alias.

    ``generation`` None opens the alias for reading (what the question pipeline does)."""

    def __init__(self, url: str, manual: str, generation: str | None = None, timeout_s: float = 10.0, client: Any = None):
        if client is None:
            from opensearchpy import OpenSearch

            client = OpenSearch(hosts=[url], timeout=timeout_s, max_retries=2, retry_on_timeout=True)
        self.client = client
        self.manual = manual
        self.alias = alias_name(manual)
        self.index = index_name(manual, generation) if generation else self.alias

    def build(self, docs: Iterable[Bm25Doc]) -> int:
        if self.index == self.alias:
            raise Bm25Error("build() needs a generation (an index of its own), not the alias")
        if self.client.indices.exists(index=self.index):
            self.client.indices.delete(index=self.index)
        self.client.indices.create(index=self.index, body=INDEX_BODY)
        count = 0
        batch: list[Bm25Doc] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= BULK_BATCH:
                count += self._bulk(batch)
                batch = []
        if batch:
            count += self._bulk(batch)
        self.client.indices.put_settings(index=self.index, body={"index": {"refresh_interval": "1s"}})
        self.client.indices.refresh(index=self.index)
        return count

    def _bulk(self, docs: list[Bm25Doc]) -> int:
        response = self.client.bulk(body=bulk_actions(self.index, docs))
        if response.get("errors"):
            failed = [item for item in response.get("items", []) if next(iter(item.values())).get("error")]
            raise Bm25Error(f"OpenSearch bulk indexing rejected {len(failed)} documents: {failed[:1]}")
        return len(docs)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if not query.strip() or k <= 0:
            return []
        response = self.client.search(index=self.index, body=search_body(query, k))
        return [(hit["_source"]["id"], float(hit["_score"])) for hit in response["hits"]["hits"]]

    def publish(self) -> None:
        """Point the alias at this generation's index in one atomic ``_aliases`` call. The index
        it pointed at stays (readers that opened that generation finish on it); older ones go."""
        previous: list[str] = []
        if self.client.indices.exists_alias(name=self.alias):
            previous = [name for name in self.client.indices.get_alias(name=self.alias) if name != self.index]
        actions: list[dict[str, Any]] = [{"remove": {"index": name, "alias": self.alias}} for name in previous]
        actions.append({"add": {"index": self.index, "alias": self.alias}})
        self.client.indices.update_aliases(body={"actions": actions})
        generations = self.client.indices.get(index=f"{self.alias}-*", ignore_unavailable=True)
        for name in generations:
            if name != self.index and name not in previous:
                self.client.indices.delete(index=name, ignore_unavailable=True)
