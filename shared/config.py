"""All settings as one nested pydantic object, read from the environment.

Environment variables use the prefix ``TAXNAV_`` and ``__`` between levels, e.g.
``TAXNAV_MODE=distributed``, ``TAXNAV_MODELS__PROVIDER=mistral``,
``TAXNAV_RETRIEVAL__TOP_K=12``. Every variable docker-compose passes must map to a field here.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_MANUAL = "employment-income-manual"


class StoreSettings(BaseModel):
    # embedded: tantivy + qdrant-client local mode on disk under data_dir.
    # distributed: OpenSearch + Qdrant servers at the URLs below.
    opensearch_url: str = "http://localhost:9200"
    qdrant_url: str = "http://localhost:6333"
    request_timeout_s: float = 10.0


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
    allowed_hosts: list[str] = Field(default_factory=lambda: ["www.gov.uk"])
    concurrency: int = 8
    timeout_s: float = 15.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    schedule_cron: str = "0 3 * * *"


class RetrievalSettings(BaseModel):
    top_k: int = 12
    rrf_k: int = 60
    use_bm25: bool = True
    use_vectors: bool = True


class ExpansionSettings(BaseModel):
    enabled: bool = True
    seeds: int = 6
    decay: float = 0.5


class RollupSettings(BaseModel):
    whole_page: bool = True
    max_chunks_per_page: int = 8


class SelectionSettings(BaseModel):
    strategy: Literal["recall_greedy", "strict"] = "recall_greedy"


class VerificationSettings(BaseModel):
    faithfulness_floor: float = 0.6


class GatewaySettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = 8000
    wait_timeout_s: float = 30.0
    max_body_bytes: int = 16_384


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
    verification: VerificationSettings = Field(default_factory=VerificationSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)


@lru_cache
def get_settings() -> Settings:
    return Settings()
