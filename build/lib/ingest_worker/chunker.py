"""Heading-scoped chunks with stable ids.

One chunk per heading section; a section longer than ``MAX_CHARS`` is packed into several
chunks at block boundaries. A block is never split, so a table stays whole in one chunk,
under its heading (EIM31240's rate table stays with "From 2011-12"), and every paragraph id
points at a real paragraph. The text that gets embedded and BM25-indexed carries the page
title and headings, so a chunk's content hash changes when its context does.
"""

from __future__ import annotations

from pydantic import BaseModel

from ingest_worker.parser import Section
from shared.contracts.corpus import Chunk, Page, Paragraph, chunk_id, paragraph_id
from shared.embeddings import text_hash

# ~256 MiniLM tokens of English prose; longer sections are split between blocks.
MAX_CHARS = 1200


class ChunkDraft(BaseModel):
    headings: list[str]
    blocks: list[tuple[str, str]]  # (kind, text)
    block_indexes: list[int]  # position of each block in its section (to map hrefs)
    section_index: int


def pack(sections: list[Section], max_chars: int = MAX_CHARS) -> list[ChunkDraft]:
    drafts: list[ChunkDraft] = []
    for s_index, section in enumerate(sections):
        current: ChunkDraft | None = None
        size = 0
        for b_index, block in enumerate(section.blocks):
            if current is None or (size + len(block.text) > max_chars and current.blocks):
                current = ChunkDraft(headings=section.headings, blocks=[], block_indexes=[], section_index=s_index)
                drafts.append(current)
                size = 0
            current.blocks.append((block.kind, block.text))
            current.block_indexes.append(b_index)
            size += len(block.text)
    return drafts


def embed_text(title: str, headings: list[str], body: str) -> str:
    """What the embedder and BM25 see: the page title and headings above the chunk's text."""
    return "\n".join([" > ".join([title, *headings]), body])


def content_hash(text: str) -> str:
    return text_hash(text)[:32]  # the embedding cache's key, shortened


def build_chunks(
    section_id: str, manual: str, heading_prefix: list[str], title: str, sections: list[Section]
) -> tuple[list[Chunk], list[ChunkDraft]]:
    """Chunks of one page, ids ``<SECTION>#c<n>``; also the drafts (to locate each block's hrefs)."""
    drafts = pack(sections)
    chunks = []
    for position, draft in enumerate(drafts):
        cid = chunk_id(section_id, position)
        paragraphs = [
            Paragraph(id=paragraph_id(cid, index), kind=kind, text=text)  # type: ignore[arg-type]
            for index, (kind, text) in enumerate(draft.blocks)
        ]
        body = "\n".join(text for _, text in draft.blocks)
        chunks.append(
            Chunk(
                id=cid,
                section_id=section_id,
                manual=manual,
                position=position,
                heading_path=[*heading_prefix, *draft.headings],
                paragraphs=paragraphs,
                content_hash=content_hash(embed_text(title, draft.headings, body)),
            )
        )
    return chunks, drafts


def chunk_embed_text(chunk: Chunk, page: Page) -> str:
    """The embedded text of a stored chunk, the same as at build time: its heading path is
    manual title, one title per breadcrumb, page title, then the page's own headings."""
    return embed_text(page.title, chunk.heading_path[len(page.breadcrumbs) + 2 :], chunk.text)
