"""What the parser makes of a page body: blocks (a paragraph, a list item, a table, a
preformatted text, a minor heading) under the headings above them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

BlockKind = Literal["p", "li", "table", "pre", "heading"]


class Block(BaseModel):
    kind: BlockKind
    text: str
    hrefs: list[str] = Field(default_factory=list)
    group: int = 0  # the container (<li>, <blockquote>, <div>) the block sits in; joins stay inside one


class Section(BaseModel):
    """The blocks under one heading; ``headings`` is the trail of h2 > h3 > h4 above them."""

    headings: list[str] = Field(default_factory=list)
    blocks: list[Block] = Field(default_factory=list)
