"""One analyzer chain for the BM25 store and the stages: the same tokens and stems, the store
alone dropping stop words before stemming."""

from __future__ import annotations

from pathlib import Path

from shared.analysis import english_analyzer
from shared.stores.bm25 import TantivyBm25Store

TEXT = "The employer's 2014-15 benefits: paid to the Employees who were cycling (s401) \u00a35,000"


def test_the_store_indexes_with_the_stop_dropping_chain(tmp_path: Path) -> None:
    store = TantivyBm25Store(tmp_path / "bm25")
    assert store.analyze(TEXT) == list(english_analyzer(drop_stopwords=True).analyze(TEXT))


def test_both_chains_tokenise_and_stem_alike_and_differ_only_by_stop_words() -> None:
    kept = list(english_analyzer(drop_stopwords=False).analyze(TEXT))
    dropped = list(english_analyzer(drop_stopwords=True).analyze(TEXT))
    assert kept == ["the", "employ", "s", "2014", "15", "benefit", "paid", "to", "the", "employe", "who", "were", "cycl", "s401", "5", "000"]
    assert dropped == [t for t in kept if t not in {"the", "to"}]


def test_stop_words_drop_before_stemming_only_in_the_store() -> None:
    # "willing" stems to "will": the store keeps it (only the word "will" is a stop word);
    # the stages drop it, as they drop every stem of a stop word.
    from services.text.terms import terms  # noqa: PLC0415  (services sits above shared)

    assert list(english_analyzer(drop_stopwords=True).analyze("will willing")) == ["will"]
    assert terms("will willing") == []
