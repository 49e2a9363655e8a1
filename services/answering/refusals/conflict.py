"""conflict's evidence: the answer's pages give different values for the asked quantity under
conditions (the pages' subjects: an occupation, a kind of vehicle, ...) that the question does
not settle. Only a question that asks for a figure can conflict, only statements of a rule
(not worked examples, headings or table rows keyed by anything but a period) count, the pages
may be any the question retrieved (not only those selection kept), and a difference in
wording alone ("is" / "is not", step 1 / step 5) is never a conflict.

``conflict_evidence`` says what it found (the options a reader chooses between);
services/answering/refusals/decide.py refuses with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel

from shared.contracts.corpus import Paragraph, section_of
from shared.contracts.pipeline import Draft, DraftSentence
from shared.contracts.refusals import ConflictEvidence, ConflictOption, ConflictParagraph
from services.text.amounts import amounts, kind
from services.text.figures import years_named
from services.text.question import asks_for_figure
from services.text.sentences import split_sentences
from services.text.terms import query_terms, terms
from services.text.units import gives_example

# Two statements speak of one quantity when every word of the shorter one (at least two) is
# in the longer one: "The amount of the deduction is £80" / "The amount of the flat rate
# expense deduction is £100 per year". "Mileage payments are exempt up to 45p" / "Passenger
# payments are exempt up to 5p" each name their own subject: two quantities, no conflict.
MIN_SHARED_WORDS = 2


class Case(BaseModel):
    """What a page is about, as a conflict option's condition: its title, and its own words
    (which tell whether the question already names this case)."""

    title: str
    lead: str  # the page's first sentence: names the case where titles are alike
    text: str  # the page's own sentences (``own_words``)


# A sentence that sends the reader to another page ("... for nurses, see EIM67210").
_POINTER = re.compile(r"\b(?:see|at)\s+(?:also\s+)?[A-Z]{2,5}\d{3,6}[A-Z]?\b")


def own_words(texts: Sequence[str]) -> str:
    """A page's sentences that speak of its own case: a sentence pointing to another page
    speaks of that page's (the general laundering page names nurses only to send them to
    theirs, and "I'm a nurse" still chooses the nurses' case)."""
    return " ".join(s for text in texts for s in split_sentences(text) if not _POINTER.search(s))


def _words_only(text: str) -> set[str]:
    return {t for t in terms(text) if not any(ch.isdigit() for ch in t)}


def _label(case: Case, other: Case) -> str:
    """The page title when both titles have words of their own, else the page's first
    sentence (two pages both titled "laundering uniforms" differ in whom they are for)."""
    mine, theirs = _words_only(case.title), _words_only(other.title)
    return case.title if mine - theirs and theirs - mine else case.lead or case.title


def _settles(question: str, case: Case, other: Case, label: str) -> bool:
    """The question names this case: its label (a chosen option asks again with it), or a
    word of its title or first sentence that the other page never uses of its own case."""
    if " ".join(label.lower().split()) in " ".join(question.lower().split()):
        return True
    theirs = _words_only(" ".join([other.title, other.lead, other.text]))
    return bool(_words_only(question) & (_words_only(case.title + " " + case.lead) - theirs))


def _periods(text: str) -> frozenset[tuple[int, bool]]:
    return frozenset(years_named(text))


def could_conflict(question: str) -> bool:
    """Only a question asking for a figure, and naming no year, can get a conflict refusal."""
    return asks_for_figure(question) and not years_named(question)


Stated = tuple[DraftSentence, frozenset[str]]


def _conflicting(question: str, a: Stated, b: Stated, cases: dict[str, Case], b_states_a: bool = False) -> tuple[str, str] | None:
    """The two cases' labels when statements ``a`` and ``b`` give different amounts for one
    quantity on two pages the question does not choose between; else None. ``b_states_a``:
    ``b`` must say everything ``a`` says (a left-out page restating the answer's quantity for
    its own case; a shorter sentence there, "R is a rate of 5p per mile", names too little)."""
    (sa, fa), (sb, fb) = a, b
    pa, pb = section_of(sa.citations[0]), section_of(sb.citations[0])
    if pa == pb or fa == fb or kind(next(iter(fa))) != kind(next(iter(fb))):
        return None
    if _periods(sa.text) and _periods(sb.text) and (not _periods(sa.text) & _periods(sb.text) or fa <= fb or fb <= fa):
        return None  # two periods of one rule, or one rule's figures by period, told twice ("£3 ... and £2 per week" / "£2 per week")
    wa, wb = _words_only(sa.text), _words_only(sb.text)
    if len(wa & wb) < MIN_SHARED_WORDS or (wa - wb and wb - wa) or (b_states_a and wa - wb):
        return None
    ca = cases.get(pa, Case(title=pa, lead="", text=sa.text))
    cb = cases.get(pb, Case(title=pb, lead="", text=sb.text))
    if b_states_a:
        # a left-out page is a rival case only when its title is as much about the question
        # as the answering page's ("car first registered before 1998" is not, beside "car
        # without an approved CO2 emissions figure", asked about a car with no CO2 figure)
        asked = set(query_terms(question))
        if len(asked & set(terms(cb.title))) < len(asked & set(terms(ca.title))):
            return None
    la, lb = _label(ca, cb), _label(cb, ca)
    if _settles(question, ca, cb, la) or _settles(question, cb, ca, lb):
        return None
    return la, lb


def conflict_evidence(
    question: str,
    draft: Draft,
    paragraphs: dict[str, Paragraph],
    illustrative: frozenset[str] = frozenset(),
    cases: dict[str, Case] | None = None,
    candidates: Sequence[DraftSentence] = (),
) -> ConflictEvidence | None:
    """The answer's pages give different amounts for what the question asks, in cases
    (``cases``: section id -> what the page is about) the question does not settle; or None.

    Only a question asking for a figure, and naming no year, can conflict. Two statements
    from different pages conflict when both state amounts of one kind (pounds, pence, per
    cent), the amounts differ, they speak of the same quantity (the words of one are all in
    the other), they are not two periods of one rule (both dated, with no period in common),
    and the question names neither page's case. Worked examples (``illustrative``) and
    headings never count; a table row counts only when it names its period ("2008/09
    onwards: amount per year \u00a360"): a row keyed by anything else is that case's own figure.

    ``candidates``: statements of pages retrieval found for the question that selection
    left out (``candidate_statements``). Whether the manual states the asked quantity for
    another case should not hang on a close call in selection, so an answer statement is
    also checked against these (never two candidates against each other: the answer must
    state the quantity itself). Every further statement that conflicts with one of the
    first two is an option too (the general rate, nurses, fire officers, ...)."""
    if not could_conflict(question):
        return None
    cases = cases or {}

    def stated(sentences: Sequence[DraftSentence]) -> list[Stated]:
        out = []
        for s in sentences:
            if s.role != "answer" or not s.citations:
                continue
            cited = paragraphs.get(s.citations[0])
            if cited is None or cited.kind == "heading" or s.citations[0] in illustrative:
                continue
            if cited.kind == "table" and not years_named(s.text):
                continue
            if gives_example(s.text):
                continue  # an illustration's figures are the example's, as in a worked example
            found = amounts(s.text)
            if found and len({kind(x) for x in found}) == 1:
                out.append((s, frozenset(found)))
        return out

    statements = stated(draft.sentences)
    others = stated(candidates)
    for i, a in enumerate(statements):
        for b in [*statements[i + 1 :], *others]:
            labels = _conflicting(question, a, b, cases, b_states_a=b in others)
            if labels is None:
                continue
            chosen = [(a, labels[0]), (b, labels[1])]
            for c in [*statements, *others]:
                pages = {section_of(x.citations[0]) for (x, _), _ in chosen}
                if section_of(c[0].citations[0]) in pages:
                    continue
                extra = next((found for found in (_conflicting(question, x, c, cases, b_states_a=c in others) for x, _ in chosen) if found), None)
                if extra is not None:
                    chosen.append((c, extra[1]))
            return _evidence(chosen, paragraphs)
    return None


def _evidence(chosen: list[tuple[Stated, str]], paragraphs: dict[str, Paragraph]) -> ConflictEvidence:
    options = [
        ConflictOption(condition=label, value=", ".join(sorted(found)), paragraph_id=s.citations[0], section_id=section_of(s.citations[0]))
        for (s, found), label in chosen
    ]
    ids = [o.paragraph_id for o in options]
    values = [frozenset(found) for (_, found), _ in chosen]
    return ConflictEvidence(
        options=options,
        paragraph_ids=ids,
        paragraphs=[ConflictParagraph(paragraph_id=c, section_id=section_of(c), text=paragraphs[c].text) for c in ids],
        statements=[s.text for (s, _), _ in chosen],
        what_would_decide="which case is yours: " + " or ".join(f"{o.condition} ({o.value})" for o in options),
        differing=sorted(frozenset.union(*values) - frozenset.intersection(*values)),
    )
