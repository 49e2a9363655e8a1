"""How chosen units become claims, and in what order: consecutive sentences of one paragraph
make one claim citing it, a list's lead-in and its quoted items one claim, a table row or a
heading one claim each; the answer part's claims start with the lead, then its page's, then the
other pages' best first, each in the manual's order (a list's items best first after their
lead-in); a figure question's answer opens with a claim that states a figure and reads alone."""

from __future__ import annotations

import re

from shared.contracts.api import ClaimRole
from shared.contracts.corpus import ITEM_LABEL, section_of
from shared.contracts.pipeline import DraftSentence
from services.providers.local.readable import finishes
from services.text.figures import checkable_facts
from services.text.question import QuestionKind
from services.text.units import DEPENDENT, Unit, computation_line, ends_unfinished, gives, introduces_list, withdraws


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

def best_per_page(units: list[Unit]) -> dict[int, float]:
    """Each page's best unit score (pages by their selection rank)."""
    best: dict[int, float] = {}
    for unit in units:
        best[unit.page_rank] = max(best.get(unit.page_rank, 0.0), unit.score)
    return best


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
    order (a computation's steps), and so does a list whose items run on into each other ("...,
    or" / "... and"): reordered, it would end mid-sentence."""
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
        if any(_ENUMERATED.match(chosen[g[0]].text) for g in groups) or any(ends_unfinished(chosen[g[-1]]) for g in groups[:-1]):
            out += [j for g in groups for j in g]  # steps, or items joined by their "and"/", or": in their order
        else:
            out += [j for g in sorted(groups, key=lambda g: -max(chosen[j].score for j in g)) for j in g]
    return out


def units_quoted_in(claim: DraftSentence, chosen: dict[int, Unit]) -> list[Unit]:
    """The chosen units a claim quotes: those with a part of their text under one of its citations."""
    return [u for u in chosen.values() if any(p.id in claim.citations and part in claim.text for p, part in u.parts)]


def claim_can_lead(claim: DraftSentence, units: list[Unit]) -> bool:
    """Whether a claim (quoting ``units``) reads on its own at the head of the answer: a table
    row that is no line of a worked computation, or a rule's sentence: not a list item, a list
    intro, a sentence leaning on the one before it, nor a worked example or a signpost."""
    if not units or any(u.example or u.aside for u in units):
        return False
    first = units[0]
    text = claim.text.rstrip()
    if first.row is not None:
        return not computation_line(first)
    return text[:1].isupper() and first.paragraph.kind != "li" and not DEPENDENT.search(text) and not text.endswith(":")


def figure_first(kind: QuestionKind, claims: list[DraftSentence], chosen: dict[int, Unit]) -> list[DraftSentence]:
    """A question asking for a figure is answered by one first: when the first claim states
    none ("many employers pay a round sum mileage allowance, expressed as x pence per mile"),
    the answer part's claim quoting a rate question's row, or else its best-scoring claim that
    states one, leads, if it reads on its own (``claim_can_lead``)."""
    if kind != "figure" or not claims or gives(kind, claims[0].text, checkable_facts(claims[0].text)) or withdraws(claims[0].text):
        return claims  # (a notice that the rule has ended is read first, figure or none)
    quoted = [units_quoted_in(c, chosen) for c in claims]
    giving = [i for i, c in enumerate(claims) if gives(kind, c.text, checkable_facts(c.text)) and claim_can_lead(c, quoted[i])]
    if not giving:
        return claims
    # a rate question's row first (the rate for its case), else the one scoring best for the question
    k = max(giving, key=lambda i: (any(u.rate_row for u in quoted[i]), max(u.score for u in quoted[i]), -i))
    return [claims[k], *claims[:k], *claims[k + 1:]]
