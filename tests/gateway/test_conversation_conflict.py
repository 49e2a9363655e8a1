"""Choosing a conflict option is a conversation turn: on a two-page synthetic manual written
for the test in the Content API layout (invented text, not corpus files), whose pages give
different amounts for the same allowance in two cases the question does not settle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings
from tests.support.gateway import wait_ready
from tests.support.synthetic_manual import ingest_manual

QUESTION = "How much is the flat rate allowance for tools each year?"
PAGES = {
    "EIM90011": ("Flat rate allowance: night shift workers", "<p>The flat rate allowance for tools is &#xA3;120 each year for each worker.</p><p>It covers the upkeep of tools used at work.</p>"),
    "EIM90012": ("Flat rate allowance: day shift workers", "<p>The flat rate allowance for tools is &#xA3;80 each year for each worker.</p><p>It is given without any claim for receipts.</p>"),
}  # fmt: skip


@pytest.fixture(scope="module")
def choice_settings(tmp_path_factory: pytest.TempPathFactory, settings_for: Callable[..., Settings]) -> Settings:
    settings = settings_for(Path(tmp_path_factory.mktemp("choice-data")))
    return ingest_manual(PAGES, tmp_path_factory.mktemp("choice-corpus"), settings)


def test_choosing_a_conflict_option_asks_again_under_its_condition(choice_settings: Settings):
    with TestClient(create_app(choice_settings)) as client:
        wait_ready(client)
        cid = client.post("/v1/conversations").json()["id"]
        first = client.post(f"/v1/conversations/{cid}/questions", json={"question": QUESTION}).json()
        assert first["status"] == "refused" and first["refusal"]["category"] == "conflict", first
        options = first["refusal"]["evidence"]["options"]
        assert {o["section_id"] for o in options} == set(PAGES)
        chosen = next(o for o in options if o["section_id"] == "EIM90012")

        other = client.post(f"/v1/conversations/{cid}/questions", json={"question": "x", "condition": "Flat rate allowance: everyone"})
        assert other.status_code == 422 and other.json()["error"]["type"] == "unknown_condition"
        assert chosen["condition"] in other.json()["error"]["message"]  # the options are named

        response = client.post(f"/v1/conversations/{cid}/questions", json={"question": chosen["condition"], "condition": chosen["condition"]})
        assert response.status_code == 200, response.text
        turn = response.json()
        assert turn["turn"] == 2 and turn["condition"] == chosen["condition"] and turn["follow_up"]["kind"] == "follow_up"
        assert turn["status"] == "answered", turn
        cited = {c.split("#")[0] for s in turn["answer"]["sentences"] for c in s["citations"]}
        assert cited == {"EIM90012"}  # the option not chosen is left out
        assert "£80" in turn["answer"]["sentences"][0]["text"]
        thread = client.get(f"/v1/conversations/{cid}").json()["turns"]
        assert [t["status"] for t in thread] == ["refused", "answered"]
