"""What the passage ranker reads of each sentence or table row of the kept pages: one row of
numbers per unit in UNIT_FEATURES order, with no weights of its own (the passage ranker,
services/ranking/models/passages.json, learns those from labelled questions). Training
(``taxnav ranker train``) and serving (services/providers/local/stitching.py) compute them here."""

from __future__ import annotations

import math

import numpy as np

from shared.config import Settings
from shared.contracts.pipeline import Query, SelectionResult
from shared.index import CorpusIndex
from services.ranking.page_features import chunk_similarity, page_title
from services.text.figures import checkable_facts
from services.text.question import ASKS_EXAMPLE, RATE_INTENT, coverage, question_kind, question_weights
from services.text.tables import amounts, is_figure, lookup_date, lookup_numbers, lookup_rows, names_row, near_amount, rows_of
from services.text.terms import corpus_stats, terms
from services.text.units import (
    DEPENDENT, EXAMPLE_TITLE, Unit, chunk_units, computation_line, gives, introduces_list, is_illustration, is_label,
    is_signpost, scored_text, states_rule, withdraws, years_only,
)


# What the passage ranker reads of each unit, in the order services/ranking/models/passages.json
# was trained on (``taxnav ranker train``): the question's words in it and in its headings, its
# chunk's closeness in meaning, its page's probability and place, its own place on the page,
# what it gives (a figure, the asker's figure, the kind of thing asked), and what kind of unit it
# is (a table row, a list lead-in or item, a signpost, a worked example nobody asked for, a
# sentence leaning on the one before, a line of a computation, a notice that a rule ended).
UNIT_FEATURES = (
    "terms",  # idf-weighted share of the question's terms the unit holds (a list lead-in with its items)
    "log_terms",  # its length
    "heading_terms",  # the share its chunk's headings add
    "chunk_cosine",  # its chunk's closeness in meaning to the question
    "page_probability",  # the page ranker's probability that its page answers
    "page_place",  # 1 / (1 + the page's rank in the selection)
    "place_on_page",  # 1 / (1 + its place on the page): the manual states the rule first
    "rate_figure",  # a figure, for a question asking a rate
    "question_figure",  # a figure the question names
    "near_asker_amount",  # an amount near the asker's own (the limit it is measured against)
    "looked_up_row",  # the table row keyed by the asker's own figure or date
    "row_names_subject",  # a table row whose label names what the question asks about
    "gives_kind",  # the kind of thing the question asks (a figure, a date, a ruling, a definition)
    "signpost",  # only points to another page, or only names a topic
    "unasked_example",  # part of a worked example the question did not ask for
    "table_row",
    "computation_line",  # a line of a worked computation ("Earnings | £22,000")
    "leans_on_previous",  # "This is ...", "However ..."
    "list_lead_in",
    "list_item",
    "ended_rule",  # "THIS RELIEF WAS WITHDRAWN FROM 6 APRIL 2013"
    "best_rate_row",  # the best row of a rate table about the question's subject, for a rate question
    "terms_if_aside",  # its terms again when it is a signpost or an unasked example: they count differently there
    "cosine_if_aside",
    "terms_x_page_probability",
)


def featured_units(query: Query, selection: SelectionResult, settings: Settings, vector: np.ndarray | None) -> list[Unit]:
    """Every quotable sentence (or table row) of the selected pages with its UNIT_FEATURES."""
    tuning = settings.stitching.local
    index = CorpusIndex.open(settings, query.manual)
    weights = question_weights(query.question, corpus_stats(index), settings.selection.local.expansion_weight, tuning.ask_weight)
    rate_question = bool(RATE_INTENT.search(query.question))
    q_facts = checkable_facts(query.question)
    q_numbers, q_when = lookup_numbers(query.question), lookup_date(query.question)
    q_amounts = amounts(query.question)
    kind = question_kind(query.question)
    wants_example = bool(ASKS_EXAMPLE.search(query.question))
    out: list[Unit] = []
    for rank, bundle in enumerate(selection.pages):  # pages come best first from selection
        place = 0  # the unit's place in page order
        title = page_title(index, bundle.section_id)
        previous = title
        example_page = bool(EXAMPLE_TITLE.search(title))
        for chunk in sorted(bundle.chunks, key=lambda c: c.position):
            chunk_heading = chunk.heading_path[-1] if chunk.heading_path else title
            heading = chunk_heading if chunk_heading != previous and states_rule(chunk_heading) else None
            previous = chunk_heading
            context = set(terms(" ".join(chunk.heading_path[-2:])))
            chunk_sim = max(chunk_similarity(index, chunk.id, vector), 0.0) if vector is not None else 0.0
            units = chunk_units(chunk, rank, tuning, heading)
            example_chunk = example_page or any(EXAMPLE_TITLE.search(h) for h in chunk.heading_path[-2:])
            in_example = example_chunk
            for unit in units:
                if unit.paragraph.text.lstrip().lower().startswith("example"):
                    in_example = True  # an "Example" paragraph starts a worked example that runs to the chunk's end
                unit.example = in_example or is_illustration(unit.text)
            lookups = {p.id: lookup_rows(rows_of(p), q_numbers, q_when) for p in chunk.paragraphs if p.kind == "table"}
            for i, unit in enumerate(units):
                text = scored_text(units, i, tuning.list_items)
                own_terms = terms(text)  # a list intro is scored with its items
                own = set(own_terms)
                facts = checkable_facts(text)
                signpost = unit.row is None and (is_signpost(unit.text) or is_label(unit))
                # an example is the answer only when asked for, or when it works the asker's own figures
                unasked = unit.example and not wants_example and not (facts & q_facts - years_only(facts & q_facts))
                unit.looked_up = unit.row is not None and any(unit.row <= r <= (unit.last_row or unit.row) for r in lookups.get(unit.paragraph.id, ()))
                unit.aside = signpost or unasked
                own_coverage = coverage(weights, own)
                unit.features = {
                    "terms": own_coverage,
                    "log_terms": math.log1p(len(own_terms)),
                    "heading_terms": coverage(weights, context - own),
                    "chunk_cosine": chunk_sim,
                    "page_probability": bundle.score,
                    "page_place": 1.0 / (1 + rank),
                    "place_on_page": 1.0 / (1 + place),
                    "rate_figure": float(rate_question and any(is_figure(f) for f in facts)),
                    "question_figure": float(bool(facts & q_facts)),
                    "near_asker_amount": float(near_amount(q_amounts, amounts(text))),
                    "looked_up_row": float(unit.looked_up),
                    "row_names_subject": float(bool(unit.row and names_row(weights, unit.cells))),
                    "gives_kind": float(gives(kind, text, facts)),
                    "signpost": float(signpost),
                    "unasked_example": float(unasked),
                    "table_row": float(unit.row is not None),
                    "computation_line": float(unit.row is not None and computation_line(unit)),
                    "leans_on_previous": float(unit.row is None and bool(DEPENDENT.search(unit.text))),
                    "list_lead_in": float(unit.row is None and introduces_list(unit)),
                    "list_item": float(unit.row is None and (unit.paragraph.kind == "li" or unit.text[:1].islower())),
                    "ended_rule": float(withdraws(unit.text)),
                    "best_rate_row": 0.0,
                    "terms_if_aside": own_coverage * unit.aside,
                    "cosine_if_aside": chunk_sim * unit.aside,
                    "terms_x_page_probability": own_coverage * bundle.score,
                }
                place += 1
            if rate_question:
                for best in rate_table_rows(units, weights, context, tuning.rate_table_match):
                    best.features["best_rate_row"] = 1.0
            out += units
    return out


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
