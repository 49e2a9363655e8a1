"""What a unit needs to be read right, and whether it can be quoted or open an answer: a list
item is never read without the sentence that introduces its list, a line the scrape broke off
never without the line it finishes, a list lead-in never without its items, a line of a worked
computation never at all; "This is taxable under ..." comes with the sentence it judges, and a
page that opens by saying its rule has ended is read with that notice. The answer part
(answer_part.py) and the detail (detail.py) quote a unit with what ``context_of`` or
``minimal_context`` puts beside it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from shared.config import LocalStitchingSettings
from services.text.tables import TERMINAL, rows_of
from services.text.units import (
    DEPENDENT, NOTE, SEE_NOTE, Unit, computation_line, ends_unfinished, introduces_list, list_items, opens_with_anaphor, withdraws,
)


def word_count(units: Iterable[Unit]) -> int:
    """The words of the units' texts together (what the answer's and the reply's sizes count)."""
    return sum(len(u.text.split()) for u in units)


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


def rest_of_line(units: list[Unit], i: int) -> int | None:
    """The unit that finishes unit ``i``'s sentence (the next one on its page, when ``i`` stops
    mid-sentence or the next reads as its rest), or None: a unit is never quoted without it."""
    j = i + 1
    if j >= len(units) or units[j].page_rank != units[i].page_rank or units[j].row is not None:
        return None
    return j if finishes_line(units, j) or ends_unfinished(units[i]) else None


def completed(units: list[Unit], chosen: list[int]) -> list[int]:
    """``chosen`` with the rest of every sentence in it that stops mid-line (a list item ending
    "..., or" brings the next; that one, ending "and", the one after)."""
    out, k = list(chosen), 0
    while k < len(out):
        rest = rest_of_line(units, out[k])
        if rest is not None and rest not in out:
            out.append(rest)
        k += 1
    return out


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
    if ends_unfinished(unit) and rest_of_line(units, i) is None:
        return False  # "Until 2005/06," closing its page: the rest of it is lost
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
    for j in (i - 1, i + 1):
        if not 0 <= j < len(units) or units[j].row is not None:
            continue
        neighbour = units[j]
        if j > i and (ends_unfinished(neighbour) or neighbour.text.rstrip().endswith(":")):
            continue  # it would end the quote mid-sentence, or on a lead-in whose items it leaves out
        same = neighbour.paragraph.id == unit.last_paragraph.id if j > i else neighbour.last_paragraph.id == unit.paragraph.id
        if not same:
            continue
        # "... bonus of £7,500. This is taxable under Section 62": the verdict on it
        if (j > i and opens_with_anaphor(neighbour.text)) or neighbour.score >= tuning.neighbour_floor * floor:
            out.append(j)
    return [j for j in completed(units, [i, *out]) if j != i]  # and never a quote stopping mid-sentence


def minimal_context(units: list[Unit], i: int, room: int, list_limit: int) -> list[int] | None:
    """The least a unit needs to be read right, within ``room`` words: a list intro with as many
    of its items as fit (none fitting: the intro is not quoted alone), a list item with its
    intro, a sentence opening "This"/"It" with the sentence before it, and the "This is
    taxable ..." after it when that fits too; None when it cannot fit."""
    unit = units[i]
    items = list_items(units, i, list_limit)
    if items:
        taken = [i]
        for j in items:
            if j in taken:
                continue  # an item the one before ("..., or") brought
            more = completed(units, [*taken, j])
            if word_count(units[k] for k in more) > room:
                break
            taken = more
        return taken if len(taken) > 1 else None
    need = [i]
    intro = list_intro(units, i) if unit.row is None and (unit.paragraph.kind == "li" or unit.text[:1].islower()) else None
    if intro is not None:
        need.append(intro)
    if unit.row is None and opens_with_anaphor(unit.text) and i > 0 and units[i - 1].last_paragraph.id == unit.paragraph.id:
        need.append(i - 1)
    elif intro is None and finishes_line(units, i):
        need.append(i - 1)  # the line it finishes
    need = completed(units, need)  # the rest of every sentence it quotes
    if word_count(units[k] for k in need) > room:
        return None
    verdict = i + 1  # "... a bonus of £7,500. This is taxable under Section 62": the verdict on it
    if verdict < len(units) and units[verdict].row is None and units[verdict].paragraph.id == unit.last_paragraph.id and opens_with_anaphor(units[verdict].text):
        if word_count(units[k] for k in [*need, verdict]) <= room:
            need.append(verdict)
    return need
