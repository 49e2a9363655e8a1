"""The answers model's training and figures (taxnav/evaluation/answers_model.py): the
threshold is the lowest probability whose passing answers reach the precision target out of
fold, and the mark figures say how often a marked answer is right and a wrong one is marked."""

from __future__ import annotations

import numpy as np

from services.ranking.assurance import ANSWER_EXTRACTOR
from taxnav.evaluation.answers_model import Answered, cross_validated_marks, fit_answers, mark_figures, precise_threshold
from taxnav.evaluation.ranker import grouped_folds


def test_the_threshold_is_the_lowest_that_reaches_the_target() -> None:
    probability = np.round(np.linspace(0.0, 1.0, 101), 2)
    right = probability >= 0.6  # everything from 0.6 up is right
    assert precise_threshold(probability, right, 0.8) == 0.5  # 0.50..1.0: 41 right of 51 passing (0.804); 0.49: 41 of 52 (0.788)
    assert precise_threshold(probability, np.zeros(101, bool), 0.8) == 1.0  # never right: never sure


def test_out_of_fold_marks_separate_right_from_wrong_and_report_both_marks() -> None:
    rng = np.random.default_rng(0)
    n, names = 200, ANSWER_EXTRACTOR.names
    right = rng.random(n) < 0.5
    signals = rng.normal(size=(n, len(names)))
    signals[:, 0] += np.where(right, 1.5, -1.5)  # the best page's probability tells them apart
    answered = [Answered("set", f"Q{i}", [f"EIM{i}"], signals[i], bool(right[i]), lead_marked=True) for i in range(n)]
    probability, threshold = cross_validated_marks(answered, grouped_folds(answered, 5), 0.8)
    assert probability[right].mean() > probability[~right].mean() + 0.3
    figures = mark_figures(answered, probability, threshold)["all"]
    assert figures["model_marked_right"] >= 0.8 and figures["model_wrong_marked"] < 0.3
    assert figures["page_mark_wrong_marked"] == 1.0 and figures["page_mark_marked_right"] == right.mean()
    model = fit_answers(signals, right, threshold, ["set.jsonl"])
    assert model.kind == "answers" and model.features == list(names) and model.answering_threshold == threshold
    assert model.probability(model.score(signals[right])).mean() > model.probability(model.score(signals[~right])).mean()
