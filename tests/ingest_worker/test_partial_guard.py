"""A run over part of a manual (--limit, chosen sections) never replaces a whole serving
generation unless forced; partial generations replace each other freely (quick trial runs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ingest_worker.ingest import PartialIngestRefused, run_ingest
from shared.config import Settings
from shared.generation import load_generation, serving_path
from taxnav import cli
from tests.conftest import EIM, small_corpus

PAGES = ["EIM31200", "EIM31205", "EIM31210", "EIM31230", "EIM31240"]


@pytest.fixture
def whole(tmp_path: Path, corpus_dir: Path, settings_for: Callable[..., Settings]) -> tuple[Settings, Path]:
    source = small_corpus(corpus_dir, tmp_path / "corpus", {EIM: PAGES})
    settings = settings_for(tmp_path / "data")
    run_ingest(settings, str(source), EIM)  # the whole (small) manual
    return settings, source


def test_a_limited_run_is_refused_over_a_whole_generation_and_serving_is_untouched(whole, monkeypatch, capsys, embedding_cache):
    settings, source = whole
    serving = serving_path(settings, EIM)
    assert load_generation(serving).manifest.partial is False
    with pytest.raises(PartialIngestRefused, match="--force"):
        run_ingest(settings, str(source), EIM, limit=2)
    with pytest.raises(PartialIngestRefused):
        run_ingest(settings, str(source), EIM, sections={"EIM31240"})
    monkeypatch.setenv("TAXNAV_INGEST__EMBEDDING_CACHE_DIR", str(embedding_cache))
    assert cli.main(["ingest", "--data-dir", str(settings.data_dir), "--source", str(source), "--limit", "2", "--no-progress"]) == 1
    assert "--force" in capsys.readouterr().err
    assert serving_path(settings, EIM) == serving and len(load_generation(serving).pages) == len(PAGES)


def test_force_replaces_it_and_partial_runs_then_replace_each_other(whole):
    settings, source = whole
    summary = run_ingest(settings, str(source), EIM, limit=2, force=True)
    assert summary.pages == 2 and load_generation(serving_path(settings, EIM)).manifest.partial is True
    assert run_ingest(settings, str(source), EIM, limit=3).pages == 3  # partial over partial: allowed
    assert run_ingest(settings, str(source), EIM).pages == len(PAGES)  # a whole run always may
