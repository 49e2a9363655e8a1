"""`taxnav bench scale` on a few real pages: renamed copies form one manual that ingests whole
(each copy's pages, ids and links renamed, text unchanged), and the figures are written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from shared.config import Settings
from taxnav import cli
from taxnav.bench.scale import scaled_corpus
from tests.conftest import EIM, small_corpus

PAGES = ["EIM31200", "EIM31205", "EIM31210", "EIM31230", "EIM31240"]


def test_copies_are_renamed_everywhere_but_the_text(tmp_path, corpus_dir):
    source = small_corpus(corpus_dir, tmp_path / "source", {EIM: PAGES})
    scaled = scaled_corpus(source, EIM, 3, tmp_path / "scaled") / EIM
    assert sorted(p.stem for p in scaled.glob("eim31240*.json")) == ["eim31240", "eim31240x2", "eim31240x3"]
    original = json.loads((scaled / "eim31240.json").read_text())
    copy = json.loads((scaled / "eim31240x3.json").read_text())
    assert copy["details"]["section_id"] == "EIM31240X3" and copy["base_path"].endswith("/eim31240x3")
    assert all(c["section_id"].endswith("X3") for c in copy["details"].get("breadcrumbs", []))
    assert copy["details"]["body"] == original["details"]["body"] and copy["title"] == original["title"]
    root = json.loads((scaled / "_manual.json").read_text())
    listed = [c["section_id"] for g in root["details"]["child_section_groups"] for c in g["child_sections"]]
    assert len(listed) == 3 * len(PAGES) and "EIM31240X2" in listed


def _scale_report(tmp_path: Path, corpus_dir: Path, data_dir: Path, rounds: int, mode: str) -> dict:
    """`taxnav bench scale` at sizes 1 and 2 of PAGES, one question; its written report."""
    source = small_corpus(corpus_dir, tmp_path / "source", {EIM: PAGES})
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "how much can my employer pay me per mile for my own car?"}) + "\n")
    out = tmp_path / "scale.json"
    args = ["bench", "scale", "--data-dir", str(data_dir), "--source", str(source), "--sizes", "1,2", "--questions", str(questions),
            "--rounds", str(rounds), "--work-dir", str(tmp_path), "--out", str(out), "--mode", mode]  # fmt: skip
    assert cli.main(args) == 0
    return json.loads(out.read_text())


def test_the_benchmark_ingests_each_size_and_writes_its_figures(tmp_path, corpus_dir, slice_data_dir, embedding_cache, monkeypatch):
    monkeypatch.setenv("TAXNAV_INGEST__EMBEDDING_CACHE_DIR", str(embedding_cache))
    report = _scale_report(tmp_path, corpus_dir, slice_data_dir, rounds=2, mode="embedded")
    one, two = report["sizes"]
    assert (one["pages"], two["pages"]) == (len(PAGES), 2 * len(PAGES)) and two["chunks"] == 2 * one["chunks"]
    assert two["model_embedded"] == 0  # the copies' text is the original's: all from the cache
    assert all(row["index_mb"] > 0 and row["gateway_rss_mb"] > 0 and row["query_ms"]["n"] == 2 for row in report["sizes"])
    assert "p50_at_2x_over_p50_at_1x" in report["verdicts"]
    assert not list(Path(tmp_path).glob("taxnav-scale-*"))  # the work dir is removed


@pytest.mark.distributed
def test_the_distributed_run_serves_each_size_through_real_workers(tmp_path, corpus_dir, slice_data_dir, embedding_cache, monkeypatch):
    monkeypatch.setenv("TAXNAV_INGEST__EMBEDDING_CACHE_DIR", str(embedding_cache))
    report = _scale_report(tmp_path, corpus_dir, slice_data_dir, rounds=1, mode="distributed")
    for row in report["sizes"]:
        served = row["distributed"]
        assert served["query_ms"]["n"] == 1 and served["workers_rss_mb"] > served["gateway_rss_mb"] > 0
        assert "query_ms" not in row  # no embedded run was asked for
    assert "p50_at_2x_over_p50_at_1x" in report["verdicts"]["distributed"]
    assert not redis.Redis.from_url(Settings().redis_url).keys("bench-scale-*")  # its queues and records purged
