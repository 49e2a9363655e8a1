"""Tables: rows rendered as sentences with their column headers, and the row a question's
own figure or date looks up (142 g/km -> the 140 row); amounts and figures in text."""

from __future__ import annotations

import re
from datetime import date

from shared.contracts.corpus import Chunk, Paragraph
from shared.contracts.question import Measure
from services.text.figures import MONTH, MONTHS, TAX_YEAR, period_start, years_named
from services.text.terms import same_word, terms, words


TERMINAL = re.compile(r"[.!?:;]['\")\u201d\u2019]*$")


_DATE_CELL = re.compile(r"^(\d{1,2})[./](\d{1,2})[./](\d{4})\b")
# "6 April 2010 - 5 April 2011", "From 1 January 2004", "January 2004 - ...", "2008/09", "2011-12 onwards"
_WORDED_DATE = re.compile(rf"\b(?:(\d{{1,2}})\s+)?({MONTH})\s+((?:19|20)\d{{2}})\b", re.I)


def _worded_date(m: re.Match[str]) -> date | None:
    try:
        return date(int(m.group(3)), MONTHS.index(m.group(2).lower()) + 1, int(m.group(1) or 1))
    except ValueError:
        return None


def _cell_date(cell: str) -> date | None:
    """The date a table's key cell starts its period on: "6.4.2013", "6 April 2010 - 5 April
    2011", "January 2004", or a tax year "2008/09" (its 6 April); None for any other key."""
    text = cell.strip()
    try:
        if m := _DATE_CELL.match(text):
            return date(int(m.group(3)), int(m.group(2)), int(m.group(1)))
        if m := _WORDED_DATE.match(text[5:] if text.lower().startswith("from ") else text):
            return _worded_date(m)
    except ValueError:
        return None
    if (m := TAX_YEAR.match(text)) and (int(m.group(1)) + 1) % 100 == int(m.group(2)[-2:]):
        return period_start(int(m.group(1)), tax_year=True)
    return None


# The units the manual keys its tables by, as a question or a key column's header writes them.
_UNIT = re.compile(r"g\s?/\s?km|grams? per kilomet(?:re|er)|cc|cubic centimet(?:re|er)s?|km|kilomet(?:re|er)s?|miles?", re.I)
_UNIT_NAMES = {"g": "g/km", "c": "cc", "k": "km", "m": "miles"}


def _unit(text: str) -> str:
    return _UNIT_NAMES[text[0].lower()] if text else ""


def key_unit(header: str) -> str:
    """The unit a table's key column names in its header ('CO2 emissions (g/km)', 'Engine
    Size (cc)'), '' when it names none."""
    m = re.search(rf"\(\s*({_UNIT.pattern})\s*\)", header.split("|")[0], re.I)
    return _unit(m.group(1)) if m else ""


def lookup_rows(rows: list[str], numbers: list[Measure], when: date | None = None) -> set[int]:
    """Rows of a table keyed by a number (or range) in the first cell that a number in the
    question falls in, or the last key at or below it (tables list bands in ascending order);
    in a table of periods keyed by start dates, the period the question's date falls in. A
    number whose unit differs from the one the key column names is no key to it: 70 g/km is not
    looked up in the engine sizes' '0 to 1,400' (cc) row."""
    picked: set[int] = set()
    starts = [(_cell_date(row.split("|")[0]), i) for i, row in enumerate(rows) if i]
    if when is not None:
        started = [(d, i) for d, i in starts if d is not None and d <= when]
        if started:
            picked.add(max(started)[1])
    if any(d is not None for d, _ in starts):
        return picked  # dates are not numeric bands
    unit = key_unit(rows[0]) if rows else ""
    for value, asked_unit in numbers:
        if unit and asked_unit and asked_unit != unit:
            continue
        best, best_key = None, None
        for i, row in enumerate(rows):
            first = row.split("|")[0].strip()
            nums = [float(m.group(1)) for m in _MEASURE.finditer(first.replace(",", ""))] if first[:1].isdigit() else []
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


# Amounts, tax years and dates in a question are not the plain numbers a table is keyed by.
# (a number with thousands commas is an amount, unless a unit follows it: '1,800cc' is a key)
_NOT_A_KEY = re.compile(
    rf"\u00a3\s?[\d,.]+k?|\b(?:19|20)\d{{2}}\s?[-/\u2013]\s?\d{{2,4}}\b|\b\d{{1,2}}[./]\d{{1,2}}[./]\d{{2,4}}\b|\d[\d,]*,\d{{3}}(?!\s?(?:{_UNIT.pattern})\b)",
    re.I,
)


# A number and the unit written after it, if any ("142g/km", "1,800 cc", "10,000"): a key
# cell's numbers (its commas taken out) or a question's.
_MEASURE = re.compile(rf"(\d{{1,3}}(?:,\d{{3}})+|\d+(?:\.\d+)?)(?:\s?({_UNIT.pattern})\b)?", re.I)


def lookup_numbers(question: str) -> list[Measure]:
    """Plain numbers in a question that a table might be keyed by (not amounts, years or
    dates, not tiny), with their units: '142g/km' -> 142 g/km."""
    found = (Measure(float(m.group(1).replace(",", "")), _unit(m.group(2) or "")) for m in _MEASURE.finditer(_NOT_A_KEY.sub(" ", question)))
    return [m for m in found if 10 <= m.value < 1900]


def lookup_date(question: str) -> date | None:
    """The date a question asks about, for tables of periods: the latest date it names in words
    ("back in December 2006"), else the start of the latest tax year (or calendar year) it names."""
    worded = [d for m in _WORDED_DATE.finditer(question) if (d := _worded_date(m))]
    if worded:
        return max(worded)
    named = years_named(question)
    if not named:
        return None
    year, tax_year = max(named)
    return period_start(year, tax_year)


def rows_of(paragraph: Paragraph) -> list[str]:
    return [r for r in paragraph.text.splitlines() if r.strip()]


def _lower_first(text: str) -> str:
    """'Business miles' -> 'business miles'; an acronym or a reference ('PAYE', 'EIM13505') stays."""
    return text[:1].lower() + text[1:] if text[:2].istitle() or (len(text) == 1 and text.isupper()) else text


_DATA_CELL = re.compile(r"^\(?[\u00a3$]?\s?[\d,.]+\s?(?:%|p)?\)?$|\u00a3\s?\d")


def has_header(rows: list[str]) -> bool:
    """Whether a table's first row names its columns: not when one of its cells is an amount
    ("cost of whole premises | 300,000"), as in the manual's worked computations, nor when the
    table has one column (EIM50051 sets out the pilots' deductions as lines joined by "plus":
    its first line, the £1022 FRE, is a statement like the others)."""
    return len(rows) > 1 and any("|" in r for r in rows) and not any(_DATA_CELL.search(c.strip()) for c in rows[0].split("|")[1:])


def header_rows(rows: list[str]) -> tuple[str, int]:
    """A table's header as one row, and how many rows it takes: a second row with no label
    and no figures names the columns under the first one's spans (EIM06240's "Maximum rate
    (\u00a3)" over "Yearly | Monthly | Weekly"), so each column is headed by both, a span's
    blank cells taking the name written before them."""
    if not has_header(rows):
        return "", 0
    top, sub = rows[0].split("|"), rows[1].split("|") if len(rows) > 2 else []
    if not top[0].strip() or len(sub) != len(top) or sub[0].strip() or not any(c.strip() for c in sub[1:]) or any(_DATA_CELL.search(c.strip()) for c in sub[1:]):
        return rows[0], 1
    heads, span = [top[0].strip()], ""
    for upper, lower in zip(top[1:], sub[1:], strict=True):
        span = upper.strip() or span
        heads.append(" ".join(x for x in (span, _lower_first(lower.strip())) if x))
    return " | ".join(heads), 2


def states_nothing(row: str) -> bool:
    """A row of a table with columns whose cells beside its label are all blank: EIM24705's
    "1-75 (unrounded) | | | |" gives no percentage (those cars' rates are on another page), so
    it is no answer to a question the label matches."""
    cells = row.split("|")
    return len(cells) > 1 and not any(c.strip() for c in cells[1:])


def render_row(header: str, row: str, short_cell_words: int) -> str:
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
        short = len(cell.split()) <= short_cell_words
        said.append(f"{_lower_first(head)}{' ' if short else ': '}{_lower_first(cell) if short else cell}" if head else cell)
    if not said:
        return cells[0]
    rest = ("; " if any(":" in x for x in said) else ", ").join(said)
    if TERMINAL.search(cells[0]):  # a label that is a sentence of its own ("The employer pays the hospital."): the cells follow as the next
        return f"{cells[0]} {rest[:1].upper()}{rest[1:]}" + ("" if TERMINAL.search(rest) else ".")
    text = (f"{cells[0]}: " if cells[0] else "") + rest
    return text if TERMINAL.search(text) else text + "."


def continue_row(rendered: str, row: str) -> str:
    """A row rendered as a sentence, carried on by the next row under the same label (the
    scrape's "First 10,000After that | 45p25p" split back into two rows): "Car or van: business
    miles first 10,000, 2011-12 onwards 45p; after that 25p." One claim keeps the pair whose
    second half means nothing without the first."""
    said = " ".join(_lower_first(c.strip()) for c in row.split("|")[1:] if c.strip())
    if not said:
        return rendered
    return f"{rendered.rstrip('.')}; {said}" + ("" if TERMINAL.search(said) else ".")


_BAND = re.compile(r"\b(\d+(?:\.\d+)?)\s?[-\u2013]\s?(\d+(?:\.\d+)?)\b")


def title_covers(title: str, numbers: list[Measure], when: date | None) -> bool:
    """Whether a page title states the period or the band the asker's own date or figure falls
    in, and none that it falls outside: the manual titles pages by the years and bands they
    apply to ('Step 5, 2012/13 to 2014/15: cars with CO2 emissions between 1-75 g/km' for a
    70 g/km car in 2013-14), as its tables key their rows."""
    checks = []
    named = sorted({period_start(y, tax) for y, tax in years_named(title)})
    if when is not None and len(named) >= 2:  # a period from one year to another ('2008/09 onwards' names no end)
        checks.append(named[0] <= when <= named[-1])
    bands = [(float(a), float(b)) for a, b in _BAND.findall(_NOT_A_KEY.sub(" ", title))]
    if numbers and bands:
        checks.append(any(low <= n.value <= high for n in numbers for low, high in bands))
    return bool(checks) and all(checks)


# A title that bounds its rule's period by an end tax year ("Van benefit to 2004/05", "2002/03
# to 2010/11", "years prior to 2011/12", "up to and including 2005/06"): the manual titles its
# current rules "from"/"onwards", and keeps the ended ones for earlier years. An event's date
# ("shares acquired before 16 April 2003") says which cases a rule covers, not when it ended.
_ENDED = re.compile(r"\b(?:to|prior to|up to and including)\s+(?:19|20)\d{2}\s?[/-]\s?\d{2}\b|\bto 5 April (?:19|20)\d{2}\b", re.I)


def title_ended(title: str) -> bool:
    """Whether a page title says its rule applied only up to a year that has ended."""
    return bool(_ENDED.search(title))


def table_lookup(chunk: Chunk, numbers: list[Measure], when: date | None = None) -> bool:
    return any(p.kind == "table" and lookup_rows(rows_of(p), numbers, when) for p in chunk.paragraphs)


# Whether a table row's label (its first cell) names what is asked: read as terms, or as one word.
def names_row(weights: dict[str, float], row: str) -> bool:
    """Whether a table row's label is made of the question's own terms (``weights``)."""
    label = [t for t in terms(row.split("|")[0]) if not t[0].isdigit()]
    return bool(label) and all(t in weights for t in label)


def names_row_as_word(new_terms: set[str], row: str) -> bool:
    """Whether a table row's label, read as one word ('Motor cycle' -> 'motorcycle'), is one
    of ``new_terms`` (a follow-up's own): 'bicycle' names the 'Cycle' row, not the 'Motor
    cycle' one."""
    whole = terms("".join(words(row.split("|")[0])))
    return bool(whole) and any(same_word(t, whole[0]) for t in new_terms)


def is_figure(fact: str) -> bool:
    return fact[-1] in "%p" or (fact.replace(".", "").isdigit() and len(fact) >= 2)
