"""The conflict refusal through the API, on a two-page synthetic manual written for the test
in the Content API layout (invented text, not corpus files): the pages, one per case, give different
figures for the same allowance."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from tests.support.gateway import wait_ready
from tests.support.synthetic_manual import ingest_manual
from shared.config import Settings

PAGES = {
    "EIM90001": ("Long service awards: employees in general", "<p>The exempt amount for a long service award is &#xA3;50 for each year of service with the same employer.</p><p>The award must mark at least 20 years of service.</p>"),
    "EIM90002": ("Long service awards: members of the armed forces", "<p>The exempt amount for a long service award is &#xA3;20 for each year of service with the same employer.</p><p>No similar award may have been made in the previous 10 years.</p>"),
}  # fmt: skip



@pytest.fixture(scope="module")
def conflict_settings(tmp_path_factory: pytest.TempPathFactory, settings_for: Callable[..., Settings]) -> Settings:
    settings = settings_for(Path(tmp_path_factory.mktemp("conflict-data")))
    return ingest_manual(PAGES, tmp_path_factory.mktemp("conflict-corpus"), settings)


def test_conflicting_pages_give_a_conflict_refusal_with_both_paragraphs(conflict_settings):
    with TestClient(create_app(conflict_settings)) as client:
        wait_ready(client)
        response = client.post("/v1/questions", json={"question": "What is the exempt amount for a long service award?"})
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "refused" and body["refusal"]["category"] == "conflict"
    evidence = body["refusal"]["evidence"]
    assert {p.split("#")[0] for p in evidence["paragraph_ids"]} == set(PAGES)
    assert evidence["what_would_decide"]
    # both paragraphs come back as citations the page can open
    texts = {c["section_id"]: c["text"] for c in body["citations"]}
    assert "£50" in texts["EIM90001"] and "£20" in texts["EIM90002"]
