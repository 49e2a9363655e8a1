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
"""

from __future__ import annotations

import html
import re
from typing import Literal

import lxml.html
from lxml import etree
from pydantic import BaseModel, Field

from shared.contracts.corpus import ITEM_LABEL
from shared.embeddings import english_words

BlockKind = Literal["p", "li", "table", "pre", "heading"]

SECTION_HEADINGS = {"h1": 2, "h2": 2, "h3": 3, "h4": 4}
MINOR_HEADINGS = {"h5", "h6"}
LISTS = {"ul", "ol"}
# Containers whose children are blocks; anything else at block level is inline text.
CONTAINERS = {"div", "blockquote", "section", "article", "body", "html", "main", "details", "figure", "dl", "dd", "center"}
BLOCK_TAGS = set(SECTION_HEADINGS) | MINOR_HEADINGS | LISTS | CONTAINERS | {"p", "table", "pre", "li", "dt"}
SKIP_TAGS = {"script", "style", "template"}

MARKDOWN_LINK = re.compile(r"\[([^\]\[]{1,200})\]\(([^)\s]{1,500})\)")
MARKDOWN_BOLD = re.compile(r"\*\*|__")
MARKDOWN_HEADING = re.compile(r"^\s*#{1,6}\s*")
# A markdown bullet: "* " opening a line or after a colon ("such as: * trades"), or "*" and
# two or more spaces inside a line (the scrape ran list items into the paragraph before
# them). A footnote star ("£3 million* and") or a product ("100,000 * 180/235") stays.
MARKDOWN_BULLET = re.compile(r"^\s*\*\s+|\s*\*[ \t\u00a0]{2,}|(?<=:)\s*\*\s")
BULLET = "\u2022"  # where a markdown bullet stood, until split_bullets makes it a list item
GLUED_REFERENCE = re.compile(r"(?<=[a-z])(?=[A-Z]{2,5}\d{4,6})")
# Other spaces the scrape lost: after a reference ("EIM20202onwards", "see EIM21850for"),
# between a statute word and its number ("Section102", "ITEPA2003", "Part7A"), a day and its
# month ("6April 2011"), a month and its year ("February2008"), a number and its unit of time
# ("183consecutive days", "21years"); about 160 places on EIM pages.
_MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
GLUED_SPACES = tuple(
    re.compile(pattern)
    for pattern in (
        r"\b([A-Z]{2,5}\d{4,6})(?=[a-z]{2,})",
        r"\b(Sections?|sections?|Schedule|Chapter|Part|ITEPA|ICTA|TCGA|ITTOIA)(?=\d)",
        rf"\b(\d{{1,2}})(?={_MONTHS}\b)",
        rf"\b({_MONTHS})(?=\d{{4}}\b)",
        r"\b(\d{2,3})(?=(?:consecutive|years?|months?|weeks?|days?)\b)",
    )
)
# The 2014 scrape ran the text through a printf, which ate "% f", "% d", "% c" and "% s"
# after a figure: "100% first" became "100 0.000000irst", "100% deduction" "100 0eduction",
# "10% ceiling" "10eiling", "100% subsidiary" "100ubsidiary" (EIM36640's title, EIM74607,
# EIM15413, EIM68450, EIM16070 ...).
PRINTF_PERCENT = re.compile(r"(?<=\d) 0\.000000(?=[a-z])")
PRINTF_DIGIT = re.compile(r"(?<=\d) 0(?=[a-z]{3,}\b)")
PRINTF_EMPTY = re.compile(r"(?<=\d)([a-z]{3,})\b")


def undo_printf(text: str) -> str:
    """Put back what the scrape's printf ate. A conversion that printed nothing ("% c", "% s")
    leaves only the rest of its word glued to the figure, so the letter is the one that makes
    an English word of it (and the glued letters are not a word or unit already: "16.00hrs")."""
    text = PRINTF_DIGIT.sub("% d", PRINTF_PERCENT.sub("% f", text))

    def restore(match: re.Match[str]) -> str:
        rest = match.group(1)
        words = english_words()
        if rest in words:
            return rest
        letter = next((c for c in "cs" if c + rest in words), None)
        return f"% {letter}{rest}" if letter else rest

    return PRINTF_EMPTY.sub(restore, text)
SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
# Where a table cell's lost line break glued two lines: a word run into a capitalised word
# ("10,000After", "allowanceAttendance"; not "McQuade"), or a figure run into a figure
# ("45p25p", "20%25%", "100£50").
CELL_GLUE = re.compile(r"(?<!\bMc)(?<!\bMac)(?<=[a-z0-9%)])(?=[A-Z][a-z])|(?<=\d[p%])(?=\u00a3?\d)|(?<=\d)(?=\u00a3\d)")

# A paragraph ends a sentence with . ! ? : ; (maybe followed by closing quotes/brackets).
SENTENCE_END = re.compile(r"[.!?:;][)\]\"'\u2019\u201d\u00bb]*$")
# A continuation starts in lower case or with punctuation that cannot open a sentence; "(a)",
# "ii)", "b." open list items and "[Note ...]" / "(This text has been withheld ...)" are
# editorial asides, so those do not continue a sentence.
CONTINUES = re.compile(
    rf"^(?!{ITEM_LABEL})(?:[a-z,;:.)\]]|\((?!(?:[a-z]|[ivx]+|\d+)\))(?!This (?:text|content))|\[[a-z])"
)
# No paragraph ends on these words (or an open bracket), so what follows continues it even
# when it starts with a capital or a figure (a link "EIM21001", "Chapter 10", "£4,000";
# "(see EIM12978 and" / "EIM13070)."; "Service Charges And" / "Troncs").
DANGLING = re.compile(r"(?:(?:^|\W)(?:a|an|the|of|to|in|on|at|by|for|from|with|into|than|per|via|see|See|and|or|And|Or)|\()$")
STARTS_WORD = re.compile(rf"^(?!{ITEM_LABEL})[\w£$€\"\u201c']")
HEADING_TAIL_CHARS = 80  # the rest of a split heading is a few words
SPLIT_HEADING_CHARS = 40  # the scrape wrapped headings at about 50 to 65 characters


class Block(BaseModel):
    kind: BlockKind
    text: str
    hrefs: list[str] = Field(default_factory=list)
    group: int = 0  # the container (<li>, <blockquote>, <div>) the block sits in; joins stay inside one


class Section(BaseModel):
    """The blocks under one heading; ``headings`` is the trail of h2 > h3 > h4 above them."""

    headings: list[str] = Field(default_factory=list)
    blocks: list[Block] = Field(default_factory=list)


def clean_text(raw: str) -> tuple[str, list[str]]:
    """Collapse whitespace and strip markdown leftovers; returns (text, markdown link targets)."""
    hrefs = [m.group(2) for m in MARKDOWN_LINK.finditer(raw)]
    text = MARKDOWN_LINK.sub(r"\1", raw)
    text = MARKDOWN_BOLD.sub("", text)
    text = GLUED_REFERENCE.sub(" ", text.replace("\u00c2\u00a0", " "))  # a no-break space read as Latin-1 ("businessesÂ & corporations")
    for glued in GLUED_SPACES:
        text = glued.sub(r"\1 ", text)
    text = undo_printf(text)
    lines = [MARKDOWN_HEADING.sub("", line) for line in text.split("\n")]
    lines = [SPACES.sub(" ", MARKDOWN_BULLET.sub(f" {BULLET} ", line)).strip() for line in lines]
    return "\n".join(line for line in lines if line and line != BULLET), hrefs


_TAG = re.compile(r"<[^>]*>")
# A title the scrape filled with a table's cells ("</td> <td>  &#xA3;2,536" on EIM13505, the
# £30,000 threshold page) names nothing of the page.
_TABLE_CELLS = re.compile(r"</?t[dhr]\b", re.I)


def clean_title(raw: str) -> str:
    """A page title as a reader sees it: entities decoded ("employer&#x2019;s" -> "employer's"),
    markup left in it dropped ("Redundancies</p>"), spaces collapsed; "" for a title made of
    table cells (``ingest_worker.ingest`` titles such a page by its opening words)."""
    if _TABLE_CELLS.search(raw):
        return ""
    return " ".join(undo_printf(html.unescape(_TAG.sub(" ", raw))).split())


def opening_words(sections: list[Section], words: int) -> str:
    """The first ``words`` words of the first sentence of a parsed body's first paragraph (not a
    heading: "Section 139 ITEPA 2003" names a statute, not the page), "\u2026" when it goes on: the
    title of a page whose own title is scrape residue."""
    first = next((b.text for section in sections for b in section.blocks if b.kind in ("p", "li")), "")
    sentence = re.split(r"(?<=[.!?])\s", " ".join(first.split()), maxsplit=1)[0].split()
    return " ".join(sentence[:words]) + ("\u2026" if len(sentence) > words else "")


def _inline_text(element: etree._Element, skip: tuple[etree._Element, ...] = ()) -> str:
    """Text of an element's content (not its tail); <br> becomes a line break; ``skip``
    leaves out nested elements (a list item's sub-list) but keeps the text after them."""
    parts: list[str] = []

    def walk(el: etree._Element) -> None:
        if isinstance(el.tag, str) and el.tag not in SKIP_TAGS and el not in skip:
            if el.tag == "br":
                parts.append("\n")
            parts.append(el.text or "")
            for child in el:
                walk(child)
        parts.append(el.tail or "")

    parts.append(element.text or "")
    for child in element:
        walk(child)
    return "".join(parts)


def _hrefs(element: etree._Element, skip: tuple[etree._Element, ...] = ()) -> list[str]:
    inside_skipped = {id(a) for nested in skip for a in nested.iter("a")}
    return [a.get("href", "") for a in element.iter("a") if a.get("href") and id(a) not in inside_skipped]


def _block(kind: BlockKind, raw: str, hrefs: list[str]) -> Block | None:
    text, markdown_hrefs = clean_text(raw)
    if not text:
        return None
    if kind != "pre" and kind != "table":
        text = " ".join(text.split("\n"))
    return Block(kind=kind, text=text, hrefs=hrefs + markdown_hrefs)


# A cell's line that stops on a word needing more ("... taxable as", "See") is wrapped prose.
_RUNS_ON = re.compile(r"\b(?:a|an|and|as|at|by|for|from|in|of|on|or|see|the|to|with)$", re.I)


_MONTH = rf"(?:{_MONTHS}|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\b"  # as a cell's date may abbreviate it
_OPERATOR = r"[-+=x\u00d7\u2013/]"


def _wraps_on(line: str, after: str, so_far: str = "") -> bool:
    """Whether a cell's line break only wrapped its prose (the 2014 source wrapped long cells:
    "The employer pays the" / "hospital."; "Section 203 ITEPA" / "2003"; "Salary (6 April 2009
    to 5" / "April 2010)"; "£2,000 +" / "£1,000"): the next line goes on in lower case, the line
    stops on a word that needs more or on an operator, a bracket ``so_far`` opened is still
    open, the next line is a bracketed aside or goes on with an operator, a figure follows a
    word ("See Note" / "1"), a month follows a day, a name goes on ("in the United" /
    "Kingdom"); not after a line that ends its statement."""
    if re.search(r"[.;:!?]$", line):
        return False
    opened = so_far + " " + line
    return (
        after[:1].islower()
        or bool(_RUNS_ON.search(line))
        or opened.count("(") > opened.count(")")
        or (after.startswith("(") and not re.match(ITEM_LABEL, after))
        or bool(re.search(rf"(?:^|\s){_OPERATOR}$", line) or re.match(rf"{_OPERATOR}(?:\s|$)", after))
        or (line[-1:].isalpha() and bool(re.match(r"[\d\u00a3]", after)))
        or (line[-1:].isdigit() and bool(re.match(_MONTH, after)))
        or (after[:1].isupper() and bool(re.search(r"\b(?:the|of|and)\s+[A-Z][\w'-]*$", line)))
    )


def _cell_text(cell: etree._Element) -> str:
    """A cell on one line: its lines and bullets joined by "; " (each says something of its
    own: "First 10,000" / "After that"), by a space after a colon or where the line only
    wrapped the cell's prose (``_wraps_on``)."""
    lines: list[tuple[str, bool]] = []  # (line, whether a bullet starts it)
    for k, item in enumerate(clean_text(_inline_text(cell))[0].split(BULLET)):
        starts = k > 0
        for line in (x.strip() for x in item.split("\n")):
            if line:
                lines.append((line, starts))
                starts = False
    out = ""
    for i, (line, bullet) in enumerate(lines):
        if i:
            before = lines[i - 1][0]
            # a line ending its sentence is followed by the next sentence, not a "; "
            ends = not bullet and bool(re.search(r"[.!?]$", before))
            out += " " if ends or before.endswith(":") or (not bullet and _wraps_on(before, line, out[: -len(before)])) else "; "
        out += line
    return out


def split_glued_row(cells: list[str]) -> list[list[str]]:
    """A row whose cells lost their line breaks, as the rows it stood for: when the glued cells
    split into the same number of lines, one row per line (a cell that does not split is
    repeated: "Car or van | First 10,000After that | 45p25p" -> "Car or van | First 10,000 | 45p"
    and "Car or van | After that | 25p"); otherwise each glued cell's lines joined by "; "."""
    pieces = [[p.strip() for p in CELL_GLUE.split(c) if p.strip()] or [c] for c in cells]
    counts = {len(p) for p in pieces if len(p) > 1}
    if len(counts) == 1 and sum(len(p) > 1 for p in pieces) >= 2:
        k = counts.pop()
        return [[p[line] if len(p) == k else p[0] for p in pieces] for line in range(k)]
    return [["; ".join(p) if len(p) <= 6 and all(len(x) <= 60 for x in p) else c for p, c in zip(pieces, cells, strict=True)]]


def _table_text(table: etree._Element) -> str:
    """One line per row, cells joined by ' | '; empty rows dropped. A table left with only the
    row naming its columns when it had more (EIM31240's rates for 2002-03 to 2010-11: every cell under
    "Kind of vehicle | Business miles | 2002/03 -2010-11" lost in the scrape) says nothing: ""."""
    rows = []
    caption = table.find("caption")
    if caption is not None:
        rows.append(" ".join(clean_text(_inline_text(caption))[0].split()))
    trs = list(table.iter("tr"))
    filled = []
    for tr in trs:
        cells = [_cell_text(cell) for cell in tr if cell.tag in ("td", "th")]
        if any(cells):
            filled.append(tr)
            rows += [" | ".join(row) for row in split_glued_row(cells)]
    names_columns = bool(filled) and filled == trs[:1] and not _COMPUTED.search(rows[-1])  # not a computation's one line ("£9,000 x 4.83% ... | = | £144")
    return "" if len(trs) > 1 and names_columns else "\n".join(rows)


_COMPUTED = re.compile(r"[\u00a3$%=]|\d+p\b")


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
        text = " ".join(clean_text(_inline_text(element))[0].split())
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
        self.heading_hrefs = _hrefs(element)
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
            self.emit(_block("li", _inline_text(li, nested), _hrefs(li, nested)))
            for child in nested:
                self.block_element(child)
            self.group = outer

    def block_element(self, el: etree._Element) -> None:
        tag = el.tag
        if tag in SECTION_HEADINGS:
            self.heading(SECTION_HEADINGS[tag], el)
        elif tag in MINOR_HEADINGS:
            self.emit(_block("heading", _inline_text(el), _hrefs(el)))
        elif tag in LISTS:
            self.list_items(el)
        elif tag == "table":
            text = _table_text(el)
            self.lost = self.lost or (not text and self.after_heading)
            self.emit(_block("table", text, _hrefs(el)))
        elif tag == "pre":
            self.emit(_block("pre", "".join(el.itertext()), _hrefs(el)))
        elif tag in ("p", "li", "dt"):
            self.paragraph_with_blocks(el)
        else:
            self.container(el)

    def paragraph_with_blocks(self, el: etree._Element) -> None:
        """A <p> is one paragraph, unless (broken HTML) it wraps block elements."""
        if any(isinstance(c.tag, str) and c.tag in BLOCK_TAGS for c in el):
            self.container(el)
        else:
            self.emit(_block("p", _inline_text(el), _hrefs(el)))

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
                run_text.append("\n" if child.tag == "br" else _inline_text(child))
                run_links.extend(_hrefs(child))
                run_text.append(child.tail or "")
        flush()
        self.group = outer


def _whole_aside(text: str) -> bool:
    """A paragraph that is one bracketed aside, e.g. "(This text has been withheld ... 2000)"."""
    return text[:1] in "([" and text[-1:] in ")]"


def _joins(block: Block, nxt: Block) -> bool:
    if block.kind != "p" or nxt.kind != "p" or block.group != nxt.group:  # <li> items, tables, quotes
        return False
    if SENTENCE_END.search(block.text) or _whole_aside(block.text):
        return False
    return bool(CONTINUES.match(nxt.text) or (DANGLING.search(block.text) and STARTS_WORD.match(nxt.text)))


def join_split_sentences(blocks: list[Block]) -> list[Block]:
    """Join a <p> that stops mid-sentence with the next <p> when that one carries on (lower
    case or continuation punctuation, or any word after a dangling "the" / "(see"). Applied per
    section, so headings never join; tables, real list items and quotes break the chain too."""
    joined: list[Block] = []
    for block in blocks:
        if joined and _joins(joined[-1], block):
            last = joined[-1]
            glue = "" if block.text[0] in ",;:.)]" or last.text[-1] in "([" else " "
            joined[-1] = Block(kind="p", text=last.text + glue + block.text, hrefs=last.hrefs + block.hrefs, group=last.group)
        else:
            joined.append(block)
    return joined


def split_bullets(blocks: list[Block]) -> list[Block]:
    """Each markdown bullet left in a paragraph or list item starts a list item of its own;
    a link goes with the piece that names its target (else with the first piece)."""
    out: list[Block] = []
    for block in blocks:
        if BULLET not in block.text or block.kind in ("table", "pre"):
            out.append(block)
            continue
        pieces = [(i, p.strip()) for i, p in enumerate(block.text.split(BULLET)) if p.strip()]
        made = [Block(kind=block.kind if i == 0 else "li", text=p, hrefs=[], group=block.group) for i, p in pieces]
        for href in block.hrefs:
            target = href.rstrip("/").rsplit("/", 1)[-1].split("#")[-1].upper()
            next((b for b in made if target and target in b.text.upper()), made[0]).hrefs.append(href)
        out += made
    return out


def parse_body(html: str) -> list[Section]:
    """The body's sections in document order; the first one (no headings) holds any preamble.
    Sections without blocks (a heading directly followed by a sub-heading) are dropped."""
    if not html or not html.strip():
        return []
    root = lxml.html.fragment_fromstring(html, create_parent="div")
    walker = _Walker()
    walker.container(root)
    return [s.model_copy(update={"blocks": split_bullets(join_split_sentences(s.blocks))}) for s in walker.sections if s.blocks]
