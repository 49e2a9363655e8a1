"""The gateway's process set up for serving: its GIL switch interval from the settings, its
heap frozen after warm-up and re-frozen when an ingest swaps a generation in (the old index
collected, not leaked in the permanent generation; the new one frozen)."""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

from fastapi.testclient import TestClient

from gateway.app import create_app
from shared import heap
from shared.config import Settings
from shared.index import CorpusIndex
from tests.conftest import EIM
from tests.support.gateway import wait_ready


def frozen(obj: object) -> bool:
    """Whether ``obj`` sits in the permanent generation (in none of the collected ones)."""
    return gc.is_tracked(obj) and not any(o is obj for g in range(3) for o in gc.get_objects(g))


def test_the_gateway_freezes_its_heap_once_warmed_up_and_sets_its_switch_interval(slice_settings: Settings) -> None:
    gc.unfreeze()
    settings = slice_settings.model_copy(deep=True)
    settings.gateway.switch_interval_ms = 2.0
    default = sys.getswitchinterval()
    try:
        with TestClient(create_app(settings)) as client:
            wait_ready(client)
            assert gc.get_freeze_count() > 0
            assert frozen(CorpusIndex.open(settings).pages)
            assert sys.getswitchinterval() == 0.002
    finally:
        sys.setswitchinterval(default)


def test_a_swapped_in_generation_is_frozen_and_the_old_one_collected(tmp_path: Path, corpus_dir: Path, settings_for) -> None:  # noqa: ANN001
    from ingest_worker.ingest import run_ingest

    settings = settings_for(tmp_path / "data")
    run_ingest(settings, str(corpus_dir), EIM, sections={"EIM31240", "EIM31230"})
    first = CorpusIndex.open(settings)
    first.cycle = first  # only a collection that can see it frees it
    old = weakref.ref(first)
    del first
    heap.freeze()
    run_ingest(settings, str(corpus_dir), EIM, sections={"EIM31240", "EIM31230", "EIM31330"})
    second = CorpusIndex.open(settings)
    assert "EIM31330" in second.pages
    assert old() is None  # unfrozen and collected, not kept forever
    assert frozen(second.pages)


def test_a_process_that_never_froze_is_left_alone(tmp_path: Path) -> None:
    gc.unfreeze()
    heap.refreeze()
    assert gc.get_freeze_count() == 0
