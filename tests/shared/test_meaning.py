"""shared/meaning.py: closeness in meaning of short texts to a question, on the real MiniLM."""

from __future__ import annotations

import numpy as np
import pytest

import shared.meaning as meaning
from shared.config import Settings
from shared.embeddings import base_embedder


@pytest.fixture
def settings() -> Settings:
    return Settings()


def question(settings: Settings, text: str) -> np.ndarray:
    return base_embedder(settings).embed([text])[0]


def test_the_page_about_the_question_is_closer_than_a_page_that_is_not(settings: Settings) -> None:
    q = question(settings, "How much can my employer pay me per mile for using my own car without tax?")
    about, other = meaning.closeness(
        settings, ["Mileage allowance payments: approved amounts", "Entertainment: annual parties and functions"], q
    )
    assert about > other + 0.1, (about, other)


def test_each_text_is_embedded_once_per_process(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    real = base_embedder(settings)
    embedded: list[str] = []

    class Counting:
        model_name, dims = real.model_name, real.dims

        def embed(self, texts: list[str]) -> np.ndarray:
            embedded.extend(texts)
            return real.embed(texts)

    monkeypatch.setattr(meaning, "base_embedder", lambda _settings: Counting())
    monkeypatch.setattr(meaning, "_VECTORS", {})
    q = question(settings, "Is a staff Christmas party taxable?")
    first = meaning.closeness(settings, ["Annual parties", "Van benefit", "Annual parties"], q)
    second = meaning.closeness(settings, ["Van benefit", "Annual parties", "Small loans"], q)
    assert embedded == ["Annual parties", "Van benefit", "Small loans"]
    assert first[0] == pytest.approx(first[2]) and first[0] == pytest.approx(second[1]) and first[1] == pytest.approx(second[0])


def test_the_cache_stays_within_its_bound(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(meaning, "_VECTORS", {})
    monkeypatch.setattr(meaning, "MEANING_CACHE", 2)
    q = question(settings, "car benefit")
    out = meaning.closeness(settings, ["Car benefit", "Van benefit", "Fuel benefit"], q)
    assert len(out) == 3 and len(meaning._VECTORS) == 2  # the first evicted, its cosine still returned
    assert out[0] == pytest.approx(float(meaning.closeness(settings, ["Car benefit"], q)[0]), abs=1e-5)


def test_no_texts_no_model_call(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_settings: Settings) -> None:
        raise AssertionError("the model was asked for nothing")

    monkeypatch.setattr(meaning, "base_embedder", refuse)
    assert meaning.closeness(settings, [], np.ones(4, dtype=np.float32)).shape == (0,)
