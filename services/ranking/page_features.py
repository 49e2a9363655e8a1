"""What a candidate page is ranked by: the signals the pipeline already computes for it, one
row of numbers per page in PAGE_FEATURES order, with no weights of their own (the page
ranker, services/ranking, learns those from labelled questions).

Signals: the question's idf-weighted terms on the page and in its title, the page's and its
title's closeness in meaning (MiniLM), whether the question restates the title or names its
subject, retrieval's own fused score and rank, links from the best retrieved pages, and what
kind of page it is (a worked example, a rule for years that have ended, a withdrawn relief, a
contents page of links) against what the question asks (an example, a figure, a year).

Each signal is a named feature of PAGE_EXTRACTOR reading one candidate's PageContext (the
question and the candidates as a whole read once, PageQuestion; what several features share of
the page computed once); selection and training (``taxnav ranker train``) both read the rows
through ``page_signals``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from shared.config import Settings
from shared.contracts.corpus import Chunk
from shared.contracts.pipeline import PageBundle, Query
from shared.contracts.question import QuestionReading
from shared.index import CorpusIndex
from shared.meaning import closeness, question_vector
from services.ranking.extractor import Extractor, Feature
from services.text.question import coverage, question_weights
from services.text.amounts import pounds, states_limit_near
from services.text.tables import table_lookup, title_covers, title_ended
from services.text.units import names_example, withdraws
from services.text.sentences import split_sentences
from services.text.terms import corpus_stats, terms
from services.text.titles import FRAME_WORDS, TitleIndex, title_index

_FIGURE_TEXT = re.compile(r"\u00a3\s?\d|\d\s?%|\b\d+p\b|\bper cent\b", re.I)
TOP_RETRIEVED = 5  # pages whose links count as the retrieval's own pointers


class ConversationSubject(NamedTuple):
    """A follow-up's subject: the pages its conversation's earlier turns answered from, and
    the pages one link from those."""

    carried: frozenset[str] = frozenset()
    linked: frozenset[str] = frozenset()


NO_SUBJECT = ConversationSubject()


@dataclass
class PageSignals:
    """A candidate page's features, and the plain signals other checks read (on_topic, the gate)."""

    bundle: PageBundle
    features: np.ndarray  # PAGE_FEATURES order
    coverage: float
    similarity: float
    has_figures: bool
    title_share: float
    title_match: float


def chunk_similarity(index: CorpusIndex, chunk_id: str, vector: np.ndarray) -> float:
    """Cosine of a chunk with the question (0 for a chunk the index does not hold)."""
    return float(np.dot(index.chunk_vector(chunk_id), vector)) if chunk_id in index.chunks else 0.0


def page_title(index: CorpusIndex, section_id: str) -> str:
    page = index.pages.get(section_id)
    return page.title if page else ""


def title_head(title: str) -> str:
    """What a page title is about: the manual titles pages "Subject: aspect"."""
    return re.split(r":|\s[-\u2013]\s", title)[0].strip()


def title_subject(title: str) -> list[str]:
    """The subject a page title names, as terms, when it has at least two words (a one-word
    subject like "Cars" names too much)."""
    head = [t for t in terms(title_head(title)) if not t[0].isdigit()]
    return head if len(head) >= 2 else []


def names_title_subject(question_terms: str, title: str) -> bool:
    """Whether the question (its terms joined by spaces, padded) names the title's subject as a phrase."""
    head = title_subject(title)
    return bool(head) and f" {' '.join(head)} " in question_terms


def page_terms(bundle: PageBundle) -> set[str]:
    heading = bundle.chunks[0].heading_path[-3:] if bundle.chunks else []
    return set(terms(" ".join(heading) + " " + " ".join(c.text + " " + " ".join(c.heading_path[-2:]) for c in bundle.chunks)))


def has_figures(chunks: list[Chunk]) -> bool:
    """Whether a page states rates or amounts (a table, money, pence, percentages)."""
    return any(c.has_table or _FIGURE_TEXT.search(c.text) for c in chunks)


def _contents_page(bundle: PageBundle) -> float:
    """Share of the page's paragraphs that are little more than a link ("EIM31200 Mileage
    allowance payments"): a contents page names subjects and states no rule."""
    paragraphs = [p.text for c in bundle.chunks for p in c.paragraphs]
    if not paragraphs:
        return 0.0
    linking = sum(bool(re.match(r"^\s*[A-Z]{2,5}\d{4,6}\b", t)) and len(t.split()) <= 14 for t in paragraphs)
    return linking / len(paragraphs)


@dataclass
class PageQuestion:
    """What the page features read of the question (its reading, weighed against this manual)
    and of the candidates as a whole, once per question."""

    index: CorpusIndex
    reading: QuestionReading  # what the question asks, read when it arrived
    weights: dict[str, float]  # the question's idf-weighted terms (with the manual's synonyms)
    own: dict[str, float]  # ... its own subject terms alone (no synonyms, no frame words)
    titles: TitleIndex
    title_weights: dict[str, float]  # the question's terms as weighed against the manual's titles
    vector: np.ndarray | None  # its meaning (None: keywords only)
    terms: str  # its terms joined by spaces, padded (for a title's subject as a phrase)
    best_score: float  # retrieval's best fused score among the candidates
    place: dict[str, int]  # each candidate's place in retrieval's order
    links_in: dict[str, int]  # how many of the TOP_RETRIEVED pages link to each page
    subject: ConversationSubject

    @classmethod
    def read(cls, query: Query, pages: list[PageBundle], settings: Settings, index: CorpusIndex, carried_vector: list[float], subject: ConversationSubject = NO_SUBJECT) -> PageQuestion:
        reading = query.reading
        stats = corpus_stats(index)
        weights = question_weights(query.question, stats, settings.selection.local.expansion_weight)
        titles = title_index(index, stats, FRAME_WORDS)  # each title's weights, once per generation
        by_score = sorted(range(len(pages)), key=lambda i: -pages[i].score)
        links_in: dict[str, int] = {}
        for sid in [pages[i].section_id for i in by_score[:TOP_RETRIEVED]]:
            for target in {x.target_section for x in index.xrefs_from(sid)} - {sid}:
                links_in[target] = links_in.get(target, 0) + 1
        return cls(
            index=index,
            reading=reading,
            weights=weights,
            own={t: weights[t] for t in reading.own_terms if t in weights and t not in FRAME_WORDS},
            titles=titles,
            title_weights=titles.weigh(set(reading.terms)),
            vector=question_vector(index, query.question, carried_vector) if settings.retrieval.use_vectors else None,
            terms=f" {' '.join(reading.terms)} ",
            best_score=max((p.score for p in pages), default=0.0) or 1.0,
            place={pages[i].section_id: r for r, i in enumerate(by_score)},
            links_in=links_in,
            subject=subject,
        )


class PageContext:
    """One candidate page as its features read it: what several features share is computed once,
    here (plain attributes: this runs for every candidate of every question)."""

    __slots__ = ("question", "bundle", "section_id", "title", "title_cosine", "coverage", "cosines", "best_cosine", "title_terms", "title_share", "restated", "figures", "example")

    def __init__(self, question: PageQuestion, bundle: PageBundle, title: str, title_cosine: float) -> None:
        self.question, self.bundle, self.section_id, self.title, self.title_cosine = question, bundle, bundle.section_id, title, title_cosine
        self.coverage = coverage(question.weights, page_terms(bundle))
        # each chunk's cosine with the question (keywords only: the page's coverage stands in)
        vector = question.vector
        self.cosines = [chunk_similarity(question.index, c.id, vector) for c in bundle.chunks] if vector is not None else [self.coverage]
        self.best_cosine = max(self.cosines, default=0.0)
        self.title_terms = set(terms(title))
        self.title_share = coverage(question.own, self.title_terms)
        self.restated = question.titles.match(question.title_weights, bundle.section_id)
        self.figures = has_figures(bundle.chunks)
        self.example = names_example(title)


def _withdrawn(page: PageContext) -> float:
    chunks = page.bundle.chunks
    opening = chunks and min(chunks, key=lambda c: c.position).text.split("\n")[0]
    return float(bool(opening) and withdraws(opening))


def _table_keyed_by_asker(page: PageContext) -> float:
    q = page.question.reading
    return float(q.asks_rate and bool(q.numbers or q.when) and any(table_lookup(c, q.numbers, q.when) for c in page.bundle.chunks))


def _limit_near_asker_amount(page: PageContext) -> float:
    # (only a chunk stating an amount is split into sentences: most state none)
    asked = page.question.reading.amounts
    return float(bool(asked) and any(states_limit_near(asked, s) for c in page.bundle.chunks if pounds(c.text) for s in split_sentences(c.text)))


def _conversation_link(page: PageContext) -> float:
    subject = page.question.subject
    return float(page.section_id in subject.linked and page.section_id not in subject.carried)


# The page ranker's features, in the order services/ranking/models/pages.json was trained on.
PAGE_EXTRACTOR: Extractor[PageContext] = Extractor("pages", [
    Feature("chunk_cosine_best", lambda p: p.best_cosine, "the page's closest chunk to the question"),
    Feature("chunk_cosine_mean", lambda p: float(np.mean(p.cosines)) if p.cosines else 0.0, "its chunks on average (a page about the subject throughout)"),
    Feature("title_cosine", lambda p: float(p.title_cosine), "the page title's closeness in meaning"),
    Feature("term_coverage", lambda p: p.coverage, "idf-weighted share of the question's terms on the page"),
    Feature("title_coverage", lambda p: coverage(p.question.weights, p.title_terms), "... in its title"),
    Feature("title_own_share", lambda p: p.title_share, "the question's own subject terms (not the manual's synonyms) in the title"),
    Feature("title_names_subject", lambda p: float(names_title_subject(p.question.terms, p.title)), 'the question names the title\'s "Subject:" as a phrase'),
    Feature("title_restated", lambda p: p.restated, "how nearly the question restates the title (services/text/titles.py)"),
    Feature("retrieval_score", lambda p: p.bundle.score / p.question.best_score, "the fused retrieval score over the best page's (a linked page enters decayed)"),
    Feature("retrieval_rank", lambda p: 1.0 / (1 + p.question.place[p.section_id]), "1 / (1 + its place in retrieval's order)"),
    Feature("linked_from_top", lambda p: p.question.links_in.get(p.section_id, 0) / TOP_RETRIEVED, "share of the five best-retrieved pages that link to it"),
    Feature("example_page", lambda p: float(p.example), "a worked example or illustration page"),
    Feature("example_page_asked", lambda p: float(p.example and p.question.reading.asks_example), "... and the question asks for an example"),
    Feature("ended_period", lambda p: float(p.question.reading.when is None and title_ended(p.title)), "titled by a period that has ended, and the question names no year"),
    Feature("withdrawn", _withdrawn, "opens by saying its relief or rule was withdrawn"),
    Feature("contents_page", lambda p: _contents_page(p.bundle), "mostly links to other pages (an outline)"),
    Feature("page_words", lambda p: math.log1p(sum(len(c.text.split()) for c in p.bundle.chunks)), "log of the page's length in words"),
    Feature("figures_for_rate_question", lambda p: float(p.question.reading.asks_rate and p.figures), "the page states amounts or rates and the question asks for one"),
    Feature("table_keyed_by_asker", _table_keyed_by_asker, "a table row keyed by the asker's own figure or date"),
    Feature("limit_near_asker_amount", _limit_near_asker_amount, "the page sets a limit of the order of an amount the asker gives"),
    Feature("title_covers_asker", lambda p: float(title_covers(p.title, p.question.reading.numbers, p.question.reading.when)), "the title names the period or band the asker's figures fall in"),
    Feature("conversation_page", lambda p: float(p.section_id in p.question.subject.carried), "a follow-up: an earlier turn of the conversation answered from it"),
    Feature("conversation_link", _conversation_link, "a follow-up: one link from the pages its conversation answered from"),
])
PAGE_FEATURES: tuple[str, ...] = PAGE_EXTRACTOR.names  # what a page model file must list, in this order


def page_contexts(
    query: Query,
    pages: list[PageBundle],
    settings: Settings,
    index: CorpusIndex,
    carried_vector: list[float],
    subject: ConversationSubject = NO_SUBJECT,
) -> list[PageContext]:
    """Each candidate page as the page features read it (the question read once for all)."""
    question = PageQuestion.read(query, pages, settings, index, carried_vector, subject)
    titles = [page_title(question.index, p.section_id) for p in pages]
    title_close = closeness(settings, titles, question.vector) if question.vector is not None else np.zeros(len(pages))
    return [PageContext(question, bundle, title, cosine) for bundle, title, cosine in zip(pages, titles, title_close, strict=True)]


def page_signals(
    query: Query,
    pages: list[PageBundle],
    settings: Settings,
    index: CorpusIndex,
    carried_vector: list[float],
    subject: ConversationSubject = NO_SUBJECT,
) -> list[PageSignals]:
    """Each candidate page's features; ``subject``: a follow-up's conversation (its pages are
    ranked by the same model, as features)."""
    if not pages:
        return []
    return [
        PageSignals(
            bundle=page.bundle,
            features=PAGE_EXTRACTOR.row(page),
            coverage=page.coverage,
            similarity=page.best_cosine,  # (keywords only: the coverage stands in for it)
            has_figures=page.figures,
            title_share=page.title_share,
            title_match=page.restated,
        )
        for page in page_contexts(query, pages, settings, index, carried_vector, subject)
    ]
