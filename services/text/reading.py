"""Reading a question as people write it: the sentences that ask, and the circumstances around
them. A forum question is a paragraph of the asker's situation (the firm, the car, the dates,
what the boss said) and one or two sentences that ask; what answers it answers the asking
sentences, read in the light of the rest."""

from __future__ import annotations

from services.text.sentences import question_sentences
from services.text.terms import words

# Words that open a sentence that asks, even without its question mark ("is it taxable.").
_OPENERS = frozenset(
    "how what when where which who why whether is are am can could do does did will would should shall has have may must any".split()
)


_LINKS = frozenset("and but so also or then".split())  # "And can I ...": the link before the question


def opening(text: str, window: int) -> list[str]:
    """The words among the first ``window`` of a sentence that are not linking words ("and",
    "so", ...): what it opens with, past the link to the sentence before."""
    return [w for w in words(text)[:window] if w not in _LINKS]


def asks(sentence: str) -> bool:
    """Whether a sentence asks: it ends with a question mark, or opens as a question does."""
    first = opening(sentence, 3)[:1]
    return sentence.rstrip().endswith("?") or bool(first and first[0] in _OPENERS)


def asking_and_circumstances(question: str) -> tuple[list[str], list[str]]:
    """(the sentences that ask, the others); when no sentence asks, the last one is taken to
    (a question typed as a statement: "I want to know the mileage rate")."""
    sentences = [s.strip() for s in question_sentences(question.strip()) if s.strip()]
    asking = [s for s in sentences if asks(s)] or sentences[-1:]
    return asking, [s for s in sentences if s not in asking]


def asking_part(question: str) -> str:
    """The question's asking sentences, joined."""
    return " ".join(asking_and_circumstances(question)[0])
