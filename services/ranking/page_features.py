"""What a candidate page is ranked by: the signals the pipeline already computes for it, one
row of numbers per page in PAGE_FEATURES order, with no weights of their own (the page
ranker, services/ranking, learns those from labelled questions).

Signals: the question's idf-weighted terms on the page and in its title, the page's and its
title's closeness in meaning (MiniLM), whether the question restates the title or names its
subject, retrieval's own fused score and rank, links from the best retrieved pages, and what
kind of page it is (a worked example, a rule for years that have ended, a withdrawn relief, a
contents page of links) against what the question asks (an example, a figure, a year)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from shared.config import Settings
from shared.contracts.corpus import Chunk
from shared.contracts.pipeline import PageBundle, Query
from shared.index import CorpusIndex
from shared.meaning import closeness
from shared.meaning import question_vector
from services.text.question import ASKS_EXAMPLE, RATE_INTENT, coverage, question_weights
from services.text.tables import amounts, lookup_date, lookup_numbers, states_limit_near, table_lookup, title_covers, title_ended
from services.text.units import EXAMPLE_TITLE, withdraws
from services.text.titles import FRAME_WORDS
from services.text.sentences import split_sentences
from services.text.terms import corpus_stats, query_terms, terms
from services.text.titles import title_index

PAGE_FEATURES: tuple[str, ...] = (
    "chunk_cosine_best",  # the page's closest chunk to the question
    "chunk_cosine_mean",  # its chunks on average (a page about the subject throughout)
    "title_cosine",  # the page title's closeness in meaning
    "term_coverage",  # idf-weighted share of the question's terms on the page
    "title_coverage",  # ... in its title
    "title_own_share",  # the question's own subject terms (not the manual's synonyms) in the title
    "title_names_subject",  # the question names the title's "Subject:" as a phrase
    "title_restated",  # how nearly the question restates the title (services/text/titles.py)
    "retrieval_score",  # the page's fused retrieval score over the best page's (a page a link brought in enters decayed)
    "retrieval_rank",  # 1 / (1 + its place in retrieval's order)
    "linked_from_top",  # share of the five best-retrieved pages that link to it
    "example_page",  # a worked example or illustration page
    "example_page_asked",  # ... and the question asks for an example
    "ended_period",  # titled by a period that has ended, and the question names no year
    "withdrawn",  # opens by saying its relief or rule was withdrawn
    "contents_page",  # mostly links to other pages (an outline)
    "page_words",  # log of the page's length in words
    "figures_for_rate_question",  # the page states amounts or rates and the question asks for one
    "table_keyed_by_asker",  # a table row keyed by the asker's own figure or date
    "limit_near_asker_amount",  # the page sets a limit of the order of an amount the asker gives
    "title_covers_asker",  # the title names the period or band the asker's figures fall in
    "conversation_page",  # a follow-up: an earlier turn of the conversation answered from it
    "conversation_link",  # a follow-up: one link from the pages its conversation answered from
)

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


def page_signals(
    query: Query, pages: list[PageBundle], settings: Settings, carried_vector: list[float], asked: str = "", subject: ConversationSubject = NO_SUBJECT
) -> list[PageSignals]:
    """Each candidate page's features; ``asked``: the person's own words this turn, when the
    query reads more (a follow-up read with its subject); ``subject``: a follow-up's
    conversation (its pages are ranked by the same model, as features)."""
    if not pages:
        return []
    index = CorpusIndex.open(settings, query.manual)
    stats = corpus_stats(index)
    weights = question_weights(query.question, stats, settings.selection.local.expansion_weight)
    titles = title_index(index, stats, FRAME_WORDS)  # each title's weights, once per generation
    title_weights = titles.weigh(set(terms(query.question)))
    own = {t: weights[t] for t in query_terms(query.question) if t in weights and t not in FRAME_WORDS}
    vector = question_vector(index, query.question, carried_vector) if settings.retrieval.use_vectors else None
    rate_question = bool(RATE_INTENT.search(query.question))
    q_numbers, q_when = lookup_numbers(query.question), lookup_date(query.question)
    q_terms = f" {' '.join(terms(query.question))} "
    wants_example = bool(ASKS_EXAMPLE.search(query.question))
    q_amounts = amounts(asked or query.question)  # an earlier turn's amount is not this turn's
    page_titles = [page_title(index, p.section_id) for p in pages]
    title_close = closeness(settings, page_titles, vector) if vector is not None else np.zeros(len(pages))
    best_score = max((p.score for p in pages), default=0.0) or 1.0
    by_score = sorted(range(len(pages)), key=lambda i: -pages[i].score)
    place = {pages[i].section_id: r for r, i in enumerate(by_score)}
    top = [pages[i].section_id for i in by_score[:TOP_RETRIEVED]]
    links_in: dict[str, int] = {}
    for sid in top:
        for target in {x.target_section for x in index.xrefs_from(sid)} - {sid}:
            links_in[target] = links_in.get(target, 0) + 1
    out = []
    for bundle, title, title_cos in zip(pages, page_titles, title_close, strict=True):
        cov = coverage(weights, page_terms(bundle))
        sims = [chunk_similarity(index, c.id, vector) for c in bundle.chunks] if vector is not None else [cov]
        title_terms = set(terms(title))
        title_share = coverage(own, title_terms)
        figures = has_figures(bundle.chunks)
        example = bool(EXAMPLE_TITLE.search(title))
        opening = bundle.chunks and min(bundle.chunks, key=lambda c: c.position).text.split("\n")[0]
        words = sum(len(c.text.split()) for c in bundle.chunks)
        restated = titles.match(title_weights, bundle.section_id)
        row = {
            "chunk_cosine_best": max(sims, default=0.0),
            "chunk_cosine_mean": float(np.mean(sims)) if sims else 0.0,
            "title_cosine": float(title_cos),
            "term_coverage": cov,
            "title_coverage": coverage(weights, title_terms),
            "title_own_share": title_share,
            "title_names_subject": float(names_title_subject(q_terms, title)),
            "title_restated": restated,
            "retrieval_score": bundle.score / best_score,
            "retrieval_rank": 1.0 / (1 + place[bundle.section_id]),
            "linked_from_top": links_in.get(bundle.section_id, 0) / TOP_RETRIEVED,
            "example_page": float(example),
            "example_page_asked": float(example and wants_example),
            "ended_period": float(q_when is None and title_ended(title)),
            "withdrawn": float(bool(opening) and withdraws(opening)),
            "contents_page": _contents_page(bundle),
            "page_words": math.log1p(words),
            "figures_for_rate_question": float(rate_question and figures),
            "table_keyed_by_asker": float(rate_question and bool(q_numbers or q_when) and any(table_lookup(c, q_numbers, q_when) for c in bundle.chunks)),
            # (only a chunk stating an amount is split into sentences: most state none)
            "limit_near_asker_amount": float(bool(q_amounts) and any(states_limit_near(q_amounts, s) for c in bundle.chunks if amounts(c.text) for s in split_sentences(c.text))),
            "title_covers_asker": float(title_covers(title, q_numbers, q_when)),
            "conversation_page": float(bundle.section_id in subject.carried),
            "conversation_link": float(bundle.section_id in subject.linked and bundle.section_id not in subject.carried),
        }
        out.append(
            PageSignals(
                bundle=bundle,
                features=np.array([row[f] for f in PAGE_FEATURES], dtype=np.float64),
                coverage=cov,
                similarity=row["chunk_cosine_best"],  # (keywords only: the coverage stands in for it)
                has_figures=figures,
                title_share=title_share,
                title_match=restated,
            )
        )
    return out
