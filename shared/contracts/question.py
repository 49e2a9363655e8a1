"""What a question asks, read once when it arrives (services/text/reading.py ``read_question``)
and carried on the pipeline's message (``Query.reading``): every stage and ranking feature reads
this record rather than parsing the question's text again."""

from __future__ import annotations

from datetime import date
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

QuestionKind = Literal["date", "figure", "yes_no", "definition", "other"]


class Measure(NamedTuple):
    """A plain number of a question with the unit written after it ('70g/km' -> 70, 'g/km'),
    '' when it has none."""

    value: float
    unit: str = ""


class QuestionReading(BaseModel):
    """The searched question read once. Term weights are not here: they depend on the manual
    answering (its idf), so the ranking features weigh these terms against their index."""

    model_config = ConfigDict(frozen=True)

    terms: list[str]  # its content terms, stemmed, in order (services/text/terms.py ``terms``)
    own_terms: list[str]  # ... unique, without the words that only make it a question (``query_terms``)
    parts: list[str]  # the separate things it asks, each to be answered by a page (``sub_questions``)
    asking: list[str]  # the sentences that ask (services/text/reading.py)
    circumstances: list[str]  # the rest: the asker's situation
    words: int  # its length in words
    kind: QuestionKind  # what its first part asks for: a figure, a date, a ruling, a definition
    asks_rate: bool  # it asks for a rate or an amount
    asks_example: bool  # it asks for a worked example
    facts: list[str]  # the checkable facts it names (figures, years, dates), sorted
    numbers: list[Measure]  # the figures and the date a table row could be keyed by
    when: date | None
    amounts: list[float]  # the amounts the asker names this turn (a follow-up's searched text adds an earlier turn's: not these)
    employment: bool  # it uses the vocabulary of jobs, pay and employers
