"""Everyday words for employment-tax things, mapped to the words the manual uses.

People ask about "tips", "paternity pay" or "swapping salary"; the manual says troncs,
statutory paternity pay, salary sacrifice. Keyword retrieval and the
lexical scores only meet the manual's pages if the question also carries the manual's words,
so ``expand`` adds them (the embedding sees the question as asked).
"""

from __future__ import annotations

import re

# lay phrase (regex, matched case-insensitively on word boundaries) -> the manual's words.
# Only general UK tax vocabulary, each the everyday name of a statutory term the manual uses:
# no entry may be written from the wording of an eval question (an earlier table was, and was
# removed); the manual's own other names (acronyms and their long forms) come from the corpus
# itself (services.text.terms.CorpusStats.synonyms).
LAY_TO_MANUAL: tuple[tuple[str, str], ...] = (
    (r"years'? (?:of )?service|long[- ]service", "long service award"),
    (r"paternity", "statutory paternity pay"),
    # plural only: "the tip" is as often the council's rubbish tip as a gratuity
    (r"tips|gratuit\w*|service charges?", "tips troncs"),
    (r"swap(?:ping)? (?:some )?(?:salary|pay)|give up (?:some )?(?:salary|pay)", "salary sacrifice"),
    (r"director'?s? (?:and officers'? )?(?:liability )?insurance|d&o", "liability insurance"),
)
_COMPILED = tuple((re.compile(rf"\b(?:{lay})\b", re.I), manual) for lay, manual in LAY_TO_MANUAL)


def expansions(question: str) -> list[str]:
    """The manual's words for the everyday words in a question (none repeated)."""
    return list(dict.fromkeys(manual for pattern, manual in _COMPILED if pattern.search(question)))


def expand(question: str) -> str:
    """The question followed by the manual's words for its everyday words."""
    extra = expansions(question)
    return question + (" " + " ".join(extra) if extra else "")
