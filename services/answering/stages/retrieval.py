"""Hybrid retrieval: BM25 and dense vectors side by side, fused by reciprocal rank fusion.

score(chunk) = sum over the lists it appears in of 1 / (rrf_k + rank), rank from 1. Each
list is fetched deeper than ``top_k`` so that a chunk ranked modestly by both lists can
still beat one ranked well by only one.
"""

from __future__ import annotations


import numpy as np

from shared.config import Settings
from shared.contracts.conversation import ConversationContext
from shared.contracts.refusals import ManualEvidence, PageRef
from shared.contracts.corpus import section_of
from shared.contracts.pipeline import PipelineState, Query, RetrievalResult, ScoredChunk
from shared.embeddings import embedder_identity
from shared.generation import ingested_manuals
from shared.index import CollectionNotFound, CorpusIndex
from services.answering import scope
from shared.meaning import question_vector
from services.text.lexicon import expand
from services.text.reading import reread
from services.text.terms import STOPWORDS, corpus_stats, query_terms, terms, words
from services.text.titles import FRAME_WORDS, title_index

DEPTH_FACTOR = 4  # each list is fetched to top_k * DEPTH_FACTOR (at least MIN_DEPTH)
MIN_DEPTH = 50


def fuse(ranked_lists: dict[str, list[str]], rrf_k: int, top_k: int, per_page: int | None = None) -> list[ScoredChunk]:
    """Reciprocal rank fusion of named ranked lists of chunk ids (best first); at most
    ``per_page`` chunks of one page in the result when given."""
    scores: dict[str, float] = {}
    seen_in: dict[str, list[str]] = {}
    for name, ids in ranked_lists.items():
        for rank, cid in enumerate(dict.fromkeys(ids), start=1):  # a duplicate keeps its best rank
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (rrf_k + rank)
            seen_in.setdefault(cid, []).append(name)
    ordered: list[str] = []
    taken: dict[str, int] = {}
    # Each list's first hit is kept whatever the other list says: a page that only the
    # keywords (or only the meaning) find first would otherwise lose to many middling
    # pages both lists agree on.
    leaders = [ids[0] for ids in ranked_lists.values() if ids][:top_k]
    for cid in dict.fromkeys([*leaders, *sorted(scores, key=lambda c: (-scores[c], c))]):
        page = section_of(cid)
        if per_page is not None and taken.get(page, 0) >= per_page:
            continue
        taken[page] = taken.get(page, 0) + 1
        ordered.append(cid)
        if len(ordered) == top_k:
            break
    ordered.sort(key=lambda c: (-scores[c], c))
    return [
        ScoredChunk(chunk_id=c, score=scores[c], source="hybrid" if len(seen_in[c]) > 1 else seen_in[c][0])  # type: ignore[arg-type]
        for c in ordered
    ]


def bm25_text(question: str, synonyms: list[str] = ()) -> str:  # type: ignore[assignment]
    """The question's words without stop words, plus the manual's words for its everyday
    words (services/text/lexicon.py) and its own other names for what the question names
    (acronyms and their long forms): plain terms for the keyword index."""
    text = expand(question) + " " + " ".join(synonyms)
    return " ".join(w for w in words(text) if w not in STOPWORDS) or question


def title_chunks(index: CorpusIndex, question: str, floor: float, depth: int) -> list[str]:
    """The opening chunk of each page whose title the question restates, best match first."""
    restated = title_index(index, corpus_stats(index), FRAME_WORDS).restated(set(terms(question)), floor)
    return [index.pages[s].chunk_ids[0] for s, _ in restated[:depth]]


SHORT_TERMS = 4  # a question with at most this many content terms leans on its context


def has_own_subject(question: str) -> bool:
    """More content terms than an elliptical follow-up has."""
    return len(query_terms(question)) > SHORT_TERMS


def terms_with_compounds(text: str) -> set[str]:
    """A text's terms, plus the terms of each two adjacent words written as one, so that
    'motorcycle' or 'payslip' in a question meets 'motor cycle' or 'pay slip' in the manual."""
    found = words(text)
    return set(terms(text)) | set(terms(" ".join(a + b for a, b in zip(found, found[1:]))))


def carried_chunks(index: CorpusIndex, context: ConversationContext, vector: np.ndarray | None) -> list[str]:
    """A follow-up's own ranked list: the chunks of the pages earlier turns found and of the
    pages those link to, ranked by the follow-up's own terms, then by meaning (the searched
    question's vector)."""
    own = set(terms(context.asked))
    sections = [*context.carried_sections, *context.linked_sections]
    if vector is not None and vector.size and index.vectors_remote:  # one round trip, not one per chunk
        index.chunk_vectors(index.pages_in_play(sections))
    scored = []
    for section in sections:
        for chunk in index.page_chunks(section):
            overlap = len(own & terms_with_compounds(chunk.text))
            try:
                similarity = float(index.chunk_vector(chunk.id) @ vector) if vector is not None and vector.size else 0.0
            except KeyError:  # a chunk without a stored vector ranks on its terms
                similarity = 0.0
            scored.append((overlap + similarity, chunk.id))
    return [cid for _, cid in sorted(scored, key=lambda x: (-x[0], x[1]))]


# The nearest chunks the vector search found, by the text searched: the home manual's
# evidence reads them instead of searching again (manual_evidence).
Nearest = dict[str, list[tuple[str, float]]]


def retrieve(query: Query, settings: Settings, index: CorpusIndex, context: ConversationContext | None = None) -> tuple[RetrievalResult, Nearest]:
    cfg = settings.retrieval
    depth = max(cfg.top_k * DEPTH_FACTOR, MIN_DEPTH)
    lists: dict[str, list[str]] = {}
    vector: list[float] = []
    nearest: Nearest = {}
    if cfg.use_bm25:
        text = bm25_text(query.question, corpus_stats(index).synonyms(query.question))
        lists["bm25"] = [cid for cid, _ in index.bm25_search(text, depth)]
    if cfg.use_titles:
        lists["title"] = title_chunks(index, query.question, cfg.title_match_floor, depth)
    if cfg.use_vectors:
        array = question_vector(index, query.question, [])
        vector = [float(x) for x in array]
        dense = index.search_vector(array, depth)
        nearest[query.question] = dense[:EVIDENCE_DEPTH]
        lists["vector"] = [cid for cid, _ in dense]
    if context is not None and context.carried_sections:
        lists["context"] = carried_chunks(index, context, np.asarray(vector, dtype=np.float32) if vector else None)
    if context is not None and context.excluded_sections:
        lists = {name: [c for c in ids if section_of(c) not in context.excluded_sections] for name, ids in lists.items()}
    return RetrievalResult(hits=fuse(lists, cfg.rrf_k, cfg.top_k, cfg.max_chunks_per_page), query_vector=vector), nearest


class Retrieval:
    """The stage: hybrid retrieval over the question's index, then, for a question that may
    belong to another manual, each part's evidence in every manual ingested (routing)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState:
        return step(state, self.settings, index)


def step(state: PipelineState, settings: Settings, index: CorpusIndex) -> PipelineState:
    state.retrieval, nearest = retrieve(state.query, settings, index, state.context)
    scoped, searched = state.query, state.retrieval
    if state.context is not None and state.context.kind == "follow_up":
        # A follow-up is routed on its own words (its topic was routed in its own turn); an
        # elliptical one names no subject of its own and stays with its subject's manual.
        scoped = reread(state.query, state.context.asked)
        # nor is it routed on the searched question's vector (its topic's meaning)
        searched = state.retrieval.model_copy(update={"query_vector": []})
    parts = evidence_by_part(scoped, searched, settings, index, nearest) if has_own_subject(scoped.question) or scoped is state.query else []
    # what routing found; whether it refuses (every part routed) is decided after the stage
    state.routes, state.findings.routing = scope.route(scoped.question, parts, state.query.manual)
    routed = {r.part for r in state.routes}
    rest = [part for part, _ in parts if part not in routed]
    if routed and rest and scoped is state.query:  # some parts routed, some left: never a refusal
        # A life event: this manual answers only the parts left to it, in the situation the
        # question describes ("I work from home two days a week. ..."). Searched whole, the
        # routed part's words (a van, a new business) would pull in pages for that part.
        situation = scope.situation(state.query.question)
        searched = " ".join([situation, *(p for p in rest if situation not in p)]).strip()
        own_words = state.context.asked if state.context is not None else ""
        state.query = reread(state.query, searched, asked=state.query.question, own_words=own_words)
        state.retrieval, _ = retrieve(state.query, settings, index, state.context)
    return state


# ---- evidence across manuals (the scope decision, services/answering/scope.py) ----------------

EVIDENCE_DEPTH = 20  # hits per manual looked at for a question's evidence
EVIDENCE_PAGES = 3  # best pages named per manual


# A manual ingested to route to holds one vector per page, its first chunk's (manifest
# ``vectors: pages``). While one is compared, every manual's dense evidence is read from its
# pages' first chunks, so each manual's nearest three are pages: a manual searched chunk by
# chunk has more near misses and would win on numbers alone. Hits searched for those first
# chunks in a manual with a vector per chunk (about half its vectors are first chunks).
PAGE_LEVEL_DEPTH = 200


def manual_evidence(
    index: CorpusIndex, text: str, vector: np.ndarray | None, found: list[tuple[str, float]] | None = None, page_level: bool = False
) -> ManualEvidence:
    asked = set(query_terms(text))
    bm25 = [cid for cid, _ in index.bm25_search(" ".join(w for w in words(text) if w not in STOPWORDS), EVIDENCE_DEPTH)] if asked else []
    dense_hits = found or (
        index.search_vector(vector, EVIDENCE_DEPTH) if vector is not None else []
    )
    nearest = dense_hits
    if page_level and vector is not None and index.vector_level == "chunks":
        nearest = [(c, s) for c, s in index.search_vector(vector, PAGE_LEVEL_DEPTH) if index.chunks[c].position == 0]
    top = [s for _, s in nearest[:3]]
    dense = float(sum(top) / len(top)) if top else 0.0
    ranked = fuse({"bm25": bm25, "vector": [c for c, _ in dense_hits]}, 60, EVIDENCE_DEPTH)
    sections = list(dict.fromkeys(section_of(h.chunk_id) for h in ranked))
    title = max((len(asked & set(terms(index.pages[s].title))) / len(asked) for s in sections), default=0.0) if asked else 0.0
    coverage = max((len(asked & set(terms(index.chunks[c].text))) / len(asked) for c in bm25[:5]), default=0.0) if asked else 0.0
    pages = [
        PageRef(section_id=s, title=index.pages[s].title, url=index.pages[s].url, manual=index.manual, public_updated_at=index.pages[s].public_updated_at)
        for s in sections[:EVIDENCE_PAGES]
    ]
    return ManualEvidence(
        manual=index.manual, manual_title=index.title.strip(), dense=dense, title=title, coverage=coverage, pages=pages,
        has_vectors=has_vectors(index),
    )


_HAS_VECTORS: dict[tuple[str, str], bool] = {}


def has_vectors(index: CorpusIndex) -> bool:
    """Whether the collection was embedded (a keywords-only manual has no vectors)."""
    key = (index.manual, str(index.generation))
    if key not in _HAS_VECTORS:
        probe = np.zeros(embedder_identity(index.settings)[1], dtype=np.float32)
        probe[0] = 1.0
        _HAS_VECTORS[key] = bool(index.search_vector(probe, 1))
    return _HAS_VECTORS[key]


def other_manuals(settings: Settings, home: CorpusIndex) -> list[CorpusIndex]:
    """The other manuals ingested in the data dir, embedded with the home manual's model:
    cosines from two different embedders would not compare. (Their indexes, opened here for
    the routing evidence only: the question is answered from ``home``, its own.)"""
    found = []
    for manual in ingested_manuals(settings):
        if manual == home.manual:
            continue
        try:
            index = CorpusIndex.open(settings, manual)
        except CollectionNotFound:
            continue
        if index.embed_model == home.embed_model:
            found.append(index)
    return found


def evidence_by_part(
    query: Query, retrieved: RetrievalResult, settings: Settings, home: CorpusIndex, nearest: Nearest | None = None
) -> list[tuple[str, dict[str, ManualEvidence]]]:
    """Each manual's evidence for each asking part of the question ([] with no other manual);
    ``home``: the question's own index."""
    others = other_manuals(settings, home)
    if not others:
        return []
    page_level = any(i.vector_level == "pages" for i in [home, *others])
    out = []
    for part in scope.routing_parts(query.question):
        if not settings.retrieval.use_vectors:
            vector = None
        elif part == query.question and retrieved.query_vector:
            vector = np.asarray(retrieved.query_vector, dtype=np.float32)
        else:
            vector = question_vector(home, part, [])
        evidence = {home.manual: manual_evidence(home, part, vector, (nearest or {}).get(part), page_level)}
        # a part the home manual answers well stays home whatever the others say: skip them
        if not all(has_vectors(i) for i in others) or evidence[home.manual].score < scope.ROUTE_HOME_CEILING:
            evidence.update({index.manual: manual_evidence(index, part, vector, page_level=page_level) for index in others})
        out.append((part, evidence))
    return out
