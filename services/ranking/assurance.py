"""How sure the service is that an answer answers: a calibrated probability, learned from
whether cross-validated answers were right (``taxnav ranker cv`` fits it on answers the page
and passage models of another fold gave), over signals of the finished draft: how likely its
best page is to answer and how clearly it beats the next, whether the answer's words cover what
the question asks (its asking sentences, read apart from the asker's circumstances), how long
and how much a story the question is.

The model's threshold is the lowest probability at which, out of fold, at least
``PRECISION_TARGET`` of the answers it passes were right: below it the answer is marked as one
that may not answer, and no claim says "answers your question"."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shared.config import Settings
from shared.contracts.corpus import section_of
from shared.contracts.pipeline import Draft, Query, SelectionResult
from shared.index import CorpusIndex
from services.ranking.extractor import Extractor, Feature
from services.ranking.model import RankerModel, default_path, load_ranker
from services.text.figures import checkable_facts
from services.text.question import coverage, question_weights
from services.text.terms import corpus_stats, terms

PRECISION_TARGET = 0.8  # of the answers marked as answering, the share that must be right (out of fold)


@dataclass
class AnswerContext:
    """What the signals read of one finished draft."""

    best: float  # the best kept page's probability of answering
    second: float  # the next kept page's (0 when one page is kept)
    kept: int
    lead: float  # the first answer claim's page probability
    lead_on_best: bool
    ask_covered: float  # idf-weighted share of the asking sentences' terms the answer part says
    question_covered: float  # ... of the whole question's
    lead_ask_covered: float  # ... of the asking sentences' terms the first claim says
    words: int  # the question's words
    story_share: float  # share of its words outside the asking sentences
    lead_states_fact: bool  # the first claim states a figure, date or reference
    claims: int  # answer claims

    @classmethod
    def read(cls, query: Query, selection: SelectionResult, draft: Draft, index: CorpusIndex, settings: Settings) -> AnswerContext:
        reading = query.reading
        stats = corpus_stats(index)
        expansion = settings.selection.local.expansion_weight
        ask_weights = question_weights(" ".join(reading.asking), stats, expansion)
        all_weights = question_weights(query.question, stats, expansion)
        answer = [s for s in draft.sentences if s.role == "answer"]
        said = set(terms(" ".join(s.text for s in answer)))
        lead = answer[0] if answer else None
        scores = [p.score for p in selection.pages]
        words = reading.words
        return cls(
            best=scores[0] if scores else 0.0,
            second=scores[1] if len(scores) > 1 else 0.0,
            kept=len(scores),
            lead=(lead.confidence or 0.0) if lead else 0.0,
            lead_on_best=bool(lead and selection.pages and any(section_of(c) == selection.pages[0].section_id for c in lead.citations)),
            ask_covered=coverage(ask_weights, said),
            question_covered=coverage(all_weights, said),
            lead_ask_covered=coverage(ask_weights, set(terms(lead.text))) if lead else 0.0,
            words=words,
            story_share=sum(len(s.split()) for s in reading.circumstances) / words if words else 0.0,
            lead_states_fact=bool(lead and checkable_facts(lead.text)),
            claims=len(answer),
        )


ANSWER_EXTRACTOR: Extractor[AnswerContext] = Extractor(
    "answers",
    [
        Feature("best_page_probability", lambda c: c.best, "the page ranker's probability for the best kept page"),
        Feature("second_page_ratio", lambda c: c.second / c.best if c.best else 0.0, "the next kept page's probability over the best's (a close call)"),
        Feature("pages_kept", lambda c: float(c.kept), "pages selection kept"),
        Feature("lead_page_probability", lambda c: c.lead, "the first answer claim's page probability"),
        Feature("lead_on_best_page", lambda c: float(c.lead_on_best), "the first claim quotes the best page"),
        Feature("ask_covered_by_answer", lambda c: c.ask_covered, "the asking sentences' terms the answer part says"),
        Feature("question_covered_by_answer", lambda c: c.question_covered, "the whole question's terms the answer part says"),
        Feature("ask_covered_by_lead", lambda c: c.lead_ask_covered, "the asking sentences' terms the first claim says"),
        Feature("question_words", lambda c: math.log1p(c.words), "log of the question's length in words"),
        Feature("story_share", lambda c: c.story_share, "share of the question told as circumstances"),
        Feature("lead_states_fact", lambda c: float(c.lead_states_fact), "the first claim states a figure, date or reference"),
        Feature("answer_claims", lambda c: float(c.claims), "claims in the answer part"),
    ],
)


def answers_model(settings: Settings) -> RankerModel:
    """The answers model the settings name (the repo's trained one by default), refused unless
    it reads exactly ANSWER_EXTRACTOR's signals."""
    return load_ranker(settings.stitching.answers_model or default_path("answers"), "answers", ANSWER_EXTRACTOR.names)


def answer_features(query: Query, selection: SelectionResult, draft: Draft, index: CorpusIndex, settings: Settings) -> np.ndarray:
    """One row of the answers model's signals for a finished draft."""
    return ANSWER_EXTRACTOR.row(AnswerContext.read(query, selection, draft, index, settings))


def assure(query: Query, selection: SelectionResult, draft: Draft, index: CorpusIndex, settings: Settings, model: RankerModel) -> None:
    """Mark the draft with the ``model``'s probability that it answers, and as one that may not
    answer below the model's threshold (its claims are then background, never "answering")."""
    probability = float(model.probability(model.score(answer_features(query, selection, draft, index, settings)[None, :]))[0])
    draft.confidence = round(probability, 2)
    draft.may_not_answer = probability < model.answering_threshold
    if draft.may_not_answer:
        for sentence in draft.sentences:
            if sentence.relevance == "answering":
                sentence.relevance = "background"
