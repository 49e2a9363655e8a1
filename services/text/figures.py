"""Figures in text: numbers, amounts, percentages, dates, tax years and section references,
normalised so a claim and its cited text compare equal when they state the same figure."""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache

# The months as the manual writes them, and a pattern for any one of them (match with re.I).
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")
MONTH = rf"(?:{'|'.join(MONTHS)})"
_MONTH_NUMBER = {m: i for i, m in enumerate(MONTHS, 1)}
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_FACT = re.compile(
    r"""
    (?P<section>\b(?:EIM|BIM|SAM|NIM|ERSM|PIM|CG|SP)\s?\d{3,6}[A-Z]?\b)
  | (?P<act>\b(?P<actname>ITEPA|ICTA|TCGA|ITTOIA|ITA|CTA|TMA|SSCBA|FA|Act|Regulations|Order)[ \t]?(?P<actyear>(?:19|20)\d{2})\b(?!\s?[-/\u2013]\s?\d))
  | (?P<sref>\b(?:sections?|ss?\.?)\s?(?P<snum>\d{1,4}[A-Z]{0,2})\b(?:\s?\((?P<sub>\d{1,2}[a-z]?)\))?)
  | (?P<date>\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?P<month>""" + MONTH + r""")\s+(?P<year>\d{4})\b)
  | (?P<ddate>\b(?P<dd>\d{1,2})[./](?P<mm>\d{1,2})[./](?P<yy>\d{2,4})\b)
  | (?P<taxyear>\b(?P<ty1>(?:19|20)\d{2})\s?[-/\u2013]\s?(?P<ty2>(?:19|20)?\d{2})\b)
  | (?P<percent>\b(?P<pnum>\d+(?:\.\d+)?|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty)\s?(?:%|per\s?cent\b|percent\b))
  | (?P<money>(?:\u00a3\s?)(?P<mnum>\d[\d,]*(?:\.\d+)?)(?P<mult>\s?(?:k|m|bn|million|billion)\b)?)
  | (?P<pence>(?<![\d.,_])(?<![a-oq-z])(?P<pnum2>\d+(?:\.\d+)?)p(?![a-z]))
  | (?P<fraction>\b\d+/\d+\b)
  | (?P<number>(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?(?P<nmult>k\b)?)
    """,
    re.I | re.X,
)


# Cheap pre-check: every fact has a digit, a section prefix or a spelled-out percentage.
_MAYBE_FACT = re.compile(r"\d|per\s?cent|percent", re.I)


def _plain(num: str) -> str:
    num = num.replace(",", "")
    if "." in num:
        num = num.rstrip("0").rstrip(".")
    return num.lstrip("0") or "0"


def _scaled(num: str, mult: str | None) -> str:
    if not mult:
        return _plain(num)
    factor = {"k": 1_000, "m": 1_000_000, "million": 1_000_000, "bn": 1_000_000_000, "billion": 1_000_000_000}
    value = float(num.replace(",", "")) * factor[mult.strip().lower()]
    return _plain(f"{value:.2f}")


@lru_cache(maxsize=65536)
def checkable_facts(text: str) -> frozenset[str]:
    """The figures a claim must share with its cited text, normalised.

    '£5,000' and '5,000' -> '5000'; '£30k' -> '30000'; '45p' -> '45p'; '21%' and
    '21 per cent' -> '21%'; '6 April 2011' and '6.4.2011' -> '2011-04-06';
    '2014/15' and '2014-15' -> '2014-15'; 'EIM31240' -> 'EIM31240'; 's401' and
    'Section 401' -> 's401'; 'ITEPA 2003' -> 'ITEPA 2003' (a statute, not the number 2003).
    A claim is grounded iff its facts are a subset of its source's.
    """
    facts: set[str] = set()
    text = text.replace("\u00a0", " ").replace("&#xA3;", "\u00a3")
    if not _MAYBE_FACT.search(text):
        return frozenset()
    for m in _FACT.finditer(text):
        g = m.groupdict()
        if g["section"]:
            facts.add("".join(g["section"].split()).upper())
        elif g["act"]:
            facts.add(f"{g['actname'].upper()} {g['actyear']}")  # a statute's year names the statute, it is no figure
        elif g["sref"]:
            facts.add("s" + g["snum"].upper())
        elif g["date"]:
            facts.add(f"{int(g['year']):04d}-{_MONTH_NUMBER[g['month'].lower()]:02d}-{int(g['day']):02d}")
        elif g["ddate"]:
            yy = int(g["yy"])
            yy = yy + 2000 if yy < 100 else yy
            dd, mm = int(g["dd"]), int(g["mm"])
            if 1 <= mm <= 12 and 1 <= dd <= 31:
                facts.add(f"{yy:04d}-{mm:02d}-{dd:02d}")
            else:
                facts.add(m.group(0))
        elif g["taxyear"]:
            y1 = int(g["ty1"])
            y2 = int(g["ty2"][-2:])
            if (y1 + 1) % 100 == y2:
                facts.add(f"{y1}-{y2:02d}")
            else:  # a range like '2002-2010' or '76-79': keep both ends as numbers
                facts.add(str(y1))
                facts.add(_plain(g["ty2"]))
        elif g["percent"]:
            num = g["pnum"].lower()
            num = str(_NUMBER_WORDS[num]) if num in _NUMBER_WORDS else _plain(num)
            facts.add(num + "%")
        elif g["money"]:
            facts.add(_scaled(g["mnum"], g["mult"]))
        elif g["pence"]:
            facts.add(_plain(g["pnum2"]) + "p")
        elif g["fraction"]:
            facts.add(m.group(0))
        elif g["number"]:
            facts.add(_scaled(m.group(0)[:-1] if g["nmult"] else m.group(0), g["nmult"]))
    return frozenset(facts)


# A year or a span of years as people write them ("2013", "2013-14", "2013/2014").
YEAR_OR_SPAN = re.compile(r"\b(?:19|20)\d{2}(?:\s*[-/]\s*(?:19|20)?\d{2})?\b")
# A span of two years as the manual writes a tax year ("2013-14", "2013/2014"); a table's key
# cell read with ``match`` is one when the second year follows the first.
TAX_YEAR = re.compile(r"\b((?:19|20)\d{2})\s?[-/\u2013]\s?((?:19|20)?\d{2})\b")
_BARE_YEAR = re.compile(r"\b((?:19|20)\d{2})\b")


def years_named(text: str) -> list[tuple[int, bool]]:
    """Years a question names: (year, is_tax_year). A tax year '2025-26' gives (2025, True)."""
    found: list[tuple[int, bool]] = []
    spans: list[tuple[int, int]] = []
    for m in TAX_YEAR.finditer(text):
        y1, y2 = int(m.group(1)), int(m.group(2)[-2:])
        if (y1 + 1) % 100 == y2:
            found.append((y1, True))
            spans.append(m.span())
    for m in _BARE_YEAR.finditer(text):
        if not any(a <= m.start() < b for a, b in spans):
            found.append((int(m.group(1)), False))
    return found


def period_start(year: int, tax_year: bool) -> date:
    """The first day of a year as ``years_named`` gives it: 6 April for a tax year, else 1 January."""
    return date(year, 4, 6) if tax_year else date(year, 1, 1)


# A normalised fact (``checkable_facts``) that is a year, a tax year or a date: "2013",
# "2013-14", "2013-04-06" (``dated_fact``).
_DATED_FACT = re.compile(r"\d{4}(?:-(\d{2})(-\d{2})?)?")


def dated_fact(fact: str) -> str | None:
    """What kind of dated fact ``fact`` is: "year" ("2013"), "tax_year" ("2013-14"), "date"
    ("2013-04-06"), or None for any other fact."""
    m = _DATED_FACT.fullmatch(fact)
    if m is None:
        return None
    return "date" if m.group(2) else "tax_year" if m.group(1) else "year"
