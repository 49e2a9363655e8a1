"""Scores over many questions (taxnav/evaluation/metrics.py; aggregate and failure_reasons are tested with score_result in test_scoring.py)."""

from __future__ import annotations

import pytest

from taxnav.evaluation.metrics import refusal_scores


def test_refusal_precision_and_recall_by_category():
    scores = refusal_scores(
        [
            ("stale", "stale"),  # right
            ("stale", "low_coverage"),  # wrong category
            (None, "low_coverage"),  # refused an answerable question
            ("out_of_scope", None),  # answered what it should refuse
            (None, None),
        ]
    )
    assert scores.precision == pytest.approx(1 / 3)  # 1 right of 3 refusals made
    assert scores.recall == pytest.approx(1 / 3)  # 1 right of 3 expected
    stale, low, oos = scores.by_category["stale"], scores.by_category["low_coverage"], scores.by_category["out_of_scope"]
    assert (stale.precision, stale.recall) == (1.0, 0.5)
    assert (low.refused, low.correct, low.precision, low.recall) == (2, 0, 0.0, 1.0)  # none expected: vacuous recall
    assert (oos.expected, oos.refused, oos.recall, oos.precision) == (1, 0, 0.0, 1.0)
