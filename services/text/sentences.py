"""Sentence units: a paragraph's sentences (for selection, stitching, the verifier and the
stale check) and a question's sentences (to tell the asking sentence from the situation)."""

from __future__ import annotations

import re

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
