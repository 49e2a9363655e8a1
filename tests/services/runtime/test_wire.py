"""The state between two stage workers (services/runtime/wire.py): page bundles travel as chunk ids and
come back as the very chunks that were ranked, or as a typed IndexChanged error when an
ingest swapped the index generation in between; never as other chunks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ingest_worker.ingest import run_ingest
from services.runtime import tasks
from services.errors import IndexChanged, as_info, from_info
from services.answering.pipeline import STAGES, new_state, run_stage
from services.runtime.question_store import MemoryStore
from services.runtime.wire import WireState, encode, rebuild
from shared.index import CorpusIndex
from shared.config import Settings
from shared.contracts.api import QuestionRequest
from shared.contracts.pipeline import PipelineState
from tests.conftest import EIM
from tests.services.runtime.test_distributed import QUESTIONS
from tests.services.answering.stages.test_stages_slice import state_after

MILEAGE = QUESTIONS[0]


def received(wire: WireState, settings: Settings) -> PipelineState:
    """The state a receiving worker rebuilds from its own (now serving) index."""
    return rebuild(wire, CorpusIndex.open(settings, wire.query.manual))


def hop(state: PipelineState, settings: Settings) -> PipelineState:
    """What the next worker receives (same process, so the same index)."""
    return received(WireState.model_validate_json(encode(state, settings)), settings)


@pytest.mark.parametrize("question", QUESTIONS)
def test_every_hop_gives_the_next_worker_the_same_state(slice_settings: Settings, question: str) -> None:
    state = new_state(QuestionRequest(question=question), slice_settings)
    assert hop(state, slice_settings).model_dump_json() == state.model_dump_json()  # the gateway's first message
    queue = STAGES[0].queue
    for stage in STAGES:
        if stage.queue != queue:  # a Celery hop
            assert hop(state, slice_settings).model_dump_json() == state.model_dump_json(), stage.name
            queue = stage.queue
        state = run_stage(stage, state, slice_settings)
    assert hop(state, slice_settings).model_dump_json() == state.model_dump_json()


def test_bundles_travel_as_chunk_ids(slice_settings: Settings) -> None:
    state = state_after(MILEAGE, slice_settings, "rollup")
    sent = encode(state, slice_settings)
    wire = WireState.model_validate_json(sent)
    assert wire.generation is not None and all(not p.chunks for p in wire.rollup.pages)
    assert wire.rollup_chunk_ids == [[c.id for c in p.chunks] for p in state.rollup.pages]
    assert '"paragraphs"' not in sent and len(sent) < len(state.model_dump_json()) / 2


def test_a_chunk_missing_from_the_receivers_index_is_a_typed_error(slice_settings: Settings) -> None:
    wire = WireState.model_validate_json(encode(state_after(MILEAGE, slice_settings, "rollup"), slice_settings))
    wire.rollup_chunk_ids[0][0] = "EIM99999#c0"
    with pytest.raises(IndexChanged, match="EIM99999#c0"):
        received(wire, slice_settings)


def test_a_worker_records_the_typed_error_for_the_client(slice_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    state = state_after(MILEAGE, slice_settings, "rollup")
    wire = WireState.model_validate_json(encode(state, slice_settings))
    wire.generation = "g-swapped-out"
    store = MemoryStore()
    store.start(state.query.id, time.time() + 60)
    monkeypatch.setattr(tasks, "get_settings", lambda: slice_settings)
    monkeypatch.setattr(tasks, "_store", lambda: store)
    with pytest.raises(IndexChanged):
        tasks.run_queue("selection", wire.model_dump_json())
    events, _ = store.read(state.query.id, "0", 0)
    assert [(e.kind, e.error.type) for e in events] == [("error", "index_changed")]
    assert from_info(as_info(IndexChanged("x"))).http_status == 503  # the gateway answers 503: ask again


def test_a_generation_swap_between_two_workers_never_passes_other_chunks_off(
    tmp_path: Path, corpus_dir: Path, settings_for
) -> None:  # noqa: ANN001
    settings = settings_for(tmp_path)
    run_ingest(settings, str(corpus_dir), EIM, sections={"EIM31240", "EIM31230"})
    ranked = state_after(MILEAGE, settings, "rollup")
    assert ranked.rollup.pages
    sent = encode(ranked, settings)

    # The ranked pages' ids now name other text (or nothing): the receiver refuses the ids.
    run_ingest(settings, str(corpus_dir), EIM, sections={"EIM31330"})
    with pytest.raises(IndexChanged, match="changed generation"):
        received(WireState.model_validate_json(sent), settings)

    # A sender whose stages ran on the old generation sends the chunks whole: the receiver
    # gets them as ranked, whatever its index now holds.
    late = encode(ranked, settings)
    assert WireState.model_validate_json(late).generation is None
    assert received(WireState.model_validate_json(late), settings).model_dump_json() == ranked.model_dump_json()


def test_unchanged_chunks_of_a_newer_generation_still_travel_as_ids(tmp_path: Path, corpus_dir: Path, settings_for) -> None:  # noqa: ANN001
    settings = settings_for(tmp_path)
    run_ingest(settings, str(corpus_dir), EIM, sections={"EIM31240", "EIM31230"})
    ranked = state_after(MILEAGE, settings, "rollup")
    run_ingest(settings, str(corpus_dir), EIM, sections={"EIM31240", "EIM31230"})  # same pages, new generation
    sent = encode(ranked, settings)
    assert WireState.model_validate_json(sent).generation is not None
    assert received(WireState.model_validate_json(sent), settings).model_dump_json() == ranked.model_dump_json()
