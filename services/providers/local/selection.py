"""Selection: each rolled-up page ranked by the learned page ranker (services/ranking) over the
features the pipeline already computes for it (page_features.py: terms and meaning of page and
title, retrieval's own order, links from the best retrieved pages, the kind of page against
what the question asks); recall-greedy keeps every page whose calibrated probability of
answering is near the best one's, or, when the question restates the best page's title, only
the pages close to that one. The question is on topic when a chunk is near it in meaning or a
candidate page's title names its subject (``on_topic``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shared.config import LocalSelectionSettings, Settings
from shared.contracts.pipeline import PageBundle, Query, RollupResult, SelectionResult
from shared.index import CorpusIndex
from services.providers.local.page_features import PAGE_FEATURES, PageSignals, page_signals, page_terms, page_title
from services.providers.local.question import coverage, question_weights, sub_questions
from services.ranking.model import RankerModel, default_path, load_ranker
from services.scope import employment_tie
from services.text.terms import corpus_stats, terms


@dataclass
class PageScore:
    bundle: PageBundle
    coverage: float  # idf-weighted share of the question's terms on the page
    similarity: float  # best chunk cosine with the question
    has_figures: bool
    relevance: float  # the ranker's calibrated probability that the page answers
    title_share: float = 0.0  # idf-weighted share of the question's own terms the page title holds
    title_match: float = 0.0  # how nearly the question restates the page title (services/text/titles.py)
    score: float = 0.0  # the ranker's raw score (what orders the pages)


def page_ranker(settings: Settings) -> RankerModel:
    """The page ranker the settings name (the repo's trained model by default)."""
    path = settings.selection.local.page_model or default_path("pages")
    return load_ranker(path, "pages", PAGE_FEATURES)


def rank_pages(signals: list[PageSignals], model: RankerModel) -> list[PageScore]:
    if not signals:
        return []
    scores = model.score(np.stack([s.features for s in signals]))
    probability = model.probability(scores)
    return [
        PageScore(s.bundle, s.coverage, s.similarity, s.has_figures, float(p), title_share=s.title_share, title_match=s.title_match, score=float(x))
        for s, x, p in zip(signals, scores, probability, strict=True)
    ]


def score_pages(query: Query, rollup: RollupResult, settings: Settings, carried_vector: list[float], asked: str = "") -> list[PageScore]:
    """Each candidate page scored by the page ranker; ``asked``: the person's own words this
    turn, when the query reads more (a follow-up read with its subject)."""
    return rank_pages(page_signals(query, rollup.pages, settings, carried_vector, asked), page_ranker(settings))


def part_pages(query: Query, candidates: list[PageScore], settings: Settings) -> list[PageScore]:
    """A question in parts ("how is it worked out, and what rate applies for 2014-15?") needs
    a page for each: of the candidates, the one that best covers each part's own words."""
    tuning = settings.selection.local
    parts = sub_questions(query.question)
    if len(parts) < 2 or not candidates:
        return []
    index = CorpusIndex.open(settings, query.manual)
    stats = corpus_stats(index)
    # each candidate's words once, whatever the number of parts
    words = [(s, page_terms(s.bundle)) for s in candidates]  # (page terms hold its headings and title)
    out = []
    for part in parts:
        weights = question_weights(part, stats, tuning.expansion_weight)
        if weights:
            out.append(max(words, key=lambda p: (coverage(weights, p[1]), p[0].score))[0])
    return out


def similarity_floor(question: str, tuning: LocalSelectionSettings) -> float:
    """The cosine the best chunk needs for the question to be on topic at all."""
    return tuning.min_similarity_tied if employment_tie(question) else tuning.min_similarity


def on_topic(question: str, scored: list[PageScore], settings: Settings) -> bool:
    """Whether anything in the manual is about the question: a passage near it in meaning
    (with vectors), or a candidate page whose title names the question's own subject. A
    chunk's cosine is diluted by everything else the chunk says, so a question asked in a
    page's own title words ("the rules on <title>") can fall under the floor although the
    manual has a page for exactly that; a title holding most of the question's weight is the
    manual's authors saying so."""
    tuning = settings.selection.local
    if max((s.title_share for s in scored), default=0.0) >= tuning.title_on_topic:
        return True
    if not settings.retrieval.use_vectors:  # keywords only: enough of the question on one page
        return max((s.coverage for s in scored), default=0.0) >= tuning.min_coverage
    return max((s.similarity for s in scored), default=0.0) >= similarity_floor(question, tuning)


def select(query: Query, rollup: RollupResult, settings: Settings, carried_vector: list[float], asked: str = "") -> SelectionResult:
    tuning = settings.selection.local
    scored = score_pages(query, rollup, settings, carried_vector, asked)
    if not scored:
        return SelectionResult(pages=[], dropped=[])
    best = max(s.relevance for s in scored)
    # Nothing relevant: nothing near the question in meaning or named by a page title
    # (off-topic questions stay below the floor while the manual's own topics sit well above it).
    if not on_topic(query.question, scored, settings):
        return SelectionResult(pages=[], dropped=[s.bundle.section_id for s in scored])
    by_rel = sorted(scored, key=lambda s: -s.relevance)
    if by_rel[0].title_match >= settings.retrieval.title_match_floor:
        # The question restates the best page's title: it asks about that page, and a page that
        # merely shares its words (whose sentences may outscore the page's own) is no answer;
        # the pages it names as well (the same title) and those close to it stay.
        kept = [s for s in by_rel if s.relevance >= tuning.strict_ratio * best or s.title_match >= settings.retrieval.title_match_floor][: tuning.max_pages]
    elif settings.selection.strategy == "strict":
        kept = [s for s in by_rel if s.relevance >= tuning.strict_ratio * best][:tuning.strict_pages]
    else:
        # (links and figures for a rate question are the ranker's features: no floors of their own)
        kept = [s for s in by_rel if s.relevance >= tuning.keep_ratio * best][: tuning.max_pages]
        for top in part_pages(query, [s for s in by_rel if s.relevance >= tuning.part_ratio * best], settings):
            if top not in kept:
                kept = [*kept[: tuning.max_pages - 1], top] if len(kept) >= tuning.max_pages else [*kept, top]
    kept_ids = {s.bundle.section_id for s in kept}
    return SelectionResult(
        pages=[s.bundle for s in kept],
        dropped=[s.bundle.section_id for s in scored if s.bundle.section_id not in kept_ids],
    )
