"""Vocabulary written as data: a list of plain words and phrases (no regex syntax in them)
compiled into one pattern, so a list of the words for an idea ("the UK's other taxes", "words
that make an amount a limit") reads as the list it is and every such list matches the same way."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import product


def phrases(words: Iterable[str], *, opening: bool = False, spaced: bool = False) -> re.Pattern[str]:
    """A case-insensitive pattern for any of ``words`` as whole words.

    Where several phrases start at one place the longest is tried first, so a match spans what
    a greedy optional did ("capital gains tax" over "capital gains"). ``opening``: only as what
    a text opens with, past any punctuation before it ("(Note: ..."); ``spaced``: a space in a
    phrase stands for any run of whitespace, as people type them ("this  tax year")."""
    space = r"\s+" if spaced else r"\ "
    alternatives = [space.join(map(re.escape, w.split(" "))) for w in sorted(set(words), key=lambda w: (-len(w), w))]
    if not alternatives:
        raise ValueError("phrases() needs at least one phrase")
    return re.compile(("^\\W*" if opening else "") + rf"\b(?:{'|'.join(alternatives)})\b", re.I)


def combos(*slots: Sequence[str]) -> list[str]:
    """Every phrase made of one word from each slot in turn, an empty word leaving its slot out:
    combos(("my",), ("", "own"), ("business",)) -> ["my business", "my own business"]."""
    return [" ".join(w for w in choice if w) for choice in product(*slots)]
