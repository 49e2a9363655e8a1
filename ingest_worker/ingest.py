"""Ingest one manual into a new index generation and swap it in atomically (the layout of a
generation, and how one is read, is shared/generation.py).

A run crawls the source, re-parses only pages whose body hash changed (the rest reuse the
serving generation's chunks), embeds only text the embedding cache has not seen, builds
everything in ``generations/<gen>.partial``, renames it and then replaces the ``current``
symlink. Until that last step the previous generation keeps serving, whole: a run that
fails or is killed midway leaves only a ``.partial`` directory, removed by the next run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import networkx as nx
import numpy as np
from pydantic import BaseModel, Field, ValidationError

from ingest_worker.chunker import build_chunks, chunk_embed_text
from ingest_worker.crawler import CrawlError, CrawlResult, run_crawl, section_path
from ingest_worker.cleaning import clean_title
from ingest_worker.parser import opening_words, parse_body
from ingest_worker.progress import Progress
from ingest_worker.xrefs import build_graph, edge_counts, extract_refs, resolve
from shared.config import Settings
from shared.contracts.corpus import Chunk, Page, RawRef
from shared.embeddings import clip_tokens, get_embedder
from shared.generation import (
    CHUNKS,
    CURRENT,
    FORMAT,
    GENERATIONS,
    GRAPH,
    MANIFEST,
    PAGES,
    REFS,
    XREFS,
    Generation,
    Manifest,
    collection_dir,
    forget_listing,
    load_generation,
    serving_path,
)
from shared.stores import bm25_store, vector_store
from shared.stores.bm25 import Bm25Doc

PARTIAL = ".partial"
TITLE_WORDS = 10  # a page titled by its opening words (its own title is scrape residue) gets this many
LOCK_FILE = ".ingest.lock"


class IngestError(RuntimeError):
    """The ingest cannot produce a generation; the serving one is untouched."""


class PartialIngestRefused(IngestError):
    """A partial run (--limit, sections) would replace a whole serving generation."""


class IngestSummary(BaseModel):
    manual: str
    generation: str
    pages: int
    chunks: int
    xref_edges: int
    sibling_edges: int
    removed: int
    reembedded: int  # chunks whose content is new or changed since the serving generation
    seconds: float
    changed_pages: list[str] = Field(default_factory=list)  # new or changed pages, crawl order
    removed_pages: list[str] = Field(default_factory=list)
    reparsed: int = 0  # pages parsed this run (the rest reused the serving generation's chunks)
    model_embedded: int = 0  # texts the embedding model actually ran on (cache misses)
    gone: list[str] = Field(default_factory=list)  # linked from the manual but answered 404/410
    failed: list[str] = Field(default_factory=list)  # kept from the serving generation when it had them
    malformed: list[str] = Field(default_factory=list)
    blocked: list[str] = Field(default_factory=list)
    errors: dict[str, str] = Field(default_factory=dict)
    source: str = ""


# --- generations ------------------------------------------------------------------------------


def new_generation_name() -> str:
    # Sortable, lower case (OpenSearch index names), unique per microsecond.
    return "g" + datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")


def serving_page_dates(settings: Settings, manual: str) -> dict[str, datetime]:
    """``public_updated_at`` of every page in the serving generation ({} before the first)."""
    path = serving_path(settings, manual)
    if path is None:
        return {}
    return {p["section_id"]: datetime.fromisoformat(p["public_updated_at"]) for p in json.loads((path / PAGES).read_text(encoding="utf-8"))}


# --- building pages ---------------------------------------------------------------------------


class PageBuild(BaseModel):
    page: Page
    chunks: list[Chunk]
    refs: list[RawRef]


def body_hash(manual_title: str, crumb_titles: list[str], title: str, body: str) -> str:
    """Everything a page's chunks are made from: same hash, same chunks."""
    raw = json.dumps([FORMAT, manual_title, crumb_titles, title, body], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def _page_fields(document: dict, section: str, manual: str, titles: dict[str, str]) -> tuple[Page, str, list[str]]:
    details = document["details"]
    crumbs = [str(c["section_id"]).upper() for c in details.get("breadcrumbs") or [] if isinstance(c, dict) and c.get("section_id")]
    body = str(details.get("body") or "")
    # a title of scrape residue: the page's opening words (its body parsed once more, a few pages)
    title = clean_title(str(document.get("title") or section)) or opening_words(parse_body(body), TITLE_WORDS) or section
    updated = document.get("public_updated_at") or document.get("updated_at")
    if not updated:
        raise ValueError("no public_updated_at")
    page = Page(
        section_id=section,
        manual=manual,
        title=title,
        base_path=str(document.get("base_path") or section_path(manual, section)),
        public_updated_at=updated,
        breadcrumbs=crumbs,
    )
    return page, body, [clean_title(titles.get(c) or c) or c for c in crumbs]


def refs_by_page(generation: Generation | None) -> dict[str, list[RawRef]]:
    grouped: dict[str, list[RawRef]] = defaultdict(list)
    for ref in generation.refs if generation else []:
        grouped[ref.source_section].append(ref)
    return grouped


def build_page(
    document: dict,
    section: str,
    manual: str,
    manual_title: str,
    titles: dict[str, str],
    previous: Generation | None,
    previous_refs: dict[str, list[RawRef]] | None = None,
) -> tuple[PageBuild, bool]:
    """The page's chunks and references; reused from ``previous`` when its body hash matches.
    Returns (build, parsed) where parsed says whether the HTML was parsed this time."""
    page, body, crumb_titles = _page_fields(document, section, manual, titles)
    page.body_hash = body_hash(manual_title, crumb_titles, page.title, body)
    old = previous.pages.get(section) if previous else None
    if previous is not None and old is not None and old.body_hash == page.body_hash:
        page.chunk_ids = list(old.chunk_ids)
        chunks = [previous.chunks[cid] for cid in old.chunk_ids]
        refs = (previous_refs if previous_refs is not None else refs_by_page(previous)).get(section, [])
        return PageBuild(page=page, chunks=chunks, refs=refs), False
    sections = parse_body(body)
    chunks, drafts = build_chunks(section, manual, [manual_title, *crumb_titles, page.title], page.title, sections)
    page.chunk_ids = [c.id for c in chunks]
    return PageBuild(page=page, chunks=chunks, refs=extract_refs(section, chunks, drafts, sections)), True


# --- the run ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _exclusive(collection: Path, manual: str) -> Iterator[None]:
    """One ingest per collection at a time on this data dir (a killed run's flock dies with it)."""
    collection.mkdir(parents=True, exist_ok=True)
    with (collection / LOCK_FILE).open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise IngestError(f"another ingest of {manual} is running on this data dir") from exc
        yield


def _swap_current(collection: Path, generation: str) -> None:
    """Point ``current`` at the new generation with one rename (atomic on POSIX)."""
    staging = collection / f".{CURRENT}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        staging.unlink()
    staging.symlink_to(Path(GENERATIONS) / generation)
    os.replace(staging, collection / CURRENT)
    _fsync_dir(collection)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _collect_garbage(collection: Path, keep: int) -> None:
    """Drop unfinished ``.partial`` builds and all but the ``keep`` newest old generations."""
    generations = collection / GENERATIONS
    if not generations.is_dir():
        return
    current = (collection / CURRENT).resolve().name if (collection / CURRENT).exists() else None
    finished = sorted(p for p in generations.iterdir() if p.is_dir() and not p.name.endswith(PARTIAL) and p.name != current)
    doomed = [p for p in generations.iterdir() if p.name.endswith(PARTIAL)] + finished[: max(0, len(finished) - keep)]
    for path in doomed:
        shutil.rmtree(path, ignore_errors=True)


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def run_ingest(
    settings: Settings,
    source: str,
    manual: str,
    limit: int | None = None,
    sections: set[str] | None = None,
    progress: bool = False,
    force: bool = False,
) -> IngestSummary:
    """Crawl ``manual`` from ``source`` (URL or directory) into a new generation and serve it.

    A partial run (``limit`` or ``sections``) never replaces a whole serving generation unless
    ``force``: a quick trial run on a live data directory must not cut what is served."""
    started = time.perf_counter()
    collection = collection_dir(settings, manual)
    partial_run = limit is not None or sections is not None
    with _exclusive(collection, manual), Progress(manual, enabled=progress) as bar:
        _collect_garbage(collection, settings.ingest.keep_generations)  # leftovers of a killed run
        previous_path = serving_path(settings, manual)
        previous = load_generation(previous_path) if previous_path else None
        if partial_run and previous is not None and not previous.manifest.partial and not force:
            raise PartialIngestRefused(
                f"{manual}: the serving generation is whole ({previous.manifest.pages} pages); a run limited to part of the "
                "manual would replace it. Ingest into another data directory, or pass --force."
            )
        try:
            crawl = run_crawl(
                source, manual, settings.ingest, limit=limit, sections={s.upper() for s in sections} if sections else None, on_progress=bar.on_pages
            )
        except CrawlError as exc:
            raise IngestError(str(exc)) from exc
        bar.set_phase("parse")
        previous_refs = refs_by_page(previous)
        builds, reparsed, malformed = _build_pages(crawl, manual, previous, previous_refs)
        unreadable = crawl.failed + crawl.malformed + crawl.blocked + malformed
        for section in unreadable:  # not readable this time: serve the last good version, not nothing
            if previous is not None and section in previous.pages and section not in builds:
                old = previous.pages[section]
                chunks_kept = [previous.chunks[c] for c in old.chunk_ids]
                builds[section] = PageBuild(page=old, chunks=chunks_kept, refs=previous_refs.get(section, []))
        if not builds:
            raise IngestError(f"no readable pages in {manual} at {source}: {dict(list(crawl.errors.items())[:5])}")

        pages = {s: b.page for s, b in builds.items()}
        chunks = {c.id: c for b in builds.values() for c in b.chunks}
        xrefs = resolve([r for b in builds.values() for r in b.refs], manual, pages)
        graph = build_graph(manual, pages, chunks, xrefs)
        xref_edges, sibling_edges = edge_counts(graph)

        old_pages = previous.pages if previous else {}
        old_hashes = {c.content_hash for c in previous.chunks.values()} if previous else set()
        ordered = list(chunks.values())
        texts = [chunk_embed_text(c, pages[c.section_id]) for c in ordered]
        vector_ids, vector_texts = vector_rows(settings, manual, ordered, texts)
        bar.on_chunks(0, len(vector_texts))  # the embed phase begins
        embedder = get_embedder(settings)
        vectors = embedder.embed(vector_texts, on_progress=bar.on_chunks) if vector_texts else np.zeros((0, embedder.dims), dtype=np.float32)

        bar.set_phase("index")
        generation = new_generation_name()
        partial = collection / GENERATIONS / f"{generation}{PARTIAL}"
        partial.mkdir(parents=True)
        bm25 = bm25_store(settings, manual, partial, generation)
        bm25.build(Bm25Doc(id=c.id, section_id=c.section_id, text=t) for c, t in zip(ordered, texts, strict=True))
        vectors_out = vector_store(settings, manual, partial, generation)
        vectors_out.build(vector_ids, vectors)
        _write_json(partial / PAGES, [p.model_dump(mode="json") for p in pages.values()])
        with (partial / CHUNKS).open("w", encoding="utf-8") as handle:
            handle.writelines(c.model_dump_json() + "\n" for c in ordered)
        _write_json(partial / REFS, [r.model_dump(mode="json") for b in builds.values() for r in b.refs])
        _write_json(partial / XREFS, [x.model_dump(mode="json") for x in xrefs])
        _write_json(partial / GRAPH, nx.node_link_data(graph, edges="edges"))
        manifest = Manifest(
            manual=manual,
            title=crawl.title,
            generation=generation,
            created_at=datetime.now(UTC),
            source=source,
            embed_model=embedder.model_name,
            dims=int(vectors.shape[1]) if len(vectors) else embedder.dims,
            pages=len(pages),
            chunks=len(chunks),
            xref_edges=xref_edges,
            sibling_edges=sibling_edges,
            partial=partial_run,
            vectors=vector_level(settings, manual),
        )
        (partial / MANIFEST).write_text(manifest.model_dump_json(indent=1), encoding="utf-8")  # written last
        final = collection / GENERATIONS / generation
        os.rename(partial, final)
        _fsync_dir(final.parent)
        _swap_current(collection, generation)  # the commit point
        forget_listing(settings)  # a first generation makes a new manual: readers here see it at once
        bm25.publish()  # distributed: alias swaps (readers of this generation use its own names)
        vectors_out.publish()
        _collect_garbage(collection, settings.ingest.keep_generations)

    removed_pages = [s for s in old_pages if s not in pages]
    changed_pages = [s for s, p in pages.items() if s not in old_pages or old_pages[s].body_hash != p.body_hash]
    return IngestSummary(
        manual=manual,
        generation=generation,
        pages=len(pages),
        chunks=len(chunks),
        xref_edges=xref_edges,
        sibling_edges=sibling_edges,
        removed=len(removed_pages),
        reembedded=sum(1 for c in ordered if c.content_hash not in old_hashes),
        seconds=round(time.perf_counter() - started, 3),
        changed_pages=changed_pages,
        removed_pages=removed_pages,
        reparsed=reparsed,
        model_embedded=embedder.computed,
        gone=crawl.removed,
        failed=crawl.failed,
        malformed=crawl.malformed + malformed,
        blocked=crawl.blocked,
        errors=crawl.errors,
        source=source,
    )


def vector_level(settings: Settings, manual: str) -> Literal["chunks", "pages", "none"]:
    if manual in settings.ingest.bm25_only:
        return "none"
    return "pages" if manual in settings.ingest.page_vectors else "chunks"


def vector_rows(settings: Settings, manual: str, ordered: list[Chunk], texts: list[str]) -> tuple[list[str], list[str]]:
    """The chunk ids that get a vector and the text each is embedded from: every chunk; for a
    routing-only manual (``settings.ingest.page_vectors``) each page's first chunk, clipped to
    ``page_vector_tokens`` (title and opening text: what routing compares); none for a manual
    indexed for keywords only. A page's vector keeps its first chunk's id, so readers map a
    hit to its page as for any chunk."""
    level = vector_level(settings, manual)
    if level == "none":
        return [], []
    if level == "chunks":
        return [c.id for c in ordered], texts
    firsts = [(c.id, t) for c, t in zip(ordered, texts, strict=True) if c.position == 0]
    return [cid for cid, _ in firsts], [clip_tokens(t, settings.ingest.page_vector_tokens) for _, t in firsts]


def _build_pages(
    crawl: CrawlResult, manual: str, previous: Generation | None, previous_refs: dict[str, list[RawRef]]
) -> tuple[dict[str, PageBuild], int, list[str]]:
    """Builds of the crawled pages, the number parsed, and pages whose JSON was unusable."""
    builds: dict[str, PageBuild] = {}
    reparsed = 0
    malformed: list[str] = []
    for section, document in crawl.pages.items():
        try:
            build, parsed = build_page(document, section, manual, crawl.title, crawl.titles, previous, previous_refs)
        except (ValueError, ValidationError, KeyError, TypeError) as exc:
            malformed.append(section)
            crawl.errors[section] = f"unusable page: {exc}"
            continue
        builds[section] = build
        reparsed += parsed
    return builds, reparsed, malformed
