"""A ranker's features as named units (after pyserini's learning-to-rank extractor: each
feature a small named object added to one extractor, and the model file lists the names it
was trained on, services/ranking/model.py).

A feature reads one candidate's context (what the question asks, the candidate's terms,
its cosines: computed once per question, page or sentence by the ranker's own module,
page_features.py or passage_features.py) and returns one number; the extractor holds the
features in the order the model files were trained on, and turns a context into that row.
Serving and training (taxnav ranker) both read candidates through the same extractor, and a
feature can be tested, listed or ablated by its name."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

C = TypeVar("C")


@dataclass(frozen=True)
class Feature(Generic[C]):
    """One number a ranker reads of a candidate: ``value(context)``, named as the model files name it."""

    name: str
    value: Callable[[C], float]
    about: str = ""  # what it measures, in a line (the reviewer's and ``taxnav ranker train``'s reading)


class Extractor(Generic[C]):
    """A ranker's features in order: one row per candidate context, in ``names`` order."""

    def __init__(self, kind: str, features: Iterable[Feature[C]]) -> None:
        self.kind = kind
        self.features: tuple[Feature[C], ...] = tuple(features)
        self.names: tuple[str, ...] = tuple(f.name for f in self.features)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"the {kind} extractor names a feature twice: {self.names}")
        self._by_name = {f.name: f for f in self.features}

    def __getitem__(self, name: str) -> Feature[C]:
        return self._by_name[name]

    def __iter__(self) -> Iterator[Feature[C]]:
        return iter(self.features)

    def __len__(self) -> int:
        return len(self.features)

    def values(self, context: C) -> dict[str, float]:
        """A candidate's features by name, in ``names`` order."""
        return {f.name: f.value(context) for f in self.features}

    def row(self, context: C) -> np.ndarray:
        """A candidate's features as one row, in ``names`` order."""
        return np.array([f.value(context) for f in self.features], dtype=np.float64)

    def matrix(self, contexts: Iterable[C]) -> np.ndarray:
        """One row per candidate context (candidates, features)."""
        return np.array([[f.value(c) for f in self.features] for c in contexts], dtype=np.float64).reshape(-1, len(self.features))

    def table(self, named: Iterable[dict[str, float]]) -> np.ndarray:
        """Rows of features already computed by name (``values``), in ``names`` order."""
        return np.array([[row[name] for name in self.names] for row in named], dtype=np.float64).reshape(-1, len(self.names))
