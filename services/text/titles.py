"""How nearly a question names what a page title names: the manual's authors title each page
with its subject, so a question whose words are a title's words, no more and no fewer, asks
about that page. Retrieval lists the pages so titled; selection ranks them up."""

from __future__ import annotations

from collections.abc import Iterable

from services.text.terms import CorpusStats, terms


def title_match(asked: set[str], title: str, stats: CorpusStats, frame: Iterable[str] = ()) -> float:
    """The idf-weighted share of the question's terms (``asked``) the title holds, times the
    share of the title's terms the question holds, the words that frame any question
    ("rules", "treatment") left out of both: 1 when the question restates the title, low when
    either says much the other does not (a long question, a title naming a narrower case)."""
    frame = set(frame)
    asked = {t for t in asked if t not in frame}
    named = {t for t in terms(title) if t not in frame}
    asked_weight = sum(stats.idf(t) for t in asked)
    named_weight = sum(stats.idf(t) for t in named)
    if asked_weight <= 0 or named_weight <= 0:
        return 0.0
    common = sum(stats.idf(t) for t in asked & named)
    return (common / asked_weight) * (common / named_weight)


class TitleIndex:
    """Every page title's terms, and the pages whose title holds each term (so a question is
    matched against the titles sharing a word with it, not all of them)."""

    def __init__(self, titles: dict[str, str]) -> None:
        self.titles = titles
        self.postings: dict[str, set[str]] = {}
        for section_id, title in titles.items():
            for t in terms(title):
                self.postings.setdefault(t, set()).add(section_id)

    def restated(self, asked: set[str], stats: CorpusStats, floor: float, frame: Iterable[str] = ()) -> list[tuple[str, float]]:
        """(section id, title match) of the pages whose title the question restates (a match
        of at least ``floor``), best first, ties in section order."""
        frame = set(frame)
        sharing = {s for t in asked - frame for s in self.postings.get(t, ())}
        scored = ((s, title_match(asked, self.titles[s], stats, frame)) for s in sharing)
        return sorted(((s, m) for s, m in scored if m >= floor), key=lambda x: (-x[1], x[0]))


_TITLES: dict[tuple[str, str], TitleIndex] = {}


def title_index(index) -> TitleIndex:  # noqa: ANN001  (a shared.index.CorpusIndex)
    """The manual's titles, indexed once per generation (pages without text left out: nothing to retrieve)."""
    key = (index.manual, str(index.generation))
    found = _TITLES.get(key)
    if found is None:
        found = _TITLES[key] = TitleIndex({s: p.title for s, p in index.pages.items() if p.chunk_ids})
    return found
