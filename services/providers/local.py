"""The offline provider: deterministic selection, extractive stitching, rule-based verification.

Selection scores each rolled-up page by how much of the question it covers (idf-weighted
terms over its title, headings and text) and how close its best chunk is to the question's
embedding. Stitching quotes the sentences (or table rows) that answer: every draft
sentence is a verbatim span of the paragraph it cites, so the answer is grounded by
construction; verification still checks every claim (services.stages.verification).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from shared.config import Settings
from shared.contracts.corpus import Chunk, Paragraph
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, Query, RollupResult, SelectionResult
from shared.index import CorpusIndex
from services.stages.lexicon import expansions
from services.stages.retrieval import query_vector
from services.stages.text import CorpusStats, checkable_facts, corpus_stats, query_terms, split_sentences, terms
from services.stages.verification import verify  # noqa: F401  (the local provider's verify)

# Questions that ask for a figure: a page with a rate table or amounts answers them even
# when it does not repeat the question's words.
_RATE_INTENT = re.compile(
    r"\b(?:how much|how many|what (?:rate|percentage|amount|figure|limit)|rates?|percentage|per (?:mile|week|month|year|day|head|cent)|"
    r"limit|threshold|maximum|minimum|cap|figure|amount|worth|tax[- ]free up to|up to)\b",
    re.I,
)

# ---- selection ------------------------------------------------------------------------

MAX_PAGES = 6  # recall-greedy: pages kept at most
STRICT_PAGES = 2
MIN_RELEVANCE = 0.30  # below this no page is about the question
KEEP_RATIO = 0.72  # recall-greedy keeps pages within this share of the best page
LINKED_RATIO = 0.55  # a page the kept pages link to needs less
STRICT_RATIO = 0.92
VECTOR_WEIGHT = 0.5
AUTHORITY_WEIGHT = 0.15
EXPANSION_WEIGHT = 0.5
ASK_WEIGHT = 2.0
EXAMPLE_PAGE_FACTOR = 0.9
_EXAMPLE = re.compile(r"\bexamples?\b", re.I)


@dataclass
class PageScore:
    bundle: PageBundle
    coverage: float  # idf-weighted share of the question's terms on the page
    similarity: float  # best chunk cosine with the question
    has_figures: bool
    relevance: float


def _similarity(index: CorpusIndex, chunk_id: str, vector: np.ndarray) -> float:
    """Cosine of a chunk with the question (0 for a chunk the index does not hold)."""
    return float(np.dot(index.chunk_vector(chunk_id), vector)) if chunk_id in index.chunks else 0.0


def _weights(question: str, stats: CorpusStats, ask_weight: float = 1.0) -> dict[str, float]:
    """idf weight of each question term; the manual's words for its everyday words count half."""
    weights = {t: stats.idf(t) for t in query_terms(question) if stats.idf(t) > 0}
    # The asking sentence ("... is it taxable?") says what the answer must address; the
    # sentences before it describe the asker's situation.
    asks = [s for s in re.split(r"(?<=[.?!])\s+", question) if s.rstrip().endswith("?")]
    if ask_weight != 1.0 and asks and len(asks) < len(re.split(r"(?<=[.?!])\s+", question.strip())):
        for t in query_terms(" ".join(asks)):
            if t in weights:
                weights[t] *= ask_weight
    for t in query_terms(" ".join(expansions(question))):
        if t not in weights and stats.idf(t) > 0:
            weights[t] = EXPANSION_WEIGHT * stats.idf(t)
    return weights


def coverage(weights: dict[str, float], text_terms: set[str]) -> float:
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in text_terms) / total if total else 0.0


def _page_terms(bundle: PageBundle) -> set[str]:
    heading = bundle.chunks[0].heading_path[-3:] if bundle.chunks else []
    return set(terms(" ".join(heading) + " " + " ".join(c.text + " " + " ".join(c.heading_path[-2:]) for c in bundle.chunks)))


_FIGURE_TEXT = re.compile(r"\u00a3\s?\d|\d\s?%|\b\d+p\b|\bper cent\b", re.I)


def _figures(chunks: list[Chunk]) -> bool:
    """Whether a page states rates or amounts (a table, money, pence, percentages)."""
    return any(c.has_table or _FIGURE_TEXT.search(c.text) for c in chunks)


def score_pages(query: Query, rollup: RollupResult, settings: Settings) -> list[PageScore]:
    index = CorpusIndex.open(settings, query.manual)
    weights = _weights(query.question, corpus_stats(index))
    vector = None
    if settings.retrieval.use_vectors and rollup.pages:
        vector = query_vector(index, query.question)
    out = []
    for bundle in rollup.pages:
        cov = coverage(weights, _page_terms(bundle))
        sim = max((_similarity(index, c.id, vector) for c in bundle.chunks), default=0.0) if vector is not None else cov
        rel = VECTOR_WEIGHT * sim + (1 - VECTOR_WEIGHT) * cov
        if _EXAMPLE.search(index.pages[bundle.section_id].title if bundle.section_id in index.pages else ""):
            rel *= EXAMPLE_PAGE_FACTOR  # an illustration ranks below the rule it illustrates
        out.append(PageScore(bundle, cov, sim, _figures(bundle.chunks), rel))
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
            by_id[sid].relevance += AUTHORITY_WEIGHT * value / top
    return out


def select(query: Query, rollup: RollupResult, settings: Settings) -> SelectionResult:
    scored = score_pages(query, rollup, settings)
    if not scored:
        return SelectionResult(pages=[], dropped=[])
    best = max(s.relevance for s in scored)
    if best < MIN_RELEVANCE:
        return SelectionResult(pages=[], dropped=[s.bundle.section_id for s in scored])
    by_rel = sorted(scored, key=lambda s: -s.relevance)
    if settings.selection.strategy == "strict":
        kept = [s for s in by_rel if s.relevance >= STRICT_RATIO * best][:STRICT_PAGES]
    else:
        rate_question = bool(_RATE_INTENT.search(query.question))
        kept = [s for s in by_rel if s.relevance >= KEEP_RATIO * best]
        kept_ids = {s.bundle.section_id for s in kept}
        index = CorpusIndex.open(settings, query.manual)
        linked = {x.target_section for sid in kept_ids for x in index.xrefs_from(sid)}
        for s in by_rel:
            if s.bundle.section_id in kept_ids:
                continue
            floor = LINKED_RATIO if s.bundle.section_id in linked else KEEP_RATIO
            if rate_question and s.has_figures:
                floor -= 0.07  # the page holding the figures need not repeat the question's words
            if s.relevance >= floor * best:
                kept.append(s)
                kept_ids.add(s.bundle.section_id)
        kept = sorted(kept, key=lambda s: -s.relevance)[:MAX_PAGES]
    kept_ids = {s.bundle.section_id for s in kept}
    return SelectionResult(
        pages=[s.bundle for s in kept],
        dropped=[s.bundle.section_id for s in scored if s.bundle.section_id not in kept_ids],
    )


# ---- stitching ------------------------------------------------------------------------

MAX_SENTENCES = 8
PER_PAGE = 2
LEAD_PAGE_EXTRA = 3  # the best page may give more
LEAD_PAGES = 4  # the best sentence of each of the first pages goes in (two pages on one rule)
RELATIVE_FLOOR = 0.5  # a sentence must score this share of the best sentence
LENGTH_B = 0.5
AVG_UNIT_TERMS = 14.0
LEAD_BONUS = 0.2
LEAD_UNITS = 10
EXAMPLE_UNIT_FACTOR = 0.8
LIST_ITEMS = 4
COVERED = 0.5  # what a question term still weighs once a chosen sentence has covered it
  # list items quoted after a sentence that introduces them with a colon
FIGURE_BONUS = 0.12
CONTEXT_WEIGHT = 0.3  # the chunk's headings count for part of what a sentence says


@dataclass
class Unit:
    text: str
    paragraph: Paragraph
    page_rank: int
    order: tuple[int, int, int]  # chunk position, paragraph index, unit index
    score: float
    own: frozenset[str] = frozenset()  # the unit's terms
    context: frozenset[str] = frozenset()  # its headings' terms it does not repeat
    norm: float = 1.0  # length normalisation
    prior: float = 1.0  # page prior
    rest: float = 0.0  # the score's parts that do not depend on the question's terms

    def lexical(self, weights: dict[str, float], total: float) -> float:
        """How much of the question's (remaining) weight the unit covers, out of ``total``."""
        if total <= 0:
            return 0.0
        own = sum(w for t, w in weights.items() if t in self.own) / total
        ctx = sum(w for t, w in weights.items() if t in self.context) / total
        return (own * self.norm + CONTEXT_WEIGHT * ctx) * self.prior


def _units(paragraph: Paragraph) -> list[str]:
    if paragraph.kind == "heading":
        return []
    if paragraph.kind == "table":
        return [row for row in paragraph.text.splitlines() if row.strip()]
    return [s for s in split_sentences(paragraph.text) if len(s) > 2]


_NUM = re.compile(r"\d+(?:\.\d+)?")


def _lookup_rows(rows: list[str], numbers: list[float]) -> set[int]:
    """Rows of a table keyed by a number (or range) in the first cell that a number in the
    question falls in, or the last key at or below it (tables list bands in ascending order)."""
    picked: set[int] = set()
    for value in numbers:
        best, best_key = None, None
        for i, row in enumerate(rows):
            first = row.split("|")[0].strip()
            nums = [float(n) for n in _NUM.findall(first)] if first[:1].isdigit() else []
            if i == 0 or not nums:  # the header row, or a row not keyed by a number
                continue
            low, high = nums[0], nums[-1]
            if low <= value <= high:
                best = i
                break
            if low <= value and (best_key is None or low > best_key):
                best, best_key = i, low
        if best is not None:
            picked.add(best)
    return picked


def _is_figure(fact: str) -> bool:
    return fact[-1] in "%p" or (fact.replace(".", "").isdigit() and len(fact) >= 2)


def score_units(query: Query, selection: SelectionResult, settings: Settings) -> list[Unit]:
    """Every quotable sentence (or table row) of the selected pages, scored for the question."""
    index = CorpusIndex.open(settings, query.manual)
    weights = _weights(query.question, corpus_stats(index), ASK_WEIGHT)
    total = sum(weights.values())
    rate_question = bool(_RATE_INTENT.search(query.question))
    q_facts = checkable_facts(query.question)
    q_numbers = [float(n) for n in _NUM.findall(query.question) if 10 <= float(n) < 1900]
    vector = query_vector(index, query.question) if settings.retrieval.use_vectors else None
    units: list[Unit] = []
    for rank, bundle in enumerate(selection.pages):
        page_prior = 1.0 / (1 + 0.35 * rank)  # pages come best first from selection
        place = 0  # the unit's place in page order
        for chunk in sorted(bundle.chunks, key=lambda c: c.position):
            context = set(terms(" ".join(chunk.heading_path[-2:])))
            illustration = bool(_EXAMPLE.search(" ".join(chunk.heading_path[-2:])))
            chunk_sim = _similarity(index, chunk.id, vector) if vector is not None else 0.0
            for p_index, paragraph in enumerate(chunk.paragraphs):
                pieces = _units(paragraph)
                lookup = _lookup_rows(pieces, q_numbers) if paragraph.kind == "table" and q_numbers else set()
                for u_index, piece in enumerate(pieces):
                    own_terms = terms(piece)
                    own = frozenset(own_terms)
                    # Short sentences that say the rule are not outscored by long ones that
                    # merely mention more of the question's words (BM25-style length norm).
                    norm = min(1.5, 1.0 / (1 - LENGTH_B + LENGTH_B * max(len(own_terms), 1) / AVG_UNIT_TERMS))
                    unit = Unit(piece, paragraph, rank, (chunk.position, p_index, u_index), 0.0, own, frozenset(context - own), norm, 0.6 + 0.4 * page_prior)
                    score = unit.lexical(weights, total) + 0.5 * max(chunk_sim, 0.0)
                    # The manual states the rule first, then the detail and the examples.
                    score += LEAD_BONUS * max(0.0, 1 - place / LEAD_UNITS)
                    place += 1
                    facts = checkable_facts(piece)
                    if rate_question and any(_is_figure(f) for f in facts):
                        score += FIGURE_BONUS
                    if facts & q_facts:
                        score += FIGURE_BONUS
                    if u_index in lookup:
                        score += 2 * FIGURE_BONUS
                    if illustration and not facts & q_facts:
                        score *= EXAMPLE_UNIT_FACTOR  # a worked example answers only when it is the asker's case
                    unit.score = score
                    unit.rest = score - unit.lexical(weights, total)
                    units.append(unit)
    return units


def stitch(query: Query, selection: SelectionResult, settings: Settings) -> Draft:
    units = score_units(query, selection, settings)
    if not units:
        return Draft(sentences=[])
    ranked = sorted(units, key=lambda u: (-u.score, u.page_rank, u.order))
    floor = RELATIVE_FLOOR * ranked[0].score
    chosen: list[Unit] = []
    per_page: dict[int, int] = {}

    def take(unit: Unit) -> None:
        chosen.append(unit)
        per_page[unit.page_rank] = per_page.get(unit.page_rank, 0) + 1

    # First the best sentence of each leading page, then the best of the rest.
    for rank in range(min(LEAD_PAGES, len(selection.pages))):
        best = next((u for u in ranked if u.page_rank == rank), None)
        if best is not None and best.score >= floor:
            take(best)
    # Then greedily by what each sentence adds: once a sentence has covered some of the
    # question's terms, they count for less, so the next pick answers another part of it.
    index = CorpusIndex.open(settings, query.manual)
    weights = _weights(query.question, corpus_stats(index), ASK_WEIGHT)
    total = sum(weights.values())

    def cover(unit: Unit) -> None:
        for t in unit.own:
            if t in weights:
                weights[t] *= COVERED
    for unit in chosen:
        cover(unit)
    while len(chosen) < MAX_SENTENCES:
        open_units = [
            u for u in units
            if u.score >= floor
            and per_page.get(u.page_rank, 0) < PER_PAGE + (LEAD_PAGE_EXTRA if u.page_rank == 0 else 0)
            and not any(u.text == c.text for c in chosen)
        ]
        if not open_units:
            break
        best = max(open_units, key=lambda u: (u.rest + u.lexical(weights, total), -u.page_rank, tuple(-x for x in u.order)))
        take(best)
        cover(best)
    # A sentence ending in a colon introduces the list that follows: quote the list too.
    for unit in list(chosen):
        if not unit.text.rstrip().endswith(":"):
            continue
        followers = sorted((u for u in units if u.page_rank == unit.page_rank and u.order > unit.order), key=lambda u: u.order)
        for follower in followers[:LIST_ITEMS]:
            if follower.paragraph.kind != "li" and follower.order[:2] != unit.order[:2]:
                break
            if not any(c.text == follower.text and c.paragraph.id == follower.paragraph.id for c in chosen):
                chosen.append(follower)
    # A quoted table row needs its header row to be read.
    for unit in list(chosen):
        if unit.paragraph.kind == "table" and unit.order[2] > 0:
            if not any(c.paragraph.id == unit.paragraph.id and c.order[2] == 0 for c in chosen):
                header = unit.paragraph.text.splitlines()[0]
                chosen.append(Unit(header, unit.paragraph, unit.page_rank, (*unit.order[:2], 0), unit.score))
    chosen.sort(key=lambda u: (u.page_rank, u.order))
    return Draft(sentences=[DraftSentence(text=u.text, citations=[u.paragraph.id]) for u in chosen])
