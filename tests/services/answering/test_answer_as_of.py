"""``answer.as_of``: the newest ``public_updated_at`` among the pages an answer cites, over a
real index of three real pages, one of them re-dated so the pages differ."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from services.runtime.dispatch import answer
from services.answering.pipeline import finish
from shared.contracts.api import QuestionRequest, Sentence
from shared.contracts.pipeline import PipelineState, VerificationResult
from services.text.reading import new_query
from tests.conftest import EIM, small_corpus

NEWER = "2015-03-02T00:00:00+00:00"  # EIM31240 re-dated; the others keep 2014-09-08


@pytest.fixture(scope="module")
def redated_settings(tmp_path_factory, corpus_dir, settings_for):
    from ingest_worker.ingest import run_ingest  # noqa: PLC0415

    root = tmp_path_factory.mktemp("as-of")
    source = small_corpus(corpus_dir, root / "corpus", {EIM: ["EIM31230", "EIM31235", "EIM31240"]})
    page = source / EIM / "eim31240.json"
    doc = json.loads(page.read_text())
    doc["public_updated_at"] = NEWER
    page.write_text(json.dumps(doc))
    settings = settings_for(root / "data")
    run_ingest(settings, str(source), EIM)
    return settings


def _answered_state(*sentences: Sentence) -> PipelineState:
    state = PipelineState(query=new_query(id="q", question="q", manual=EIM))
    state.verification = VerificationResult(sentences=list(sentences), faithfulness=1.0)
    return state


def _sentence(pid: str) -> Sentence:
    return Sentence(text="t", citations=[pid], verdict="supported", reason="quoted")


def test_as_of_is_the_newest_cited_page_date(redated_settings) -> None:
    both = finish(_answered_state(_sentence("EIM31230#c0.p0"), _sentence("EIM31240#c0.p0")), redated_settings)
    assert both.answer.as_of == datetime(2015, 3, 2, tzinfo=UTC)
    older = finish(_answered_state(_sentence("EIM31230#c0.p0")), redated_settings)
    assert older.answer.as_of == datetime(2014, 9, 8, tzinfo=UTC)


def test_as_of_on_a_real_answer_and_none_on_a_refusal(redated_settings) -> None:
    result = answer(
        QuestionRequest(question="How much can my employer pay per mile for my own car without tax?"), redated_settings
    )
    assert result.status == "answered", result.refusal
    assert result.answer.as_of == max(c.public_updated_at for c in result.citations)
    # it rides along in the API's JSON
    assert json.loads(result.model_dump_json())["answer"]["as_of"].startswith(result.answer.as_of.date().isoformat())
    refused = answer(QuestionRequest(question="asdf ;; qwerty ?? 7#k"), redated_settings)
    assert refused.status == "refused" and refused.answer is None
