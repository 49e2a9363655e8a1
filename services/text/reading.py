"""Reading a question as people write it: the sentences that ask, and the circumstances around
them. A forum question is a paragraph of the asker's situation (the firm, the car, the dates,
what the boss said) and one or two sentences that ask; what answers it answers the asking
sentences, read in the light of the rest.

``read_question`` reads a question once, when it arrives, into the record the pipeline carries
(shared/contracts/question.py); ``new_query`` builds the message with it."""

from __future__ import annotations

from shared.contracts.pipeline import Query
from shared.contracts.question import QuestionReading
from services.text.amounts import pounds
from services.text.figures import checkable_facts
from services.text.question import ASKS_EXAMPLE, RATE_INTENT, employment_tie, question_kind, sub_questions
from services.text.sentences import question_sentences
from services.text.tables import lookup_date, lookup_numbers
from services.text.terms import query_terms, terms, words

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


def read_question(question: str, own_words: str = "") -> QuestionReading:
    """What ``question`` (the searched text) asks; ``own_words``: the asker's own words this
    turn, when the searched text reads more (a follow-up read with its earlier subject)."""
    asking, circumstances = asking_and_circumstances(question)
    return QuestionReading(
        terms=terms(question),
        own_terms=query_terms(question),
        parts=sub_questions(question),
        asking=asking,
        circumstances=circumstances,
        words=len(question.split()),
        kind=question_kind(question),
        asks_rate=bool(RATE_INTENT.search(question)),
        asks_example=bool(ASKS_EXAMPLE.search(question)),
        facts=sorted(checkable_facts(question)),
        numbers=lookup_numbers(question),
        when=lookup_date(question),
        amounts=pounds(own_words or question),
        employment=employment_tie(question),
    )


def new_query(*, id: str, question: str, manual: str, focus: str | None = None, own_words: str = "") -> Query:  # noqa: A002  (the message's field)
    """The pipeline's message for a question, read once (``read_question``)."""
    return Query(id=id, question=question, manual=manual, focus=focus, reading=read_question(question, own_words))


def reread(query: Query, searched: str, *, asked: str | None = None, own_words: str = "") -> Query:
    """The message with another searched text (a follow-up read with its subject, a question's
    part for this manual), read again once."""
    update = {"question": searched, "reading": read_question(searched, own_words)}
    return query.model_copy(update=update if asked is None else {**update, "asked": asked})
