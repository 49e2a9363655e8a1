"""A table as text: one line per row, cells joined by " | "; a cell on one line (its lines
joined by "; ", or by a space where the line only wrapped its prose), and a row whose cells lost
their line breaks split back into the rows it stood for."""

from __future__ import annotations

import re

from lxml import etree

from ingest_worker.cleaning import BULLET, MONTHS, clean_text, inline_text
from shared.contracts.corpus import ITEM_LABEL

# Where a table cell's lost line break glued two lines: a word run into a capitalised word
# ("10,000After", "allowanceAttendance"; not "McQuade"), or a figure run into a figure
# ("45p25p", "20%25%", "100£50").
CELL_GLUE = re.compile(r"(?<!\bMc)(?<!\bMac)(?<=[a-z0-9%)])(?=[A-Z][a-z])|(?<=\d[p%])(?=\u00a3?\d)|(?<=\d)(?=\u00a3\d)")

# A cell's line that stops on a word needing more ("... taxable as", "See") is wrapped prose.
_RUNS_ON = re.compile(r"\b(?:a|an|and|as|at|by|for|from|in|of|on|or|see|the|to|with)$", re.I)


_MONTH = rf"(?:{MONTHS}|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\b"  # as a cell's date may abbreviate it
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
    for k, item in enumerate(clean_text(inline_text(cell))[0].split(BULLET)):
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


def table_text(table: etree._Element) -> str:
    """One line per row, cells joined by ' | '; empty rows dropped. A table left with only the
    row naming its columns when it had more (EIM31240's rates for 2002-03 to 2010-11: every cell under
    "Kind of vehicle | Business miles | 2002/03 -2010-11" lost in the scrape) says nothing: ""."""
    rows = []
    caption = table.find("caption")
    if caption is not None:
        rows.append(" ".join(clean_text(inline_text(caption))[0].split()))
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
