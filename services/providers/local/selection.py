"""Selection: each rolled-up page scored by how much of the question it covers (idf-weighted
terms over its text and title, a bonus when the title names the question's subject), how
close its best chunk is to the question's embedding, whether the question restates its title
(the title's own embedding, shared/meaning.py; and its words, both ways, services/text/titles.py),
whether a table or the title is keyed by the asker's own figure or year, and how much the other
candidates link to it; recall-greedy keeps every page near the best one, or, when the question
restates the best page's title, only the pages close to that one. The question is on topic when
a chunk is near it in meaning or a candidate page's title names its subject (``on_topic``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from shared.config import LocalSelectionSettings, Settings
from shared.contracts.corpus import Chunk
from shared.contracts.pipeline import PageBundle, Query, RollupResult, SelectionResult
from shared.index import CorpusIndex
from shared.meaning import closeness
from services.providers.base import question_vector
from services.providers.local.question import ASKS_EXAMPLE, RATE_INTENT, coverage, sub_questions, question_weights
from services.providers.local.tables import amounts, lookup_date, lookup_numbers, states_limit_near, table_lookup, title_covers, title_ended
from services.providers.local.units import EXAMPLE_TITLE
from services.scope import FRAME_WORDS, employment_tie
from services.text.sentences import split_sentences
from services.text.terms import corpus_stats, query_terms, terms
from services.text.titles import title_index


@dataclass
class PageScore:
    bundle: PageBundle
    coverage: float  # idf-weighted share of the question's terms on the page
    similarity: float  # best chunk cosine with the question
    has_figures: bool
    relevance: float
    title_meaning: float | None = None  # the title's cosine with the question (None: not a leading page, or off)
    title_share: float = 0.0  # idf-weighted share of the question's own terms the page title holds
    title_match: float = 0.0  # how nearly the question restates the page title (services/text/titles.py)


def chunk_similarity(index: CorpusIndex, chunk_id: str, vector: np.ndarray) -> float:
    """Cosine of a chunk with the question (0 for a chunk the index does not hold)."""
    return float(np.dot(index.chunk_vector(chunk_id), vector)) if chunk_id in index.chunks else 0.0


def title_subject(title: str) -> list[str]:
    """The subject a page title names: the manual titles pages "Subject: aspect"; its terms
    when it has at least two words (a one-word subject like "Cars" names too much)."""
    head = [t for t in terms(re.split(r":|\s[-\u2013]\s", title)[0]) if not t[0].isdigit()]
    return head if len(head) >= 2 else []


def names_title_subject(question_terms: str, title: str) -> bool:
    """Whether the question (its terms joined by spaces, padded) names the title's subject as a phrase."""
    head = title_subject(title)
    return bool(head) and f" {' '.join(head)} " in question_terms


def _page_terms(bundle: PageBundle) -> set[str]:
    heading = bundle.chunks[0].heading_path[-3:] if bundle.chunks else []
    return set(terms(" ".join(heading) + " " + " ".join(c.text + " " + " ".join(c.heading_path[-2:]) for c in bundle.chunks)))


_FIGURE_TEXT = re.compile(r"\u00a3\s?\d|\d\s?%|\b\d+p\b|\bper cent\b", re.I)


def _figures(chunks: list[Chunk]) -> bool:
    """Whether a page states rates or amounts (a table, money, pence, percentages)."""
    return any(c.has_table or _FIGURE_TEXT.search(c.text) for c in chunks)


def score_pages(query: Query, rollup: RollupResult, settings: Settings, carried_vector: list[float], asked: str = "") -> list[PageScore]:
    """Each candidate page's relevance; ``asked``: the person's own words this turn, when the
    query reads more (a follow-up read with its subject)."""
    tuning = settings.selection.local
    index = CorpusIndex.open(settings, query.manual)
    stats = corpus_stats(index)
    weights = question_weights(query.question, stats, tuning.expansion_weight)
    titles = title_index(index, stats, FRAME_WORDS)  # each title's weights, once per generation
    title_weights = titles.weigh(set(terms(query.question)))
    # the question's own subject terms: not the manual's other words for them, nor the words
    # that frame any question ("rules", "treatment")
    own = {t: weights[t] for t in query_terms(query.question) if t in weights and t not in FRAME_WORDS}
    vector = None
    if settings.retrieval.use_vectors and rollup.pages:
        vector = question_vector(index, query.question, carried_vector)
    rate_question = bool(RATE_INTENT.search(query.question))
    q_numbers, q_when = lookup_numbers(query.question), lookup_date(query.question)
    q_terms = f" {' '.join(terms(query.question))} "
    wants_example = bool(ASKS_EXAMPLE.search(query.question))
    q_amounts = amounts(asked or query.question)  # an earlier turn's amount is not this turn's (a follow-up asking a rate)
    out = []
    for bundle in rollup.pages:
        cov = coverage(weights, _page_terms(bundle))
        sim = max((chunk_similarity(index, c.id, vector) for c in bundle.chunks), default=0.0) if vector is not None else cov
        title = page_title(index, bundle.section_id)
        rel = tuning.vector_weight * sim + (1 - tuning.vector_weight) * cov + tuning.title_weight * coverage(weights, set(terms(title)))
        if names_title_subject(q_terms, title):
            rel += tuning.subject_bonus
        restated = titles.match(title_weights, bundle.section_id)
        if restated >= settings.retrieval.title_match_floor:
            rel += tuning.title_restated_bonus * restated
        if EXAMPLE_TITLE.search(title):
            # an illustration ranks below the rule it illustrates, above it when one is asked for
            rel = rel / tuning.example_page_factor if wants_example else rel * tuning.example_page_factor
        if q_when is None and title_ended(title):
            # a question naming no year asks about the rule as it is now, not one the manual keeps
            # for earlier years; a page saying its rule was withdrawn stays, as that is the ruling now
            rel *= tuning.ended_page_factor
        if rate_question and (q_numbers or q_when) and any(table_lookup(c, q_numbers, q_when) for c in bundle.chunks):
            rel += tuning.lookup_bonus  # a table that tabulates the asker's own figure (142 g/km -> the 140 row)
        # (only a chunk stating an amount is split into sentences: most state none)
        if q_amounts and tuning.limit_bonus and any(
            states_limit_near(q_amounts, sent) for c in bundle.chunks if amounts(c.text) for sent in split_sentences(c.text)
        ):
            rel += tuning.limit_bonus  # the page sets the limit the asker's own amount is measured against
        if title_covers(title, q_numbers, q_when):
            rel += tuning.lookup_bonus  # a page titled by the period or band the asker's figures fall in
        out.append(PageScore(bundle, cov, sim, _figures(bundle.chunks), rel, title_share=coverage(own, set(terms(title))), title_match=restated))
    # Authority among the candidates: the manual's authors send readers from examples and
    # detail pages to the page that states the rule, so a page that relevant candidates
    # link to gains (one step of link analysis over the candidate set).
    by_id = {s.bundle.section_id: s for s in out}
    authority = dict.fromkeys(by_id, 0.0)
    for s in out:
        for target in {x.target_section for x in index.xrefs_from(s.bundle.section_id)}:
            if target in authority and target != s.bundle.section_id:
                authority[target] += s.relevance
    top = max(authority.values(), default=0.0)
    if top > 0:
        for sid, value in authority.items():
            by_id[sid].relevance += tuning.authority_weight * value / top
    add_title_meaning(out, index, settings, vector)
    return out


def add_title_meaning(scored: list[PageScore], index: CorpusIndex, settings: Settings, vector: np.ndarray | None) -> None:
    """Each leading page's title's closeness in meaning to the question, and the relevance it
    adds. A chunk's vector mixes its title with a long body, so a page that merely mentions the
    subject can match as well as the page about it; a question that restates a title (the
    manual's own name for its subject) means that page. Only a close match counts
    (title_meaning_floor): below it a title's likeness is loose (an old rule's page shares the
    words of the current one) and ranks real questions' pages no better. Only the
    title_meaning_pages best pages are embedded: the signal reorders the leaders, and each
    title costs a model call the first time it is seen. Nothing when off or without vectors."""
    tuning = settings.selection.local
    if vector is None or tuning.title_meaning_weight <= 0 or tuning.title_meaning_pages <= 0:
        return
    leaders = sorted(scored, key=lambda s: -s.relevance)[: tuning.title_meaning_pages]
    for s, close in zip(leaders, closeness(settings, [page_title(index, s.bundle.section_id) for s in leaders], vector), strict=True):
        s.title_meaning = float(close)
        s.relevance += tuning.title_meaning_weight * max(0.0, float(close) - tuning.title_meaning_floor)


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
    page_terms = [(s, _page_terms(s.bundle), set(terms(page_title(index, s.bundle.section_id)))) for s in candidates]
    out = []
    for part in parts:
        weights = question_weights(part, stats, tuning.expansion_weight)
        if weights:
            out.append(max(page_terms, key=lambda p: coverage(weights, p[1]) + tuning.title_weight * coverage(weights, p[2]))[0])
    return out


def page_title(index: CorpusIndex, section_id: str) -> str:
    page = index.pages.get(section_id)
    return page.title if page else ""


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
    near = max((s.similarity for s in scored), default=0.0) if settings.retrieval.use_vectors else 1.0
    return near >= similarity_floor(question, tuning)


def select(query: Query, rollup: RollupResult, settings: Settings, carried_vector: list[float], asked: str = "") -> SelectionResult:
    tuning = settings.selection.local
    scored = score_pages(query, rollup, settings, carried_vector, asked)
    if not scored:
        return SelectionResult(pages=[], dropped=[])
    best = max(s.relevance for s in scored)
    # Nothing relevant: nothing near the question in meaning or named by a page title (when
    # there are vectors; off-topic questions stay below the floor while the manual's own topics
    # sit well above it), or, keywords only, too little of the question is on any page.
    if best < tuning.min_relevance or not on_topic(query.question, scored, settings):
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
        rate_question = bool(RATE_INTENT.search(query.question))
        kept = [s for s in by_rel if s.relevance >= tuning.keep_ratio * best]
        kept_ids = {s.bundle.section_id for s in kept}
        index = CorpusIndex.open(settings, query.manual)
        linked = {x.target_section for sid in kept_ids for x in index.xrefs_from(sid)}
        for s in by_rel:
            if s.bundle.section_id in kept_ids:
                continue
            floor = tuning.linked_ratio if s.bundle.section_id in linked else tuning.keep_ratio
            if rate_question and s.has_figures:
                floor -= tuning.rate_figures_relief  # the page holding the figures need not repeat the question's words
            if s.relevance >= floor * best:
                kept.append(s)
                kept_ids.add(s.bundle.section_id)
        kept = sorted(kept, key=lambda s: -s.relevance)[:tuning.max_pages]
        for top in part_pages(query, [s for s in by_rel if s.relevance >= tuning.part_ratio * best], settings):
            if top not in kept:
                kept = [*kept[: tuning.max_pages - 1], top] if len(kept) >= tuning.max_pages else [*kept, top]
    kept_ids = {s.bundle.section_id for s in kept}
    return SelectionResult(
        pages=[s.bundle for s in kept],
        dropped=[s.bundle.section_id for s in scored if s.bundle.section_id not in kept_ids],
    )
