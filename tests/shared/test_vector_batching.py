"""With a Qdrant server a question costs a fixed, small number of vector round trips per
stage, not one per chunk scored. The server is stood in for by qdrant-client local mode (the
same client API) wrapped to record every ``retrieve`` call; the index is the real slice."""

from __future__ import annotations

import json

import numpy as np
import pytest
from qdrant_client import QdrantClient

from services.runtime.dispatch import answer
from services.answering.pipeline import EVERY_QUESTION, STAGES, finish, new_state, run_stage, run_stages
from shared.contracts.api import QuestionRequest
from shared.index import CorpusIndex
from shared.stores.vectors import IDS_FILE, VECTORS_FILE, QdrantVectorStore

QUESTION = "how much can my employer pay me per mile for using my own car, and what about passengers?"


class RecordingClient:
    """A qdrant-client that counts ``retrieve`` calls and the ids each asked for."""

    def __init__(self, client: QdrantClient) -> None:
        self._client, self.retrieves = client, []

    def retrieve(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        self.retrieves.append(len(kwargs.get("ids") or args[1]))
        return self._client.retrieve(*args, **kwargs)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._client, name)


@pytest.fixture
def recorded(slice_settings):
    """The slice's index with its vectors served by a recording Qdrant collection."""
    index = CorpusIndex.open(slice_settings)
    ids = json.loads((index.path / IDS_FILE).read_text())
    client = RecordingClient(QdrantClient(":memory:"))
    store = QdrantVectorStore(client, index.manual, index.generation)
    store.build(ids, np.load(index.path / VECTORS_FILE))
    embedded, index._vectors = index._vectors, store
    yield index, client
    index._vectors = embedded


def test_each_stage_fetches_its_vectors_in_at_most_one_call(recorded, slice_settings):
    index, client = recorded
    expected = answer(QuestionRequest(question=QUESTION), slice_settings)
    client.retrieves.clear()
    store = index._vectors
    store._cache.clear()
    calls_by_stage: dict[str, int] = {}
    seen = [0]

    def on_trace(trace) -> None:  # noqa: ANN001
        calls_by_stage[trace.stage] = len(client.retrieves) - seen[0]
        seen[0] = len(client.retrieves)

    state = run_stages(list(STAGES), new_state(QuestionRequest(question=QUESTION), slice_settings), slice_settings, on_trace)
    assert set(calls_by_stage) == {s.name for s in EVERY_QUESTION}
    assert all(calls <= 1 for calls in calls_by_stage.values()), calls_by_stage
    assert sum(client.retrieves) > 20  # each call fetched many chunks at once
    result = finish(state, slice_settings)
    assert [s.text for s in result.answer.sentences] == [s.text for s in expected.answer.sentences]


def test_without_the_prefetch_a_question_costs_a_call_per_chunk(recorded, slice_settings):
    index, client = recorded
    index._vectors._cache.clear()
    client.retrieves.clear()
    state = new_state(QuestionRequest(question=QUESTION), slice_settings)
    for stage in STAGES:  # the stages alone, without run_stages' prefetch
        state = run_stage(stage, state, slice_settings)
    assert len(client.retrieves) > 20 and set(client.retrieves) == {1}
