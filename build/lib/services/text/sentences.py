"""Sentence units: a paragraph's sentences (for selection, stitching, the verifier and the
stale check) and a question's sentences (to tell the asking sentence from the situation)."""

from __future__ import annotations

import re

from services.text.figures import years_named
from shared.contracts.corpus import Paragraph

# Sentence boundaries: end punctuation, then space, then something that starts a sentence.
# Abbreviations common in the manual ('s.', 'para.', 'e.g.', 'No.') are not boundaries.
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|etc|para|paras|s|ss|no|nos|art|reg|sch|v|vs|cf|ch|pt|para|mr|mrs|dr|st)\.$", re.I)
_BOUNDARY = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9\u00a3(\"'])")


def split_sentences(text: str) -> list[str]:
    """Split a paragraph's text into sentences (tables and lists are split by line first)."""
    out: list[str] = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        start = 0
        for m in _BOUNDARY.finditer(line):
            piece = line[start : m.start()]
            if _ABBREV.search(piece) or piece.endswith(";"):
                continue
            if piece.strip():
                out.append(piece.strip())
            start = m.end()
        if line[start:].strip():
            out.append(line[start:].strip())
    return out


# A question's sentences break after end punctuation alone (a lower-case start too: askers
# type "... my car. is it taxed?"); they serve to find the sentence that ends in '?'.
_QUESTION_BREAK = re.compile(r"(?<=[.?!])\s+")


def question_sentences(question: str) -> list[str]:
    """A question's sentences, split after '.', '?' or '!' and the spaces that follow."""
    return _QUESTION_BREAK.split(question)


def statements(paragraph: Paragraph, dated: bool = False) -> list[str]:
    """What a paragraph states, one unit each: its sentences, or for a table each row read with
    the header row. For checking a claim the header leads (a rendered row names its columns:
    "Car or van, 2011-12 onwards: ..."); read for its date (``dated``, the stale check), a row
    keeps its own words first and the header follows in brackets, only when it names years."""
    if paragraph.kind == "table":
        header, *rows = [" ".join(line.split()) for line in paragraph.text.splitlines() if line.strip()] or [""]
        if dated:
            return [f"{row} ({header})" for row in rows] if years_named(header) else rows
        if rows:
            return [row_statement(header, row) for row in rows]
    return split_sentences(paragraph.text)


def row_statement(header: str, row: str) -> str:
    """A table row as it reads: its label, then each cell it fills after that cell's column
    header ("Suitcase | | 4" under "Item | Eligible for relief | Not accepted as eligible" ->
    "Suitcase Not accepted as eligible 4"): a header over a column the row leaves blank, or
    over the labels, says nothing of this row (its "not" is no "not" of the row's)."""
    heads, cells = [h.strip() for h in header.split("|")], [c.strip() for c in row.split("|")]
    if len(heads) != len(cells) or len(cells) < 2:
        return f"{header} {row}"
    return " ".join([cells[0], *(f"{h} {c}" for h, c in zip(heads[1:], cells[1:], strict=True) if c)])
