"""Conversations: each follow-up is read with the turns before it.

Reading a turn (``read_turn``) decides, by mechanism, whether it continues the current
subject or opens a new one:
- a leading link ("and ...", "what about ...", "what if ...") or a word that points back
  ("instead", "also", "too") makes it a follow-up;
- so does a short question that leans on what came before (few content terms and a pronoun
  or a definite description), or one whose terms mostly come from the current subject;
- otherwise a question with a pronoun, a definite description or few terms is settled by
  retrieval evidence: a follow-up when its own keyword search reaches the subject's pages or
  the pages they link to (among its best hits; deeper for a pronoun, which cannot name a
  subject).
The subject's pages are those earlier turns cited and selected (carried) and those one
cross-reference hop from the cited ones (linked: where the manual sends its reader for the
detail a narrowing follow-up asks about). A follow-up is searched as its own words followed
by the question that opened the subject (whose tax years give way when the follow-up names
its own); retrieval also ranks the subject's pages (services/stages/retrieval.py), and its
answer leads with what the follow-up adds, the earlier turns' claims reused behind
(``after_stage``): a row or sentence of the subject's pages for the condition it narrows to
(in the manual's word forms: 'bicycle' meets the 'Cycle' row) or for the year it names
joins the answer with the rest of its paragraph (and its page's opening line when that says
the rule has ended) when the draft lacks it; of the sentences
that name it, the closest in meaning to the searched follow-up leads. A follow-up that
nothing on its pages answers asks the previous turn's question again: that turn's verified
claims lead. The answer part keeps its shape (at most stitching.local.answer_claims claims,
no list intro left alone). A choice of a conflict option is a follow-up of the conflict turn
with that option's condition: the other options' pages are left out. The scope guard and
the routing read the follow-up's own words (and their meaning), so a follow-up that drifts to
another tax or manual is refused as out of scope; the later-year check reads the searched
question.

This module sits below the pipeline (whose stages run ``after_stage``); the conversations
themselves and asking a turn are services/conversation_store.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from services.errors import UnknownCondition
from services.providers.local.units import EXAMPLE_TITLE, chunk_units, is_illustration, withdraws
from services.stages.retrieval import SHORT_TERMS, bm25_text, terms_with_compounds
from services.text.figures import years_named
from services.text.terms import query_terms, terms, words
from shared.config import LocalStitchingSettings, Settings
from shared.contracts.api import QuestionResult
from shared.contracts.conversation import ConversationContext, ConversationQuestion, TurnResult
from shared.contracts.corpus import chunk_of, section_of
from shared.contracts.pipeline import DraftSentence, PipelineState
from shared.contracts.refusals import ConflictEvidence, ConflictOption
from shared.index import CorpusIndex

# ---- reading a turn ------------------------------------------------------------------------

_LEADING_LINK = re.compile(r"^\W*(?:and|but|or|so|then|what about|how about|what if|if so|in that case)\b", re.I)
_POINTS_BACK = re.compile(r"\b(?:instead|also|too|either|as well|the same)\b", re.I)
# Pronouns point at something named earlier; so may a definite description ("the figure"),
# more weakly (it often names its own subject: "the van benefit charge").
_PRONOUN = re.compile(r"\b(?:it|its|it's|that|this|these|those|they|them|their|one|ones|there|such)\b", re.I)
_DEFINITE = re.compile(r"\bthe\b", re.I)
_YEAR = re.compile(r"\b(?:19|20)\d{2}(?:\s*[-/]\s*(?:19|20)?\d{2})?\b")
SUBJECT_SHARE = 0.5  # share of a question's terms already in the subject that makes it a follow-up
# Keyword hits looked at for the retrieval evidence: deeper for a pronoun, which cannot name
# its own subject, than for a definite description, which may.
EVIDENCE_DEPTH = {"pronoun": 20, "definite": 3}


def _subject_turns(earlier: list[TurnResult]) -> list[TurnResult]:
    """The turns of the current subject: from the last turn that opened one to the end."""
    start = max((i for i, t in enumerate(earlier) if t.follow_up.kind != "follow_up"), default=0)
    return earlier[start:]


def _cited(turn: QuestionResult) -> list[str]:
    """The pages a turn's answer claims cite (what that turn verified)."""
    return [section_of(c) for s in (turn.answer.sentences if turn.answer else []) if s.role == "answer" for c in s.citations]


def carried_sections(turns: list[TurnResult], limit: int) -> list[str]:
    """The subject's pages, latest turn first: cited by answer claims, then selected."""
    found: list[str] = []
    for turn in reversed(turns):
        selected = next((t.candidate_ids for t in turn.trace if t.stage == "selection"), [])
        options = [o.section_id for o in conflict_options(turn) if o.section_id]
        found.extend([*_cited(turn), *selected[:2], *options])
    return list(dict.fromkeys(found))[:limit]


def linked_sections(turns: list[TurnResult], carried: list[str], index: CorpusIndex, limit: int) -> list[str]:
    """Pages one cross-reference hop from the pages the subject's answers cited (latest turn
    first), besides the carried ones: the manual sends its reader from the rule to its detail
    ('the approved amount', 'the exceptions'), which a narrowing follow-up asks about but no
    earlier turn had reason to select."""
    found: list[str] = []
    for section in dict.fromkeys(s for turn in reversed(turns) for s in _cited(turn)):
        found.extend(x.target_section for x in index.xrefs_from(section) if x.target_manual == index.manual and x.target_section in index.pages)
    return [s for s in dict.fromkeys(found) if s not in carried][:limit]


def conflict_options(turn: QuestionResult) -> list[ConflictOption]:
    """The options of a conflict refusal (``evidence.options``); none for other results."""
    evidence = turn.refusal.evidence if turn.refusal is not None else None
    return list(evidence.options) if isinstance(evidence, ConflictEvidence) else []


def _subject_terms(turns: list[TurnResult]) -> set[str]:
    found: set[str] = set()
    for turn in turns:
        found.update(query_terms(turn.question))
        for citation in turn.citations:
            found.update(query_terms(citation.title))
    return found


def _reaches_subject(question: str, sections: list[str], index: CorpusIndex, depth: int) -> bool:
    """Retrieval evidence: the question's own keyword search reaches the subject's pages."""
    hits = index.bm25_search(bm25_text(question), depth)
    return any(section_of(cid) in sections for cid, _ in hits)


def follow_up_reasons(question: str, turns: list[TurnResult], sections: list[str], index: CorpusIndex) -> list[str]:
    """Why ``question`` continues the subject of ``turns`` (empty: it opens a new subject);
    ``sections`` are the subject's pages (carried and linked)."""
    own = query_terms(question)
    reasons = []
    if _LEADING_LINK.search(question):
        reasons.append("starts with a link to the previous turn")
    if _POINTS_BACK.search(question):
        reasons.append("points back to the previous turn")
    pronoun = bool(_PRONOUN.search(question))
    definite = bool(_DEFINITE.search(question))
    if len(own) <= SHORT_TERMS and (pronoun or definite):
        reasons.append(f"short ({len(own)} content terms) and refers to something not in it")
    subject = _subject_terms(turns)
    shared = [t for t in own if t in subject]
    if own and len(shared) / len(own) >= SUBJECT_SHARE:
        reasons.append(f"{len(shared)} of its {len(own)} terms are the subject's")
    # Undecided: a pronoun in a longer question, or a short one without any, may refer inside
    # itself; it continues the subject when its own search reaches the subject's pages.
    depth = EVIDENCE_DEPTH["pronoun" if pronoun else "definite"]
    if not reasons and sections and (pronoun or definite or len(own) <= SHORT_TERMS) and _reaches_subject(question, sections, index, depth):
        reasons.append("its own search reaches the subject's pages")
    return reasons


def searched_question(question: str, topic: str) -> str:
    """A follow-up as the pipeline reads it: its own words, then the question that opened the
    subject, whose tax years give way when the follow-up names its own."""
    if years_named(question):
        topic = re.sub(r"\s{2,}", " ", _YEAR.sub("", topic))
    return f"{question.strip()} {topic.strip()}".strip()


_THAT_YEAR = re.compile(r"\b(?:that|the same)\s+(?:tax\s+)?year\b", re.I)


def year_referred_to(asked: str, earlier: list[TurnResult]) -> str | None:
    """The year a follow-up means by 'that year' / 'the same year' without naming one: the
    latest year the person named in an earlier turn ('And what was it back in 2010-11?', then
    'What if its emissions had been 110g/km that year?')."""
    if years_named(asked) or not _THAT_YEAR.search(asked):
        return None
    for turn in reversed(earlier):
        named = _YEAR.findall(turn.question)
        if named:
            return named[-1]
    return None


def read_turn(
    request: ConversationQuestion, earlier: list[TurnResult], settings: Settings
) -> tuple[str, ConversationContext]:
    """The question the pipeline reads for this turn, and the context it carries."""
    asked = request.question.strip()
    manual = request.manual or settings.manual
    limit = settings.conversations.carried_pages
    if request.condition is not None:
        return _choose(asked, request.condition, earlier, limit)
    if not earlier:
        return asked, ConversationContext(kind="first", asked=asked)
    turns = _subject_turns(earlier)
    sections = carried_sections(turns, limit)
    index = CorpusIndex.open(settings, manual)
    linked = linked_sections(turns, sections, index, settings.conversations.linked_pages)
    reasons = follow_up_reasons(asked, turns, [*sections, *linked], index)
    if not reasons:
        return asked, ConversationContext(kind="new_subject", asked=asked, reasons=["no link to the earlier turns"])
    topic = turns[0].follow_up.searched
    year = year_referred_to(asked, earlier)
    if year is not None:
        asked = f"{asked} ({year})"  # read as naming it: the topic's own years give way
    claims = [
        {"text": s.text, "citations": s.citations, "turn": t.turn}
        for t in turns
        for s in (t.answer.sentences if t.answer else [])
        if s.role == "answer" and s.verdict in ("supported", "partially_supported")
    ]
    context = ConversationContext(
        kind="follow_up", asked=asked, topic=topic, carried_sections=sections, linked_sections=linked, claims=claims, reasons=reasons
    )
    return searched_question(asked, topic), context


def _choose(asked: str, condition: str, earlier: list[TurnResult], limit: int) -> tuple[str, ConversationContext]:
    """Choosing a conflict option: the conflict turn asked again under that option's condition."""
    previous = earlier[-1] if earlier else None
    options = conflict_options(previous) if previous else []
    wanted = condition.strip().casefold()
    chosen = next((o for o in options if o.condition.strip().casefold() == wanted), None)
    if previous is None or chosen is None:
        known = [o.condition for o in options]
        raise UnknownCondition(
            f"the condition {condition!r} is not an option of the previous turn"
            + (f"; its options: {known}" if known else " (the previous turn is not a conflict refusal)")
        )
    others = [o.section_id for o in options if o.section_id and o.section_id != chosen.section_id]
    context = ConversationContext(
        kind="follow_up",
        asked=asked or chosen.condition,
        topic=previous.follow_up.searched,
        carried_sections=[chosen.section_id][:limit] if chosen.section_id else [],
        chosen=chosen,
        excluded_sections=others,
        reasons=["chose an option of the previous turn's conflict"],
    )
    return f"{previous.follow_up.searched} {chosen.condition}", context


YEAR_WEIGHT = 2  # a period covering the named year outranks a single word of the follow-up
MIN_STEM = 4  # a manual word shorter than this is too common to be the tail of a compound


def same_word(asked: str, stated: str) -> bool:
    """The follow-up's word and the manual's are the same thing: equal, or the asker's word is
    a compound ending in the manual's ('bicycle' -> the manual's 'cycle')."""
    return asked == stated or (len(stated) >= MIN_STEM and len(asked) > len(stated) + 1 and asked.endswith(stated))


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
    for m in _YEAR.finditer(text):
        bound = int(m.group(0)[:4])
        before, after = text[max(0, m.start() - 40) : m.start()], text[m.start() :]
        if (_UNTIL.search(before) or _EARLIER.match(after)) and bound - OPEN_SPAN <= year <= bound:
            return True
    return False


def names_row(label: str, new_terms: set[str]) -> bool:
    """A table row's label, read as one word ('Motor cycle' -> 'motorcycle'), is a term the
    follow-up adds: 'bicycle' names the 'Cycle' row, not the 'Motor cycle' one."""
    whole = terms("".join(words(label)))
    return bool(whole) and any(same_word(t, whole[0]) for t in new_terms)


def condition_claims(
    state: PipelineState, sections: list[str], new_terms: set[str], years: list[int], tuning: LocalStitchingSettings
) -> list[tuple[int, DraftSentence, list[DraftSentence]]]:
    """The sentences and table rows of the subject's pages (as selected for this turn), in the
    conversation's order of those pages, with their score for what the follow-up adds and the
    claims that state them whole: the row for the condition it narrows to ('Cycle | All | 20p'
    for 'on my bicycle') may not be in the draft at all, or not lead it. A row is whole on its
    own; a sentence comes with its paragraph (at most stitching.local.answer_claims sentences),
    whose other sentences say what it leans on ('In order to encourage employees to
    participate ...' after the sentence naming what they take part in), unless it tells a
    worked example, whose story the answer does not retell."""
    selected = {p.section_id: p for p in (state.selection.pages if state.selection else [])}
    pages = [selected[s] for s in sections if s in selected]
    found = []
    for rank, page in enumerate(pages):
        notice: list[DraftSentence] = []  # the page's opening line saying its rule has ended, as in stitching
        for chunk in sorted(page.chunks, key=lambda c: c.position):
            example = any(EXAMPLE_TITLE.search(h) for h in chunk.heading_path[-2:])
            units = [u for u in chunk_units(chunk, rank, tuning) if not u.heading]
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
                if unit.row is not None and names_row(unit.cells.split("|")[0], new_terms):
                    score += 1
                if score:
                    whole = paragraphs.get(unit.paragraph.id, []) if unit.row is None and not (example or is_illustration(unit.text)) else []
                    whole = whole if 1 < len(whole) <= tuning.answer_claims else [claim]
                    found.append((score, claim, [*(n for n in notice if n not in whole), *whole]))
    return found


def meaning_of(state: PipelineState, settings: Settings) -> Callable[[DraftSentence], float]:
    """How close a sentence's passage (the chunk of its first citation) is in meaning to the
    follow-up as searched (its own words read with the subject's: alone, 'two of them at
    once' means nothing); 0 for every sentence without vectors."""
    if state.retrieval is None or not state.retrieval.query_vector:
        return lambda sentence: 0.0
    index = CorpusIndex.open(settings, state.query.manual)
    vector = np.asarray(state.retrieval.query_vector, dtype=np.float32)

    def closeness(sentence: DraftSentence) -> float:
        try:
            return float(index.chunk_vector(chunk_of(sentence.citations[0])) @ vector) if sentence.citations else 0.0
        except KeyError:  # a chunk without a stored vector
            return 0.0

    return closeness


def after_stage(stage: str, state: PipelineState, settings: Settings) -> None:
    """What a conversation turn changes between stages (run by every worker: the context
    travels in the state):
    - after rollup, a chosen conflict option leaves out the pages of the options not chosen;
    - after stitching, a follow-up's answer leads with the sentences about what it adds (its
      terms the subject did not have, the years it names), then what earlier turns have not
      already said, then the rest: earlier claims are reused with their citations, behind."""
    context = state.context
    if context is None:
        return
    if stage == "rollup" and context.excluded_sections and state.rollup is not None:
        state.rollup.pages = [p for p in state.rollup.pages if p.section_id not in context.excluded_sections]
    if stage == "stitching" and context.kind == "follow_up" and state.draft is not None:
        said = {(c.text, tuple(c.citations)) for c in context.claims}
        # the years it names are read as periods (``answers_follow_up``), not as words: '11'
        # of '2010-11' would match any sentence with an 11 in it
        subject = {t for t in query_terms(context.topic) if not t.isdigit()}
        new_terms = {t for t in set(query_terms(context.asked)) - subject if not t.isdigit()}
        years = [y for y, _ in years_named(context.asked)]
        sentences = state.draft.sentences
        pool = [*context.carried_sections, *context.linked_sections]
        carried = {c.text: (score, c, whole) for score, c, whole in condition_claims(state, pool, new_terms, years, settings.stitching.local)}
        # how a sentence answers the follow-up: its score for what the follow-up adds, then
        # how close its passage is in meaning to the follow-up: of two sentences that each
        # share a word with it, the one about what it asks
        closeness = meaning_of(state, settings)

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
        # the answer part keeps its shape (at most stitching.local.answer_claims claims); what the lead pushed
        # out stays as detail, ahead of the rest
        kept = ordered[: settings.stitching.local.answer_claims]
        while kept and kept[-1].text.rstrip().endswith(":"):  # no list intro left without its list
            kept.pop()
        pushed = [s.model_copy(update={"role": "detail"}) for s in ordered[len(kept):]]
        state.draft.sentences = [*kept, *pushed, *(s for s in rest if s.role != "answer")]
