"""The stitching stage's marks: a provider's own marks stand; the claims it left unmarked (a
provider without a passage ranker) are marked by their page's probability."""

from __future__ import annotations

from services.stages.stitching import mark_relevance
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, SelectionResult


def _selection(threshold: float | None) -> SelectionResult:
    pages = [PageBundle(section_id="EIM1", score=0.6, chunks=[]), PageBundle(section_id="EIM2", score=0.1, chunks=[])]
    return SelectionResult(pages=pages, answering_threshold=threshold)


def _draft() -> Draft:
    return Draft(
        sentences=[
            DraftSentence(text="Marked by the provider.", citations=["EIM2#c0.p0"], relevance="answering", confidence=0.9),
            DraftSentence(text="Unmarked, from the likely page.", citations=["EIM1#c0.p0"]),
            DraftSentence(text="Unmarked, from the unlikely page.", citations=["EIM2#c0.p1"]),
            DraftSentence(text="Detail.", citations=["EIM1#c0.p1"], role="detail"),
        ]
    )


def test_unmarked_answer_claims_take_their_page_probability_and_provider_marks_stand() -> None:
    draft = _draft()
    mark_relevance(draft, _selection(threshold=0.3))
    assert [(s.relevance, s.confidence) for s in draft.sentences] == [("answering", 0.9), ("answering", 0.6), ("background", 0.1), (None, None)]


def test_without_a_page_ranker_nothing_is_marked() -> None:
    draft = _draft()
    mark_relevance(draft, _selection(threshold=None))
    assert [s.relevance for s in draft.sentences] == ["answering", None, None, None]
