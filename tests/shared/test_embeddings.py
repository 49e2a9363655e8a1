"""Embedders: the offline ONNX MiniLM, the Mistral adapter (against the wire-format stand-in),
and the (model, text hash) cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from shared.config import ModelSettings, Settings
from shared.embeddings import (
    LOCAL_DIMS,
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    EmbeddingError,
    LocalOnnxEmbedder,
    MistralEmbedder,
    _local_embedder,
    _untruncated_tokenizer,
    clip_tokens,
    get_embedder,
)
from tests.support.mistral_standin import MistralStandin


@pytest.fixture(scope="module")
def local() -> LocalOnnxEmbedder:
    return _local_embedder()


def test_local_embedder_shape_norm_and_meaning(local: LocalOnnxEmbedder) -> None:
    assert isinstance(local, Embedder)
    texts = [
        "Mileage allowance payments for using your own car for business travel",
        "How much can my employer pay me per mile when I drive my own car for work?",
        "Termination payments and the thirty thousand pound exemption",
    ]
    vectors = local.embed(texts)
    assert vectors.shape == (3, LOCAL_DIMS) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2] + 0.2  # paraphrase closer than another topic
    assert local.embed([]).shape == (0, LOCAL_DIMS)


def test_local_embedder_batching_and_truncation_do_not_change_vectors(local: LocalOnnxEmbedder) -> None:
    short = "Van benefit cash equivalent"
    long = "The employee's business mileage is recorded. " * 200  # far past 256 tokens: truncated
    together = local.embed([long, short, "a", short])
    alone = np.vstack([local.embed([long]), local.embed([short])])
    assert np.allclose(together[[0, 1]], alone, atol=2e-3)  # padding in a batch is masked out
    assert np.allclose(together[1], together[3], atol=1e-6)
    batches = local._batches(local.tokenizer.encode_batch([long] * 20 + [short] * 100))
    assert all(len(b) * max(len(local.tokenizer.encode(long if i < 20 else short).ids) for i in b) <= local.batch_tokens for b in batches)


def test_clip_tokens_keeps_the_start_the_model_would_read() -> None:
    tokens = _untruncated_tokenizer()
    long = "Business Income Manual > Farming losses\nRelief for farming losses is restricted after five consecutive years of loss. " * 12
    for limit in (16, 128):
        clipped = clip_tokens(long, limit)
        assert long.startswith(clipped) and clipped.strip()
        read = len(tokens.encode(clipped).ids)
        assert limit - 1 <= read <= limit  # cut at a token's end: nothing past the limit, little short of it
    short = "Farming losses"
    assert clip_tokens(short, 128) == short
    assert clip_tokens(long, 10_000) == long


def test_cache_embeds_each_text_once(tmp_path: Path, local: LocalOnnxEmbedder) -> None:
    cache = EmbeddingCache(tmp_path)
    first = CachedEmbedder(local.model_name, local.dims, lambda: local, cache)
    vectors = first.embed(["alpha text", "beta text", "alpha text"])
    assert first.computed == 2
    loaded: list[str] = []

    def load() -> LocalOnnxEmbedder:
        loaded.append("model")
        return local

    second = CachedEmbedder(local.model_name, local.dims, load, EmbeddingCache(tmp_path))  # reopened
    again = second.embed(["beta text", "alpha text"])
    assert second.computed == 0 and loaded == []  # all from the cache: the model is not even loaded
    assert np.array_equal(again, vectors[[1, 0]])
    # Another model's vectors never answer for this one.
    other = CachedEmbedder("other-model", local.dims, lambda: _Fixed("other-model"), cache)
    other.embed(["alpha text"])
    assert other.computed == 1


class _Fixed:
    dims = LOCAL_DIMS

    def __init__(self, name: str) -> None:
        self.model_name = name

    def embed(self, texts):  # noqa: ANN001, ANN201
        return np.ones((len(texts), self.dims), dtype=np.float32) / np.sqrt(self.dims)


def test_cache_refuses_an_embedder_with_another_name(tmp_path: Path) -> None:
    wrong = CachedEmbedder("model-a", LOCAL_DIMS, lambda: _Fixed("model-b"), EmbeddingCache(tmp_path))
    with pytest.raises(EmbeddingError, match="expected model-a"):
        wrong.embed(["x"])


def _mistral(standin: MistralStandin, **overrides: object) -> MistralEmbedder:
    models = ModelSettings(provider="mistral", mistral_api_key=standin.api_key, mistral_server_url=standin.base_url, timeout_s=5, max_retries=1)
    return MistralEmbedder(models.model_copy(update=overrides))


def test_mistral_embedder_speaks_the_embeddings_wire_format() -> None:
    with MistralStandin() as standin:
        embedder = _mistral(standin)
        texts = [f"passage {i}" for i in range(70)]  # more than one request's worth
        vectors = embedder.embed(texts)
        assert vectors.shape == (70, 1024)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        requests = [body for path, body in standin.requests if path == "/v1/embeddings"]
        assert [len(r["input"]) for r in requests] == [64, 6]  # the wire field is "input"
        assert requests[0]["model"] == "mistral-embed" and requests[1]["input"][0] == "passage 64"
        assert np.allclose(embedder.embed(["passage 3"])[0], vectors[3], atol=1e-6)  # order kept


def test_mistral_errors_are_embedding_errors() -> None:
    with MistralStandin() as standin:
        standin.fail_embeddings_with = 400
        with pytest.raises(EmbeddingError, match="Mistral embeddings failed"):
            _mistral(standin).embed(["x"])
        standin.fail_embeddings_with = None
        with pytest.raises(EmbeddingError):
            _mistral(standin, mistral_api_key="wrong-key").embed(["x"])
    with pytest.raises(EmbeddingError, match="unreachable|failed"):
        MistralEmbedder(ModelSettings(mistral_api_key="k", mistral_server_url="http://127.0.0.1:9", max_retries=0)).embed(["x"])
    with pytest.raises(EmbeddingError, match="MISTRAL_API_KEY"):
        MistralEmbedder(ModelSettings(mistral_api_key=""))


def test_mistral_retries_server_errors() -> None:
    with MistralStandin() as standin:
        standin.fail_embeddings_with = 503
        embedder = _mistral(standin, max_retries=1)
        with pytest.raises(EmbeddingError):
            embedder.embed(["x"])
        attempts = [p for p, _ in standin.requests if p == "/v1/embeddings"]
        assert len(attempts) >= 2  # retried before giving up


def test_get_embedder_uses_the_configured_cache_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    assert get_embedder(settings).cache.path == tmp_path / "data" / "embeddings" / "cache.sqlite3"
    settings.ingest.embedding_cache_dir = tmp_path / "shared-cache"
    assert get_embedder(settings).cache.path == tmp_path / "shared-cache" / "cache.sqlite3"
