"""Small text helpers the stages share: terms, light stemming, sentence units, figures.

Deterministic, so the scope guard, selection, stitching and the verifier all see the same
words and the same numbers.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can cannot could did do does doing don't down during
    each either etc few for from further had has have having he her here hers herself him himself
    his how i i'd i'll i'm i've if in into is isn't it it's its itself just let's me might more most
    much must my myself no nor not now of off on once only or other ought our ours ourselves out
    over own per same shall she should so some such than that that's the their theirs them
    themselves then there there's these they they'd they're this those through thus to too under
    until up upon us very was wasn't we we'd we're we've were what what's when where whether which
    while who whom why will with within without won't would you you'd you're your yours yourself
    yourselves""".split()
)
# Words that make a sentence a question but carry no subject.
QUESTION_WORDS = frozenset(
    """anyone anything bit claim claiming currently else get getting give given go going got
    know like mean need needs ok okay one ones please possible really right said say says someone
    something still sure tell thing things think want way well whole work""".split()
)
NEGATIONS = frozenset({"not", "no", "never", "cannot", "nor", "none", "neither", "without"})

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits; apostrophes kept inside words)."""
    return _WORD.findall(text.lower().replace("\u2019", "'"))


@lru_cache(maxsize=1)
def _analyzer():  # noqa: ANN202  (a tantivy TextAnalyzer)
    # The same chain as the BM25 index (simple tokens, lowercase, English Porter stemmer), so
    # the stages weigh the words the keyword search matched on.
    import tantivy  # noqa: PLC0415

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


@lru_cache(maxsize=1)
def _stop_stems() -> frozenset[str]:
    return frozenset(_analyzer().analyze(" ".join(STOPWORDS)))


@lru_cache(maxsize=1)
def _question_stems() -> frozenset[str]:
    return frozenset(_analyzer().analyze(" ".join(QUESTION_WORDS))) | _stop_stems()


@lru_cache(maxsize=65536)
def _terms(text: str) -> tuple[str, ...]:
    stop = _stop_stems()
    return tuple(t for t in _analyzer().analyze(text.replace("\u2019", "'")) if len(t) > 1 and t not in stop)


def terms(text: str) -> list[str]:
    """Content terms: Porter-stemmed words without stop words (digits kept: '401', '2014')."""
    return list(_terms(text))


def query_terms(text: str) -> list[str]:
    """Terms of a question, without the words that only make it a question (order kept, unique)."""
    skip = _question_stems()
    return list(dict.fromkeys(t for t in _analyzer().analyze(text.replace("\u2019", "'")) if len(t) > 1 and t not in skip))


def has_negation(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("n't") for w in words(text))


# Sentence boundaries: end punctuation, then space, then something that starts a sentence.
# Abbreviations common in the manual ('s.', 'para.', 'e.g.', 'No.') are not boundaries.
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|etc|para|paras|s|ss|no|nos|art|reg|sch|v|vs|cf|ch|pt|para|mr|mrs|dr|st)\.$", re.I)
_BOUNDARY = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9\u00a3(\"'])")


def split_sentences(text: str) -> list[str]:
    """Split a paragraph's text into sentences (tables and lists are split by line first)."""
    out: list[str] = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        start = 0
        for m in _BOUNDARY.finditer(line):
            piece = line[start : m.start()]
            if _ABBREV.search(piece) or piece.endswith(";"):
                continue
            if piece.strip():
                out.append(piece.strip())
            start = m.end()
        if line[start:].strip():
            out.append(line[start:].strip())
    return out


# ---- figures: numbers, amounts, percentages, dates, tax years, section references ----

_MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}
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
  | (?P<sref>\b(?:sections?|ss?\.?)\s?(?P<snum>\d{1,4}[A-Z]{0,2})\b(?:\s?\((?P<sub>\d{1,2}[a-z]?)\))?)
  | (?P<date>\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?P<month>january|february|march|april|may|june|july|august|september|october|november|december)\s+(?P<year>\d{4})\b)
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
    'Section 401' -> 's401'. A claim is grounded iff its facts are a subset of its source's.
    """
    facts: set[str] = set()
    text = text.replace("\u00a0", " ").replace("&#xA3;", "\u00a3")
    if not _MAYBE_FACT.search(text):
        return frozenset()
    for m in _FACT.finditer(text):
        g = m.groupdict()
        if g["section"]:
            facts.add(re.sub(r"\s", "", g["section"]).upper())
        elif g["sref"]:
            facts.add("s" + g["snum"].upper())
        elif g["date"]:
            facts.add(f"{int(g['year']):04d}-{_MONTHS[g['month'].lower()]:02d}-{int(g['day']):02d}")
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


_YEAR_IN_TAXYEAR = re.compile(r"\b((?:19|20)\d{2})\s?[-/\u2013]\s?((?:19|20)?\d{2})\b")
_BARE_YEAR = re.compile(r"\b((?:19|20)\d{2})\b")


def years_named(text: str) -> list[tuple[int, bool]]:
    """Years a question names: (year, is_tax_year). A tax year '2025-26' gives (2025, True)."""
    found: list[tuple[int, bool]] = []
    spans: list[tuple[int, int]] = []
    for m in _YEAR_IN_TAXYEAR.finditer(text):
        y1, y2 = int(m.group(1)), int(m.group(2)[-2:])
        if (y1 + 1) % 100 == y2:
            found.append((y1, True))
            spans.append(m.span())
    for m in _BARE_YEAR.finditer(text):
        if not any(a <= m.start() < b for a, b in spans):
            found.append((int(m.group(1)), False))
    return found


# ---- corpus statistics (document frequencies over chunks), cached per index generation ----


_DEFINED = re.compile(r"\(([A-Z]{2,6})s?\)")
_LINKING = frozenset({"and", "of", "for", "the", "to", "in", "on", "a"})


def defined_acronyms(text: str) -> list[tuple[str, str]]:
    """(ACRONYM, long form) for each "long form (ACRONYM)" whose words' initials spell it,
    e.g. "PAYE settlement agreements (PSAs)", "Employment and Support Allowance (ESA)"."""
    out = []
    for m in _DEFINED.finditer(text):
        acronym = m.group(1)
        before = re.findall(r"[A-Za-z][\w'-]*", text[max(0, m.start() - 100) : m.start()])[-8:]
        letters, picked = list(acronym), []
        for word in reversed(before):
            if not letters:
                break
            if word.lower() in _LINKING and picked:
                picked.append(word)
                continue
            if word[0].upper() == letters[-1]:
                letters.pop()
                picked.append(word)
            else:
                break
        while picked and picked[-1].lower() in _LINKING:
            picked.pop()
        if not letters and len(picked) >= 2:
            out.append((acronym, " ".join(reversed(picked))))
    return out


class CorpusStats:
    """Chunk document frequencies of stemmed terms, and the manual's raw vocabulary."""

    def __init__(self, chunk_texts: list[str]) -> None:
        self.n = max(1, len(chunk_texts))
        self.df: dict[str, int] = {}
        vocab: set[str] = set()
        self.acronyms: dict[str, str] = {}  # "psa" -> "PAYE settlement agreement", as the manual defines them
        for text in chunk_texts:
            vocab.update(words(text))
            for t in set(terms(text)):
                self.df[t] = self.df.get(t, 0) + 1
            for acronym, phrase in defined_acronyms(text):
                self.acronyms.setdefault(acronym.lower(), phrase)
        self.vocab = frozenset(vocab)

    def synonyms(self, question: str) -> list[str]:
        """The manual's own other name for what a question names: the long form of an
        acronym it uses, the acronym of a long form it spells out."""
        found = []
        stemmed = " " + " ".join(terms(question)) + " "
        asked = set(words(question))
        for acronym, phrase in self.acronyms.items():
            if acronym in asked or acronym + "s" in asked:
                found.append(phrase)
            elif " " + " ".join(terms(phrase)) + " " in stemmed:  # "PAYE settlement agreement(s)"
                found.append(acronym)
        return found

    def idf(self, term: str) -> float:
        """BM25-style idf; 0 for a term the manual never uses (it can match nothing)."""
        df = self.df.get(term, 0)
        if df == 0:
            return 0.0
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))


_STATS: dict[tuple[str, str], CorpusStats] = {}


def corpus_stats(index) -> CorpusStats:  # noqa: ANN001  (a shared.index.CorpusIndex)
    key = (index.manual, str(index.generation))
    stats = _STATS.get(key)
    if stats is None:
        texts = [" ".join(c.heading_path[-3:]) + "\n" + c.text for c in index.chunks.values()]
        stats = _STATS[key] = CorpusStats(texts)
    return stats
