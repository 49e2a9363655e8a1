"""The crawler against the real replay server (HTTP) and against a corpus directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest_worker.crawler import CrawlError, DirSource, run_crawl
from shared.config import IngestSettings
from taxnav.replay_server import Fault, ReplayServer
from tests.conftest import EIM

QUICK = IngestSettings(backoff_base_s=0.01, timeout_s=2.0, max_retries=3, concurrency=4)


def test_limit_takes_the_first_sections_in_manual_order(replay_server: ReplayServer) -> None:
    result = run_crawl(replay_server.base_url, EIM, QUICK, limit=25)
    assert len(result.pages) == 25
    # Level by level: the root's children first, in the root's own order.
    assert list(result.pages)[:3] == ["EIM00100", "EIM00500", "EIM11200"]
    assert result.title == "Employment Income Manual"
    assert not (result.failed or result.malformed or result.removed or result.blocked)


def test_http_and_directory_sources_crawl_the_same_pages(replay_server: ReplayServer, corpus_dir: Path) -> None:
    over_http = run_crawl(replay_server.base_url, EIM, QUICK, limit=60)
    from_dir = run_crawl(str(corpus_dir), EIM, QUICK, limit=60)
    assert list(over_http.pages) == list(from_dir.pages)
    assert over_http.pages["EIM00100"] == from_dir.pages["EIM00100"]


def test_sections_fetch_only_those_pages_plus_breadcrumb_titles(replay_server: ReplayServer) -> None:
    result = run_crawl(replay_server.base_url, EIM, QUICK, sections={"EIM31240", "EIM01476"})
    assert set(result.pages) == {"EIM31240", "EIM01476"}
    # The parents' titles are known (for heading paths) without indexing the parents.
    assert result.titles["EIM31200"].startswith("Employees using own vehicles for work")
    assert "EIM31200" not in result.pages


def test_transient_500s_429s_and_slow_responses_are_retried(corpus_dir: Path) -> None:
    faults = [
        Fault(EIM, "EIM00100", "status", status=500, times=2),
        Fault(EIM, "EIM00500", "status", status=503, times=1),
        Fault(EIM, "EIM11200", "status", status=429, retry_after=0, times=2),
        Fault(EIM, "EIM11300", "slow", delay_s=3.0, times=1),  # longer than the 2 s timeout: retried
    ]
    with ReplayServer(corpus_dir, faults=faults) as server:
        result = run_crawl(server.base_url, EIM, QUICK, limit=6)
        assert {"EIM00100", "EIM00500", "EIM11200", "EIM11300"} <= set(result.pages)
        assert not result.failed
        assert server.hits["/api/content/hmrc-internal-manuals/employment-income-manual/eim00100"] == 3
        assert server.hits["/api/content/hmrc-internal-manuals/employment-income-manual/eim11300"] == 2


def test_persistent_failures_404_and_truncated_json_are_recorded_not_raised(corpus_dir: Path) -> None:
    faults = [
        Fault(EIM, "EIM00100", "status", status=500),  # every time: retries run out
        Fault(EIM, "EIM00500", "truncate"),
        Fault(EIM, "EIM11200", "status", status=410),
        Fault(EIM, "EIM11300", "status", status=403),  # not retryable
    ]
    with ReplayServer(corpus_dir, faults=faults) as server:
        server.remove(EIM, "EIM11800")
        result = run_crawl(server.base_url, EIM, QUICK, limit=8)
        assert result.failed == ["EIM00100", "EIM11300"]
        assert result.malformed == ["EIM00500"]
        assert result.removed == ["EIM11200", "EIM11800"]
        assert "after 4 attempts" in result.errors["EIM00100"]
        assert "invalid JSON" in result.errors["EIM00500"]
        assert "HTTP 403" in result.errors["EIM11300"]
        assert server.hits["/api/content/hmrc-internal-manuals/employment-income-manual/eim00100"] == 4
        assert server.hits["/api/content/hmrc-internal-manuals/employment-income-manual/eim11300"] == 1
        assert len(result.pages) == 8 - 5  # the limit counts sections attempted


def test_links_off_the_allow_list_or_out_of_the_manual_are_blocked(corpus_dir: Path) -> None:
    with ReplayServer(corpus_dir) as server:

        def add_children(doc: dict) -> None:
            doc["details"]["child_section_groups"] = [
                {
                    "title": None,
                    "child_sections": [
                        {"section_id": "EVIL1", "base_path": "https://evil.example/hmrc-internal-manuals/employment-income-manual/evil1"},
                        {"section_id": "BIM00500", "base_path": "/hmrc-internal-manuals/business-income-manual/bim00500"},
                        {"section_id": "EIM31240", "base_path": "/hmrc-internal-manuals/employment-income-manual/eim31240"},
                    ],
                }
            ]

        server.modify(EIM, None, add_children)
        result = run_crawl(server.base_url, EIM, QUICK)
        assert list(result.pages) == ["EIM31240"]
        assert sorted(result.blocked) == ["BIM00500", "EVIL1"]
        assert "allow-list" in result.errors["EVIL1"]
        assert not any("evil" in path for path in server.hits)


def test_unreadable_root_is_a_crawl_error(corpus_dir: Path, tmp_path: Path) -> None:
    with ReplayServer(corpus_dir, faults=[Fault(EIM, None, "truncate")]) as server:
        with pytest.raises(CrawlError, match="cannot read the root"):
            run_crawl(server.base_url, EIM, QUICK)
    with pytest.raises(CrawlError, match="neither an http"):
        run_crawl(str(tmp_path / "missing"), EIM, QUICK)
    # A server that is not there at all: retries, then a clear error.
    with pytest.raises(CrawlError, match="transport error"):
        run_crawl("http://127.0.0.1:9", EIM, IngestSettings(backoff_base_s=0.01, max_retries=1))


def test_directory_source_records_malformed_and_missing_files(tmp_path: Path, corpus_dir: Path) -> None:
    manual_dir = tmp_path / EIM
    manual_dir.mkdir()
    root = json.loads((corpus_dir / EIM / "_manual.json").read_text())
    root["details"]["child_section_groups"] = [
        {"child_sections": [{"section_id": s, "base_path": f"/hmrc-internal-manuals/{EIM}/{s.lower()}"} for s in ("EIM31240", "EIM00001", "EIM00002", "EIM00003")]}
    ]
    (manual_dir / "_manual.json").write_text(json.dumps(root))
    (manual_dir / "eim31240.json").write_text((corpus_dir / EIM / "eim31240.json").read_text())
    (manual_dir / "eim00001.json").write_text('{"title": "cut short", "details": {"bo')
    (manual_dir / "eim00003.json").write_text('["a list, not a page"]')
    result = run_crawl(str(tmp_path), EIM, QUICK)
    assert list(result.pages) == ["EIM31240"]
    assert result.malformed == ["EIM00001", "EIM00003"]
    assert result.removed == ["EIM00002"]
    assert DirSource(tmp_path).manuals() == [EIM]


def test_list_manuals_finds_all_three_in_the_corpus(corpus_dir: Path) -> None:
    assert DirSource(corpus_dir).manuals() == ["business-income-manual", "employment-income-manual", "self-assessment-manual"]
