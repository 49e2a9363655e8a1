"""The answers model (services/ranking/assurance.py), trained and scored inside `taxnav ranker cv`:
each answer the fold models gave is labelled right or wrong by the strict scoring, its signals
read from the same pipeline state; a logistic model over those answers is itself
cross-validated (grouped by gold page, the same folds) so that every mark figure comes from a
model that never saw the question, and its threshold is the lowest probability at which the
out-of-fold answers it passes are right at least PRECISION_TARGET of the time."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from shared.config import Settings

MIN_MARKED = 10  # a threshold is chosen only where at least this many out-of-fold answers pass it


@dataclass
class Answered:
    """One answered question of the cross-validation: its signals and whether it was right."""

    source: str
    question_id: str
    gold_sections: list[str]
    signals: np.ndarray
    right: bool
    lead_marked: bool  # the first answer claim said "answers your question" by the page ranker's mark alone


def answer_signals(question: str, settings: Settings) -> np.ndarray | None:
    """The answers model's signals for the answer the pipeline gives ``question`` under
    ``settings`` (None when it refuses): the stages run as the API runs them, to the marks."""
    from services.answering.pipeline import new_state, run_stages, stages_through  # noqa: PLC0415
    from services.ranking.assurance import answer_features  # noqa: PLC0415
    from shared.contracts.api import QuestionRequest  # noqa: PLC0415
    from shared.index import CorpusIndex  # noqa: PLC0415

    state = run_stages(stages_through("marks"), new_state(QuestionRequest(question=question), settings), settings, lambda _: None)
    if state.refusal is not None or state.draft is None or state.selection is None:
        return None
    return answer_features(state.query, state.selection, state.draft, CorpusIndex.open(settings, state.query.manual), settings)


def fit_answers(signals: np.ndarray, right: np.ndarray, threshold: float, files: Sequence[str] = ()):  # noqa: ANN201  (RankerModel)
    """A logistic model of P(right | signals) on standardised signals, as a RankerModel of kind
    'answers' (score = weights . x; probability = sigmoid(score + bias)) with ``threshold``."""
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415  (training only)

    from services.ranking.assurance import ANSWER_EXTRACTOR  # noqa: PLC0415
    from services.ranking.model import RankerModel  # noqa: PLC0415

    mean, scale = signals.mean(axis=0), signals.std(axis=0)
    scale[scale == 0] = 1.0
    fitted = LogisticRegression(C=1.0, max_iter=1000).fit((signals - mean) / scale, right)
    return RankerModel(
        kind="answers",
        features=list(ANSWER_EXTRACTOR.names),
        mean=mean.tolist(),
        scale=scale.tolist(),
        weights=fitted.coef_[0].tolist(),
        calibration_a=1.0,
        calibration_b=float(fitted.intercept_[0]),
        answering_threshold=threshold,
        trained={"files": list(files), "questions": int(len(right)), "right": int(right.sum()), "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")},
    )


def precise_threshold(probability: np.ndarray, right: np.ndarray, target: float) -> float:
    """The lowest probability whose passing answers are right at least ``target`` of the time
    (and number at least MIN_MARKED); 1.0 (never sure) when none is."""
    for t in np.unique(np.round(probability, 2)):
        passed = probability >= t
        if passed.sum() >= MIN_MARKED and right[passed].mean() >= target:
            return float(t)
    return 1.0


def cross_validated_marks(answered: list[Answered], folds: Sequence[tuple[np.ndarray, np.ndarray]], target: float) -> tuple[np.ndarray, float]:
    """Out-of-fold probabilities (each from a model trained on the other ``folds``' answers:
    (train, test) index arrays, grouped by gold page) and the threshold they support."""
    x = np.stack([a.signals for a in answered])
    y = np.array([a.right for a in answered])
    out = np.zeros(len(answered))
    for train, test in folds:
        if len(set(y[train])) < 2:
            out[test] = y[train].mean() if len(train) else 0.0
            continue
        model = fit_answers(x[train], y[train], 0.5)
        out[test] = model.probability(model.score(x[test]))
    return out, precise_threshold(out, y, target)


def mark_figures(answered: list[Answered], probability: np.ndarray, threshold: float) -> dict[str, dict[str, float]]:
    """Per set: of the answers marked as answering, the share right; of the wrong answers, the
    share marked as answering; of the right ones, the share marked; by the answers model (out of
    fold) and by the page ranker's mark on the first claim alone (the mark before it)."""
    out: dict[str, dict[str, float]] = {}
    for source in [*dict.fromkeys(a.source for a in answered), "all"]:
        rows = [(a, p) for a, p in zip(answered, probability, strict=True) if source in ("all", a.source)]
        figures: dict[str, float] = {"answers": len(rows), "right": sum(a.right for a, _ in rows)}
        for name, marked_of in (("model", lambda a, p: p >= threshold), ("page_mark", lambda a, p: a.lead_marked)):
            marked = [a.right for a, p in rows if marked_of(a, p)]
            wrong = [marked_of(a, p) for a, p in rows if not a.right]
            right = [marked_of(a, p) for a, p in rows if a.right]
            figures |= {
                f"{name}_marked": len(marked),
                f"{name}_marked_right": statistics.fmean(marked) if marked else 0.0,
                f"{name}_wrong_marked": statistics.fmean(wrong) if wrong else 0.0,
                f"{name}_right_marked": statistics.fmean(right) if right else 0.0,
            }
        out[source] = figures
    return out
