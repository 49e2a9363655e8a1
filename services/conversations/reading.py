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
its own); retrieval also ranks the subject's pages (services/answering/stages/retrieval.py), and its
answer leads with what the follow-up adds, the earlier turns' claims reused behind
(the ``follow_up`` stage): a row or sentence of the subject's pages for the condition it narrows to
(in the manual's word forms: 'bicycle' meets the 'Cycle' row) or for the year it names
joins the answer with the rest of its paragraph (and its page's opening line when that says
the rule has ended) when the draft lacks it; of the sentences
that name it, the closest in meaning to the searched follow-up leads. A follow-up that
nothing on its pages answers asks the previous turn's question again: that turn's verified
claims lead. The answer part keeps its shape (at most stitching.shape.claims claims,
no list intro left alone). A choice of a conflict option is a follow-up of the conflict turn
with that option's condition: the other options' pages are left out. The scope guard and
the routing read the follow-up's own words (and their meaning), so a follow-up that drifts to
another tax or manual is refused as out of scope; the later-year check reads the searched
question.

What a read turn changes between the question stages is the ``condition`` and ``follow_up``
stages (services/answering/stages/follow_up.py); the conversations themselves and asking a turn
are services/conversations/store.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from services.errors import UnknownCondition
from services.answering.stages.retrieval import SHORT_TERMS, bm25_text
from services.text.figures import YEAR_OR_SPAN, years_named
from services.text.terms import pointing_words, query_terms
from services.text.vocabulary import phrases
from shared.config import Settings
from shared.contracts.api import QuestionResult
from shared.contracts.conversation import ConversationContext, ConversationQuestion, TurnResult
from shared.contracts.corpus import section_of
from shared.contracts.refusals import ConflictEvidence, ConflictOption
from shared.index import CorpusIndex

# ---- reading a turn ------------------------------------------------------------------------

_LEADING_LINK = phrases(("and", "but", "or", "so", "then", "what about", "how about", "what if", "if so", "in that case"), opening=True)
_POINTS_BACK = phrases(("instead", "also", "too", "either", "as well", "the same"))
# Pronouns point at something named earlier; so may a definite description ("the figure"),
# more weakly (services/text/terms.py ``pointing_words``).
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
    pointing = pointing_words(question)
    pronoun, definite = "pronoun" in pointing, "definite" in pointing
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
        topic = re.sub(r"\s{2,}", " ", YEAR_OR_SPAN.sub("", topic))
    return f"{question.strip()} {topic.strip()}".strip()


_THAT_YEAR = re.compile(r"\b(?:that|the same)\s+(?:tax\s+)?year\b", re.I)


def year_referred_to(asked: str, earlier: list[TurnResult]) -> str | None:
    """The year a follow-up means by 'that year' / 'the same year' without naming one: the
    latest year the person named in an earlier turn ('And what was it back in 2010-11?', then
    'What if its emissions had been 110g/km that year?')."""
    if years_named(asked) or not _THAT_YEAR.search(asked):
        return None
    for turn in reversed(earlier):
        named = YEAR_OR_SPAN.findall(turn.question)
        if named:
            return named[-1]
    return None


def read_turn(
    request: ConversationQuestion, earlier: list[TurnResult], settings: Settings, open_index: Callable[[str], CorpusIndex]
) -> tuple[str, ConversationContext]:
    """The question the pipeline reads for this turn, and the context it carries;
    ``open_index``: the manual's serving index, opened only for a turn with earlier turns to
    read it with (``Answering.open``, services/answering/pipeline.py)."""
    asked = request.question.strip()
    manual = request.manual or settings.manual
    limit = settings.conversations.carried_pages
    if request.condition is not None:
        return _choose(asked, request.condition, earlier, limit)
    if not earlier:
        return asked, ConversationContext(kind="first", asked=asked)
    turns = _subject_turns(earlier)
    sections = carried_sections(turns, limit)
    index = open_index(manual)
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
