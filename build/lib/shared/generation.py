"""The data directory's layout: where each manual's generations live and how one is read.

    <data_dir>/collections/<manual>/current -> generations/<gen>     (symlink, replaced atomically)
    <data_dir>/collections/<manual>/generations/<gen>/
        manifest.json  pages.json  chunks.jsonl  refs.json  xrefs.json  graph.json
        vectors.npy  vector_ids.json  bm25/                              (embedded stores)

The ingest worker writes generations (ingest_worker/ingest.py); the question pipeline, the
gateway and the CLI read them through this module alone, so readers load no crawler or parser.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Literal

import networkx as nx
from pydantic import BaseModel

from shared.config import Settings
from shared.contracts.corpus import Chunk, CrossRef, Page, RawRef

COLLECTIONS = "collections"
GENERATIONS = "generations"
CURRENT = "current"
MANIFEST = "manifest.json"
PAGES = "pages.json"
CHUNKS = "chunks.jsonl"
REFS = "refs.json"
XREFS = "xrefs.json"
GRAPH = "graph.json"
FORMAT = 14  # bump when parsing/chunking changes so unchanged pages are re-parsed (3: split sentences joined; 4: split headings; 5: scrape repairs; 6: headings that head nothing kept as lines; 7: titles of table cells or markup repaired; 8: table cells' wrapped lines joined; 9: the scrape's printf'd '%f' repaired; 10: a table cell's wrapped lines joined by a space, not "; ", where they go on; 11: a paragraph ending on "and"/"or" goes on into the next; 12: spaces the scrape lost after references, in dates and statute numbers put back; 13: a no-break space read as Latin-1 repaired; 14: the rest of what the printf ate ("% d", "% c", "% s"), a table emptied under its column names dropped)

# A manual's name as GOV.UK spells it: lower-case words joined by hyphens. Anything else
# (dots, slashes, a trailing slash) is refused before it reaches a path or a cache key.
MANUAL_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_MANUAL_CHARS = 100
# How a request may name a manual (the API documents it as its pattern): a slug in any case,
# ASCII blanks around it. ASCII only: "\u212a".lower() is "k", and the schema must say what passes.
MANUAL_REQUEST = r"^[ \t\n\r\f\v]*[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*[ \t\n\r\f\v]*$"
_MANUAL_REQUEST = re.compile(MANUAL_REQUEST)


class InvalidManualName(ValueError):
    """A manual name that is not a slug: it could never name a collection directory."""


def canonical_manual(name: str) -> str:
    """The one spelling of a manual's name (case and surrounding blanks ignored), so each
    manual maps to one collection directory and one cached index."""
    if len(name) > MAX_MANUAL_CHARS or not _MANUAL_REQUEST.fullmatch(name):
        raise InvalidManualName("a manual is named by lower-case words joined by hyphens, e.g. employment-income-manual")
    return name.strip(" \t\n\r\f\v").lower()


class Manifest(BaseModel):
    format: int = FORMAT
    manual: str
    title: str
    generation: str
    created_at: datetime
    source: str
    embed_model: str
    dims: int
    pages: int
    chunks: int
    xref_edges: int
    sibling_edges: int
    partial: bool = False  # built from part of the manual (--limit or chosen sections)
    # What holds a vector: every chunk; each page's first chunk only (a manual ingested to
    # route to: settings.ingest.page_vectors); nothing (keywords only). Older manifests: chunks.
    vectors: Literal["chunks", "pages", "none"] = "chunks"


class Generation(BaseModel):
    """A generation's content as loaded from disk (stores excluded)."""

    path: Path
    manifest: Manifest
    pages: dict[str, Page]
    chunks: dict[str, Chunk]
    refs: list[RawRef]
    xrefs: list[CrossRef]


# --- paths ------------------------------------------------------------------------------------


def collection_dir(settings: Settings, manual: str) -> Path:
    return Path(settings.data_dir) / COLLECTIONS / manual


def serving_path(settings: Settings, manual: str) -> Path | None:
    """The serving generation's directory, resolved (None before the first ingest)."""
    link = collection_dir(settings, manual) / CURRENT
    if not link.is_symlink() and not link.exists():
        return None
    target = link.resolve()
    return target if (target / MANIFEST).is_file() else None


_LISTINGS: dict[str, tuple[float, list[str]]] = {}  # data dir -> (listed at, monotonic s; manuals)


def ingested_manuals(settings: Settings) -> list[str]:
    """The manuals with a serving generation in the data directory, sorted (a directory
    listing, no index load; a directory that is not a manual's name is not one). Reused for
    ``settings.stores.listing_cache_s`` (with 4 busy pipeline threads a listing took p95 36 ms
    on the event loop, most of it waiting for the GIL after each filesystem call; 0.5 ms reused)."""
    key = str(settings.data_dir)
    listed = _LISTINGS.get(key)
    if listed is not None and time.monotonic() - listed[0] < settings.stores.listing_cache_s:
        return list(listed[1])
    root = Path(settings.data_dir) / COLLECTIONS
    manuals = (
        sorted(p.name for p in root.iterdir() if MANUAL_NAME.fullmatch(p.name) and serving_path(settings, p.name) is not None)
        if root.is_dir()
        else []
    )
    _LISTINGS[key] = (time.monotonic(), manuals)
    return list(manuals)


class UnknownManual(LookupError):
    """A manual's name with no serving generation in the data directory."""

    def __init__(self, name: str, available: list[str]) -> None:
        super().__init__(f"No ingested manual {name}; ingested: {listed(available)}.")
        self.available = available


def listed(manuals: list[str]) -> str:
    """Manuals as error messages list them."""
    return ", ".join(manuals) or "none"


def requested_manual(settings: Settings, manual: str | None) -> str:
    """The canonical name of the manual a question asks for, as the API and the CLI both read
    it: the configured one when none is named (its index may still be missing), else an
    ingested one, any case. ``InvalidManualName`` for a name that is not a manual's slug,
    ``UnknownManual`` (listing the ingested ones) for one that is not ingested."""
    configured = canonical_manual(settings.manual)
    if manual is None:
        return configured
    name = canonical_manual(manual)
    if name == configured:
        return name
    available = ingested_manuals(settings)
    if name not in available:
        raise UnknownManual(name, available)
    return name


def forget_listing(settings: Settings) -> None:
    """Drop the data directory's reused listing (an ingest has just published a generation)."""
    _LISTINGS.pop(str(settings.data_dir), None)


# --- reading a generation ---------------------------------------------------------------------


def load_manifest(path: Path) -> Manifest:
    return Manifest.model_validate_json((path / MANIFEST).read_text(encoding="utf-8"))


def load_pages(path: Path) -> dict[str, Page]:
    pages = [Page.model_validate(p) for p in json.loads((path / PAGES).read_text(encoding="utf-8"))]
    return {p.section_id: p for p in pages}


def load_xrefs(path: Path) -> list[CrossRef]:
    return [CrossRef.model_validate(r) for r in json.loads((path / XREFS).read_text(encoding="utf-8"))]


# How the ingest writes each line of chunks.jsonl (``Chunk.model_dump_json``: the id first);
# a line that starts otherwise is parsed whole to find its id.
_CHUNK_LINE_ID = re.compile(r'\{"id":"([^"\\]+)"')


class ChunkFile(Mapping[str, Chunk]):
    """A generation's chunks by id, each parsed from its line of chunks.jsonl when first read:
    a manual consulted only to route a question reads a few dozen of its 5,000 chunks, and
    parsing them all took 0.4-0.6 s a manual (most of a ``taxnav ask``'s index load)."""

    def __init__(self, path: Path) -> None:
        self._items: dict[str, str | Chunk] = {}  # a chunk's line until it is parsed, then the chunk
        with (path / CHUNKS).open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                found = _CHUNK_LINE_ID.match(line)
                if found:
                    self._items[found.group(1)] = line
                else:
                    chunk = Chunk.model_validate_json(line)
                    self._items[chunk.id] = chunk

    def __getitem__(self, chunk_id: str) -> Chunk:
        item = self._items[chunk_id]
        if isinstance(item, str):  # two threads may both parse it: equal chunks, either kept
            item = self._items[chunk_id] = Chunk.model_validate_json(item)
        return item

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def load_generation(path: Path) -> Generation:
    """The whole generation, every chunk parsed (the ingest compares the previous one's)."""
    chunks = ChunkFile(path)
    return Generation(
        path=path,
        manifest=load_manifest(path),
        pages=load_pages(path),
        chunks={cid: chunks[cid] for cid in chunks},
        refs=[RawRef.model_validate(r) for r in json.loads((path / REFS).read_text(encoding="utf-8"))],
        xrefs=load_xrefs(path),
    )


def load_graph(path: Path) -> nx.DiGraph:
    return nx.node_link_graph(json.loads((path / GRAPH).read_text(encoding="utf-8")), directed=True, edges="edges")
