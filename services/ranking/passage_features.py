"""What the passage ranker reads of each sentence or table row of the kept pages: one row of
numbers per unit in UNIT_FEATURES order, with no weights of its own (the passage ranker,
services/ranking/models/passages.json, learns those from labelled questions).

Each feature is a named unit of UNIT_EXTRACTOR reading one unit's context (UnitContext: the
question read once, UnitQuestion; the unit's chunk, UnitChunk; what several features share of
the unit, computed once). Training (``taxnav ranker train``) and serving
(services/providers/local/stitching.py) both compute them through ``featured_units``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from shared.config import LocalStitchingSettings, Settings
from shared.contracts.corpus import Chunk
from shared.contracts.pipeline import PageBundle, Query, SelectionResult
from shared.contracts.question import QuestionReading
from shared.index import CorpusIndex
from services.ranking.extractor import Extractor, Feature
from services.ranking.page_features import chunk_similarity, page_title
from services.text.figures import checkable_facts
from services.text.question import coverage, question_weights
from services.text.amounts import near_amount, pounds
from services.text.tables import is_figure, lookup_rows, names_row, rows_of
from services.text.terms import corpus_stats, terms
from services.text.units import (
    DEPENDENT, Unit, chunk_units, computation_line, gives, introduces_list, is_illustration, is_label, tells_a_story,
    is_signpost, names_example, opens_example, scored_text, states_rule, under_example, withdraws, years_only,
)


@dataclass
class UnitQuestion:
    """What the passage features read of the question (its reading, weighed against this
    manual), once per question."""

    reading: QuestionReading  # what the question asks, read when it arrived
    weights: dict[str, float]  # its idf-weighted terms (what it asks weighed up)
    facts: frozenset[str]  # the checkable facts it names (figures, years, dates), compared with each unit's
    tuning: LocalStitchingSettings

    @classmethod
    def read(cls, query: Query, index: CorpusIndex, settings: Settings) -> UnitQuestion:
        tuning = settings.stitching.local
        return cls(
            reading=query.reading,
            weights=question_weights(query.question, corpus_stats(index), settings.selection.local.expansion_weight, tuning.ask_weight),
            facts=frozenset(query.reading.facts),
            tuning=tuning,
        )


class UnitChunk:
    """A chunk of a selected page, as its units' features read it."""

    __slots__ = ("question", "bundle", "rank", "chunk", "units", "cosine", "context", "lookups", "best_rate_rows")

    def __init__(self, question: UnitQuestion, bundle: PageBundle, rank: int, chunk: Chunk, units: list[Unit], cosine: float) -> None:
        self.question, self.bundle, self.rank, self.chunk, self.units, self.cosine = question, bundle, rank, chunk, units, cosine
        self.context = set(terms(" ".join(chunk.heading_path[-2:])))  # its headings' terms
        self.lookups = {p.id: lookup_rows(rows_of(p), question.reading.numbers, question.reading.when) for p in chunk.paragraphs if p.kind == "table"}
        # for a rate question, the units (by id) that are the best row of a rate table about its subject
        best = rate_table_rows(units, question.weights, self.context, question.tuning.rate_table_match) if question.reading.asks_rate else []
        self.best_rate_rows = {id(u) for u in best}


class UnitContext:
    """One quotable unit (sentence or table row) as its features read it: what several features
    share is computed once, here (plain attributes: this runs for every unit of every question)."""

    __slots__ = ("chunk", "question", "i", "place", "unit", "text", "terms", "term_set", "coverage", "facts", "signpost", "unasked", "looked_up", "aside")

    def __init__(self, chunk: UnitChunk, i: int, place: int) -> None:
        question, unit = chunk.question, chunk.units[i]
        self.chunk, self.question, self.i, self.place, self.unit = chunk, question, i, place, unit
        self.text = scored_text(chunk.units, i, question.tuning.list_items)  # a list intro is scored with its items
        self.terms = terms(self.text)
        self.term_set = set(self.terms)
        self.coverage = coverage(question.weights, self.term_set)
        self.facts = facts = checkable_facts(self.text)
        self.signpost = unit.row is None and (is_signpost(unit.text) or is_label(unit))
        # an example is the answer only when asked for, or when it works the asker's own figures
        asked = question.facts
        self.unasked = unit.example and not question.reading.asks_example and not (facts & asked - years_only(facts & asked))
        self.looked_up = unit.row is not None and any(unit.row <= r <= (unit.last_row or unit.row) for r in chunk.lookups.get(unit.paragraph.id, ()))
        self.aside = self.signpost or self.unasked


def _list_item(u: UnitContext) -> float:
    return float(u.unit.row is None and (u.unit.paragraph.kind == "li" or u.unit.text[:1].islower()))


def _best_rate_row(u: UnitContext) -> float:
    return 1.0 if id(u.unit) in u.chunk.best_rate_rows else 0.0


# What the passage ranker reads of each unit, in the order services/ranking/models/passages.json
# was trained on (``taxnav ranker train``): the question's words in it and in its headings, its
# chunk's closeness in meaning, its page's probability and place, its own place on the page,
# what it gives (a figure, the asker's figure, the kind of thing asked), and what kind of unit it
# is (a table row, a list lead-in or item, a signpost, a worked example nobody asked for, a
# sentence leaning on the one before, a line of a computation, a notice that a rule ended).
UNIT_EXTRACTOR: Extractor[UnitContext] = Extractor("passages", [
    Feature("terms", lambda u: u.coverage, "idf-weighted share of the question's terms the unit holds (a list lead-in with its items)"),
    Feature("log_terms", lambda u: math.log1p(len(u.terms)), "its length"),
    Feature("heading_terms", lambda u: coverage(u.question.weights, u.chunk.context - u.term_set), "the share its chunk's headings add"),
    Feature("chunk_cosine", lambda u: u.chunk.cosine, "its chunk's closeness in meaning to the question"),
    Feature("page_probability", lambda u: u.chunk.bundle.score, "the page ranker's probability that its page answers"),
    Feature("page_place", lambda u: 1.0 / (1 + u.chunk.rank), "1 / (1 + the page's rank in the selection)"),
    Feature("place_on_page", lambda u: 1.0 / (1 + u.place), "1 / (1 + its place on the page): the manual states the rule first"),
    Feature("rate_figure", lambda u: float(u.question.reading.asks_rate and any(is_figure(f) for f in u.facts)), "a figure, for a question asking a rate"),
    Feature("question_figure", lambda u: float(bool(u.facts & u.question.facts)), "a figure the question names"),
    Feature("near_asker_amount", lambda u: float(near_amount(u.question.reading.amounts, pounds(u.text))), "an amount near the asker's own (the limit it is measured against)"),
    Feature("looked_up_row", lambda u: float(u.looked_up), "the table row keyed by the asker's own figure or date"),
    Feature("row_names_subject", lambda u: float(bool(u.unit.row and names_row(u.question.weights, u.unit.cells))), "a table row whose label names what the question asks about"),
    Feature("gives_kind", lambda u: float(gives(u.question.reading.kind, u.text, u.facts)), "the kind of thing the question asks (a figure, a date, a ruling, a definition)"),
    Feature("signpost", lambda u: float(u.signpost), "only points to another page, or only names a topic"),
    Feature("unasked_example", lambda u: float(u.unasked), "part of a worked example the question did not ask for"),
    Feature("table_row", lambda u: float(u.unit.row is not None), "a row of a table"),
    Feature("computation_line", lambda u: float(u.unit.row is not None and computation_line(u.unit)), 'a line of a worked computation ("Earnings | \u00a322,000")'),
    Feature("leans_on_previous", lambda u: float(u.unit.row is None and bool(DEPENDENT.search(u.unit.text))), '"This is ...", "However ..."'),
    Feature("list_lead_in", lambda u: float(u.unit.row is None and introduces_list(u.unit)), "introduces a list"),
    Feature("list_item", _list_item, "an item of a list"),
    Feature("ended_rule", lambda u: float(withdraws(u.unit.text)), '"THIS RELIEF WAS WITHDRAWN FROM 6 APRIL 2013"'),
    Feature("best_rate_row", _best_rate_row, "the best row of a rate table about the question's subject, for a rate question"),
    Feature("terms_if_aside", lambda u: u.coverage * u.aside, "its terms again when it is a signpost or an unasked example: they count differently there"),
    Feature("cosine_if_aside", lambda u: u.chunk.cosine * u.aside, "its chunk's cosine, likewise"),
    Feature("terms_x_page_probability", lambda u: u.coverage * u.chunk.bundle.score, "its terms times its page's probability"),
])
UNIT_FEATURES: tuple[str, ...] = UNIT_EXTRACTOR.names  # what a passage model file must list, in this order


def unit_chunks(query: Query, selection: SelectionResult, settings: Settings, index: CorpusIndex, vector: np.ndarray | None) -> list[UnitChunk]:
    """Every chunk of the selected pages with its quotable units (best page first, chunks in
    page order), each unit marked when it is part of a worked example."""
    question = UnitQuestion.read(query, index, settings)
    out: list[UnitChunk] = []
    for rank, bundle in enumerate(selection.pages):  # pages come best first from selection
        title = page_title(index, bundle.section_id)
        previous = title
        example_page = names_example(title)
        for chunk in sorted(bundle.chunks, key=lambda c: c.position):
            chunk_heading = chunk.heading_path[-1] if chunk.heading_path else title
            heading = chunk_heading if chunk_heading != previous and states_rule(chunk_heading) else None
            previous = chunk_heading
            cosine = max(chunk_similarity(index, chunk.id, vector), 0.0) if vector is not None else 0.0
            units = chunk_units(chunk, rank, question.tuning, heading)
            in_example = example_page or under_example(chunk.heading_path[-2:])
            for place, unit in enumerate(units):
                if opens_example(unit.paragraph.text):
                    in_example = True  # an "Example" paragraph starts a worked example that runs to the chunk's end
                elif place == 0 and unit.row is None and tells_a_story(unit.text):
                    in_example = True  # so does a chunk that opens on a story ("A taxpayer tells you ..."): the case it works
                unit.example = in_example or is_illustration(unit.text)
            out.append(UnitChunk(question, bundle, rank, chunk, units, cosine))
    return out


def unit_contexts(query: Query, selection: SelectionResult, settings: Settings, index: CorpusIndex, vector: np.ndarray | None) -> Iterator[UnitContext]:
    """Every quotable unit of the selected pages as its features read it, in page order."""
    place, rank = 0, -1  # the unit's place in page order
    for chunk in unit_chunks(query, selection, settings, index, vector):
        if chunk.rank != rank:
            place, rank = 0, chunk.rank
        for i in range(len(chunk.units)):
            yield UnitContext(chunk, i, place)
            place += 1


def featured_units(query: Query, selection: SelectionResult, settings: Settings, index: CorpusIndex, vector: np.ndarray | None) -> list[Unit]:
    """Every quotable sentence (or table row) of the selected pages with its UNIT_FEATURES
    (``unit.features``, by name), and whether it is a looked-up row, a rate question's row or an aside."""
    out: list[Unit] = []
    for context in unit_contexts(query, selection, settings, index, vector):
        unit = context.unit
        unit.looked_up, unit.aside, unit.rate_row = context.looked_up, context.aside, id(unit) in context.chunk.best_rate_rows
        unit.features = UNIT_EXTRACTOR.values(context)
        out.append(unit)
    return out


def unit_matrix(units: list[Unit]) -> np.ndarray:
    """The units' features as the passage model reads them (units, UNIT_FEATURES)."""
    return UNIT_EXTRACTOR.table(u.features for u in units)


def rate_table_rows(units: list[Unit], weights: dict[str, float], context: set[str], match: float) -> list[Unit]:
    """For a rate question on a leading page: the best row of each rate table about the
    question's subject (sharing ``match`` of its weight), the last, i.e. newest, when no row
    scores better. A rate table names its columns; a worked computation ("Earnings | £22,000",
    "State pension | £3,000") has no header and tabulates no rate."""
    tables: dict[str, list[Unit]] = {}
    for unit in units:
        if unit.row:
            tables.setdefault(unit.paragraph.id, []).append(unit)
    return [
        max(reversed(rows), key=lambda u: coverage(weights, set(terms(u.text))))
        for rows in tables.values()
        if not computation_line(rows[0]) and coverage(weights, set(terms(rows[0].paragraph.text)) | context) >= match
    ]
