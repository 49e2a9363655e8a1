"""The peer: Haystack's standard hybrid retrieval (InMemoryBM25Retriever and
InMemoryEmbeddingRetriever over one InMemoryDocumentStore, joined by DocumentJoiner in
reciprocal_rank_fusion mode), built from our index's chunks (the same text our BM25 index and
embedder saw) and our stored chunk vectors, and queried with our query embedder, so only the
retrieval method differs. Haystack's defaults otherwise (BM25L, dot product on our unit vectors)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from taxnav.evaluation.questions import EvalQuestion
from taxnav.evaluation.scoring import section_recall, sections_in_order

if TYPE_CHECKING:
    from shared.index import CorpusIndex

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network calls from the peer

PEER_NAME = "haystack-ai hybrid: InMemoryBM25Retriever + InMemoryEmbeddingRetriever + DocumentJoiner(reciprocal_rank_fusion)"


class RetrievalRow(BaseModel):
    id: str
    sections: list[str]  # sections of the top-k chunks, best first
    recall: float | None
    retrieval_ms: float


class RetrievalSide(BaseModel):
    name: str
    recall_at_k: float  # mean gold-section recall over questions with gold sections
    median_retrieval_ms: float
    questions: list[RetrievalRow]


class PeerResult(BaseModel):
    top_k: int
    documents: int
    ours: RetrievalSide
    peer: RetrievalSide


class HaystackHybrid:
    def __init__(self, index: CorpusIndex, top_k: int) -> None:
        from haystack import Document  # noqa: PLC0415  (haystack imports are slow; only for the peer)
        from haystack.components.joiners import DocumentJoiner  # noqa: PLC0415
        from haystack.components.retrievers.in_memory import (  # noqa: PLC0415
            InMemoryBM25Retriever,
            InMemoryEmbeddingRetriever,
        )
        from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: PLC0415

        from ingest_worker.chunker import chunk_embed_text  # noqa: PLC0415  (the text our BM25 and vectors index)

        self.index = index
        store = InMemoryDocumentStore(shared=False)
        store.write_documents(
            [
                Document(
                    id=chunk_id,
                    content=chunk_embed_text(index.chunks[chunk_id], index.pages[index.chunks[chunk_id].section_id]),
                    embedding=index.chunk_vector(chunk_id).tolist(),
                )
                for chunk_id in sorted(index.chunks)
            ]
        )
        self.documents = store.count_documents()
        self.bm25 = InMemoryBM25Retriever(store, top_k=top_k)
        self.dense = InMemoryEmbeddingRetriever(store, top_k=top_k)
        self.joiner = DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=top_k)

    def retrieve(self, question: str) -> list[str]:
        """Chunk ids, fused best first (the query embedded by our embedder)."""
        embedding = list(self.index.embed_query(question))
        lexical = self.bm25.run(query=question)["documents"]
        dense = self.dense.run(query_embedding=embedding)["documents"]
        return [d.id for d in self.joiner.run(documents=[lexical, dense])["documents"]]


Retrieve = Callable[[str], list[str]]  # question -> chunk ids, best first


def _measure(name: str, retrieve: Retrieve, question: EvalQuestion, rows: dict[str, list[RetrievalRow]]) -> None:
    started = time.perf_counter()
    chunk_ids = retrieve(question.question)
    ms = (time.perf_counter() - started) * 1000
    sections = sections_in_order(chunk_ids)
    rows[name].append(
        RetrievalRow(
            id=question.id,
            sections=sections,
            recall=section_recall(question.gold_sections, question.also_ok, sections),
            retrieval_ms=ms,
        )
    )


def _side(name: str, rows: list[RetrievalRow]) -> RetrievalSide:
    recalls = [r.recall for r in rows if r.recall is not None]
    return RetrievalSide(
        name=name,
        recall_at_k=statistics.fmean(recalls) if recalls else 0.0,
        median_retrieval_ms=statistics.median(r.retrieval_ms for r in rows),
        questions=rows,
    )


def run_peer(index: CorpusIndex, questions: Sequence[EvalQuestion], top_k: int, ours: Retrieve, ours_name: str) -> PeerResult:
    """Our retrieval and the peer's, question by question in one loop, so both see the same
    process state (each embeds the query inside its timed call)."""
    peer = HaystackHybrid(index, top_k)
    for retrieve in (ours, peer.retrieve):
        retrieve(questions[0].question)  # warm-up, untimed
    rows: dict[str, list[RetrievalRow]] = {"ours": [], "peer": []}
    for question in questions:
        _measure("ours", ours, question, rows)
        _measure("peer", peer.retrieve, question, rows)
    return PeerResult(
        top_k=top_k, documents=peer.documents, ours=_side(ours_name, rows["ours"]), peer=_side(PEER_NAME, rows["peer"])
    )
