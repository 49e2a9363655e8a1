"""The offline provider: deterministic selection, extractive stitching, rule-based verification.

Selection scores each rolled-up page by how much of the question it covers (idf-weighted
terms over its text and title, a bonus when the title names the question's subject), how
close its best chunk is to the question's embedding, and how much the other candidates link
to it; recall-greedy keeps every page near the best one.

Stitching scores every sentence and table row of the kept pages (a row reads as a sentence
with its column headers) for the question: its words (idf-weighted, the asking sentence
counting double), whether it gives the kind of thing the question asks for (a figure, a
ruling, a date or period, a definition), worked examples and illustrations counting less
unless asked for; the eight best candidates are then re-ranked by their own MiniLM
similarity to the question. The answer part is the best unit with what it needs to be read
right (a list intro with its items, an item with its intro, "This is taxable under ..."),
then the units scoring near it from the two best pages, in the manual's order: at most six
claims and about 120 words. The detail follows, the next units above the floor, the whole
reply within 350 words. Each claim cites exactly one paragraph: consecutive sentences of one
paragraph make one claim; a sentence the 2014 scrape split over paragraphs is scored as one
but quoted paragraph by paragraph; a heading that states a rule ("SMP is taxable") is quoted
with the id of the paragraph under it; a rendered row cites its table. Verification checks
every claim (services.stages.verification).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Literal

import numpy as np

from shared.config import Settings
from shared.embeddings import base_embedder
from shared.contracts.api import ClaimRole
from shared.contracts.corpus import Chunk, Paragraph
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, Query, RollupResult, SelectionResult
from shared.index import CorpusIndex
from services.scope import employment_tie
from services.stages.retrieval import query_vector
from services.text.lexicon import expansions
from services.text.figures import checkable_facts, period_start, years_named
from services.text.sentences import question_sentences, split_sentences
from services.text.terms import CorpusStats, corpus_stats, query_terms, terms
from services.stages.verification import verify  # noqa: F401  (the local provider's verify)

# Questions that ask for a figure: a page with a rate table or amounts answers them even
# when it does not repeat the question's words.
_RATE_INTENT = re.compile(
    r"\b(?:how much|how many|what (?:rate|percentage|amount|figure|limit)|rates?|percentage|per (?:mile|week|month|year|day|head|cent)|"
    r"limit|threshold|maximum|minimum|cap|figure|amount|worth|tax[- ]free up to|up to)\b",
    re.I,
)

# ---- selection ------------------------------------------------------------------------

MAX_PAGES = 8  # recall-greedy: pages kept at most
STRICT_PAGES = 2
MIN_RELEVANCE = 0.30  # below this no page is about the question
# The best chunk's cosine with the question below which nothing is on topic. Off-topic
# questions measured here reach about 0.41 and the manual's own questions start near 0.49; a
# question in the vocabulary of jobs and pay (scope.employment_tie) is given a wider margin.
MIN_SIMILARITY = 0.45
MIN_SIMILARITY_TIED = 0.38
KEEP_RATIO = 0.72  # recall-greedy keeps pages within this share of the best page
LINKED_RATIO = 0.55  # a page the kept pages link to needs less
STRICT_RATIO = 0.92
PART_RATIO = 0.7  # a page kept for one part of the question needs this share of the best page
VECTOR_WEIGHT = 0.5
AUTHORITY_WEIGHT = 0.15
TITLE_WEIGHT = 0.2  # the manual's page titles name the rule a page states
EXPANSION_WEIGHT = 0.5
ASK_WEIGHT = 2.0
EXAMPLE_PAGE_FACTOR = 0.9
LOOKUP_BONUS = 0.1
SUBJECT_BONUS = 0.15  # the page's title names the question's subject ("Employment and Support Allowance: taxation")
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
    asks = [s for s in question_sentences(question) if s.rstrip().endswith("?")]
    if ask_weight != 1.0 and asks and len(asks) < len(question_sentences(question.strip())):
        for t in query_terms(" ".join(asks)):
            if t in weights:
                weights[t] *= ask_weight
    for t in query_terms(" ".join([*expansions(question), *stats.synonyms(question)])):
        if t not in weights and stats.idf(t) > 0:
            weights[t] = EXPANSION_WEIGHT * stats.idf(t)
    return weights


def title_subject(title: str) -> list[str]:
    """The subject a page title names: the manual titles pages "Subject: aspect"; its terms
    when it has at least two words (a one-word subject like "Cars" names too much)."""
    head = [t for t in terms(re.split(r":|\s[-\u2013]\s", title)[0]) if not t[0].isdigit()]
    return head if len(head) >= 2 else []


def names_title_subject(question_terms: str, title: str) -> bool:
    """Whether the question (its terms joined by spaces, padded) names the title's subject as a phrase."""
    head = title_subject(title)
    return bool(head) and f" {' '.join(head)} " in question_terms


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
    rate_question = bool(_RATE_INTENT.search(query.question))
    q_numbers, q_when = _lookup_numbers(query.question), _lookup_date(query.question)
    q_terms = f" {' '.join(terms(query.question))} "
    wants_example = bool(_ASKS_EXAMPLE.search(query.question))
    out = []
    for bundle in rollup.pages:
        cov = coverage(weights, _page_terms(bundle))
        sim = max((_similarity(index, c.id, vector) for c in bundle.chunks), default=0.0) if vector is not None else cov
        title = _title(index, bundle.section_id)
        rel = VECTOR_WEIGHT * sim + (1 - VECTOR_WEIGHT) * cov + TITLE_WEIGHT * coverage(weights, set(terms(title)))
        if names_title_subject(q_terms, title):
            rel += SUBJECT_BONUS
        if _EXAMPLE.search(title):
            # an illustration ranks below the rule it illustrates, above it when one is asked for
            rel = rel / EXAMPLE_PAGE_FACTOR if wants_example else rel * EXAMPLE_PAGE_FACTOR
        if rate_question and (q_numbers or q_when) and any(_table_lookup(c, q_numbers, q_when) for c in bundle.chunks):
            rel += LOOKUP_BONUS  # a table that tabulates the asker's own figure (142 g/km -> the 140 row)
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


_INTERROGATIVE = r"(?:is|are|can|could|do|does|did|how|what|when|which|who|will|would|should|roughly|must)"
_PART_SPLIT = re.compile(rf",?\s+(?:and|or)\s+(?={_INTERROGATIVE}\b)|,\s+(?={_INTERROGATIVE}\b)", re.I)


def question_parts(question: str) -> list[str]:
    """The separate things a question asks: its question sentences, split where a clause
    starting with an interrogative is joined on ("..., and is there a deadline?")."""
    asks = [s for s in question_sentences(question.strip()) if s.rstrip().endswith("?")]
    return [p for a in asks for p in _PART_SPLIT.split(a) if p.strip()]


def part_pages(query: Query, candidates: list[PageScore], settings: Settings) -> list[PageScore]:
    """A question in parts ("how is it worked out, and what rate applies for 2014-15?") needs
    a page for each: of the candidates, the one that best covers each part's own words."""
    parts = question_parts(query.question)
    if len(parts) < 2 or not candidates:
        return []
    index = CorpusIndex.open(settings, query.manual)
    stats = corpus_stats(index)
    # each candidate's words once, whatever the number of parts
    page_terms = [(s, _page_terms(s.bundle), set(terms(_title(index, s.bundle.section_id)))) for s in candidates]
    out = []
    for part in parts:
        weights = _weights(part, stats)
        if weights:
            out.append(max(page_terms, key=lambda p: coverage(weights, p[1]) + TITLE_WEIGHT * coverage(weights, p[2]))[0])
    return out


def _title(index: CorpusIndex, section_id: str) -> str:
    page = index.pages.get(section_id)
    return page.title if page else ""


def similarity_floor(question: str) -> float:
    """The cosine the best chunk needs for the question to be on topic at all."""
    return MIN_SIMILARITY_TIED if employment_tie(question) else MIN_SIMILARITY


def select(query: Query, rollup: RollupResult, settings: Settings) -> SelectionResult:
    scored = score_pages(query, rollup, settings)
    if not scored:
        return SelectionResult(pages=[], dropped=[])
    best = max(s.relevance for s in scored)
    # Nothing relevant: no passage is near the question in meaning (when there are vectors;
    # off-topic questions stay below this while the manual's own topics sit well above it),
    # or, keywords only, too little of the question is on any page.
    near = max(s.similarity for s in scored) if settings.retrieval.use_vectors else 1.0
    if best < MIN_RELEVANCE or near < similarity_floor(query.question):
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
        for top in part_pages(query, [s for s in by_rel if s.relevance >= PART_RATIO * best], settings):
            if top not in kept:
                kept = [*kept[: MAX_PAGES - 1], top] if len(kept) >= MAX_PAGES else [*kept, top]
    kept_ids = {s.bundle.section_id for s in kept}
    return SelectionResult(
        pages=[s.bundle for s in kept],
        dropped=[s.bundle.section_id for s in scored if s.bundle.section_id not in kept_ids],
    )


# ---- stitching ------------------------------------------------------------------------

ANSWER_CLAIMS = 6  # the answer part: at most this many claims
ANSWER_WORDS = 120  # ... and about this many words
ANSWER_WORDS_CAP = 180  # the lead alone (a rule with its list) may run to this
ANSWER_FLOOR = 0.6  # an answer claim scores at least this share of the lead; the rest is detail
FOLLOWING_UNITS = 3  # units after the lead in its chunk ...
FOLLOWING_FACTOR = 1.6  # ... weighed up for the answer part (its conditions)
LEAD_STANDALONE = 0.8  # the lead may give way to a unit scoring this share of it that reads on its own
MEANING_CANDIDATES = 8  # answer candidates embedded per question (8 short sentences: ~50 ms here)
MEANING_WEIGHT = 1.0
MEANING_CACHE = 20000  # sentence vectors remembered across questions
_MEANING: dict[tuple[str, str], np.ndarray] = {}
TABLE_ROWS = 4  # rows of one table in the answer part (a row looked up by the asker's figure aside)
ANSWER_PAGES = 2  # the answer part quotes the pages selection ranked first; the others go to the detail
REPLY_WORDS = 350  # answer and detail together
DETAIL_PER_PAGE = 4  # units the detail takes from one page
RELATIVE_FLOOR = 0.5  # a sentence must score this share of the best sentence
NEIGHBOUR_FLOOR = 0.8  # a sentence next to a quoted one in its paragraph joins that claim above this share of the floor
PAGE_DECAY = 0.35  # how fast a page's place in the selection lowers its sentences' scores
LENGTH_B = 0.5  # BM25-style length normalisation of a sentence's term coverage
AVG_UNIT_TERMS = 14.0
LEAD_BONUS = 0.2  # the manual states the rule first, then the detail and the examples
LEAD_UNITS = 10
FIGURE_BONUS = 0.12
LOOKUP_ROW_BONUS = 0.5
RATE_ROW_BONUS = 0.3
ROW_LABEL_BONUS = 0.12  # a table row whose label names what the question asks about ("Car benefit | £2,700")
RATE_TABLE_PAGES = 3  # the row of a table keyed by the asker's own figure is the answer
RATE_TABLE_MATCH = 0.15  # a rate table must share this much of the question to be its answer
CONTEXT_WEIGHT = 0.3  # the chunk's headings count for part of what a sentence says
SAME_STATEMENT = 0.8  # word overlap (figures aside) above which a sentence repeats a quoted one
LIST_ITEMS = 4  # list items quoted after a sentence that introduces them with a colon
MAX_FRAGMENTS = 4  # paragraphs one sentence may run over (the 2014 scrape split some)

_ANAPHOR = re.compile(r"^(?:This|It|These|They|Such|That)\b")
_TERMINAL = re.compile(r"[.!?:;]['\")\u201d\u2019]*$")
_CONTINUES = re.compile(r"^[a-z0-9(\u00a3\u2018'\"]")
# A list item runs on into the next only when it stops on a word that needs more ("... a
# scheme and", "... less"); otherwise each item is its own statement.
_RUNS_ON = re.compile(r"(?:\b(?:and|or|but|nor|of|the|to|for|by|with|in|on|at|a|an|less|plus|than|that|which|where|if|is|are)|[,(\u2013-])$", re.I)
# A heading that states a rule ("SMP is taxable") says it more plainly than the paragraphs
# under it; most headings name a topic ("Two or more functions") or ask ("Is PAYE due ...").
_STATES = re.compile(r"\b(?:is|are|isn't|aren't|must|cannot|can|does not|do not|applies|apply|remains?)\b", re.I)
_ASKS = re.compile(r"^(?:is|are|does|do|how|what|when|which|who|where|why|can|should|example)\b", re.I)
_NOTE = re.compile(r"^\W*notes?\b", re.I)
# "See EIM74650 for an overview of ..." / "For details of X see EIM42260": a signpost to
# another page restates the topic in the question's words but says nothing about it.
_SIGNPOST = re.compile(r"^(?:see\b|for (?:[\w'\u2019-]+ ){0,12}?see\b)", re.I)
_PAGE_REF = re.compile(r"\b[A-Z]{2,5} ?\d{4,6}\b")
SIGNPOST_FACTOR = 0.6
_SEE_NOTE = re.compile(r"\bsee notes?\b", re.I)


@dataclass
class Unit:
    """A quotable sentence or table row; ``parts`` holds more than one (paragraph, text)
    when the scrape split the sentence over paragraphs (each part is quoted with its own id)."""

    parts: list[tuple[Paragraph, str]]
    page_rank: int
    order: tuple[int, int, int]  # chunk position, paragraph index, unit index
    row: int | None = None  # table row (0 = the header, never quoted on its own)
    score: float = 0.0
    heading: bool = False  # the chunk's heading, quoted with the id of the paragraph under it
    cells: str = ""  # a table row as the table has it ("Car or van | First 10,000 | 45p")
    example: bool = False  # part of a worked example (its heading, page title or paragraph says so)
    looked_up: bool = False  # a table row keyed by the asker's own figure or date (142 g/km -> the 140 row)

    @property
    def text(self) -> str:
        return " ".join(text for _, text in self.parts)

    @property
    def paragraph(self) -> Paragraph:
        return self.parts[0][0]

    @property
    def last_paragraph(self) -> Paragraph:
        return self.parts[-1][0]


def is_signpost(sentence: str) -> bool:
    """Whether a sentence only sends the reader to another page."""
    return bool(_SIGNPOST.match(sentence) and _PAGE_REF.search(sentence))


def states_rule(heading: str) -> bool:
    """Whether a heading is a short statement (quotable as a claim) rather than a topic or a question."""
    return bool(
        _STATES.search(heading) and not _ASKS.match(heading) and ":" not in heading and len(heading.split()) <= 12 and not checkable_facts(heading)
    )


def chunk_units(chunk: Chunk, page_rank: int, heading: str | None = None) -> list[Unit]:
    """The chunk's sentences and table rows in order, split sentences joined up again; first
    its ``heading`` when given (a heading that states a rule), cited by the paragraph under it."""
    units: list[Unit] = []
    first = next((p for p in chunk.paragraphs if p.kind != "heading"), None)
    if heading and first is not None:
        units.append(Unit([(first, heading)], page_rank, (chunk.position, -1, 0), heading=True))
    for p_index, paragraph in enumerate(chunk.paragraphs):
        if paragraph.kind == "heading":
            continue
        if paragraph.kind == "table":
            rows = _rows(paragraph)
            header = rows[0] if has_header(rows) else ""
            label = ""
            for i, r in enumerate(rows):
                first = r.split("|")[0].strip()
                label = first or (label if header else "")  # a row that goes on the one above ("| 25p after that") keeps its label
                if i or not header:
                    text = render_row(header, r if first else f"{label} {r}")
                    units.append(Unit([(paragraph, text)], page_rank, (chunk.position, p_index, i), row=i, cells=r))
            continue
        for u_index, sentence in enumerate(s for s in split_sentences(paragraph.text) if len(s) > 2):
            last = units[-1] if units else None
            if (
                u_index == 0
                and last is not None
                and last.row is None
                and not last.heading
                and last.parts[-1][0].id != paragraph.id
                and len(last.parts) < MAX_FRAGMENTS
                and not _TERMINAL.search(last.parts[-1][1])
                and (_CONTINUES.match(sentence) or last.text.count("(") > last.text.count(")"))
                and not (paragraph.kind == "li" and last.parts[-1][0].kind == "li" and not _RUNS_ON.search(last.parts[-1][1]))
            ):
                last.parts.append((paragraph, sentence))
            else:
                units.append(Unit([(paragraph, sentence)], page_rank, (chunk.position, p_index, u_index)))
    return units


_NUM = re.compile(r"\d+(?:\.\d+)?")


_DATE_CELL = re.compile(r"^(\d{1,2})[./](\d{1,2})[./](\d{4})\b")


def _cell_date(cell: str) -> date | None:
    m = _DATE_CELL.match(cell.strip())
    try:
        return date(int(m.group(3)), int(m.group(2)), int(m.group(1))) if m else None
    except ValueError:
        return None


def _lookup_rows(rows: list[str], numbers: list[float], when: date | None = None) -> set[int]:
    """Rows of a table keyed by a number (or range) in the first cell that a number in the
    question falls in, or the last key at or below it (tables list bands in ascending order);
    in a table of periods keyed by start dates, the period the question's date falls in."""
    picked: set[int] = set()
    starts = [(_cell_date(row.split("|")[0]), i) for i, row in enumerate(rows) if i]
    if when is not None:
        started = [(d, i) for d, i in starts if d is not None and d <= when]
        if started:
            picked.add(max(started)[1])
    if any(d is not None for d, _ in starts):
        return picked  # dates are not numeric bands
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


_AMOUNT = re.compile(r"\u00a3\s?(\d[\d,]*(?:\.\d+)?)\s?(k\b)?", re.I)


def _amounts(text: str) -> list[float]:
    return [float(m.group(1).replace(",", "")) * (1000 if m.group(2) else 1) for m in _AMOUNT.finditer(text)]


def _near_amount(asked: list[float], stated: list[float]) -> bool:
    """Whether the text states a different amount of the same order as one the asker gives."""
    return any(a != b and 0.4 <= b / a <= 2.5 for a in asked if a > 0 for b in stated)


# Amounts, tax years and dates in a question are not the plain numbers a table is keyed by.
_NOT_A_KEY = re.compile(r"\u00a3\s?[\d,.]+k?|\b(?:19|20)\d{2}\s?[-/\u2013]\s?\d{2,4}\b|\b\d{1,2}[./]\d{1,2}[./]\d{2,4}\b|\d[\d,]*,\d{3}")


def _lookup_numbers(question: str) -> list[float]:
    """Plain numbers in a question that a table might be keyed by (not amounts, years or
    dates, not tiny): '142g/km' -> 142."""
    return [float(n) for n in _NUM.findall(_NOT_A_KEY.sub(" ", question)) if 10 <= float(n) < 1900]


def _lookup_date(question: str) -> date | None:
    """The date a question asks about, for tables of periods: the start of the latest tax
    year (or calendar year) it names."""
    named = years_named(question)
    if not named:
        return None
    year, tax_year = max(named)
    return period_start(year, tax_year)


def _rows(paragraph: Paragraph) -> list[str]:
    return [r for r in paragraph.text.splitlines() if r.strip()]


def _lower_first(text: str) -> str:
    """'Business miles' -> 'business miles'; an acronym or a reference ('PAYE', 'EIM13505') stays."""
    return text[:1].lower() + text[1:] if text[:2].istitle() or (len(text) == 1 and text.isupper()) else text


_DATA_CELL = re.compile(r"^\(?[\u00a3$]?\s?[\d,.]+\s?(?:%|p)?\)?$|\u00a3\s?\d")


def has_header(rows: list[str]) -> bool:
    """Whether a table's first row names its columns: not when one of its cells is an amount
    ("cost of whole premises | 300,000"), as in the manual's worked computations."""
    return len(rows) > 1 and not any(_DATA_CELL.search(c.strip()) for c in rows[0].split("|")[1:])


SHORT_CELL_WORDS = 5  # a cell this short reads after its header without a colon ("business miles first 10,000")


def render_row(header: str, row: str) -> str:
    """A table row as one sentence with its column headers, so it reads on its own:
    "Car or van | First 10,000 | 45p" under "Kind of vehicle | Business miles | 2011-12 onwards"
    -> "Car or van: business miles first 10,000, 2011-12 onwards 45p." Every word and figure
    is the table's own (the verifier checks it against the table's paragraph)."""
    heads = [h.strip() for h in header.split("|")]
    cells = [c.strip() for c in row.split("|")]
    if len(cells) < 2:
        return row
    if len(heads) != len(cells):
        heads = [""] * len(cells)  # a caption or a ragged row: the cells alone
    said = []
    for head, cell in zip(heads[1:], cells[1:], strict=True):
        if not cell:
            continue
        short = len(cell.split()) <= SHORT_CELL_WORDS
        said.append(f"{_lower_first(head)}{' ' if short else ': '}{_lower_first(cell) if short else cell}" if head else cell)
    if not said:
        return cells[0]
    text = (f"{cells[0]}: " if cells[0] else "") + ("; " if any(":" in x for x in said) else ", ").join(said)
    return text if _TERMINAL.search(text) else text + "."


def _table_lookup(chunk: Chunk, numbers: list[float], when: date | None = None) -> bool:
    return any(p.kind == "table" and _lookup_rows(_rows(p), numbers, when) for p in chunk.paragraphs)


def names_row(weights: dict[str, float], row: str) -> bool:
    """Whether a table row's label (its first cell) is made of the question's own terms."""
    label = [t for t in terms(row.split("|")[0]) if not t[0].isdigit()]
    return bool(label) and all(t in weights for t in label)


def _is_figure(fact: str) -> bool:
    return fact[-1] in "%p" or (fact.replace(".", "").isdigit() and len(fact) >= 2)


def list_items(units: list[Unit], i: int) -> list[int]:
    """The units of the list a sentence introduces with a colon: up to LIST_ITEMS items after
    it, each whole (an item's later sentences, "This is taxable under Section 225", are part of
    it), and what continues them in lower case ("and not more than 25 per cent ...")."""
    unit = units[i]
    if unit.row is not None or not unit.text.rstrip().endswith(":"):
        return []
    out: list[int] = []
    items = 0
    for j in range(i + 1, len(units)):
        item = units[j]
        if item.page_rank != unit.page_rank or item.row is not None:
            break
        if j > i + 1 and item.paragraph.id == units[j - 1].last_paragraph.id:
            out.append(j)  # the same item goes on
            continue
        if items == LIST_ITEMS or not (item.paragraph.kind == "li" or item.text[:1].islower()):
            break
        items += 1
        out.append(j)
    return out


def _scored_text(units: list[Unit], i: int) -> str:
    """What a unit says for scoring: a sentence that introduces a list with a colon says
    what its items say (the 'limit is:' sentence and its '10 per cent' item are one rule)."""
    return " ".join([units[i].text, *(units[j].text for j in list_items(units, i))])


# ---- what a question asks for, and what a sentence gives -------------------------------

QuestionKind = Literal["date", "figure", "yes_no", "definition", "other"]

_ASKS_DATE = re.compile(
    r"\b(?:when|by when|how long|how soon|how many (?:days|weeks|months|years)|deadline|time limit|what date|which (?:date|year|tax year))\b", re.I
)
_ASKS_DEFINITION = re.compile(r"\b(?:what (?:counts as|is meant by|does [\w' -]{1,40} mean|is an?|are)|meaning of|defin(?:e|ed|ition))\b", re.I)
_ASKS_YES_NO = re.compile(r"^(?:is|are|can|could|do|does|did|will|would|should|must|am|have|has|may)\b", re.I)
_ASKS_EXAMPLE = re.compile(r"\b(?:examples?|illustrat\w*|worked (?:examples?|calculations?|computations?)|for instance)\b", re.I)  # "worked out" asks how, not for an example
# What a sentence gives: a ruling ("is taxable", "is exempt", "no charge"), a time limit,
# a definition. A question of one kind is answered first by a sentence of that kind.
_RULING = re.compile(
    r"\b(?:(?:not )?(?:taxable|chargeable|exempt(?:ion)?|liable)|no (?:tax|charge|liability|benefit)|tax[- ]free|"
    r"(?:is|are) (?:not )?(?:treated as )?(?:earnings|employment income|a benefit)|does not apply|applies|must|cannot|can)\b",
    re.I,
)
_TIME_LIMIT = re.compile(r"\b(?:within|before|after|by|no later than|until)\b[^.]{0,40}\b(?:\d+|one|two|three|four|five|six|twelve)\b[^.]{0,20}\b(?:days?|weeks?|months?|years?)\b|\b\d{1,2} (?:january|february|march|april|may|june|july|august|september|october|november|december)\b", re.I)
_DEFINES = re.compile(r"\b(?:means|is defined|defin(?:ed|ition)|counts as|refers to|include[sd]?|is (?:a|an|any) )\b", re.I)
# An illustration rather than the rule: a case the courts decided ("In Laidler v Perry
# (42TC351) ..."), or a narrative the manual tells its reader ("A taxpayer tells you ...",
# "You make enquiries and find ...", "Mr A ...").
_ILLUSTRATION = re.compile(
    r"\b[A-Z][\w&'.]*(?: [A-Z&][\w&'.]*)* v\.? [A-Z][\w&'.]*(?: [\w&'.]+){0,4} \(\d+\s?TC\s?\d+\)|\btells you\b|(?i:^you (?:make|find|discover|ask|receive)\b)|"
    r"(?i:^(?:an?|one|for|by way of) (?:example|illustration)\b|^for instance\b)|\b(?:Mr|Mrs|Ms|Miss)\.? [A-Z]\b|\b(?:employee|employer|company|director) [A-Z]\b(?![\w-])",
)
# A sentence that leans on the one before it cannot open an answer.
_DEPENDENT = re.compile(r"^(?:This|It|These|They|Such|That|Those|But|However|Also|And|Or|So|Thus|Therefore|Nevertheless|The effect of this|From this|In (?:this|that|these|such))\b|\b(?:described|mentioned|explained) above\b")
KIND_BONUS = 0.25  # a sentence of the kind the question asks for


def _years_only(facts: frozenset[str]) -> set[str]:
    """Tax years and dates among shared facts: a year in common does not make an example the asker's case."""
    return {f for f in facts if re.fullmatch(r"\d{4}(?:-\d{2}){0,2}", f)}
EXAMPLE_FACTOR = 0.6  # a worked example answers only a question that asks for one


def is_illustration(text: str) -> bool:
    """Whether a sentence illustrates (a decided case, a story told to the reader) rather than states a rule."""
    return bool(_ILLUSTRATION.search(text))


def question_kind(question: str) -> QuestionKind:
    """What the (first part of the) question asks for: a date or period ("when", "how long",
    "deadline"), a figure ("how much", "what rate", "limit"), yes or no with the rule ("is it
    taxable", "can I"), a definition ("what counts as"), or something else."""
    parts = question_parts(question)
    first = parts[0] if parts else question
    if _ASKS_DATE.search(first):
        return "date"
    if _RATE_INTENT.search(first):
        return "figure"
    if _ASKS_DEFINITION.search(first) and not _ASKS_YES_NO.match(first.strip()):
        return "definition"
    if _ASKS_YES_NO.match(first.strip()) or re.search(r"\b(?:is|are) (?:it|this|that|they) (?:taxable|taxed|exempt|a benefit)\b", first, re.I):
        return "yes_no"
    return "other"


def gives(kind: QuestionKind, text: str, facts: frozenset[str]) -> bool:
    """Whether a sentence gives what a question of ``kind`` asks for."""
    if kind == "figure":
        return any(_is_figure(f) for f in facts)
    if kind == "date":
        return bool(_TIME_LIMIT.search(text)) or any(re.fullmatch(r"\d{4}-\d{2}(?:-\d{2})?", f) for f in facts)
    if kind == "yes_no":
        return bool(_RULING.search(text))
    if kind == "definition":
        return bool(_DEFINES.search(text))
    return False


def score_units(query: Query, selection: SelectionResult, settings: Settings) -> list[Unit]:
    """Every quotable sentence (or table row) of the selected pages, scored for the question."""
    index = CorpusIndex.open(settings, query.manual)
    weights = _weights(query.question, corpus_stats(index), ASK_WEIGHT)
    rate_question = bool(_RATE_INTENT.search(query.question))
    q_facts = checkable_facts(query.question)
    q_numbers, q_when = _lookup_numbers(query.question), _lookup_date(query.question)
    q_amounts = _amounts(query.question)
    kind = question_kind(query.question)
    wants_example = bool(_ASKS_EXAMPLE.search(query.question))
    vector = query_vector(index, query.question) if settings.retrieval.use_vectors else None
    out: list[Unit] = []
    for rank, bundle in enumerate(selection.pages):
        page_prior = 1.0 / (1 + PAGE_DECAY * rank)  # pages come best first from selection
        place = 0  # the unit's place in page order
        title = _title(index, bundle.section_id)
        previous = title
        example_page = bool(_EXAMPLE.search(title))
        for chunk in sorted(bundle.chunks, key=lambda c: c.position):
            chunk_heading = chunk.heading_path[-1] if chunk.heading_path else title
            heading = chunk_heading if chunk_heading != previous and states_rule(chunk_heading) else None
            previous = chunk_heading
            context = set(terms(" ".join(chunk.heading_path[-2:])))
            chunk_sim = _similarity(index, chunk.id, vector) if vector is not None else 0.0
            units = chunk_units(chunk, rank, heading)
            example_chunk = example_page or any(_EXAMPLE.search(h) for h in chunk.heading_path[-2:])
            in_example = example_chunk
            for unit in units:
                if unit.paragraph.text.lstrip().lower().startswith("example"):
                    in_example = True  # an "Example" paragraph starts a worked example that runs to the chunk's end
                unit.example = in_example or is_illustration(unit.text)
            lookups = {p.id: _lookup_rows(_rows(p), q_numbers, q_when) for p in chunk.paragraphs if p.kind == "table"}
            for i, unit in enumerate(units):
                text = _scored_text(units, i)
                own_terms = terms(text)  # a list intro is scored, and length-normalised, with its items
                own = set(own_terms)
                norm = min(1.5, 1.0 / (1 - LENGTH_B + LENGTH_B * max(len(own_terms), 1) / AVG_UNIT_TERMS))
                lexical = coverage(weights, own) * norm + CONTEXT_WEIGHT * coverage(weights, context - own)
                score = lexical * (0.6 + 0.4 * page_prior) + 0.5 * max(chunk_sim, 0.0)
                score += LEAD_BONUS * max(0.0, 1 - place / LEAD_UNITS)
                place += 1
                facts = checkable_facts(text)
                if rate_question and any(_is_figure(f) for f in facts):
                    score += FIGURE_BONUS
                if facts & q_facts:
                    score += FIGURE_BONUS
                if _near_amount(q_amounts, _amounts(text)):
                    score += FIGURE_BONUS  # the limit the asker's own amount is measured against
                if unit.row is not None and unit.row in lookups.get(unit.paragraph.id, ()):
                    score += LOOKUP_ROW_BONUS
                    unit.looked_up = True
                if unit.row and names_row(weights, unit.cells):
                    score += ROW_LABEL_BONUS
                if gives(kind, text, facts):
                    score += KIND_BONUS
                if unit.row is None and is_signpost(unit.text):
                    score *= SIGNPOST_FACTOR
                # an example is the answer only when asked for, or when it works the asker's own figures
                if unit.example and not wants_example and not (facts & q_facts - _years_only(facts & q_facts)):
                    score *= EXAMPLE_FACTOR
                unit.score = score
            if rate_question and rank < RATE_TABLE_PAGES:
                # A rate question on a leading page with a rate table about the question's
                # subject: the table's best row (the last, i.e. newest, when no row matches
                # better) is part of the answer.
                rows: dict[str, list[Unit]] = {}
                for unit in units:
                    if unit.row:
                        rows.setdefault(unit.paragraph.id, []).append(unit)
                for table_rows in rows.values():
                    if coverage(weights, set(terms(table_rows[0].paragraph.text)) | context) >= RATE_TABLE_MATCH:
                        max(reversed(table_rows), key=lambda u: u.score).score += RATE_ROW_BONUS
            out += units
    return out


def list_intro(units: list[Unit], i: int) -> int | None:
    """The sentence that introduces the list a list item belongs to ("The key features of the
    exemption are:"), when the item is one of the list's first LIST_ITEMS items."""
    for j in range(i - 1, -1, -1):
        if units[j].page_rank != units[i].page_rank or units[j].row is not None:
            return None
        if units[j].text.rstrip().endswith(":"):
            return j if i in list_items(units, j) else None
        if not (units[j].paragraph.kind == "li" or units[j].text[:1].islower() or units[j].paragraph.id == units[j + 1].paragraph.id):
            return None
    return None


def context_of(units: list[Unit], i: int, floor: float) -> list[int]:
    """The units a chosen unit needs beside it to be read right: the list a colon
    introduces, the sentence that introduces a list item, an anaphoric or strongly scoring
    neighbour in its paragraph, a table row's header and the note the table refers to."""
    unit, out = units[i], []
    if unit.row is not None:
        if _SEE_NOTE.search(_rows(unit.paragraph)[0]):
            later = (j for j in range(i + 1, len(units)) if units[j].paragraph.id != unit.paragraph.id and units[j].row is None)
            out += [j for j in later if units[j].page_rank == unit.page_rank and _NOTE.match(units[j].text)][:1]
        return out
    out += list_items(units, i)
    intro = list_intro(units, i) if unit.paragraph.kind == "li" or unit.text[:1].islower() else None
    if intro is not None:
        out.append(intro)
    for j in (i - 1, i + 1):
        if not 0 <= j < len(units) or units[j].row is not None:
            continue
        neighbour = units[j]
        same = neighbour.paragraph.id == unit.last_paragraph.id if j > i else neighbour.last_paragraph.id == unit.paragraph.id
        if not same:
            continue
        # "... bonus of £7,500. This is taxable under Section 62": the verdict on it
        if (j > i and _ANAPHOR.match(neighbour.text)) or neighbour.score >= NEIGHBOUR_FLOOR * floor:
            out.append(j)
    return out


@lru_cache(maxsize=16384)
def _wordset(text: str) -> frozenset[str]:
    """A sentence's terms without its figures (what ``repeats`` compares)."""
    return frozenset(t for t in terms(text) if not any(ch.isdigit() for ch in t))


def table_full(unit: Unit, chosen: list[Unit]) -> bool:
    """Whether the answer already quotes TABLE_ROWS rows of this row's table: its other rows are
    detail (the answer says what the question asks, not the whole table), unless this row is
    the one the asker's own figure looks up."""
    return unit.row is not None and not unit.looked_up and sum(c.paragraph.id == unit.paragraph.id for c in chosen) >= TABLE_ROWS


def repeats(unit: Unit, chosen: list[Unit]) -> bool:
    """Whether a sentence says what a quoted one says: on its own page, but for its figures (a
    page repeats its worked example for each run of tax years); on another page, with the same
    figures. Table rows never repeat each other, and two pages that say it with different
    figures are both quoted (the conflict check needs them)."""
    if unit.row is not None:
        return any(unit.text == c.text for c in chosen)
    mine = _wordset(unit.text)
    return bool(mine) and any(
        c.row is None
        and (c.page_rank == unit.page_rank or checkable_facts(c.text) == checkable_facts(unit.text))
        and len(mine & (theirs := _wordset(c.text))) / len(mine | theirs) >= SAME_STATEMENT
        for c in chosen
    )


def _word_count(units: Iterable[Unit]) -> int:
    return sum(len(u.text.split()) for u in units)


def claims_of(chosen: dict[int, Unit], role: ClaimRole = "answer") -> list[DraftSentence]:
    """Chosen units (by their place in page order: pages as selection ranked them) as claims,
    each citing exactly one paragraph: consecutive sentences of one paragraph make one claim;
    a sentence the scrape split over paragraphs gives one claim per paragraph (its pieces
    still join the sentences next to them in their own paragraphs); table rows and headings
    stay one claim each."""
    claims: list[DraftSentence] = []
    previous: int | None = None
    joinable = False  # whether the last claim may take the next piece
    for i in sorted(chosen):
        unit = chosen[i]
        for k, (paragraph, text) in enumerate(unit.parts):
            plain = unit.row is None and not unit.heading
            contiguous = k > 0 or previous == i - 1
            if claims and joinable and plain and contiguous and claims[-1].citations == [paragraph.id]:
                claims[-1].text += " " + text
            else:
                claims.append(DraftSentence(text=text, citations=[paragraph.id], role=role))
            joinable = plain
        previous = i
    return claims


def _minimal_context(units: list[Unit], i: int, room: int) -> list[int] | None:
    """The least a unit needs to be read right, within ``room`` words: a list intro with as many
    of its items as fit (none fitting: the intro is not quoted alone), a list item with its
    intro, a sentence opening "This"/"It" with the sentence before it, and the "This is
    taxable ..." after it when that fits too; None when it cannot fit."""
    unit = units[i]
    items = list_items(units, i)
    if items:
        taken: list[int] = []
        for j in items:
            if _word_count(units[k] for k in [i, *taken, j]) > room:
                break
            taken.append(j)
        return [i, *taken] if taken else None
    need = [i]
    intro = list_intro(units, i) if unit.row is None and (unit.paragraph.kind == "li" or unit.text[:1].islower()) else None
    if intro is not None:
        need.append(intro)
    if unit.row is None and _ANAPHOR.match(unit.text) and i > 0 and units[i - 1].last_paragraph.id == unit.paragraph.id:
        need.append(i - 1)
    if _word_count(units[k] for k in need) > room:
        return None
    verdict = i + 1  # "... a bonus of £7,500. This is taxable under Section 62": the verdict on it
    if verdict < len(units) and units[verdict].row is None and units[verdict].paragraph.id == unit.last_paragraph.id and _ANAPHOR.match(units[verdict].text):
        if _word_count(units[k] for k in [*need, verdict]) <= room:
            need.append(verdict)
    return need


def rerank_by_meaning(query: Query, ranked: list[Unit], settings: Settings) -> list[Unit]:
    """The best few answer candidates re-scored by how close each one's own meaning is to the
    question's (MiniLM, sentence by sentence): the lexical score finds the candidates, the
    embedding tells the sentence that answers from the one that only shares its words. Only
    MEANING_CANDIDATES are embedded, so the cost stays a few tens of milliseconds."""
    index = CorpusIndex.open(settings, query.manual)
    candidates = [u for u in ranked if u.page_rank < ANSWER_PAGES or u.looked_up][:MEANING_CANDIDATES]
    fresh = [u.text for u in candidates if (index.manual, u.text) not in _MEANING]
    if fresh:
        for text, vector in zip(fresh, base_embedder(settings).embed(fresh), strict=True):
            _MEANING[(index.manual, text)] = vector
        while len(_MEANING) > MEANING_CACHE:
            _MEANING.pop(next(iter(_MEANING)))
    question = query_vector(index, query.question)
    for unit in candidates:
        unit.score += MEANING_WEIGHT * max(0.0, float(np.dot(_MEANING[(index.manual, unit.text)], question)))
    return sorted(ranked, key=lambda u: (-u.score, u.page_rank, u.order))


def lead_first(lead: dict[int, Unit], rest: dict[int, Unit]) -> list[DraftSentence]:
    """The answer's claims: the run of adjacent units around the lead (a list item with the
    items and intro quoted next to it) in the manual's order, then the rest in the manual's order."""
    chosen = {**lead, **rest}
    run = set(lead)
    for step in (-1, 1):
        j = (min(run) if step < 0 else max(run)) + step
        while j in chosen and chosen[j].page_rank == chosen[min(lead)].page_rank:
            run.add(j)
            j += step
    return claims_of({j: chosen[j] for j in run}) + claims_of({j: u for j, u in chosen.items() if j not in run})


def stitch(query: Query, selection: SelectionResult, settings: Settings) -> Draft:
    """The answer part: the best-scoring unit first (scored for the kind of thing the question
    asks), then what else scores near it, in the manual's order, within ANSWER_CLAIMS claims and
    ANSWER_WORDS words; then the detail, the next units above the floor, so that the whole reply
    stays within REPLY_WORDS."""
    units = score_units(query, selection, settings)
    if not units:
        return Draft(sentences=[])
    ranked = sorted(units, key=lambda u: (-u.score, u.page_rank, u.order))
    if settings.retrieval.use_vectors:
        ranked = rerank_by_meaning(query, ranked, settings)
    position = {id(u): i for i, u in enumerate(units)}
    floor = RELATIVE_FLOOR * ranked[0].score
    # A list intro whose items the chunk does not hold ("There are two main aspects to this:"
    # closing a chunk) never stands alone: it is not quoted.
    ranked = [u for u in ranked if not (u.row is None and u.text.rstrip().endswith(":") and not list_items(units, position[id(u)]))]
    # a row keyed by the asker's own figure answers from whichever page holds its table
    ranked_answer = [u for u in ranked if u.page_rank < ANSWER_PAGES or u.looked_up] or ranked
    # The lead reads on its own: the best unit that does not lean on the sentence before it,
    # unless that one scores well below the best.
    standalone = next((u for u in ranked_answer if u.row is not None or not _DEPENDENT.search(u.text)), ranked_answer[0])
    if standalone.score >= LEAD_STANDALONE * ranked_answer[0].score:
        ranked_answer = [standalone, *(u for u in ranked_answer if u is not standalone)]

    # The lead: the best unit with what it needs beside it (a long rule may take the hard cap).
    lead_index = position[id(ranked_answer[0])]
    lead = [j for j in [lead_index, *context_of(units, lead_index, floor)] if units[j].row is None or j == lead_index]
    if _word_count(units[j] for j in lead) > ANSWER_WORDS_CAP or len(claims_of({j: units[j] for j in lead})) > ANSWER_CLAIMS:
        lead = _minimal_context(units, lead_index, ANSWER_WORDS_CAP) or [lead_index]
    lead_part = {j: units[j] for j in lead}
    rest: dict[int, Unit] = {}

    def answer_size(extra: dict[int, Unit]) -> tuple[int, int]:
        claims = claims_of(lead_part) + claims_of({**rest, **extra})
        return len(claims), sum(len(c.text.split()) for c in claims)

    # The manual states a rule and then its conditions: the sentences right after the lead in
    # its chunk are weighed up for the answer part.
    after = max(lead_part)
    follows = {
        j for j in range(after + 1, min(after + 1 + FOLLOWING_UNITS, len(units)))
        if units[j].page_rank == units[lead_index].page_rank and units[j].order[0] == units[lead_index].order[0]
    }

    def answer_score(u: Unit) -> float:
        return u.score * (FOLLOWING_FACTOR if position[id(u)] in follows else 1.0)

    for unit in sorted(ranked_answer[1:], key=lambda u: -answer_score(u)):
        if answer_score(unit) < ANSWER_FLOOR * ranked_answer[0].score:
            break
        i = position[id(unit)]
        if i in lead_part or i in rest or repeats(unit, [*lead_part.values(), *rest.values()]):
            continue
        if table_full(unit, [*lead_part.values(), *rest.values()]):
            continue
        _, words = answer_size({})
        if words >= ANSWER_WORDS:
            break
        for need in ([i, *context_of(units, i, floor)], _minimal_context(units, i, ANSWER_WORDS - words)):
            if need is None:
                continue
            extra = {j: units[j] for j in need if j not in lead_part}
            claims, total = answer_size(extra)
            if claims <= ANSWER_CLAIMS and total <= ANSWER_WORDS:
                rest.update(extra)
                break
    # Each of the answer's pages says something in it (two pages on one rule are both quoted),
    # within the hard caps.
    for rank in range(min(ANSWER_PAGES, len(selection.pages))):
        if any(u.page_rank == rank for u in [*lead_part.values(), *rest.values()]):
            continue
        best = next((u for u in ranked_answer if u.page_rank == rank and u.score >= floor), None)
        need = _minimal_context(units, position[id(best)], ANSWER_WORDS_CAP) if best is not None else None
        if need is not None:
            extra = {j: units[j] for j in need if j not in lead_part}
            claims, total = answer_size(extra)
            if claims <= ANSWER_CLAIMS and total <= ANSWER_WORDS_CAP:
                rest.update(extra)
    answer = lead_first(lead_part, rest)

    # The detail: the next units above the floor with their context, the reply within REPLY_WORDS.
    taken = {**lead_part, **rest}
    room = REPLY_WORDS - sum(len(c.text.split()) for c in answer)
    detail: dict[int, Unit] = {}
    per_page: dict[int, int] = {}
    for unit in ranked:
        if unit.score < floor or room <= 0:
            break
        i = position[id(unit)]
        if i in taken or i in detail or per_page.get(unit.page_rank, 0) >= DETAIL_PER_PAGE or repeats(unit, [*taken.values(), *detail.values()]):
            continue
        need = [j for j in [i, *context_of(units, i, floor)] if j not in taken and j not in detail]
        cost = _word_count(units[j] for j in need)
        if cost <= room:
            room -= cost
            per_page[unit.page_rank] = per_page.get(unit.page_rank, 0) + 1
            detail.update({j: units[j] for j in need})
    return Draft(sentences=answer + claims_of(detail, role="detail"))
