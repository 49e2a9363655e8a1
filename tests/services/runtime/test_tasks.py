"""A stage worker loads, before its first task, what its queues would load on the first question."""

from __future__ import annotations

import pytest

from services.text import terms
from services.runtime.tasks import warm_queues
from shared.config import Settings
from shared.index import CorpusIndex


def _cold(settings: Settings) -> CorpusIndex:
    index = CorpusIndex.open(settings)
    terms._STATS.pop((index.manual, str(index.generation)), None)
    index._vectors.unload()  # as a fresh process finds it: vectors not yet loaded
    return index


@pytest.mark.parametrize("queue", ["selection", "stitching"])
def test_scoring_workers_load_corpus_statistics_and_vectors(slice_settings: Settings, queue: str) -> None:
    index = _cold(slice_settings)
    warm_queues({queue}, slice_settings)
    assert (index.manual, str(index.generation)) in terms._STATS
    assert index._vectors.loaded


def test_a_graph_worker_loads_neither(slice_settings: Settings) -> None:
    index = _cold(slice_settings)
    warm_queues({"graph"}, slice_settings)
    assert (index.manual, str(index.generation)) not in terms._STATS
    assert not index._vectors.loaded


def test_a_worker_without_an_index_still_starts(tmp_path, slice_settings: Settings, caplog: pytest.LogCaptureFixture) -> None:  # noqa: ANN001
    empty = slice_settings.model_copy(update={"data_dir": tmp_path})
    warm_queues({"selection", "retrieval"}, empty)  # logs and returns; the first task reports the error
    assert "warm-up skipped: no ingested collection" in caplog.text
