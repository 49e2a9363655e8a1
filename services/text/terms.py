"""Words and terms the stages share: tokens, Porter-stemmed content terms, negation, and the
manual's own statistics (document frequencies, the acronyms it defines).

Deterministic, so the scope guard, selection, stitching and the verifier all see the same
words, stemmed by the keyword search's own chain (shared/analysis.py).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from shared.analysis import english_analyzer
from shared.heap import paused

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


MIN_STEM = 4  # a manual word shorter than this is too common to be the tail of a compound


def same_word(asked: str, stated: str) -> bool:
    """The asker's word and the manual's are the same thing: equal, or the asker's word is a
    compound ending in the manual's ('bicycle' -> the manual's 'cycle')."""
    return asked == stated or (len(stated) >= MIN_STEM and len(asked) > len(stated) + 1 and asked.endswith(stated))


# Words that point back to something named earlier: pronouns, among them those that stand for
# what an earlier part or turn asked about ("is that taxable?", "can I apply for it?":
# ``refers``), and, more weakly, the definite article (it often names its own subject: "the van
# benefit charge"). Each match is one whole word.
_POINTING = re.compile(
    r"\b(?:(?P<refers>that|this|these|those|it|them)|(?P<pronoun>its|it's|they|their|one|ones|there|such)|(?P<definite>the))\b", re.I
)


def pointing_words(text: str) -> set[str]:
    """The kinds of word in ``text`` that point back: "refers" (that, this, these, those, it,
    them), "pronoun" (any pronoun, those included) and "definite" (the)."""
    found: set[str] = set()
    for m in _POINTING.finditer(text):
        kind = m.lastgroup or ""
        found.update(("refers", "pronoun") if kind == "refers" else (kind,))
    return found


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits; apostrophes kept inside words)."""
    return _WORD.findall(text.lower().replace("\u2019", "'"))


@lru_cache(maxsize=1)
def _analyzer():  # noqa: ANN202  (a tantivy TextAnalyzer)
    # The BM25 index's chain, so the stages weigh the words the keyword search matched on; the
    # stop words are dropped after stemming here (see shared/analysis.py for why).
    return english_analyzer(drop_stopwords=False)


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


# ---- corpus statistics (document frequencies over chunks), cached per index generation ----


_DEFINED = re.compile(r"\(([A-Z]{2,6})s?\)")
_LINKING = frozenset({"and", "of", "for", "the", "to", "in", "on", "a"})


def defined_acronyms(text: str, linking_letters: bool = False) -> list[tuple[str, str]]:
    """(ACRONYM, long form) for each "long form (ACRONYM)" whose words' initials spell it,
    e.g. "PAYE settlement agreements (PSAs)", "Employment and Support Allowance (ESA)";
    with ``linking_letters``, a linking word may give its letter too ("benefit in kind (BIK)",
    as askers write them)."""
    out = []
    for m in _DEFINED.finditer(text):
        acronym = m.group(1)
        before = re.findall(r"[A-Za-z][\w'-]*", text[max(0, m.start() - 100) : m.start()])[-8:]
        letters, picked = list(acronym), []
        for word in reversed(before):
            if not letters:
                break
            if word.lower() in _LINKING and picked and not (linking_letters and word[0].upper() == letters[-1]):
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


# A name of two or more capitalised words, with linking words between: "Electrical
# Contractors' Association", "Joint Industry Board for the Electrical Contracting Industry".
_NAME = re.compile(r"[A-Z][\w'\u2019-]*(?:\s+(?:(?:and|of|for|the)\s+)*[A-Z][\w'\u2019-]*)+")


def name_initials(text: str) -> set[str]:
    """The initials of each name of two or more capitalised words, lower case, with any
    leading capitalised words dropped ("The Electrical Contractors' Association" -> teca,
    eca, ca: a sentence's first word is capitalised too): the acronyms a question may use
    for a body or scheme the manual only ever names in full."""
    found = set()
    for m in _NAME.finditer(text):
        capitals = "".join(w[0].lower() for w in m.group(0).split() if w[0].isupper())
        found.update(capitals[i:] for i in range(len(capitals) - 1))
    return found


class CorpusStats:
    """Chunk document frequencies of stemmed terms, the manual's raw vocabulary, and the
    initials of the names it spells out."""

    def __init__(self, chunk_texts: list[str]) -> None:
        self.n = max(1, len(chunk_texts))
        self.df: dict[str, int] = {}
        vocab: set[str] = set()
        self.acronyms: dict[str, str] = {}  # "psa" -> "PAYE settlement agreement", as the manual defines them
        initials: set[str] = set()
        for text in chunk_texts:
            vocab.update(words(text))
            initials |= name_initials(text)
            for t in set(terms(text)):
                self.df[t] = self.df.get(t, 0) + 1
            for acronym, phrase in defined_acronyms(text):
                self.acronyms.setdefault(acronym.lower(), phrase)
        self.vocab = frozenset(vocab)
        self.initials = frozenset(initials)

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
        with paused():  # the first read of every chunk parses it (shared/generation.py ChunkFile)
            texts = [" ".join(c.heading_path[-3:]) + "\n" + c.text for c in index.chunks.values()]
            stats = _STATS[key] = CorpusStats(texts)
    return stats
