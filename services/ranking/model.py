"""A linear ranker read from a small JSON file: standardised features times learned weights
(a listwise model: trained so that the softmax over one question's candidates puts its mass
on those that answer), plus a Platt calibration that turns the score into the probability
that the candidate answers.

Linear rather than boosted trees: a few hundred labelled questions, features that mostly add
evidence monotonically, and a model a reviewer can read weight by weight (``taxnav ranker
train`` prints them). The service needs numpy alone to apply it."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, model_validator

MODELS_DIR = Path(__file__).parent / "models"
RankerKind = Literal["pages", "passages", "answers"]


class RankerModelError(ValueError):
    """A model file the service cannot use: unreadable, or trained on other features."""


class RankerModel(BaseModel):
    kind: RankerKind
    features: list[str]
    mean: list[float]
    scale: list[float]
    weights: list[float]
    # P(answers) = sigmoid(calibration_a * score + calibration_b), fitted on the training scores
    calibration_a: float = 1.0
    calibration_b: float = 0.0
    # the probability from which a candidate is taken to answer (rather than be background):
    # the one that best separated answering from other candidates in training (F1)
    answering_threshold: float = 0.5
    trained: dict[str, object] = Field(default_factory=dict, description="what it was trained on: files, questions, pairs, date")

    @model_validator(mode="after")
    def _same_length(self) -> RankerModel:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.weights) == n):
            raise ValueError(f"features, mean, scale and weights must have one entry per feature ({n})")
        return self

    def score(self, rows: np.ndarray) -> np.ndarray:
        """One score per row of features (rows in ``features`` order)."""
        x = (np.asarray(rows, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        return x @ np.asarray(self.weights)

    def probability(self, scores: np.ndarray) -> np.ndarray:
        """The calibrated probability that a candidate with this score answers."""
        return 1.0 / (1.0 + np.exp(-(self.calibration_a * np.asarray(scores) + self.calibration_b)))


def default_path(kind: RankerKind) -> Path:
    return MODELS_DIR / f"{kind}.json"


@lru_cache(maxsize=8)
def load_ranker(path: Path, kind: RankerKind, features: tuple[str, ...]) -> RankerModel:
    """The model at ``path``, refused unless it ranks ``kind`` over exactly ``features`` in that
    order (a model trained before a feature was added, removed or reordered would weigh the
    wrong columns silently)."""
    try:
        model = RankerModel.model_validate_json(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        raise RankerModelError(f"cannot read the {kind} ranker at {Path(path).name}: {exc}") from exc
    if model.kind != kind:
        raise RankerModelError(f"{Path(path).name} ranks {model.kind}, not {kind}")
    if tuple(model.features) != features:
        missing = [f for f in features if f not in model.features]
        unknown = [f for f in model.features if f not in features]
        raise RankerModelError(
            f"{Path(path).name} was trained on other features than the service computes "
            f"(not in the model: {missing or 'none'}; not computed: {unknown or 'none'}{'; order differs' if not missing and not unknown else ''}): retrain it with `taxnav ranker train`"
        )
    return model
