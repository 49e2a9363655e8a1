"""Fixtures shared by every test package.

- ``corpus_dir``: ../shared/corpus (read only; never copied into the repo).
- ``replay_server``: one real HTTP server replaying the corpus for the whole session. Do not
  add faults or page changes to it; a test that needs them starts its own ``ReplayServer``.
- ``embedding_cache``: one embedding cache directory for the session, so the same text is
  embedded once however many data dirs the tests build (``TAXNAV_TEST_EMBEDDING_CACHE`` points
  it at a persistent directory to share it across runs).
- ``settings_for(data_dir)``: Settings for a test data dir, wired to that cache, quick retries.
- ``small_corpus(corpus_dir, dest, {manual: [sections]})``: a few real pages per manual in a
  temp corpus dir (a whole manual's root replaced by just those sections).
- ``slice_data_dir`` / ``slice_settings``: the EIM slice ``SLICE_SECTIONS`` (about 50 pages:
  mileage, passengers, homeworking, parties and gifts, vans, small loans, long service awards,
  and their neighbours) ingested once per session. Read it, never ingest into it.
- A gateway's warm-up freezes the heap (shared/heap.py); each test ends with it unfrozen, so
  one test's frozen objects (cycles among them never collected) do not outlive it.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shared.config import IngestSettings, Settings
from taxnav.replay_server import ReplayServer
from tests.support.mistral_standin import MistralStandin

REPO = Path(__file__).resolve().parents[1]
CORPUS_DIR = (REPO / ".." / "shared" / "corpus").resolve()
EIM = "employment-income-manual"

SLICE_SECTIONS: frozenset[str] = frozenset(
    {
        # mileage allowance payments, MAR and passenger payments
        "EIM31200", "EIM31205", "EIM31210", "EIM31230", "EIM31235", "EIM31240", "EIM31255", "EIM31260",
        "EIM31280", "EIM31330", "EIM31335", "EIM31355", "EIM31400", "EIM31405", "EIM31410", "EIM31415",
        # homeworking household expenses
        "EIM01450", "EIM01472", "EIM01474", "EIM01476", "EIM01478", "EIM05200", "EIM32700CT", "EIM32760",
        "EIM32815", "EIM32820", "EIM32830",
        # annual parties, gifts from third parties, the benefits code
        "EIM20007", "EIM21601", "EIM21602", "EIM21690", "EIM21691", "EIM21715",
        # van and van fuel benefit
        "EIM22700", "EIM22729", "EIM22790", "EIM22795", "EIM22900", "EIM22915", "EIM22920", "EIM22980",
        # small loans
        "EIM26100", "EIM26102", "EIM26137", "EIM26140", "EIM26142", "EIM26145",
        # long service awards
        "EIM01500", "EIM01501", "EIM01502", "EIM01503", "EIM01504",
    }
)  # fmt: skip


@pytest.fixture(autouse=True)
def _unfreeze_heap() -> Iterator[None]:
    yield
    gc.unfreeze()


def make_settings(data_dir: Path, cache_dir: Path | None = None, **ingest: object) -> Settings:
    """Embedded-mode settings for a test data dir; crawler retries back off in milliseconds."""
    options: dict[str, object] = {"backoff_base_s": 0.01, "timeout_s": 5.0, "max_retries": 3}
    options.update(ingest)
    if cache_dir is not None:
        options["embedding_cache_dir"] = cache_dir
    return Settings(data_dir=data_dir, mode="embedded", ingest=IngestSettings(**options))


def small_corpus(corpus_dir: Path, dest: Path, sections: dict[str, list[str]]) -> Path:
    """A corpus of a few real pages per manual, laid out like ../shared/corpus, under ``dest``
    (a temp dir): each manual's root lists exactly ``sections``."""
    for manual, ids in sections.items():
        target = dest / manual
        target.mkdir(parents=True)
        root = json.loads((corpus_dir / manual / "_manual.json").read_text())
        children = [{"section_id": s, "base_path": f"/hmrc-internal-manuals/{manual}/{s.lower()}", "title": s} for s in ids]
        root["details"]["child_section_groups"] = [{"title": None, "child_sections": children}]
        (target / "_manual.json").write_text(json.dumps(root))
        for section in ids:
            shutil.copy(corpus_dir / manual / f"{section.lower()}.json", target)
    return dest


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    assert (CORPUS_DIR / EIM / "_manual.json").is_file(), f"corpus not found at {CORPUS_DIR}"
    return CORPUS_DIR


@pytest.fixture(scope="session")
def replay_server(corpus_dir: Path) -> Iterator[ReplayServer]:
    with ReplayServer(corpus_dir) as server:
        yield server


@pytest.fixture(scope="session")
def embedding_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shared = os.environ.get("TAXNAV_TEST_EMBEDDING_CACHE")
    if shared:
        Path(shared).mkdir(parents=True, exist_ok=True)
        return Path(shared)
    return tmp_path_factory.mktemp("embedding-cache")


@pytest.fixture(scope="session")
def settings_for(embedding_cache: Path) -> Callable[..., Settings]:
    def build(data_dir: Path, **ingest: object) -> Settings:
        return make_settings(data_dir, embedding_cache, **ingest)

    return build


@pytest.fixture(scope="session")
def slice_data_dir(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path, settings_for: Callable[..., Settings]) -> Path:
    from ingest_worker.ingest import run_ingest

    data_dir = tmp_path_factory.mktemp("slice-data")
    run_ingest(settings_for(data_dir), str(corpus_dir), EIM, sections=set(SLICE_SECTIONS))
    return data_dir


@pytest.fixture(scope="session")
def slice_settings(slice_data_dir: Path, settings_for: Callable[..., Settings]) -> Settings:
    return settings_for(slice_data_dir)


@pytest.fixture
def standin() -> Iterator[MistralStandin]:
    """The local stand-in for the Mistral API (its wire format; the real API is not reachable here)."""
    with MistralStandin() as server:
        yield server
