"""`taxnav bench ingest` end to end on a small manual (figures are not asserted: speed is
reported by the benchmark, not tested)."""

from __future__ import annotations

import json
from pathlib import Path

from taxnav import cli
from tests.conftest import EIM, small_corpus

SECTIONS = ["EIM31230", "EIM31235", "EIM31240", "EIM31330", "EIM31355", "EIM31400", "EIM31405", "EIM31410"]


def test_bench_ingest_writes_all_three_runs(corpus_dir: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "reports" / "bench-ingest.json"
    source = small_corpus(corpus_dir, tmp_path / "corpus", {EIM: SECTIONS})
    assert cli.main(["bench", "ingest", "--source", str(source), "--out", str(out), "--changed", "3"]) == 0
    results = json.loads(out.read_text())
    full, unchanged, changed = results["full"], results["unchanged"], results["changed"]
    assert full["pages"] == unchanged["pages"] == changed["pages"] == len(SECTIONS)
    assert full["reembedded"] == full["chunks"] == full["model_embedded"] > 0
    assert (unchanged["reparsed"], unchanged["reembedded"], unchanged["changed_pages"]) == (0, 0, 0)
    assert changed["changed_pages"] == changed["reparsed"] == 3 and changed["reembedded"] >= 3
    assert len(changed["pages_modified"]) == 3
    assert all(results[run]["peak_rss_mb"] > 0 and results[run]["wall_s"] > 0 for run in ("full", "unchanged", "changed"))
    assert set(results["checks"]) == {"full_wall_s", "unchanged_wall_s", "changed_wall_s", "peak_rss_mb"}
    printed = capsys.readouterr().out
    assert "unchanged" in printed and str(out) in printed


def test_bench_ingest_rejects_a_source_without_the_manual(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    assert cli.main(["bench", "ingest", "--source", str(tmp_path), "--out", str(tmp_path / "x.json")]) == 2
    assert "no employment-income-manual" in capsys.readouterr().err
