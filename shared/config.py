"""All settings as one nested pydantic object, read from the environment.

Environment variables use the prefix ``TAXNAV_`` and ``__`` between levels, e.g.
``TAXNAV_MODE=distributed``, ``TAXNAV_MODELS__PROVIDER=mistral``,
``TAXNAV_RETRIEVAL__TOP_K=12``. Every variable docker-compose passes must map to a field here.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_MANUAL = "employment-income-manual"


class StoreSettings(BaseModel):
    # local: tantivy + qdrant-client local mode, files in the data dir's generations.
    # servers: OpenSearch + Qdrant servers at the URLs below.
    # auto: servers when mode=distributed, else local (distributed tests here set local:
    # no OpenSearch/Qdrant server runs on this machine).
    backend: Literal["auto", "local", "servers"] = "auto"
    opensearch_url: str = "http://localhost:9200"
    qdrant_url: str = "http://localhost:6333"
    request_timeout_s: float = 10.0
    # BLAS threads per process for the embedded exact vector search (0: the library's default).
    # One query vector against every chunk is a matrix-vector product, bound by memory, not
    # arithmetic: OpenBLAS's own threads (two here) buy nothing, and with several questions
    # searching at once on two shared cores they wait on each other (4 concurrent searches of
    # 56,000 chunks: median 382 ms with its threads, 103 ms with one).
    blas_threads: int = Field(default=1, ge=0)
    # How long a listing of the ingested manuals is reused. The scope guard lists them on every
    # question, on the gateway's event loop, where each filesystem call gives up the GIL and
    # waits to get it back behind the pipeline's threads. An ingest in the same process drops
    # the listing when it publishes; another process's new manual shows within this time.
    listing_cache_s: float = Field(default=1.0, ge=0)


class ModelSettings(BaseModel):
    provider: Literal["local", "mistral"] = "local"
    mistral_api_key: str = ""
    mistral_server_url: str = "https://api.mistral.ai"
    mistral_embed_model: str = "mistral-embed"
    mistral_chat_model: str = "mistral-small-latest"
    timeout_s: float = 30.0
    max_retries: int = 2


class IngestSettings(BaseModel):
    source: str = "https://www.gov.uk"
    manuals: list[str] = Field(default_factory=lambda: [DEFAULT_MANUAL])
    # Manuals indexed for keywords only, without embedding (a quick demo's other manuals:
    # embedding BIM and SAM takes minutes on 2 cores). Routing then compares every manual
    # by its keyword evidence (services/answering/scope.py).
    bm25_only: list[str] = Field(default_factory=list)
    # Manuals ingested to route questions to, not to answer from: one vector per page (its
    # first chunk, title and opening text, clipped to page_vector_tokens) instead of one per
    # chunk. Routing compares the manuals' nearest vectors (services/answering/scope.py); every chunk of
    # BIM and SAM is 1.68M of the three manuals' 2.52M tokens, ~7 minutes on 2 idle cores.
    page_vectors: list[str] = Field(default_factory=lambda: ["business-income-manual", "self-assessment-manual"])
    page_vector_tokens: int = Field(default=128, ge=8)
    allowed_hosts: list[str] = Field(default_factory=lambda: ["www.gov.uk"])
    concurrency: int = 8
    timeout_s: float = 15.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    # Embedding cache (sqlite, keyed by model and text hash); default <data_dir>/embeddings.
    embedding_cache_dir: Path | None = None
    # Generations kept on disk besides the serving one (readers still on one finish there).
    keep_generations: int = 1
    # Scheduled re-ingest (ingest_worker/tasks.py): cron string (UTC) for Celery beat, and the
    # TTL of the Redis lock that refuses a second run of a manual while one is in progress
    # (a live run renews it; a killed run's lock expires after this).
    schedule_cron: str = "0 3 * * *"
    lock_ttl_s: int = 120


class RetrievalSettings(BaseModel):
    top_k: int = 12
    rrf_k: int = 60
    use_bm25: bool = True
    use_vectors: bool = True
    # A page whose title the question restates (services/text/titles.py) is searched for by
    # its title as well: its chunks carry the title beside a long body, so a short or generic
    # title ("Books", "Transition") is drowned in the keyword and vector rankings.
    use_titles: bool = True
    title_match_floor: float = Field(0.8, description="the title match (the question's share in the title times the title's share in the question) from which the question restates a page title")
    # Chunks one page may take in the top_k: rollup brings the whole page anyway, so more
    # would only crowd other pages out.
    max_chunks_per_page: int = 2


class ExpansionSettings(BaseModel):
    enabled: bool = True
    seeds: int = 12
    decay: float = 0.5


class RollupSettings(BaseModel):
    whole_page: bool = True
    max_chunks_per_page: int = 8


class LocalSelectionSettings(BaseModel):
    """How the local provider scores and keeps pages (services/providers/local/selection.py)."""

    max_pages: int = Field(8, description="recall-greedy: pages kept at most")
    strict_pages: int = Field(2, description="strict: pages kept at most")
    page_model: Path | None = Field(None, description="the page ranker's model file (services/ranking; default: the one trained in the repo)")
    min_coverage: float = Field(0.30, description="keywords only (no vectors): the share of the question one page must hold for it to be on topic")
    min_similarity: float = Field(0.45, description="the best chunk's cosine with the question below which nothing is on topic")
    min_similarity_tied: float = Field(0.38, description="the same for a question in the vocabulary of jobs and pay")
    # Asked "what are the rules on <title>?", every page title of the manual but one holds the
    # question's subject weight (a title's own words); a question about another tax, or a rule
    # the manual lacks, finds at most about half its weight in any one title of the manual, so
    # the line sits between them.
    title_on_topic: float = Field(0.7, description="a candidate page title holding this idf-weighted share of the question's own subject terms makes it on topic whatever the cosine")
    keep_ratio: float = Field(0.5, description="recall-greedy keeps pages whose probability of answering is at least this share of the best page's")
    strict_ratio: float = Field(0.92, description="strict keeps pages within this share of the best page")
    alternative_ratio: float = Field(0.8, description="a page about another subject is offered as an alternative when its probability of answering is this close to the best page's")
    part_ratio: float = Field(0.3, description="a page kept for one part of the question needs this share of the best page's probability")
    expansion_weight: float = Field(0.5, description="the manual's words for the question's everyday words count this share of their idf (stitching weighs the question the same way)")


class SelectionSettings(BaseModel):
    strategy: Literal["recall_greedy", "strict"] = "recall_greedy"
    local: LocalSelectionSettings = Field(default_factory=LocalSelectionSettings)


class AnswerShape(BaseModel):
    """The answer part's shape, one for every provider: the local provider composes its answer
    part within it (services/providers/local/answer_part.py), the Mistral provider clamps the
    model's sentences to it (services/providers/mistral.py: the first ``claims``, none past
    ``words_cap`` words) and its prompt asks for it (services/providers/prompts.py: "at most six
    short plain sentences, about 120 words"). The detail after the answer part is the local
    provider's own (``stitching.local.reply_words``)."""

    claims: int = Field(6, description="the answer part: at most this many claims (a Mistral reply: its first this many sentences)")
    words: int = Field(120, description="the answer part: about this many words (the local provider fills it up to this)")
    words_cap: int = Field(180, description="the hard cap: the local lead alone (a rule with its list) may run to this many words; no Mistral sentence past it is kept")


class LocalStitchingSettings(BaseModel):
    """How the local provider scores units and composes the answer part and the detail
    (services/providers/local/stitching.py); the answer part's shape is ``stitching.shape``."""

    passage_model: Path | None = Field(None, description="the passage ranker's model file (services/ranking; default: the one trained in the repo)")
    ask_weight: float = Field(2.0, description="the asking sentence's terms count this many times those describing the situation")
    answer_floor: float = Field(0.6, description="an answer claim scores at least this share of the lead; the rest is detail")
    following_units: int = Field(3, description="units after the lead in its chunk weighed up for the answer part (its conditions)")
    following_factor: float = Field(1.6, description="how much those following units are weighed up")
    lead_standalone: float = Field(0.8, description="the lead may give way to a unit scoring this share of it that reads on its own")
    lead_in_words: int = Field(10, description="a colon-ended claim this short only announces its list: quoted only with one of its items")
    table_rows: int = Field(4, description="rows of one table in the answer part (a row looked up by the asker's figure aside)")
    answer_pages: int = Field(2, description="the lead comes from the pages selection ranked first, and the answer part quotes each of them")
    quoted_pages: int = Field(2, description="the answer part quotes each of the pages selection ranked this high, whether or not their best sentence competes with the lead's")
    page_compete: float = Field(0.85, description="a lower-ranked page is quoted in the answer part too when its best unit scores this share of the lead page's best")
    other_page_units: int = Field(1, description="units (with what they need beside them) the answer part takes from a page other than the lead's")
    reply_words: int = Field(350, description="answer and detail together")
    detail_per_page: int = Field(4, description="units the detail takes from one page")
    relative_floor: float = Field(0.5, description="a sentence must score this share of the best sentence")
    detail_floor: float = Field(0.25, description="a sentence in the detail (collapsed until opened) must score this share of the best sentence")
    neighbour_floor: float = Field(0.8, description="a sentence next to a quoted one in its paragraph joins that claim above this share of the floor")
    rate_table_match: float = Field(0.15, description="a rate table must share this much of the question to be its answer")
    same_statement: float = Field(0.8, description="word overlap (figures aside) above which a sentence repeats a quoted one")
    list_items: int = Field(4, description="list items quoted after a sentence that introduces them with a colon")
    max_fragments: int = Field(4, description="paragraphs one sentence may run over (the 2014 scrape split some)")
    short_cell_words: int = Field(5, description="a table cell this short reads after its header without a colon")


class StitchingSettings(BaseModel):
    shape: AnswerShape = Field(default_factory=AnswerShape, description="the answer part's shape, for every provider")
    answers_model: Path | None = Field(None, description="the answers model that marks how sure an answer is (services/ranking; default: the one trained in the repo)")
    assured: bool = Field(True, description="mark each answer by the answers model; off, its claims keep the page ranker's marks alone (how `taxnav ranker cv` answers the questions the model learns from)")
    local: LocalStitchingSettings = Field(default_factory=LocalStitchingSettings)


class VerificationSettings(BaseModel):
    faithfulness_floor: float = 0.6


class GatewaySettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = 8000
    wait_timeout_s: float = 30.0  # also the deadline of a question: past it, a typed timeout error
    max_body_bytes: int = 16_384
    result_ttl_s: int = 600  # how long a question's events and result stay readable
    # Questions run at once in embedded mode. Two, as many as the cores: the pipeline is mostly
    # Python under one GIL, and each extra thread only lengthens the event loop's wait for it. bench
    # load, 128 clients, quiet 2-core machine, 6 runs at 2 against 4 at 4: refusal p95 46-129 ms
    # (median 100) against 75-232 (median 124); 17.9-20.1 against 14.1-18.5 questions/s.
    embedded_threads: int = 2
    # How long a thread keeps the GIL while another waits for it (Python's default: 5 ms). The
    # event loop waits about this long for each of its turns behind the pipeline's threads; at
    # 1 ms a scope-guard refusal's p95 under load halved (bench load, 64 clients: 204 -> 95 ms,
    # medians of 10 and 7 runs at load avg 11-13) with no loss of throughput.
    switch_interval_ms: float = Field(default=1.0, gt=0)
    # Worker processes for embedded questions (0: threads of the gateway process). They take the
    # pipeline's Python off the gateway's GIL, but each loads its own index and models: with 2,
    # 1,348 MB in all against 616. Measured both ways and undecided: on a busy 2-core machine
    # (load avg ~12) slower (refusal p95 at 128 clients 529 vs 305 ms, 5.0 vs 9.2 q/s), on a
    # quieter one (load avg 2-5, two runs) once much faster (12 vs 45 ms, 51.7 vs 31.9 q/s) and
    # once slower. Off by default (one process, as the design says) until quiet runs decide.
    embedded_processes: int = Field(default=0, ge=0)
    # Admission: questions in flight per gateway process (past it a fast 503 with Retry-After).
    # Scope-guard refusals are answered at once and never count.
    max_in_flight: int = 16
    retry_after_s: int = 2
    # Optional API keys (none = open, the embedded default); each key gets its own budget of
    # requests per minute (0 = unlimited).
    api_keys: list[str] = Field(default_factory=list)
    rate_limit_per_minute: int = 0
    # Requests with a key that matches none, per client address per minute (0 = unlimited):
    # past it the address gets 429s for the rest of its minute, so keys cannot be guessed fast.
    key_failures_per_minute: int = 10
    # Origins allowed to call the API from a browser (none = same origin only).
    cors_origins: list[str] = Field(default_factory=list)
    body_read_timeout_s: float = 10.0  # a request body that trickles in slower is cut off (408)
    # Connections (gateway/protocol.py): a request's headers must all arrive within this (408,
    # closed; a connection that sends nothing is closed), be at most this large (431), and a
    # kept-alive connection idle this long is closed.
    header_read_timeout_s: float = Field(default=10.0, gt=0)
    max_header_bytes: int = Field(default=16_384, ge=1024)
    keep_alive_timeout_s: float = Field(default=5.0, gt=0)
    readiness_cache_s: float = 5.0  # per-queue consumer checks are broadcasts: reuse one for this long
    # A stage queue with messages waiting and none taken by its workers for this long turns
    # /readyz red (a worker alive but consuming nothing); questions wait at most wait_timeout_s.
    stall_after_s: float = Field(default=30.0, gt=0)


class ConversationSettings(BaseModel):
    ttl_s: int = 86_400  # a conversation expires this long after its last turn
    max_turns: int = 20  # turns one conversation may hold; past it, a typed 409
    carried_pages: int = 4  # pages of earlier turns a follow-up searches besides the index
    linked_pages: int = 16  # pages one link from the cited ones a follow-up searches after them
    dir: Path | None = None  # embedded mode's conversation files; default <data_dir>/conversations


class CelerySettings(BaseModel):
    # Prepended to every broker and question-store key, so stacks (and test runs) can share
    # one Redis without stealing each other's tasks.
    key_prefix: str = ""
    # A task left unacknowledged by a killed worker is handed to another worker after this;
    # question tasks take milliseconds, so keep it short (long tasks must not use acks_late).
    visibility_timeout_s: int = 10
    restore_interval_s: int = 2


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TAXNAV_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Path("data")
    mode: Literal["embedded", "distributed"] = "embedded"
    manual: str = DEFAULT_MANUAL
    redis_url: str = "redis://127.0.0.1:6379/0"
    stores: StoreSettings = Field(default_factory=StoreSettings)
    models: ModelSettings = Field(default_factory=ModelSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    expansion: ExpansionSettings = Field(default_factory=ExpansionSettings)
    rollup: RollupSettings = Field(default_factory=RollupSettings)
    selection: SelectionSettings = Field(default_factory=SelectionSettings)
    stitching: StitchingSettings = Field(default_factory=StitchingSettings)
    verification: VerificationSettings = Field(default_factory=VerificationSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    celery: CelerySettings = Field(default_factory=CelerySettings)
    conversations: ConversationSettings = Field(default_factory=ConversationSettings)


@lru_cache
def get_settings() -> Settings:
    return Settings()
