"""The extractor: a ranker's features as named units, in the order its model files list them."""

from __future__ import annotations

import numpy as np
import pytest

from services.ranking.extractor import Extractor, Feature

WORDS = Extractor("words", [
    Feature("length", lambda text: float(len(text.split())), "words"),
    Feature("asks", lambda text: float(text.endswith("?")), "a question"),
])


def test_the_extractor_lists_its_features_names_in_order_and_finds_each_by_name() -> None:
    assert WORDS.names == ("length", "asks") and len(WORDS) == 2
    assert WORDS["asks"].value("Is it taxed?") == 1.0 and WORDS["asks"].value("It is taxed.") == 0.0
    with pytest.raises(KeyError):
        WORDS["bm25"]


def test_a_feature_named_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        Extractor("words", [Feature("length", len), Feature("length", len)])


def test_rows_values_matrix_and_table_agree_in_names_order() -> None:
    texts = ["Is it taxed?", "It is not taxed at all."]
    assert WORDS.values(texts[0]) == {"length": 3.0, "asks": 1.0} and list(WORDS.values(texts[0])) == list(WORDS.names)
    assert WORDS.row(texts[1]).dtype == np.float64 and WORDS.row(texts[1]).tolist() == [6.0, 0.0]
    matrix = WORDS.matrix(texts)
    assert matrix.tolist() == [[3.0, 1.0], [6.0, 0.0]]
    assert WORDS.table([{"asks": 1.0, "length": 3.0}, WORDS.values(texts[1])]).tobytes() == matrix.tobytes()  # by name, whatever the dict's order
    assert WORDS.matrix([]).shape == WORDS.table([]).shape == (0, 2)
