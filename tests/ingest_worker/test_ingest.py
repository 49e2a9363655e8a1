"""run_ingest end to end over the replay server: generations, incremental and safe re-ingest.

The runs ingest the session's EIM slice (tests/conftest.py SLICE_SECTIONS), so the embedding
cache already holds their vectors and only changed text is embedded here.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from ingest_worker.ingest import LOCK_FILE, IngestError, run_ingest
from shared.config import Settings, get_settings
from shared.generation import CURRENT, GENERATIONS, collection_dir, load_generation, serving_path
from shared.index import CorpusIndex
from taxnav import cli
from taxnav.replay_server import Fault, ReplayServer
from tests.conftest import EIM, REPO, SLICE_SECTIONS, small_corpus

SLICE = set(SLICE_SECTIONS)


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    """The CLI caches Settings read from the environment; don't leak a test's into the next."""
    yield
    get_settings.cache_clear()


@pytest.fixture
def server(corpus_dir: Path) -> Iterator[ReplayServer]:
    with ReplayServer(corpus_dir) as replay:
        yield replay


@pytest.fixture
def ingested(tmp_path: Path, server: ReplayServer, settings_for: Callable[..., Settings], slice_data_dir: Path) -> Settings:
    """A data dir with the slice ingested once over HTTP (vectors come from the shared cache)."""
    settings = settings_for(tmp_path / "data")
    run_ingest(settings, server.base_url, EIM, sections=SLICE)
    return settings


def test_first_ingest_builds_a_generation_and_serves_it(ingested: Settings, slice_data_dir: Path) -> None:
    collection = collection_dir(ingested, EIM)
    link = collection / CURRENT
    assert link.is_symlink() and os.readlink(link).startswith(f"{GENERATIONS}/g")
    generation = load_generation(serving_path(ingested, EIM))
    assert set(generation.pages) == SLICE
    assert generation.manifest.chunks == len(generation.chunks) > 50
    index = CorpusIndex.open(ingested)
    assert index.generation == generation.manifest.generation
    top = [cid for cid, _ in index.bm25_search("statutory mileage rates motor cycle 24p", 5)]  # the rate table's row
    assert top[0].startswith("EIM31240#")
    # Over HTTP or from the directory, the same slice gives the same chunks.
    assert CorpusIndex.open(ingested).chunks.keys() == CorpusIndex.open(Settings(data_dir=slice_data_dir)).chunks.keys()


def test_unchanged_reingest_reuses_everything(ingested: Settings, server: ReplayServer) -> None:
    before = load_generation(serving_path(ingested, EIM))
    summary = run_ingest(ingested, server.base_url, EIM, sections=SLICE)
    assert summary.changed_pages == [] and summary.removed_pages == []
    assert (summary.reparsed, summary.reembedded, summary.model_embedded) == (0, 0, 0)
    after = load_generation(serving_path(ingested, EIM))
    assert after.manifest.generation != before.manifest.generation
    assert {c.id: c.content_hash for c in after.chunks.values()} == {c.id: c.content_hash for c in before.chunks.values()}
    # A third run: the serving generation and one previous are kept, older ones removed.
    run_ingest(ingested, server.base_url, EIM, sections=SLICE)
    kept = sorted(p.name for p in (collection_dir(ingested, EIM) / GENERATIONS).iterdir())
    assert len(kept) == 2 and before.manifest.generation not in kept


def _append_paragraph(text: str) -> Callable[[dict], None]:
    def change(doc: dict) -> None:
        doc["details"]["body"] += f"<p>{text}</p>"

    return change


def test_ten_changed_pages_reparse_and_reembed_only_those(ingested: Settings, server: ReplayServer) -> None:
    before = load_generation(serving_path(ingested, EIM))
    with_chunks = sorted(s for s, p in before.pages.items() if p.chunk_ids)
    changed = with_chunks[:10]
    for section in changed:
        server.modify(EIM, section, _append_paragraph(f"Zebrafinch rule {section} applies."))
    summary = run_ingest(ingested, server.base_url, EIM, sections=SLICE)
    assert sorted(summary.changed_pages) == changed
    assert summary.reparsed == 10
    after = load_generation(serving_path(ingested, EIM))
    new_hashes = {c.content_hash for c in after.chunks.values()} - {c.content_hash for c in before.chunks.values()}
    assert summary.reembedded == len(new_hashes) and 10 <= summary.reembedded <= sum(len(after.pages[s].chunk_ids) for s in changed)
    assert summary.model_embedded == summary.reembedded  # texts never seen before
    # Pages left alone keep their chunks exactly.
    for section in set(before.pages) - set(changed):
        assert after.pages[section].chunk_ids == before.pages[section].chunk_ids
    index = CorpusIndex.open(ingested)
    hits = {cid.split("#")[0] for cid, _ in index.bm25_search("zebrafinch", 20)}
    assert hits == set(changed)


def test_removed_page_is_dropped_and_links_to_it_dangle(ingested: Settings, server: ReplayServer) -> None:
    server.remove(EIM, "EIM31410")
    summary = run_ingest(ingested, server.base_url, EIM, sections=SLICE)
    assert summary.removed_pages == ["EIM31410"] and summary.removed == 1
    assert summary.gone == ["EIM31410"]  # it answered 404
    index = CorpusIndex.open(ingested)
    assert "EIM31410" not in index.pages
    assert not any(c.startswith("EIM31410#") for c in index.chunks)
    assert not any(cid.startswith("EIM31410#") for cid, _ in index.bm25_search("passenger payments exemption", 50))
    assert index.graph.nodes["EIM31410"]["missing"] is True  # EIM31400 still links to it


def test_page_dropped_from_its_parent_is_removed(tmp_path: Path, server: ReplayServer, settings_for: Callable[..., Settings]) -> None:
    settings = settings_for(tmp_path / "data")
    run_ingest(settings, server.base_url, EIM, limit=30)
    before = load_generation(serving_path(settings, EIM))
    last = list(before.pages)[-1]
    parent = before.pages[last].breadcrumbs[-1] if before.pages[last].breadcrumbs else None

    def drop(doc: dict) -> None:
        for group in doc["details"]["child_section_groups"]:
            group["child_sections"] = [c for c in group["child_sections"] if c["section_id"].upper() != last]

    server.modify(EIM, parent, drop)
    summary = run_ingest(settings, server.base_url, EIM, limit=29)
    assert summary.removed_pages == [last]


def test_unreadable_pages_keep_their_last_good_version(ingested: Settings, corpus_dir: Path) -> None:
    faults = [Fault(EIM, "EIM31240", "status", status=500), Fault(EIM, "EIM01476", "truncate")]
    with ReplayServer(corpus_dir, faults=faults) as failing:
        failing.modify(EIM, "EIM31230", lambda doc: [doc.pop(k) for k in ("public_updated_at", "updated_at")])  # valid JSON, no date
        summary = run_ingest(ingested, failing.base_url, EIM, sections=SLICE)
    assert summary.failed == ["EIM31240"] and sorted(summary.malformed) == ["EIM01476", "EIM31230"]
    assert "public_updated_at" in summary.errors["EIM31230"]
    assert summary.removed_pages == []
    index = CorpusIndex.open(ingested)
    assert any("45p" in c.text for c in index.page_chunks("EIM31240"))
    assert index.page_chunks("EIM01476") and index.page_chunks("EIM31230")


def test_failed_ingest_leaves_the_previous_generation_serving(ingested: Settings, corpus_dir: Path) -> None:
    serving = serving_path(ingested, EIM)
    with ReplayServer(corpus_dir, faults=[Fault(EIM, None, "status", status=503)]) as down:
        with pytest.raises(IngestError, match="cannot read the root"):
            run_ingest(ingested, down.base_url, EIM, sections=SLICE)
    broken = ingested.model_copy(deep=True)
    broken.models.provider = "mistral"  # an embedder that cannot be reached: fails mid-run
    broken.models.mistral_api_key = "key"
    broken.models.mistral_server_url = "http://127.0.0.1:9"
    broken.models.max_retries = 0
    with ReplayServer(corpus_dir) as replay:
        replay.modify(EIM, "EIM31240", _append_paragraph("new text the cache has not seen"))
        with pytest.raises(Exception, match="Mistral"):
            run_ingest(broken, replay.base_url, EIM, sections=SLICE)
    assert serving_path(ingested, EIM) == serving
    assert CorpusIndex.open(ingested).bm25_search("mileage", 3)


def test_a_second_concurrent_ingest_is_refused(ingested: Settings, server: ReplayServer) -> None:
    with (collection_dir(ingested, EIM) / LOCK_FILE).open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(IngestError, match="another ingest"):
            run_ingest(ingested, server.base_url, EIM, sections=SLICE)


def _wait_for(stream_fd: int, marker: bytes, timeout_s: float) -> bytes:
    """Read a child's stderr until ``marker`` shows up (the progress bar names its phase)."""
    seen = b""
    deadline = time.monotonic() + timeout_s
    os.set_blocking(stream_fd, False)
    while time.monotonic() < deadline and marker not in seen:
        try:
            seen += os.read(stream_fd, 4096)
        except BlockingIOError:
            time.sleep(0.05)
    return seen


@pytest.mark.parametrize("phase", [b"crawl", b"embed"])
def test_killed_ingest_leaves_the_previous_generation_answering(
    phase: bytes, tmp_path: Path, corpus_dir: Path, settings_for: Callable[..., Settings]
) -> None:
    settings = settings_for(tmp_path / "data")
    with ReplayServer(corpus_dir) as replay:
        run_ingest(settings, replay.base_url, EIM, limit=25)
        serving = serving_path(settings, EIM)
        before = CorpusIndex.open(settings)
        expected = before.bm25_search("employment income manual", 5)
        for section in ("EIM22700", "EIM23000", "EIM26100", "EIM30000"):  # keep the crawl busy
            replay.add_fault(Fault(EIM, section, "slow", delay_s=1.0))
        env = dict(os.environ, TAXNAV_INGEST__BACKOFF_BASE_S="0.01")
        if phase == b"embed":  # an empty cache: the child has minutes of embedding to do
            env["TAXNAV_INGEST__EMBEDDING_CACHE_DIR"] = str(tmp_path / "fresh-cache")
        child = subprocess.Popen(
            [sys.executable, "-m", "taxnav.cli", "ingest", "--data-dir", str(settings.data_dir), "--source", replay.base_url, "--limit", "400"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            seen = _wait_for(child.stderr.fileno(), phase + b" ", 120)
            assert phase + b" " in seen, seen[-500:]
            time.sleep(0.5)
            child.send_signal(signal.SIGKILL)
            assert child.wait(10) == -signal.SIGKILL
        finally:
            child.kill()
            child.stderr.close()
        # The serving generation is the one from before, whole, and still answers.
        assert serving_path(settings, EIM) == serving
        CorpusIndex._cache.clear()
        after = CorpusIndex.open(settings)
        assert after.generation == before.generation
        assert after.bm25_search("employment income manual", 5) == expected
        assert after.vector_search("what does this manual cover", 3)
        # The next run clears what the killed one left and serves a new generation.
        replay.clear_faults()
        summary = run_ingest(settings, replay.base_url, EIM, limit=25)
        assert summary.generation != before.generation
        leftovers = [p.name for p in (collection_dir(settings, EIM) / GENERATIONS).iterdir() if p.name.endswith(".partial")]
        assert leftovers == []


def test_cli_json_summary_and_bad_arguments(tmp_path: Path, server: ReplayServer, capsys: pytest.CaptureFixture[str], embedding_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAXNAV_INGEST__EMBEDDING_CACHE_DIR", str(embedding_cache))
    data_dir = tmp_path / "data"
    assert cli.main(["ingest", "--data-dir", str(data_dir), "--source", server.base_url, "--limit", "12", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {"pages", "chunks", "xref_edges", "sibling_edges", "removed", "reembedded", "seconds"} <= summary.keys()
    assert summary["pages"] == 12 and summary["manual"] == EIM
    runs = (data_dir / "ingest_runs.jsonl").read_text().splitlines()
    assert json.loads(runs[-1])["status"] == "ok" and json.loads(runs[-1])["generation"] == summary["generation"]
    # A source that is not there is a usage error, refused before any run starts (none recorded).
    assert cli.main(["ingest", "--data-dir", str(data_dir), "--source", str(tmp_path / "nowhere")]) == 2
    assert "neither an http(s) URL nor a directory" in capsys.readouterr().err
    assert cli.main(["ingest", "--data-dir", str(data_dir), "--limit", "0"]) == 2
    assert json.loads((data_dir / "ingest_runs.jsonl").read_text().splitlines()[-1])["status"] == "ok"
    # An embedder that cannot be reached: a one-line error and exit 1, not a traceback.
    monkeypatch.setenv("TAXNAV_MODELS__PROVIDER", "mistral")
    monkeypatch.setenv("TAXNAV_MODELS__MISTRAL_API_KEY", "key")
    monkeypatch.setenv("TAXNAV_MODELS__MISTRAL_SERVER_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("TAXNAV_MODELS__MAX_RETRIES", "0")
    assert cli.main(["ingest", "--data-dir", str(tmp_path / "other"), "--source", server.base_url, "--limit", "3"]) == 1
    assert "Mistral embeddings" in capsys.readouterr().err


def test_all_three_manuals_ingest_each_into_its_own_collection(tmp_path: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str], embedding_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAXNAV_INGEST__EMBEDDING_CACHE_DIR", str(embedding_cache))
    data_dir = tmp_path / "data"
    picked = {EIM: ["EIM00100", "EIM11200", "EIM11300"], "business-income-manual": ["BIM14000", "BIM20000", "BIM30000"], "self-assessment-manual": ["SAM002", "SAM005", "SAM006"]}
    source = small_corpus(corpus_dir, tmp_path / "corpus", picked)  # whole manuals: the slow-marked parse tests
    assert cli.main(["ingest", "--data-dir", str(data_dir), "--source", str(source), "--manual", "all", "--no-progress"]) == 0
    out = capsys.readouterr().out
    settings = Settings(data_dir=data_dir)
    for manual, sections in picked.items():
        assert f"{manual}: generation" in out
        index = CorpusIndex.open(settings, manual)
        assert sorted(index.pages) == sections and index.chunks
        assert {c.manual for c in index.chunks.values()} == {manual}
        assert index.bm25_search(index.chunks[next(iter(index.chunks))].text[:80], 1)


def test_a_routing_manual_gets_one_vector_per_page_and_a_settings_change_is_reingested(tmp_path: Path, corpus_dir: Path, settings_for: Callable[..., Settings]) -> None:
    bim = "business-income-manual"
    source = small_corpus(corpus_dir, tmp_path / "corpus", {bim: ["BIM14000", "BIM85620", "BIM85625"]})
    settings = settings_for(tmp_path / "data")
    assert bim in settings.ingest.page_vectors  # routed to, not answered from: the default
    summary = run_ingest(settings, str(source), bim)
    index = CorpusIndex.open(settings, bim)
    assert len(index.chunks) > len(index.pages)  # BIM85625 has several chunks: one vector would be fewer
    firsts = {c.id for c in index.chunks.values() if c.position == 0}
    assert set(index.chunk_vectors(list(index.chunks))) == firsts and len(firsts) == len(index.pages)
    assert summary.model_embedded <= len(firsts) and index.vector_level == "pages"  # routing reads its level
    # Each page's vector is found by its own title (the routing evidence reads nearest vectors).
    hits = index.search_vector(np.asarray(index.embed_query(index.pages["BIM14000"].title)), 1)
    assert hits[0][0] == "BIM14000#c0"
    # A chunk without a vector of its own is scored by its page's: the manual can still be asked.
    assert np.array_equal(index.chunk_vector("BIM85625#c2"), index.chunk_vector("BIM85625#c0"))

    # Every chunk embedded when the manual is no longer routing-only, with no page re-parsed ...
    every = settings.model_copy(deep=True)
    every.ingest.page_vectors = []
    summary = run_ingest(every, str(source), bim)
    index = CorpusIndex.open(every, bim)
    assert summary.reparsed == 0 and set(index.chunk_vectors(list(index.chunks))) == set(index.chunks)
    # ... and back to one per page from the cache alone.
    summary = run_ingest(settings, str(source), bim)
    assert summary.model_embedded == 0
    assert set(CorpusIndex.open(settings, bim).chunk_vectors(list(index.chunks))) == firsts
