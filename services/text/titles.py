"""How nearly a question names what a page title names: the manual's authors title each page
with its subject, so a question whose words are a title's words, no more and no fewer, asks
about that page. Retrieval lists the pages so titled; selection ranks them up."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from services.text.terms import CorpusStats, terms

# Words that frame a question about any subject, not the subject itself.
FRAME_WORDS = frozenset(terms("rules rule guidance treatment position law laws regulations explain meaning"))


def _weights(found: Iterable[str], stats: CorpusStats, frame: frozenset[str]) -> dict[str, float]:
    return {t: stats.idf(t) for t in found if t not in frame}


def _match(asked: Mapping[str, float], named: Mapping[str, float]) -> float:
    asked_weight, named_weight = sum(asked.values()), sum(named.values())
    if asked_weight <= 0 or named_weight <= 0:
        return 0.0
    common = sum(w for t, w in asked.items() if t in named)
    return (common / asked_weight) * (common / named_weight)


def title_match(asked: set[str], title: str, stats: CorpusStats, frame: Iterable[str] = ()) -> float:
    """The idf-weighted share of the question's terms (``asked``) the title holds, times the
    share of the title's terms the question holds, the words that frame any question
    ("rules", "treatment") left out of both: 1 when the question restates the title, low when
    either says much the other does not (a long question, a title naming a narrower case)."""
    frame = frozenset(frame)
    return _match(_weights(asked, stats, frame), _weights(terms(title), stats, frame))


class TitleIndex:
    """Every page title's weighted terms, and the pages whose title holds each term (a
    question is matched against the titles sharing a word with it, not all of them)."""

    def __init__(self, titles: dict[str, str], stats: CorpusStats, frame: frozenset[str]) -> None:
        self.stats, self.frame = stats, frame
        self.named = {section_id: _weights(terms(title), stats, frame) for section_id, title in titles.items()}
        self.postings: dict[str, list[str]] = {}
        for section_id, named in self.named.items():
            for t in named:
                self.postings.setdefault(t, []).append(section_id)

    def weigh(self, asked: set[str]) -> dict[str, float]:
        """The question's terms weighted as the titles' are (``match`` takes them)."""
        return _weights(asked, self.stats, self.frame)

    def match(self, weights: Mapping[str, float], section_id: str) -> float:
        """``title_match`` of the weighted question (``weigh``) against one page's title."""
        return _match(weights, self.named.get(section_id, {}))

    def restated(self, asked: set[str], floor: float) -> list[tuple[str, float]]:
        """(section id, title match) of the pages whose title the question restates (a match
        of at least ``floor``), best first, ties in section order."""
        weights = self.weigh(asked)
        sharing = {s for t in weights for s in self.postings.get(t, ())}
        scored = ((s, _match(weights, self.named[s])) for s in sharing)
        return sorted(((s, m) for s, m in scored if m >= floor), key=lambda x: (-x[1], x[0]))


_TITLES: dict[tuple[str, str, frozenset[str]], TitleIndex] = {}


def title_index(index, stats: CorpusStats, frame: frozenset[str]) -> TitleIndex:  # noqa: ANN001  (a shared.index.CorpusIndex)
    """The manual's titles, indexed once per generation (pages without text left out: nothing to retrieve)."""
    key = (index.manual, str(index.generation), frame)
    found = _TITLES.get(key)
    if found is None:
        found = _TITLES[key] = TitleIndex({s: p.title for s, p in index.pages.items() if p.chunk_ids}, stats, frame)
    return found
