"""The one English analyzer chain: the BM25 store indexes with it and the stages weigh words with it.

Simple tokens (letters and digits), tokens over 40 characters dropped, lowercase, English
(Porter) stemmer. The store also drops tantivy's English stop words before stemming; the
stages do not: they drop their own, longer stop list after stemming (services/text/terms.py),
and a chain that dropped stop words first would change which stems count as stop words
("willing" stems to "will", a stop word's stem the stages drop).
"""

from __future__ import annotations

from typing import Any


def english_analyzer(drop_stopwords: bool) -> Any:  # a tantivy.TextAnalyzer
    # Deferred like the store's own import: a native library, loaded only where text is analysed.
    import tantivy  # noqa: PLC0415

    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
    )
    if drop_stopwords:
        builder = builder.filter(tantivy.Filter.stopword("english"))
    return builder.filter(tantivy.Filter.stemmer("english")).build()
