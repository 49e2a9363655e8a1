"""The conversation's stages: what a turn read with its conversation (``state.context``,
services/conversations/reading.py) changes between the question stages. Both run in STAGES
order, only for a conversation turn:
- ``condition`` (after rollup): a chosen conflict option leaves out the pages of the options
  not chosen;
- ``follow_up`` (after stitching): a follow-up's answer leads with the sentences about what it
  adds (its terms the subject did not have, the years it names), then what earlier turns have
  not already said, then the rest: earlier claims are reused with their citations, behind.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from services.answering.stages.retrieval import terms_with_compounds
from services.text.figures import YEAR_OR_SPAN, years_named
from services.text.tables import names_row_as_word
from services.text.terms import query_terms, same_word
from services.text.units import chunk_units, is_illustration, under_example, withdraws
from shared.config import Settings, StitchingSettings
from shared.contracts.corpus import chunk_of, section_of
from shared.contracts.pipeline import DraftSentence, PipelineState
from shared.index import CorpusIndex

YEAR_WEIGHT = 2  # a period covering the named year outranks a single word of the follow-up
def answers_follow_up(text: str, new_terms: set[str], years: list[int]) -> int:
    """How much a sentence says about what the follow-up adds: its new terms the sentence
    contains (in the manual's word forms), plus YEAR_WEIGHT when the sentence's period covers
    a year the follow-up names (the year is the condition it narrows to; its other words,
    'the figure back in ...', only frame it)."""
    stated_terms = terms_with_compounds(text)
    score = sum(1 for t in new_terms if any(same_word(t, s) for s in stated_terms))
    stated = [y for y, _ in years_named(text)]
    if years and stated and any(min(stated) <= y <= max(stated) or in_earlier_period(text, y) for y in years):
        score += YEAR_WEIGHT
    return score


_UNTIL = re.compile(r"\b(?:before|until|up to|prior to)\b[^.;]{0,20}$", re.I)
_EARLIER = re.compile(r"^\S*\s+(?:and|or) (?:earlier|before)\b", re.I)
OPEN_SPAN = 30  # years a period open at its start ('before 2003') is read to reach back


def in_earlier_period(text: str, year: int) -> bool:
    """Whether the sentence states a period that ends at a year and reaches back to ``year``:
    'on or before 12 June 2003', 'for 2002/03 and earlier years'. Only backwards: the manual
    states its current rule 'from' a date, and a later year than its pages is refused as stale;
    what a follow-up naming an earlier year wants is the old rule."""
    for m in YEAR_OR_SPAN.finditer(text):
        bound = int(m.group(0)[:4])
        before, after = text[max(0, m.start() - 40) : m.start()], text[m.start() :]
        if (_UNTIL.search(before) or _EARLIER.match(after)) and bound - OPEN_SPAN <= year <= bound:
            return True
    return False


def condition_claims(
    state: PipelineState, sections: list[str], new_terms: set[str], years: list[int], stitching: StitchingSettings
) -> list[tuple[int, DraftSentence, list[DraftSentence]]]:
    """The sentences and table rows of the subject's pages (as selected for this turn), in the
    conversation's order of those pages, with their score for what the follow-up adds and the
    claims that state them whole: the row for the condition it narrows to ('Cycle | All | 20p'
    for 'on my bicycle') may not be in the draft at all, or not lead it. A row is whole on its
    own; a sentence comes with its paragraph (at most stitching.shape.claims sentences),
    whose other sentences say what it leans on ('In order to encourage employees to
    participate ...' after the sentence naming what they take part in), unless it tells a
    worked example, whose story the answer does not retell."""
    selected = {p.section_id: p for p in (state.selection.pages if state.selection else [])}
    pages = [selected[s] for s in sections if s in selected]
    found = []
    for rank, page in enumerate(pages):
        notice: list[DraftSentence] = []  # the page's opening line saying its rule has ended, as in stitching
        for chunk in sorted(page.chunks, key=lambda c: c.position):
            example = under_example(chunk.heading_path[-2:])
            units = [u for u in chunk_units(chunk, rank, stitching.local) if not u.heading]
            claims = [DraftSentence(text=u.text, citations=list(dict.fromkeys(p.id for p, _ in u.parts))) for u in units]
            if chunk.position == 0 and units and units[0].row is None and withdraws(units[0].text):
                notice = claims[:1]
            paragraphs: dict[str, list[DraftSentence]] = {}
            for unit, claim in zip(units, claims):
                if unit.row is None:
                    paragraphs.setdefault(unit.paragraph.id, []).append(claim)
            for unit, claim in zip(units, claims):
                score = answers_follow_up(unit.text, new_terms, years)
                # a table row whose label names the condition is the row for it: it outranks
                # a sentence that only mentions it
                if unit.row is not None and names_row_as_word(new_terms, unit.cells):
                    score += 1
                if score:
                    whole = paragraphs.get(unit.paragraph.id, []) if unit.row is None and not (example or is_illustration(unit.text)) else []
                    whole = whole if 1 < len(whole) <= stitching.shape.claims else [claim]
                    found.append((score, claim, [*(n for n in notice if n not in whole), *whole]))
    return found


def meaning_of(state: PipelineState, index: CorpusIndex | None) -> Callable[[DraftSentence], float]:
    """How close a sentence's passage (the chunk of its first citation) is in meaning to the
    follow-up as searched (its own words read with the subject's: alone, 'two of them at
    once' means nothing); 0 for every sentence without vectors."""
    if state.retrieval is None or not state.retrieval.query_vector:
        return lambda sentence: 0.0
    assert index is not None, "a state with the question's vector was retrieved from an index"
    vector = np.asarray(state.retrieval.query_vector, dtype=np.float32)

    def closeness(sentence: DraftSentence) -> float:
        try:
            return float(index.chunk_vector(chunk_of(sentence.citations[0])) @ vector) if sentence.citations else 0.0
        except KeyError:  # a chunk without a stored vector
            return 0.0

    return closeness


def chose_condition(state: PipelineState) -> bool:
    """A turn that chose a conflict option (the condition stage applies)."""
    return state.context is not None and bool(state.context.excluded_sections)


class Condition:
    """The ``condition`` stage (after rollup): a chosen conflict option leaves out the pages of
    the options not chosen."""

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState:
        del index  # the context says it all
        return condition_step(state)


def condition_step(state: PipelineState, settings: Settings | None = None) -> PipelineState:
    """After rollup: a chosen conflict option leaves out the pages of the options not chosen."""
    del settings  # the context says it all
    if state.context is not None and state.rollup is not None:
        state.rollup.pages = [p for p in state.rollup.pages if p.section_id not in state.context.excluded_sections]
    return state


def is_follow_up(state: PipelineState) -> bool:
    """A follow-up turn (the follow_up stage applies)."""
    return state.context is not None and state.context.kind == "follow_up"


class FollowUp:
    """The ``follow_up`` stage (after stitching): a follow-up's draft re-ranked for what it adds."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState:
        return follow_up_step(state, self.settings, index)


def follow_up_step(state: PipelineState, settings: Settings, index: CorpusIndex | None = None) -> PipelineState:
    """After stitching: a follow-up's answer leads with the sentences about what it adds (its
    terms the subject did not have, the years it names), then what earlier turns have not
    already said, then the rest: earlier claims are reused with their citations, behind.
    ``index``: the question's (needed only when the state carries the question's vector)."""
    lead_with_what_it_adds(state, settings, index)
    return state


def lead_with_what_it_adds(state: PipelineState, settings: Settings, index: CorpusIndex | None) -> None:
    context = state.context
    if context is not None and context.kind == "follow_up" and state.draft is not None:
        said = {(c.text, tuple(c.citations)) for c in context.claims}
        # the years it names are read as periods (``answers_follow_up``), not as words: '11'
        # of '2010-11' would match any sentence with an 11 in it
        subject = {t for t in query_terms(context.topic) if not t.isdigit()}
        new_terms = {t for t in set(query_terms(context.asked)) - subject if not t.isdigit()}
        years = [y for y, _ in years_named(context.asked)]
        sentences = state.draft.sentences
        pool = [*context.carried_sections, *context.linked_sections]
        carried = {c.text: (score, c, whole) for score, c, whole in condition_claims(state, pool, new_terms, years, settings.stitching)}
        # how a sentence answers the follow-up: its score for what the follow-up adds, then
        # how close its passage is in meaning to the follow-up: of two sentences that each
        # share a word with it, the one about what it asks
        closeness = meaning_of(state, index)

        def rank(score: int, sentence: DraftSentence) -> tuple[int, float]:
            return (score, closeness(sentence) if score else 0.0)

        ranks = [rank(carried[s.text][0] if s.text in carried else answers_follow_up(s.text, new_terms, years), s) for s in sentences]
        # a sentence or row of the subject's pages that answers the follow-up as well as
        # anything in the draft joins it (the draft was written for the searched question,
        # mostly the subject's words: it may hold a sentence of the same passage that names
        # the condition only in passing)
        drafted = {s.text for s in sentences}
        extra = [(rank(score, c), whole) for text, (score, c, whole) in carried.items() if text not in drafted]
        if extra and max(r for r, _ in extra)[0] and max(r for r, _ in extra) >= max(ranks, default=(0, 0.0)):
            top = max(r for r, _ in extra)
            # the joining claim leads with the rest of its paragraph, in the manual's order
            # (a sentence the draft already quotes, alone or inside a longer claim, is not repeated)
            added = [c for c in next(whole for r, whole in extra if r == top) if not any(c.text in d for d in drafted)]
            sentences = [*added, *sentences]
            ranks = [*([top] * len(added)), *ranks]
        else:
            added = []
        # A follow-up naming a year asks the subject's question for that year: of the sentences
        # whose period covers it, those stating the subject lead ('For 2010/11 and 2011/12, the
        # appropriate percentage for a car ...' before another page's 'For years from 2006/07 to
        # 2010/11, the reduction is 2%'). The joining paragraph keeps its order: its best count.
        def states_subject(sentence: DraftSentence) -> int:
            stated = terms_with_compounds(sentence.text)
            return sum(1 for t in subject if any(same_word(t, s) for s in stated))

        subject_counts = [states_subject(s) for s in sentences] if years else [0] * len(sentences)
        if added:
            subject_counts[: len(added)] = [max(subject_counts[: len(added)])] * len(added)
        best = max(ranks, default=(0, 0.0))
        # a list intro (ending ':') leads only with its list behind it, so never on its own
        # every sentence with the best score leads: for a year, those stating the subject first;
        # then the closest in meaning first
        leading = sorted(
            (i for i, r in enumerate(ranks) if best[0] and r[0] == best[0] and not sentences[i].text.rstrip().endswith(":")),
            key=lambda i: (-subject_counts[i], -ranks[i][1]),
        )
        lead = [sentences[i].model_copy(update={"role": "answer"}) for i in leading]
        rest = [s for i, s in enumerate(sentences) if i not in leading]
        if not lead and context.claims:
            # nothing on the pages names what the follow-up changes ('and if we had done it
            # in 2012-13?'): it asks the previous turn's question again, whose verified
            # answer is the best evidence, so that answer leads again with its citations
            latest = max(c.turn for c in context.claims)
            # only claims on pages selected again: a claim is verified against this turn's pages
            pages = {p.section_id for p in (state.selection.pages if state.selection else [])}
            lead = [
                DraftSentence(text=c.text, citations=c.citations)
                for c in context.claims
                if c.turn == latest and all(section_of(pid) in pages for pid in c.citations)
            ]
            again = {(s.text, tuple(s.citations)) for s in lead}
            rest = [s for s in rest if (s.text, tuple(s.citations)) not in again]
        answer = [s for s in rest if s.role == "answer"]
        fresh = [s for s in answer if (s.text, tuple(s.citations)) not in said]
        repeated = [s for s in answer if (s.text, tuple(s.citations)) in said]
        ordered = [*lead, *fresh, *repeated]
        # the answer part keeps its shape (at most stitching.shape.claims claims); what the lead pushed
        # out stays as detail, ahead of the rest
        kept = ordered[: settings.stitching.shape.claims]
        while kept and kept[-1].text.rstrip().endswith(":"):  # no list intro left without its list
            kept.pop()
        pushed = [s.model_copy(update={"role": "detail"}) for s in ordered[len(kept):]]
        state.draft.sentences = [*kept, *pushed, *(s for s in rest if s.role != "answer")]
