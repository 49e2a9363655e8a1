"""Stitching: every sentence and table row of the kept pages (a row reads as a sentence with
its column headers) scored by the trained passage ranker (services/ranking, `taxnav ranker
train`): the probability that it states what answers the question, from its UNIT_FEATURES
(its words and headings, its chunk's closeness in meaning, its page's probability and place,
what it gives, what kind of unit it is). A unit that cannot be read with what the page gives
beside it (a list item cut from its lead-in, a line of a worked computation) is never quoted,
and a signpost or a worked example nobody asked for is left to the detail. The answer part
is the best unit with what it needs to be read right (a list intro with its items, an item
with its intro, "This is taxable under ..."), then the units scoring near it from its page,
and one statement from each of the two best pages and from any lower page whose best unit
competes with the lead page's (the others are detail), in the manual's order: at most six
claims and about 120 words. The detail follows, the next units above the floor, the whole
reply within 350 words. Each claim cites exactly one paragraph: consecutive sentences of one
paragraph make one claim; a sentence the 2014 scrape split over paragraphs is scored as one
but quoted paragraph by paragraph; a heading that states a rule ("SMP is taxable") is quoted
with the id of the paragraph under it; a rendered row cites its table."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from shared.config import LocalStitchingSettings, Settings
from shared.contracts.api import ClaimRole
from shared.contracts.corpus import ITEM_LABEL, section_of
from shared.contracts.pipeline import Draft, DraftSentence, Query, SelectionResult
from shared.index import CorpusIndex
from shared.meaning import question_vector
from services.text.question import QuestionKind, question_kind
from services.ranking.passage_features import UNIT_FEATURES, featured_units
from services.ranking.rankers import passage_model
from services.text.tables import TERMINAL, rows_of
from services.text.units import (
    ANAPHOR, DEPENDENT, NOTE, SEE_NOTE, Unit, computation_line, gives,
    introduces_list, list_items, withdraws,
)
from services.text.figures import checkable_facts
from services.text.terms import terms


def score_units(query: Query, selection: SelectionResult, settings: Settings, vector: np.ndarray | None) -> list[Unit]:
    """Every quotable sentence (or table row) of the selected pages, scored: the passage
    ranker's probability that it states what answers the question."""
    units = featured_units(query, selection, settings, vector)
    if units:
        model = passage_model(settings)
        scores = model.probability(model.score(np.array([[u.features[f] for f in UNIT_FEATURES] for u in units])))
        for unit, score in zip(units, scores, strict=True):
            unit.score = float(score)
    return units


def list_intro(units: list[Unit], i: int) -> int | None:
    """The sentence that introduces the list a list item belongs to ("The key features of the
    exemption are:"), whichever item of the list it is: an item is never read without it
    (``list_items``' limit bounds what is quoted after a lead-in, not which items have one)."""
    for j in range(i - 1, -1, -1):
        if units[j].page_rank != units[i].page_rank or units[j].row is not None:
            return None
        if introduces_list(units[j]):
            return j if i in list_items(units, j, len(units)) else None
        if not (units[j].paragraph.kind == "li" or units[j].text[:1].islower() or units[j].paragraph.id == units[j + 1].paragraph.id):
            return None
    return None


def goes_on_unfinished(units: list[Unit], i: int) -> bool:
    """Whether a unit goes on from a line its paragraph left unfinished ("work for an employer
    but cannot get" / "Statutory Sick Pay, or": the scrape split it where no join could be told
    from a new statement)."""
    unit, before = units[i], units[i - 1] if i > 0 else None
    if unit.row is not None or before is None or before.row is not None or before.heading:
        return False
    return before.page_rank == unit.page_rank and before.order[0] == unit.order[0] and not TERMINAL.search(before.text.rstrip())


_BARE_REFERENCE = re.compile(r"^[A-Z]{2,5}\d{4,6}\W{0,2}$")  # "EIM01510." left on a line of its own


def _continues(text: str) -> bool:
    """Whether a line reads as the rest of a sentence, not a new one ("employer count for ...",
    "EIM01510." after "See example")."""
    return text[:1].islower() or text[:1].isdigit() or bool(_BARE_REFERENCE.match(text.strip()))


def finishes(before: Unit, unit: Unit) -> bool:
    """Whether ``unit`` is the rest of the line ``before`` it on its page, which the scrape or a
    chunk boundary broke off ("All earlier awards in respect of service with the same" /
    "employer count for the purpose of the 10 year test ...")."""
    if unit.row is not None or before.row is not None or before.heading or before.page_rank != unit.page_rank:
        return False
    return not TERMINAL.search(before.text.rstrip()) and _continues(unit.text)


def finishes_line(units: list[Unit], i: int) -> bool:
    """Whether unit ``i`` finishes the line before it: it is never quoted without that line."""
    return i > 0 and finishes(units[i - 1], units[i])


QUOTABLE_WORDS = 3  # the fewest words of a statement (as taxnav.evaluation's reads_alone counts them)


def quotable(units: list[Unit], i: int, list_limit: int) -> bool:
    """Whether a unit can be quoted at all, with what context_of puts beside it: not a list
    lead-in without its items, nor a line starting in lower case (a list item, the rest of a
    sentence) without the lead-in or the line it finishes, nor a line of a worked computation
    ("2,000 x 25p =, £500"): a table row reads alone only when its table names its columns."""
    unit = units[i]
    if unit.row is not None:
        return not computation_line(unit)
    if len(unit.text.split()) < QUOTABLE_WORDS:
        return False  # "Example 1", "Kingdom.", "See EIM24360.": a crumb of the page, no statement
    if unit.text.rstrip().endswith(":") and not list_items(units, i, list_limit):
        return False
    return not unit.text[:1].islower() or list_intro(units, i) is not None or finishes_line(units, i)


def reads_alone(units: list[Unit], i: int, list_limit: int) -> bool:
    """Whether a unit can open an answer: a table row, or a sentence that neither leans on the
    one before it ("This is ...") nor goes on from an unfinished line, unless that line is the
    lead-in of the list it is an item of (quoted before it)."""
    unit = units[i]
    if unit.aside:
        return False  # a signpost, or a worked example nobody asked for: the rule answers
    if unit.row is not None:
        return not computation_line(unit)
    if DEPENDENT.search(unit.text):
        return False
    return not goes_on_unfinished(units, i) or list_intro(units, i) is not None


def ended_notice(units: list[Unit], i: int) -> int | None:
    """The opening line of unit ``i``'s page when it says the page's rule has ended, or None."""
    opening = next(j for j, u in enumerate(units) if u.page_rank == units[i].page_rank)
    return opening if opening != i and units[opening].row is None and withdraws(units[opening].text) else None


def context_of(units: list[Unit], i: int, floor: float, tuning: LocalStitchingSettings) -> list[int]:
    """The units a chosen unit needs beside it to be read right: the list a colon
    introduces, the sentence that introduces a list item, an anaphoric or strongly scoring
    neighbour in its paragraph, a table row's header and the note the table refers to, and the
    opening line of its page when that says the page's rule has ended ("THIS RELIEF WAS
    WITHDRAWN FROM 6 APRIL 2013"): the rest of the page states the rule as it stood."""
    unit, out = units[i], []
    notice = ended_notice(units, i)
    if notice is not None:
        out.append(notice)
    if unit.row is not None:
        if SEE_NOTE.search(rows_of(unit.paragraph)[0]):
            later = (j for j in range(i + 1, len(units)) if units[j].paragraph.id != unit.paragraph.id and units[j].row is None)
            out += [j for j in later if units[j].page_rank == unit.page_rank and NOTE.match(units[j].text)][:1]
        return out
    out += list_items(units, i, tuning.list_items)
    intro = list_intro(units, i) if unit.paragraph.kind == "li" or unit.text[:1].islower() else None
    if intro is not None:
        out.append(intro)
    elif finishes_line(units, i):
        out.append(i - 1)  # the line it finishes: never quoted from the middle of a sentence
    if i + 1 < len(units) and finishes_line(units, i + 1):
        out.append(i + 1)  # the rest of its own sentence, broken off
    for j in (i - 1, i + 1):
        if not 0 <= j < len(units) or units[j].row is not None:
            continue
        neighbour = units[j]
        same = neighbour.paragraph.id == unit.last_paragraph.id if j > i else neighbour.last_paragraph.id == unit.paragraph.id
        if not same:
            continue
        # "... bonus of £7,500. This is taxable under Section 62": the verdict on it
        if (j > i and ANAPHOR.match(neighbour.text)) or neighbour.score >= tuning.neighbour_floor * floor:
            out.append(j)
    return out


@lru_cache(maxsize=16384)
def _wordset(text: str) -> frozenset[str]:
    """A sentence's terms without its figures (what ``repeats`` compares)."""
    return frozenset(t for t in terms(text) if not any(ch.isdigit() for ch in t))


def table_full(unit: Unit, chosen: list[Unit], tuning: LocalStitchingSettings) -> bool:
    """Whether the answer already quotes tuning.table_rows rows of this row's page's tables: its
    other rows are detail (the answer says what the question asks, not the whole table, nor the
    same rates tabulated again for another run of years, EIM65970), unless this row is the one
    the asker's own figure looks up."""
    return unit.row is not None and not unit.looked_up and sum(c.row is not None and c.page_rank == unit.page_rank for c in chosen) >= tuning.table_rows


def repeats(unit: Unit, chosen: list[Unit], tuning: LocalStitchingSettings) -> bool:
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
        and len(mine & (theirs := _wordset(c.text))) / len(mine | theirs) >= tuning.same_statement
        for c in chosen
    )


def _word_count(units: Iterable[Unit]) -> int:
    return sum(len(u.text.split()) for u in units)


def claims_of(chosen: dict[int, Unit], role: ClaimRole = "answer", order: list[int] | None = None) -> list[DraftSentence]:
    """Chosen units (by their place in page order: pages as selection ranked them, or in
    ``order``) as claims a person can read alone: consecutive sentences of one paragraph make
    one claim; a sentence the 2014 scrape split over paragraphs ("... deeming provision in
    Section" / "201(3) ITEPA 2003") is one claim citing each of them; a list's lead-in and the
    items quoted after it are one claim ("... taxable earnings if: it is a widespread custom
    ... and the expectation ..."); table rows and headings stay one claim each."""
    claims: list[DraftSentence] = []
    previous: int | None = None
    joinable = False  # whether the last claim may take the next unit
    listing: int | None = None  # the page whose list the last claim introduced and is quoting
    for i in order if order is not None else sorted(chosen):
        unit = chosen[i]
        plain = unit.row is None and not unit.heading
        ids = list(dict.fromkeys(paragraph.id for paragraph, _ in unit.parts))
        item = plain and (unit.paragraph.kind == "li" or unit.text[:1].islower())
        same_paragraph = previous == i - 1 and bool(claims) and claims[-1].citations[-1] == ids[0]
        # a line the scrape broke off the one before it ("... with the same" / "employer count for ...")
        goes_on = previous == i - 1 and finishes(chosen[previous], unit)
        if claims and joinable and plain and (same_paragraph or goes_on or (item and listing == unit.page_rank)):
            claims[-1].text += " " + unit.text
            claims[-1].citations += [c for c in ids if c not in claims[-1].citations]
        else:
            claims.append(DraftSentence(text=unit.text, citations=ids, role=role))
            listing = None
        if plain and introduces_list(unit):
            listing = unit.page_rank
        elif not item and not same_paragraph:
            listing = None
        joinable = plain
        previous = i
    return claims


def _minimal_context(units: list[Unit], i: int, room: int, list_limit: int) -> list[int] | None:
    """The least a unit needs to be read right, within ``room`` words: a list intro with as many
    of its items as fit (none fitting: the intro is not quoted alone), a list item with its
    intro, a sentence opening "This"/"It" with the sentence before it, and the "This is
    taxable ..." after it when that fits too; None when it cannot fit."""
    unit = units[i]
    items = list_items(units, i, list_limit)
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
    if unit.row is None and ANAPHOR.match(unit.text) and i > 0 and units[i - 1].last_paragraph.id == unit.paragraph.id:
        need.append(i - 1)
    elif intro is None and finishes_line(units, i):
        need.append(i - 1)  # the line it finishes
    if i + 1 < len(units) and finishes_line(units, i + 1):
        need.append(i + 1)  # the rest of its own sentence
    if _word_count(units[k] for k in need) > room:
        return None
    verdict = i + 1  # "... a bonus of £7,500. This is taxable under Section 62": the verdict on it
    if verdict < len(units) and units[verdict].row is None and units[verdict].paragraph.id == unit.last_paragraph.id and ANAPHOR.match(units[verdict].text):
        if _word_count(units[k] for k in [*need, verdict]) <= room:
            need.append(verdict)
    return need


def best_per_page(units: list[Unit]) -> dict[int, float]:
    """Each page's best unit score (pages by their selection rank)."""
    best: dict[int, float] = {}
    for unit in units:
        best[unit.page_rank] = max(best.get(unit.page_rank, 0.0), unit.score)
    return best


def competing_pages(page_best: dict[int, float], lead_page: int, compete: float, first: int) -> set[int]:
    """The pages the answer part may quote: the lead's, the ``first`` pages selection ranked
    best, and any lower-ranked page whose best unit scores at least ``compete`` of the lead
    page's best. Selection keeps every page that could answer (recall first), and its order
    lowers a page's sentences' scores: a lower page whose sentence still rivals the lead's
    answers the question too (a rate on the page after the rule's); the rest is detail."""
    bar = compete * page_best.get(lead_page, 0.0)
    return {lead_page} | {rank for rank, best in page_best.items() if rank < first or best >= bar}


def _later_in_chunk(a: str, b: str) -> bool:
    """Whether paragraph id ``b`` comes after ``a`` in the same chunk ("EIM1#c0.p1", "EIM1#c0.p3")."""
    (chunk_a, _, pa), (chunk_b, _, pb) = a.rpartition(".p"), b.rpartition(".p")
    return chunk_a == chunk_b and pa.isdigit() and pb.isdigit() and int(pb) > int(pa)


def items_joined(claims: list[DraftSentence]) -> list[DraftSentence]:
    """A claim that opens in lower case right after one ending with a colon, or after another
    claim of its page, is an item of the list that claim introduces or quotes (quoted apart when
    the items between them were not chosen): it joins that claim, so that it is never read
    without its lead-in."""
    out: list[DraftSentence] = []
    for claim in claims:
        if out and claim.text[:1].islower() and (out[-1].text.rstrip().endswith(":") or section_of(out[-1].citations[-1]) == section_of(claim.citations[0])):
            out[-1] = out[-1].model_copy(update={"text": f"{out[-1].text} {claim.text}", "citations": list(dict.fromkeys([*out[-1].citations, *claim.citations]))})
        else:
            out.append(claim)
    return out


def without_lone_intros(claims: list[DraftSentence], lead_in_words: int) -> list[DraftSentence]:
    """A bare list lead-in ("There are two main aspects to this:") never stands alone: it stays
    only when the next claim quotes a later paragraph of its chunk (an item). A longer one
    states the rule its list spells out ("The exemption covers pensions paid for injury if:")
    and stays."""
    return [
        c for i, c in enumerate(claims)
        if not (c.text.rstrip().endswith(":") and len(c.text.split()) <= lead_in_words)
        or (i + 1 < len(claims) and _later_in_chunk(c.citations[-1], claims[i + 1].citations[0]))
    ]


def runs_of(chosen: dict[int, Unit]) -> list[list[int]]:
    """Chosen units as runs of adjacent units of one page (a rule with its conditions, a list
    intro with its items), each run in the manual's order."""
    runs: list[list[int]] = []
    for j in sorted(chosen):
        if runs and runs[-1][-1] == j - 1 and chosen[j - 1].page_rank == chosen[j].page_rank:
            runs[-1].append(j)
        else:
            runs.append([j])
    return runs


def lead_first(lead: int, start: int, chosen: dict[int, Unit]) -> list[DraftSentence]:
    """The answer's claims: the lead first, after only what it needs before it (``start``:
    the intro of the list it is an item of, the sentence it leans on), with the units that
    follow it; then the other runs of adjacent units, those of the lead's page in the manual's
    order (its conditions, then its exceptions), then the other pages', the page saying most
    first, each page's in the manual's order. A sentence
    that only precedes the lead in its paragraph comes after it: the first claim answers."""
    first = [j for j in range(start, lead + 1) if j in chosen]
    j = lead + 1
    while j in chosen and chosen[j].page_rank == chosen[lead].page_rank:
        first.append(j)
        j += 1
    runs = runs_of({j: u for j, u in chosen.items() if j not in first})
    page = chosen[lead].page_rank
    ours = [r for r in runs if chosen[r[0]].page_rank == page]
    # the other pages best first, each page's runs in the manual's order (a list's lead-in before its items)
    page_best = best_per_page(list(chosen.values()))
    others = sorted((r for r in runs if chosen[r[0]].page_rank != page), key=lambda r: (-page_best[chosen[r[0]].page_rank], chosen[r[0]].page_rank, r[0]))
    return [c for run in [first, *ours, *others] for c in claims_of({j: chosen[j] for j in run}, order=items_by_score(run, chosen))]


_ENUMERATED = re.compile(rf"^{ITEM_LABEL}")


def items_by_score(run: list[int], chosen: dict[int, Unit]) -> list[int]:
    """A run of adjacent units in the manual's order, but with the items of a list it quotes
    after their lead-in best-scoring first: a list of conditions says the same in any order,
    and the one the question turns on ("the total cost ... does not exceed £250", the fifth)
    is read first. Each item keeps its later sentences; a lettered or numbered list keeps its
    order (a computation's steps)."""
    out: list[int] = []
    k = 0
    while k < len(run):
        out.append(run[k])
        if not introduces_list(chosen[run[k]]):
            k += 1
            continue
        groups: list[list[int]] = []
        k += 1
        while k < len(run):
            unit = chosen[run[k]]
            if groups and unit.paragraph.id == chosen[groups[-1][-1]].last_paragraph.id:
                groups[-1].append(run[k])  # the same item goes on
            elif unit.row is None and (unit.paragraph.kind == "li" or unit.text[:1].islower()) and not introduces_list(unit):
                groups.append([run[k]])
            else:
                break
            k += 1
        if any(_ENUMERATED.match(chosen[g[0]].text) for g in groups):
            out += [j for g in groups for j in g]
        else:
            out += [j for g in sorted(groups, key=lambda g: -max(chosen[j].score for j in g)) for j in g]
    return out


def figure_first(kind: QuestionKind, claims: list[DraftSentence], chosen: dict[int, Unit]) -> list[DraftSentence]:
    """A question asking for a figure is answered by one first: when the first claim states
    none ("many employers pay a round sum mileage allowance, expressed as x pence per mile"),
    the best-scoring claim of the answer part that states one leads, if it reads on its own (a table
    row, or a rule's sentence: not a list item, a list intro, a sentence leaning on the one
    before it, nor a worked example or a signpost)."""
    if kind != "figure" or not claims or gives(kind, claims[0].text, checkable_facts(claims[0].text)) or withdraws(claims[0].text):
        return claims  # (a notice that the rule has ended is read first, figure or none)

    # each claim's units: those quoted in it
    units_of = [[u for u in chosen.values() if any(p.id in c.citations and part in c.text for p, part in u.parts)] for c in claims]

    def claim_reads_alone(claim: DraftSentence, units: list[Unit]) -> bool:
        if not units or any(u.example or u.aside for u in units):
            return False
        unit = units[0]
        text = claim.text.rstrip()
        return not computation_line(unit) if unit.row is not None else (text[:1].isupper() and unit.paragraph.kind != "li" and not DEPENDENT.search(text) and not text.endswith(":"))

    giving = [i for i, c in enumerate(claims) if gives(kind, c.text, checkable_facts(c.text)) and claim_reads_alone(c, units_of[i])]
    if not giving:
        return claims
    k = max(giving, key=lambda i: (max(u.score for u in units_of[i]), -i))  # the one scoring best for the question
    return [claims[k], *claims[:k], *claims[k + 1:]]


def stitch(query: Query, selection: SelectionResult, settings: Settings, carried_vector: list[float]) -> Draft:
    """The answer part: the best-scoring unit first (scored for the kind of thing the question
    asks), then what else scores near it, in the manual's order, within tuning.answer_claims claims and
    tuning.answer_words words; then the detail, the next units above the floor, so that the whole reply
    stays within tuning.reply_words."""
    tuning = settings.stitching.local
    vector = question_vector(CorpusIndex.open(settings, query.manual), query.question, carried_vector) if settings.retrieval.use_vectors else None
    units = score_units(query, selection, settings, vector)
    if not units:
        return Draft(sentences=[])
    ranked = sorted(units, key=lambda u: (-u.score, u.page_rank, u.order))
    page_best = best_per_page(units)
    position = {id(u): i for i, u in enumerate(units)}
    floor = tuning.relative_floor * ranked[0].score
    # A list intro whose items the chunk does not hold ("There are two main aspects to this:"
    # closing a chunk) never stands alone, nor does a list item or a broken line whose lead-in
    # or start the page does not give beside it (a chunk boundary fell between them): neither is quoted.
    ranked = [u for u in ranked if quotable(units, position[id(u)], tuning.list_items)]
    if not ranked:  # the pages say nothing but list intros: nothing to quote (the verifier refuses)
        return Draft(sentences=[])
    # a row keyed by the asker's own figure answers from whichever page holds its table
    ranked_answer = [u for u in ranked if u.page_rank < tuning.answer_pages or u.looked_up] or ranked
    # A unit longer than the answer's hard cap (a table cell holding a whole list) cannot be its
    # lead: it is left to the detail, which has room for it.
    ranked_answer = [u for u in ranked_answer if len(u.text.split()) <= tuning.answer_words_cap] or ranked_answer
    # The lead reads on its own: the best unit that does not lean on the sentence before it,
    # unless that one scores well below the best.
    standalone = next((u for u in ranked_answer if reads_alone(units, position[id(u)], tuning.list_items)), ranked_answer[0])
    if standalone.score >= tuning.lead_standalone * ranked_answer[0].score or ranked_answer[0].aside:  # an unasked example or a signpost never leads
        ranked_answer = [standalone, *(u for u in ranked_answer if u is not standalone)]

    # The answer quotes the lead's page and the pages whose best sentence competes with it;
    # the others' sentences are detail.
    quoted = competing_pages(page_best, ranked_answer[0].page_rank, tuning.page_compete, tuning.quoted_pages)
    # A signpost or a worked example nobody asked for is detail: the answer part states the rule.
    ranked_answer = [ranked_answer[0], *(u for u in ranked if u is not ranked_answer[0] and (u.page_rank in quoted or u.looked_up) and not u.aside)]

    # The lead: the best unit with what it needs beside it (a long rule may take the hard cap).
    lead_index, lead_page = position[id(ranked_answer[0])], ranked_answer[0].page_rank
    lead = [j for j in [lead_index, *context_of(units, lead_index, floor, tuning)] if units[j].row is None or j == lead_index]
    if _word_count(units[j] for j in lead) > tuning.answer_words_cap or len(claims_of({j: units[j] for j in lead})) > tuning.answer_claims:
        lead = _minimal_context(units, lead_index, tuning.answer_words_cap, tuning.list_items) or [lead_index]
    lead_part = {j: units[j] for j in lead}
    rest: dict[int, Unit] = {}

    def answer_size(extra: dict[int, Unit]) -> tuple[int, int]:
        claims = claims_of(lead_part) + claims_of({**rest, **extra})
        return len(claims), sum(len(c.text.split()) for c in claims)

    # The manual states a rule and then its conditions: the sentences right after the lead in
    # its chunk are weighed up for the answer part.
    after = max(lead_part)
    follows = {
        j for j in range(after + 1, min(after + 1 + tuning.following_units, len(units)))
        if units[j].page_rank == units[lead_index].page_rank and units[j].order[0] == units[lead_index].order[0]
    }

    def answer_score(u: Unit) -> float:
        return u.score * (tuning.following_factor if position[id(u)] in follows else 1.0)

    for unit in sorted(ranked_answer[1:], key=lambda u: -answer_score(u)):
        if answer_score(unit) < tuning.answer_floor * ranked_answer[0].score:
            break
        i = position[id(unit)]
        if i in lead_part or i in rest or repeats(unit, [*lead_part.values(), *rest.values()], tuning):
            continue
        if table_full(unit, [*lead_part.values(), *rest.values()], tuning):
            continue
        if unit.page_rank != lead_page and sum(u.page_rank == unit.page_rank for u in rest.values()) >= tuning.other_page_units:
            continue  # the lead's page states the rule; another page adds its one best statement
        _, words = answer_size({})
        if words >= tuning.answer_words:
            break
        for need in ([i, *context_of(units, i, floor, tuning)], _minimal_context(units, i, tuning.answer_words - words, tuning.list_items)):
            if need is None:
                continue
            extra = {j: units[j] for j in need if j not in lead_part}
            claims, total = answer_size(extra)
            if claims <= tuning.answer_claims and total <= tuning.answer_words:
                rest.update(extra)
                break
    # Each of the answer's pages says something in it (two pages on one rule are both quoted),
    # within the answer's size.
    for rank in sorted(quoted, key=lambda r: -page_best[r]):  # the page saying most first, while there is room
        if any(u.page_rank == rank for u in [*lead_part.values(), *rest.values()]):
            continue
        # (selection's first pages are quoted whatever their best unit scores; a page that only competes needs the floor)
        best = next((u for u in ranked if u.page_rank == rank and (u.score >= floor or rank < tuning.quoted_pages) and not u.aside), None)
        need = _minimal_context(units, position[id(best)], tuning.answer_words_cap, tuning.list_items) if best is not None else None
        if need is not None:
            extra = {j: units[j] for j in need if j not in lead_part}
            claims, total = answer_size(extra)
            # the first pages may take the hard cap (selection ranked them first); a page that
            # only competes comes in within the answer's usual size
            budget = tuning.answer_words_cap if rank < tuning.answer_pages else tuning.answer_words
            if claims <= tuning.answer_claims and total <= budget:
                rest.update(extra)
    # what the lead is read after: its list's intro, the sentence it leans on, the sentences
    # before it in its paragraph (a paragraph is quoted from where it starts to say it), and its
    # page's notice that the rule has ended (read before the rule as it stood)
    intro, leans = list_intro(units, lead_index), bool(DEPENDENT.search(units[lead_index].text))
    notice = ended_notice(units, lead_index) if units[lead_index].row is None else None
    start = min(
        j for j in lead
        if j >= lead_index or j in (intro, notice) or leans or units[j].last_paragraph.id == units[lead_index].paragraph.id
    )
    answer = figure_first(question_kind(query.question), without_lone_intros(items_joined(lead_first(lead_index, start, {**lead_part, **rest})), tuning.lead_in_words), {**lead_part, **rest})

    # The detail: the next units above its own floor with their context, the reply within
    # tuning.reply_words. It is collapsed until opened, so it may reach further down than the answer.
    detail_floor = tuning.detail_floor * ranked[0].score
    taken = {**lead_part, **rest}
    room = tuning.reply_words - sum(len(c.text.split()) for c in answer)
    detail: dict[int, Unit] = {}
    per_page: dict[int, int] = {}
    for unit in ranked:
        if unit.score < detail_floor or room <= 0:
            break
        i = position[id(unit)]
        if i in taken or i in detail or per_page.get(unit.page_rank, 0) >= tuning.detail_per_page or repeats(unit, [*taken.values(), *detail.values()], tuning):
            continue
        need = [j for j in [i, *context_of(units, i, floor, tuning)] if j not in taken and j not in detail]
        if any(units[j].row is None and units[j].text[:1].islower() and (list_intro(units, j) in taken or j - 1 in taken) for j in need):
            continue  # an item of a list, or the rest of a line, the answer part quotes: alone in the detail it reads as a fragment
        cost = _word_count(units[j] for j in need)
        if cost <= room:
            room -= cost
            per_page[unit.page_rank] = per_page.get(unit.page_rank, 0) + 1
            detail.update({j: units[j] for j in need})
    return Draft(sentences=answer + without_lone_intros(items_joined(claims_of(detail, role="detail")), tuning.lead_in_words))
