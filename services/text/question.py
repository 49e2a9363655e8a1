"""What a question asks: its idf-weighted terms, its parts, and the kind of answer it wants
(a figure, a date or period, a ruling, a definition)."""

from __future__ import annotations

import re

from shared.contracts.question import QuestionKind
from services.text.lexicon import expansions
from services.text.sentences import question_sentences
from services.text.terms import CorpusStats, query_terms
from services.text.vocabulary import combos, phrases


# Questions that ask for a figure: a page with a rate table or amounts answers them even
# when it does not repeat the question's words.
RATE_INTENT = phrases(
    (
        "how much", "how many", *combos(("what",), ("rate", "percentage", "amount", "figure", "limit")), "rate", "rates",
        "percentage", *combos(("per",), ("mile", "week", "month", "year", "day", "head", "cent")), "limit", "threshold",
        "maximum", "minimum", "cap", "figure", "amount", "worth", "tax-free up to", "tax free up to", "up to",
    )
)




def question_weights(question: str, stats: CorpusStats, expansion_weight: float, ask_weight: float = 1.0) -> dict[str, float]:
    """idf weight of each question term; the manual's words for its everyday words count half."""
    weights = {t: stats.idf(t) for t in query_terms(question) if stats.idf(t) > 0}
    # The asking sentence ("... is it taxable?") says what the answer must address; the
    # sentences before it describe the asker's situation.
    asks = [s for s in question_sentences(question) if s.rstrip().endswith("?")]
    if ask_weight != 1.0 and asks and len(asks) < len(question_sentences(question.strip())):
        for t in query_terms(" ".join(asks)):
            if t in weights:
                weights[t] *= ask_weight
    for t in query_terms(" ".join([*expansions(question), *stats.synonyms(question)])):
        if t not in weights and stats.idf(t) > 0:
            weights[t] = expansion_weight * stats.idf(t)
    return weights


def coverage(weights: dict[str, float], text_terms: set[str]) -> float:
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in text_terms) / total if total else 0.0


_INTERROGATIVE = r"(?:is|are|can|could|do|does|did|how|what|when|which|who|will|would|should|roughly|must)"
_PART_SPLIT = re.compile(rf",?\s+(?:and|or)\s+(?={_INTERROGATIVE}\b)|,\s+(?={_INTERROGATIVE}\b)", re.I)


def sub_questions(question: str) -> list[str]:
    """The separate things a question asks, each to be answered by a page: its question
    sentences, split where a clause starting with an interrogative is joined on ("..., and
    is there a deadline?"). Routing splits otherwise (services/answering/scope.py ``routing_parts``)."""
    asks = [s for s in question_sentences(question.strip()) if s.rstrip().endswith("?")]
    return [p for a in asks for p in _PART_SPLIT.split(a) if p.strip()]


_ASKS_DATE = phrases(
    (
        "when", "by when", "how long", "how soon", *combos(("how many",), ("days", "weeks", "months", "years")), "deadline",
        "time limit", "what date", *combos(("which",), ("date", "year", "tax year")),
    )
)
_ASKS_DEFINITION = re.compile(r"\b(?:what (?:counts as|is meant by|does [\w' -]{1,40} mean|is an?|are (?!the\b))|meaning of|defin(?:e|ed|ition))\b", re.I)
# Asks yes or no: opens on a verb ("Is ...", "Can I ...": ``match`` on the stripped text), or,
# anywhere (``search``), asks whether it is taxable ("... so is it taxable?"). A text that asks
# the second way at its start opens the first way too.
_ASKS_YES_NO = re.compile(
    r"^\s*(?:is|are|can|could|do|does|did|will|would|should|must|am|have|has|may)\b|\b(?:is|are) (?:it|this|that|they) (?:taxable|taxed|exempt|a benefit)\b",
    re.I,
)
_ASKS_FIGURE = re.compile(
    r"\b(?:how much|how many|what(?:'s| is| are)? (?:the )?(?:rates?|percentage|amount|figure|limit|most|maximum|minimum)|"
    r"(?:is|are) there (?:an?|any) (?:[\w-]+ ){0,2}(?:amount|limit|cap|maximum|minimum|rate|figure|threshold)s?|up to|per (?:mile|week|month|year|day|head|night))\b",
    re.I,
)
ASKS_EXAMPLE = re.compile(r"\b(?:examples?|illustrat\w*|worked (?:examples?|calculations?|computations?)|for instance)\b", re.I)  # "worked out" asks how, not for an example


# Asks for a figure, in any clause (the refusals' test: conflict, today's figure): "how much",
# "what is the (exempt) amount / rate / limit", "the current rate". The figure is what is
# asked, not a word further on: "what are the rules on mileage rates?" asks for rules (no
# preposition between "what is the" and the figure). ``question_kind`` reads the first part of
# a question more widely (``_ASKS_FIGURE``: "up to", "per mile", "is there a limit").
_FIGURE_NOUN = r"(?:rates?|amounts?|limits?|figures?|sums?|allowances?|deductions?|thresholds?|percentages?|values?|charges?|caps?)"
_MODIFIER = r"(?:(?!(?:on|of|for|about|in|to|with|under|and|or)\b)[\w-]+\s+)"
_ASKS_FOR_FIGURE = re.compile(
    r"\bhow\s+(?:much|many)\b"
    rf"|\b(?:what|which)(?:'s|\s+(?:is|are|was|were|will\s+be))?\s+(?:the\s+|my\s+|our\s+)?{_MODIFIER}{{0,3}}?{_FIGURE_NOUN}\b"
    rf"|\b(?:current|latest|today's|this\s+year's)\s+{_MODIFIER}{{0,3}}?{_FIGURE_NOUN}\b",
    re.I,
)


def asks_for_figure(text: str) -> bool:
    return bool(_ASKS_FOR_FIGURE.search(text))


def question_kind(question: str) -> QuestionKind:
    """What the (first part of the) question asks for: a date or period ("when", "how long",
    "deadline"), a figure ("how much", "what rate", "limit"), yes or no with the rule ("is it
    taxable", "can I"), a definition ("what counts as"), or something else."""
    parts = sub_questions(question)
    first = parts[0] if parts else question
    if _ASKS_DATE.search(first):
        return "date"
    # "Is the whole amount taxable?" asks yes or no about an amount; "Is there a limit?" and
    # "how much" ask for the figure
    if _ASKS_FIGURE.search(first) or (RATE_INTENT.search(first) and not _ASKS_YES_NO.match(first.strip())):
        return "figure"
    if _ASKS_DEFINITION.search(first) and not _ASKS_YES_NO.match(first.strip()):
        return "definition"
    if _ASKS_YES_NO.search(first):
        return "yes_no"
    return "other"


# What ties a question to employment income ("work out", to calculate, does not; nor does
# "self-employed", its opposite).
_EMPLOYMENT_WORDS = (
    r"(?<!self-)(?<!self )employ\w*|job|jobs|workplace|salary|salaries|wages?|payroll|paye|p11ds?|p60|p45|boss|staff|"
    r"colleagues?|director\w*|benefits? in kind|bik|perks?|company cars?|company vans?|expenses|pensions?|"
    r"bonus\w*|redundanc\w*|earnings|office[- ]holders?|share options?|salary sacrifice"
)
# Working is no tie to a job for someone who says they trade on their own ("I'm a freelance
# designer working from home"): the words of an employer, an employee or pay (``pay``) are.
_EMPLOYMENT = re.compile(rf"\b(?:(?P<pay>{_EMPLOYMENT_WORDS})|work(?:s|ing)?(?!\s+(?:it\s+|this\s+|that\s+)?out\b))\b", re.I)


def employment_tie(question: str) -> bool:
    """Whether the question uses the vocabulary of jobs, pay and employers."""
    return bool(_EMPLOYMENT.search(question))


def names_employment(question: str) -> bool:
    """Whether the question names an employer, an employee or pay (working alone is no tie)."""
    return any(m.group("pay") is not None for m in _EMPLOYMENT.finditer(question))
