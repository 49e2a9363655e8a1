"""``details.body`` HTML -> a heading tree of blocks (paragraphs, list items, tables, pre).

h2/h3/h4 open sections (h1 counts as h2: a few pages use it as their top heading); h5/h6
stay inside the current section as small heading paragraphs; a heading directly followed by
one at its own level or above heads nothing and becomes the first line of the next section. Every block keeps the hrefs it
contains so cross-references can point at the exact paragraph that links. Markdown leftovers
from the 2014 scrape (``**bold**``, ``[EIM123](/guidance/...)``) are cleaned into plain text,
keeping the markdown link's target as an href. The scrape also split many sentences over
several <p> (one per wrapped source line); ``join_split_sentences`` glues them back.

Other scrape damage repaired here, so every stage and every citation reads the same text:
markdown bullets left inside paragraphs ("cars and vans*   motor cycles") become list items
(``split_bullets``, after the joins, so an item wrapped over two <p> stays whole), markdown
heading marks ("### Class") go, a reference glued to its word ("seeEIM13760", "EIM21850for")
gets its space back, as do glued dates and statute numbers ("6April", "Section102"), table
cells whose line breaks were lost ("First 10,000After that" beside "45p25p") become one row
per line (``split_glued_row``), and titles lose their HTML entities (``clean_title``).

The walk over the HTML is here; beside it: blocks.py (Block, Section), cleaning.py (an
element's text, markdown and lost spaces, titles), table_text.py (tables and glued rows),
joins.py (split sentences joined, bullets split).
"""

from __future__ import annotations

import re

import lxml.html
from lxml import etree

from ingest_worker.blocks import Block, BlockKind, Section
from ingest_worker.cleaning import SKIP_TAGS, clean_text, hrefs_in, inline_text
from ingest_worker.joins import SENTENCE_END, join_split_sentences, split_bullets
from ingest_worker.table_text import table_text
from shared.contracts.corpus import ITEM_LABEL

SECTION_HEADINGS = {"h1": 2, "h2": 2, "h3": 3, "h4": 4}
MINOR_HEADINGS = {"h5", "h6"}
LISTS = {"ul", "ol"}
# Containers whose children are blocks; anything else at block level is inline text.
CONTAINERS = {"div", "blockquote", "section", "article", "body", "html", "main", "details", "figure", "dl", "dd", "center"}
BLOCK_TAGS = set(SECTION_HEADINGS) | MINOR_HEADINGS | LISTS | CONTAINERS | {"p", "table", "pre", "li", "dt"}
HEADING_TAIL_CHARS = 80  # the rest of a split heading is a few words
SPLIT_HEADING_CHARS = 40  # the scrape wrapped headings at about 50 to 65 characters


def opening_words(sections: list[Section], words: int) -> str:
    """The first ``words`` words of the first sentence of a parsed body's first paragraph (not a
    heading: "Section 139 ITEPA 2003" names a statute, not the page), "\u2026" when it goes on: the
    title of a page whose own title is scrape residue."""
    first = next((b.text for section in sections for b in section.blocks if b.kind in ("p", "li")), "")
    sentence = re.split(r"(?<=[.!?])\s", " ".join(first.split()), maxsplit=1)[0].split()
    return " ".join(sentence[:words]) + ("\u2026" if len(sentence) > words else "")

def _block(kind: BlockKind, raw: str, hrefs: list[str]) -> Block | None:
    text, markdown_hrefs = clean_text(raw)
    if not text:
        return None
    if kind != "pre" and kind != "table":
        text = " ".join(text.split("\n"))
    return Block(kind=kind, text=text, hrefs=hrefs + markdown_hrefs)

def _heading_goes_on(heading: str, block: Block) -> bool:
    """Whether the first <p> under a heading is the rest of it: the scrape split some headings
    ("Is PAYE due on the cash payment by the overseas" + "intermediary?"), where a long heading
    wrapped; a short heading followed by a lower-case line is left alone."""
    return (
        len(heading) >= SPLIT_HEADING_CHARS
        and block.kind == "p"
        and len(block.text) <= HEADING_TAIL_CHARS
        and not SENTENCE_END.search(heading)
        and bool(re.match(rf"^(?!{ITEM_LABEL})[a-z]", block.text))
        and not SENTENCE_END.search(block.text[:-1])  # at most a closing "?" or ":"
    )


class _Walker:
    def __init__(self) -> None:
        self.sections: list[Section] = [Section()]
        self.trail: list[tuple[int, str]] = []  # (level, heading text)
        self.group = 0  # the container being walked
        self.groups = 0
        self.after_heading = False  # nothing emitted since the last heading
        self.heading_hrefs: list[str] = []  # the links in the last heading
        self.heading_lines: set[int] = set()  # ids of blocks that were headings heading nothing
        self.lost = False  # the last heading headed only a table the scrape emptied

    def emit(self, block: Block | None) -> None:
        if block is None:
            return
        if self.after_heading and self.trail and _heading_goes_on(self.trail[-1][1], block):
            level, heading = self.trail[-1]
            self.trail[-1] = (level, f"{heading} {block.text}")
            self.sections[-1].headings = [h for _, h in self.trail]
            self.after_heading = False
            return
        self.after_heading = False
        block.group = self.group
        self.sections[-1].blocks.append(block)

    def heading(self, level: int, element: etree._Element) -> None:
        text = " ".join(clean_text(inline_text(element))[0].split())
        if not text:
            return
        # A heading followed by one at its own level or above, nothing between, heads nothing:
        # it is a line the page states ("THIS RELIEF WAS WITHDRAWN FROM 6 APRIL 2013" above
        # "S.I.2002 No. 205" on EIM21668; "The position up to 5 April 2013" above the table it
        # dates on EIM71332). Dropped with its empty section it was lost; it leads the next
        # section's text instead, with any such lines before it.
        last = self.sections[-1]
        carried: list[Block] = []
        if self.lost and not last.blocks:
            self.sections.pop()  # its table's cells were lost: nothing under it to date or name
        elif self.trail and self.trail[-1][0] >= level and all(id(b) in self.heading_lines for b in last.blocks):
            self.groups += 1  # a group of its own: a heading's line never joins the text after it
            carried = [*last.blocks, Block(kind="p", text=self.trail[-1][1], hrefs=self.heading_hrefs, group=self.groups)]
            self.heading_lines.add(id(carried[-1]))
            self.sections.pop()
        self.trail = [(lvl, h) for lvl, h in self.trail if lvl < level] + [(level, text)]
        self.sections.append(Section(headings=[h for _, h in self.trail], blocks=carried))
        self.heading_hrefs = hrefs_in(element)
        self.after_heading = True
        self.lost = False

    def enter(self) -> int:
        """Start a new container group; returns the enclosing one to restore."""
        outer, self.groups = self.group, self.groups + 1
        self.group = self.groups
        return outer

    def list_items(self, element: etree._Element) -> None:
        for li in element:
            if not isinstance(li.tag, str):
                continue
            if li.tag != "li":
                self.container(li)
                continue
            nested = tuple(child for child in li if isinstance(child.tag, str) and child.tag in BLOCK_TAGS)
            outer = self.enter()
            self.emit(_block("li", inline_text(li, nested), hrefs_in(li, nested)))
            for child in nested:
                self.block_element(child)
            self.group = outer

    def block_element(self, el: etree._Element) -> None:
        tag = el.tag
        if tag in SECTION_HEADINGS:
            self.heading(SECTION_HEADINGS[tag], el)
        elif tag in MINOR_HEADINGS:
            self.emit(_block("heading", inline_text(el), hrefs_in(el)))
        elif tag in LISTS:
            self.list_items(el)
        elif tag == "table":
            text = table_text(el)
            self.lost = self.lost or (not text and self.after_heading)
            self.emit(_block("table", text, hrefs_in(el)))
        elif tag == "pre":
            self.emit(_block("pre", "".join(el.itertext()), hrefs_in(el)))
        elif tag in ("p", "li", "dt"):
            self.paragraph_with_blocks(el)
        else:
            self.container(el)

    def paragraph_with_blocks(self, el: etree._Element) -> None:
        """A <p> is one paragraph, unless (broken HTML) it wraps block elements."""
        if any(isinstance(c.tag, str) and c.tag in BLOCK_TAGS for c in el):
            self.container(el)
        else:
            self.emit(_block("p", inline_text(el), hrefs_in(el)))

    def container(self, el: etree._Element) -> None:
        """Children are blocks; loose inline runs between them become paragraphs."""
        outer = self.enter()
        run_text: list[str] = [el.text or ""]
        run_links: list[str] = []

        def flush() -> None:
            self.emit(_block("p", "".join(run_text), list(run_links)))
            run_text.clear()
            run_links.clear()

        for child in el:
            if not isinstance(child.tag, str) or child.tag in SKIP_TAGS:
                run_text.append(child.tail or "")
                continue
            if child.tag in BLOCK_TAGS:
                flush()
                self.block_element(child)
                run_text.append(child.tail or "")
            else:
                run_text.append("\n" if child.tag == "br" else inline_text(child))
                run_links.extend(hrefs_in(child))
                run_text.append(child.tail or "")
        flush()
        self.group = outer

def parse_body(html: str) -> list[Section]:
    """The body's sections in document order; the first one (no headings) holds any preamble.
    Sections without blocks (a heading directly followed by a sub-heading) are dropped."""
    if not html or not html.strip():
        return []
    root = lxml.html.fragment_fromstring(html, create_parent="div")
    walker = _Walker()
    walker.container(root)
    return [s.model_copy(update={"blocks": split_bullets(join_split_sentences(s.blocks))}) for s in walker.sections if s.blocks]
