"""The ingested corpus: pages, heading-scoped chunks, paragraphs, cross-references.

Ids are stable across re-ingests of unchanged pages:
- chunk id     ``<SECTION_ID>#c<position>``            e.g. ``EIM31240#c2``
- paragraph id ``<SECTION_ID>#c<position>.p<index>``   e.g. ``EIM31240#c2.p1``
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

GOV_UK = "https://www.gov.uk"
# How the manual labels a list item: "(a) ", "ii) ", "3. " (the parser does not run such a
# line on from the one before; the stitcher keeps a labelled list in its order).
ITEM_LABEL = r"\(?(?:[a-z]|[ivx]+|\d+)[.)]\s"


def chunk_id(section_id: str, position: int) -> str:
    return f"{section_id}#c{position}"


def paragraph_id(chunk: str, index: int) -> str:
    return f"{chunk}.p{index}"


def section_of(any_id: str) -> str:
    """Section id of a chunk or paragraph id (``EIM31240#c2.p1`` -> ``EIM31240``)."""
    return any_id.split("#", 1)[0]


def chunk_of(paragraph: str) -> str:
    """Chunk id of a paragraph id (``EIM31240#c2.p1`` -> ``EIM31240#c2``)."""
    return paragraph.rsplit(".p", 1)[0]


class Paragraph(BaseModel):
    id: str
    kind: Literal["p", "li", "table", "pre", "heading"] = "p"
    text: str


class Chunk(BaseModel):
    id: str
    section_id: str
    manual: str
    position: int
    # manual title > breadcrumbs > page title > h2 > h3 (> h4)
    heading_path: list[str]
    paragraphs: list[Paragraph]
    content_hash: str

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.paragraphs)

    @property
    def has_table(self) -> bool:
        return any(p.kind == "table" for p in self.paragraphs)


class RawRef(BaseModel):
    """A reference as written: one target, or a range ``start``..``end`` still to resolve."""

    source_section: str
    paragraph_id: str
    target_manual: str
    start: str
    end: str | None = None
    kind: Literal["link", "text"]


class CrossRef(BaseModel):
    source_section: str
    target_section: str
    target_manual: str
    paragraph_id: str  # the linking paragraph
    kind: Literal["link", "text"]


class Page(BaseModel):
    section_id: str
    manual: str
    title: str
    base_path: str
    public_updated_at: datetime
    breadcrumbs: list[str] = Field(default_factory=list)  # section ids, root first
    chunk_ids: list[str] = Field(default_factory=list)
    body_hash: str = ""

    @property
    def url(self) -> str:
        return GOV_UK + self.base_path
