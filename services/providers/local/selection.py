"""Selection: each rolled-up page ranked by the learned page ranker (services/ranking) over the
features the pipeline already computes for it (page_features.py: terms and meaning of page and
title, retrieval's own order, links from the best retrieved pages, the kind of page against
what the question asks, a follow-up's conversation); recall-greedy keeps every page whose
calibrated probability of answering reaches the ranker's answering threshold or is near the
best one's, or, when the question restates the best page's title, only the pages close to that
one. Likely pages about another subject are offered as alternatives; a page the person chose
(``focus``) is answered from alone. The question is on topic when a chunk is near it in
meaning or a candidate page's title names its subject (``on_topic``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shared.config import LocalSelectionSettings, Settings
from shared.contracts.api import MAX_ALTERNATIVES
from shared.contracts.pipeline import PageBundle, Query, RollupResult, SelectionResult
from shared.contracts.question import QuestionReading
from shared.index import CorpusIndex
from services.ranking.page_features import NO_SUBJECT, ConversationSubject, PageSignals, page_signals, page_terms, page_title
from services.text.question import coverage, question_weights
from services.ranking.model import RankerModel
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
    score: float = 0.0  # the ranker's raw score (relevance is its calibration, in the same order)


def rank_pages(signals: list[PageSignals], model: RankerModel) -> list[PageScore]:
    if not signals:
        return []
    scores = model.score(np.stack([s.features for s in signals]))
    probability = model.probability(scores)
    return [
        PageScore(s.bundle, s.coverage, s.similarity, s.has_figures, float(p), title_share=s.title_share, title_match=s.title_match, score=float(x))
        for s, x, p in zip(signals, scores, probability, strict=True)
    ]


def score_pages(
    query: Query,
    rollup: RollupResult,
    settings: Settings,
    index: CorpusIndex,
    model: RankerModel,
    carried_vector: list[float],
    subject: ConversationSubject = NO_SUBJECT,
) -> list[PageScore]:
    """Each candidate page scored by the page ranker ``model``; ``subject``: a follow-up's conversation."""
    return rank_pages(page_signals(query, rollup.pages, settings, index, carried_vector, subject), model)


def part_pages(query: Query, candidates: list[PageScore], settings: Settings, index: CorpusIndex) -> list[PageScore]:
    """A question in parts ("how is it worked out, and what rate applies for 2014-15?") needs
    a page for each: of the candidates, the one that best covers each part's own words."""
    tuning = settings.selection.local
    parts = query.reading.parts
    if len(parts) < 2 or not candidates:
        return []
    stats = corpus_stats(index)
    # each candidate's words once, whatever the number of parts
    words = [(s, page_terms(s.bundle), set(terms(page_title(index, s.bundle.section_id)))) for s in candidates]
    out = []
    for part in parts:
        weights = question_weights(part, stats, tuning.expansion_weight)
        if weights:  # the part's words on the page and, naming what the page is about, in its title
            out.append(max(words, key=lambda p: (coverage(weights, p[1]) + coverage(weights, p[2]), p[0].relevance))[0])
    return out


def similarity_floor(reading: QuestionReading, tuning: LocalSelectionSettings) -> float:
    """The cosine the best chunk needs for the question to be on topic at all."""
    return tuning.min_similarity_tied if reading.employment else tuning.min_similarity


def on_topic(reading: QuestionReading, scored: list[PageScore], settings: Settings) -> bool:
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
    return max((s.similarity for s in scored), default=0.0) >= similarity_floor(reading, tuning)


def select(
    query: Query,
    rollup: RollupResult,
    settings: Settings,
    index: CorpusIndex,
    model: RankerModel,
    carried_vector: list[float],
    subject: ConversationSubject = NO_SUBJECT,
) -> SelectionResult:
    """The pages kept to answer from (``model``: the page ranker, loaded once by the provider)."""
    tuning = settings.selection.local
    scored = score_pages(query, rollup, settings, index, model, carried_vector, subject)
    if not scored:
        return SelectionResult(pages=[], dropped=[])
    best = max(s.relevance for s in scored)
    # Nothing relevant: nothing near the question in meaning or named by a page title
    # (off-topic questions stay below the floor while the manual's own topics sit well above it).
    if not on_topic(query.reading, scored, settings):
        return SelectionResult(pages=[], dropped=[s.bundle.section_id for s in scored])
    by_rel = sorted(scored, key=lambda s: -s.relevance)
    threshold = model.answering_threshold
    if by_rel[0].title_match >= settings.retrieval.title_match_floor:
        # The question restates the best page's title: it asks about that page, and a page that
        # merely shares its words (whose sentences may outscore the page's own) is no answer;
        # the pages it names as well (the same title) and those close to it stay.
        kept = [s for s in by_rel if s.relevance >= tuning.strict_ratio * best or s.title_match >= settings.retrieval.title_match_floor][: tuning.max_pages]
    elif settings.selection.strategy == "strict":
        kept = [s for s in by_rel if s.relevance >= tuning.strict_ratio * best][:tuning.strict_pages]
    else:
        # every page likely to answer (at the ranker's answering threshold), and those near the
        # best; links and figures for a rate question are the ranker's features, no floors of their own
        floor = min(tuning.keep_ratio * best, threshold)
        kept = [s for s in by_rel if s.relevance >= floor][: tuning.max_pages]
        for top in part_pages(query, [s for s in by_rel if s.relevance >= tuning.part_ratio * best], settings, index):
            if top not in kept:
                kept = [*kept[: tuning.max_pages - 1], top] if len(kept) >= tuning.max_pages else [*kept, top]
    if query.focus:
        kept = focused(query.focus, kept, scored, index, settings)
    kept_ids = {s.bundle.section_id for s in kept}
    return SelectionResult(
        # a kept page's score is now the ranker's probability that it answers (stitching reads it)
        pages=[s.bundle.model_copy(update={"score": s.relevance}) for s in kept],
        dropped=[s.bundle.section_id for s in scored if s.bundle.section_id not in kept_ids],
        alternatives=[] if query.focus else offered_alternatives(kept, threshold, index, tuning.alternative_ratio),
        answering_threshold=threshold,
    )


def offered_alternatives(kept: list[PageScore], threshold: float, index: CorpusIndex, close: float, limit: int = MAX_ALTERNATIVES) -> list[str]:
    """The kept pages after the first that are likely to answer too (the ranker's probability at
    or above its answering threshold, and ``close`` to the first's) but are about another
    subject than the first and than each other, by the manual's own structure (another parent
    section, neither page the other's): the question may mean either, and the reader can ask
    again about one."""
    if not kept or kept[0].relevance < threshold:
        return []

    def subject(section_id: str) -> set[str]:  # the page and its parent section
        page = index.pages.get(section_id)
        return {section_id, *(page.breadcrumbs[-1:] if page else [])}

    taken = subject(kept[0].bundle.section_id)
    out = []
    for s in kept[1:]:
        mine = subject(s.bundle.section_id)
        if s.relevance >= max(threshold, close * kept[0].relevance) and not mine & taken and len(out) < limit:
            out.append(s.bundle.section_id)
            taken |= mine
    return out


def focused(section_id: str, kept: list[PageScore], scored: list[PageScore], index: CorpusIndex, settings: Settings) -> list[PageScore]:
    """The page the person chose, alone (as sure as the best page: they chose it): asking again
    about an alternative is asking about that page. Taken from the index when retrieval did not
    bring it; a page the manual lacks leaves the pages as they were (the gateway refuses it)."""
    chosen = next((s for s in scored if s.bundle.section_id == section_id), None)
    if chosen is None:
        if section_id not in index.pages:
            return kept
        chunks = index.page_chunks(section_id)[: settings.rollup.max_chunks_per_page]
        chosen = PageScore(PageBundle(section_id=section_id, score=0.0, chunks=chunks), 0.0, 0.0, False, 0.0)
    chosen.relevance = max([chosen.relevance, *(s.relevance for s in kept)])
    return [chosen]
