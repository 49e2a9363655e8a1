"""How close short texts (page titles, answer candidates) are in meaning to a question: the
configured base embedder (MiniLM offline, mistral-embed with that provider), each text embedded
once per process and remembered by (model, text), so a page asked about again costs nothing.

No PyPI wheel was found that holds a cross-encoder's weights (the packaged rerankers download
theirs at run time, which cannot happen offline), so this bi-encoder is the offline relevance
model; ``closeness`` is the one place a stage asks it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from shared.config import Settings
from shared.embeddings import base_embedder, embedder_identity

if TYPE_CHECKING:
    from shared.index import CorpusIndex

MEANING_CACHE = 20000  # text vectors remembered across questions (~30 MB of MiniLM vectors)
_VECTORS: dict[tuple[str, str], np.ndarray] = {}
_LOCK = threading.Lock()


def text_vectors(settings: Settings, texts: Sequence[str]) -> np.ndarray:
    """The texts' unit vectors, (len(texts), dims); only texts not seen before are embedded."""
    model, dims = embedder_identity(settings)
    if not texts:
        return np.zeros((0, dims), dtype=np.float32)
    with _LOCK:
        known = {t: _VECTORS[(model, t)] for t in texts if (model, t) in _VECTORS}
    fresh = [t for t in dict.fromkeys(texts) if t not in known]
    if fresh:
        known.update(zip(fresh, base_embedder(settings).embed(fresh), strict=True))
        with _LOCK:
            for text in fresh:
                _VECTORS[(model, text)] = known[text]
            while len(_VECTORS) > MEANING_CACHE:  # oldest first: dicts keep insertion order
                _VECTORS.pop(next(iter(_VECTORS)))
    return np.stack([known[t] for t in texts]).astype(np.float32)


def closeness(settings: Settings, texts: Sequence[str], question: np.ndarray) -> np.ndarray:
    """Each text's cosine with the question's unit vector, negatives as 0 (unrelated)."""
    if not texts:
        return np.zeros(0, dtype=np.float32)
    return np.maximum(text_vectors(settings, texts) @ np.asarray(question, dtype=np.float32), 0.0)


def question_vector(index: CorpusIndex, question: str, carried: list[float]) -> np.ndarray:
    """The question's embedding: the one the request carries, else computed."""
    return np.asarray(carried if carried else index.embed_query(question), dtype=np.float32)

