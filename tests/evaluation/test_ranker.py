"""The rankers' training (taxnav ranker): folds grouped by gold page, the listwise fit that
learns the order of pages and of passages from labels, and the answering threshold it stamps
on the model."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from services.ranking.page_features import PAGE_FEATURES
from services.ranking.passage_features import UNIT_FEATURES
from taxnav.evaluation.ranker import answering_threshold, fit, fit_passages, gold_groups, grouped_folds, page_metrics
from taxnav.evaluation.ranker_data import Candidates, Passages


def test_questions_sharing_a_gold_page_directly_or_through_another_fall_in_one_group() -> None:
    items = [SimpleNamespace(gold_sections=g) for g in (["A"], ["B"], ["A", "C"], ["C"], [], [])]
    groups = gold_groups(items)
    assert groups[0] == groups[2] == groups[3]  # A-C joined through the third question
    assert len({groups[0], groups[1], groups[4], groups[5]}) == 4  # no gold page: a group of its own


def test_folds_keep_a_gold_page_in_one_fold_and_a_seed_draws_another_split() -> None:
    items = [SimpleNamespace(gold_sections=[f"P{i // 3}"] if i % 7 else []) for i in range(60)]
    groups = gold_groups(items)

    def test_sets(seed: int | None) -> list[frozenset[int]]:
        folds = grouped_folds(items, 5, seed)
        assert sorted(i for _, test in folds for i in test) == list(range(60))  # every question held out once
        for train, test in folds:
            assert not {groups[i] for i in train} & {groups[i] for i in test}  # a gold page never on both sides
        return [frozenset(test.tolist()) for _, test in folds]

    assert test_sets(None) == test_sets(None)  # the same folds every run by default
    assert test_sets(1) == test_sets(1) and set(test_sets(1)) != set(test_sets(None)) != set(test_sets(2))


def _question(rng: np.random.Generator, qid: str) -> Candidates:
    """Ten candidate pages; the answering one has the highest first feature, noise elsewhere."""
    x = rng.normal(size=(10, len(PAGE_FEATURES)))
    labels = np.zeros(10, dtype=int)
    best = int(rng.integers(10))
    x[best, 0] += 3.0
    labels[best] = 2
    return Candidates(qid, "synthetic", frozenset({f"P{best}"}), [f"P{i}" for i in range(10)], x, labels)


def test_the_listwise_fit_learns_which_feature_tells_the_answering_page() -> None:
    rng = np.random.default_rng(7)
    train = [_question(rng, f"T{i}") for i in range(60)]
    held_out = [_question(rng, f"H{i}") for i in range(40)]
    model = fit(train)
    assert model.features == list(PAGE_FEATURES) and model.trained["questions"] == 60
    assert int(np.argmax(np.abs(model.weights))) == 0 and model.weights[0] > 0
    metrics = page_metrics(held_out, model)
    assert metrics["ranker_first_answers"] >= 0.8 > metrics["retrieval_first_answers"]
    assert 0.0 < model.answering_threshold < 1.0


def test_the_answering_threshold_is_the_cut_with_the_best_f1() -> None:
    probability = np.array([0.9, 0.8, 0.4, 0.3, 0.2, 0.1])
    positive = np.array([True, True, True, False, False, False])
    assert answering_threshold(probability, positive) == 0.4


def _units(rng: np.random.Generator, qid: str) -> Passages:
    """A question's units: noise, but the one stating its key fact early stands out on the second feature."""
    x = rng.normal(size=(30, len(UNIT_FEATURES)))
    labels = np.zeros(30)
    best = int(rng.integers(30))
    x[best, 1] += 4.0
    labels[best] = 1.0
    return Passages(qid, x, labels)


def test_the_listwise_fit_learns_which_feature_tells_the_unit_that_answers() -> None:
    rng = np.random.default_rng(11)
    model = fit_passages([_units(rng, f"T{i}") for i in range(80)], ["synthetic.jsonl"])
    assert model.kind == "passages" and model.features == list(UNIT_FEATURES) and model.trained["questions"] == 80
    assert int(np.argmax(np.abs(model.weights))) == 1 and model.weights[1] > 0
    held_out = [_units(rng, f"H{i}") for i in range(40)]
    first = [p.labels[int(np.argmax(model.score(p.features)))] for p in held_out]
    assert np.mean(first) >= 0.8  # by chance: 1 in 30
    probability = model.probability(model.score(np.vstack([p.features for p in held_out])))
    labels = np.concatenate([p.labels for p in held_out]).astype(bool)
    assert probability[labels].mean() > 5 * probability[~labels].mean()  # calibrated: the answering units are the likely ones


def test_a_question_whose_units_state_no_key_fact_teaches_nothing() -> None:
    rng = np.random.default_rng(3)
    empty = Passages("Q", rng.normal(size=(5, len(UNIT_FEATURES))), np.zeros(5))
    with pytest.raises(ValueError, match="nothing to learn from"):
        fit_passages([empty])
