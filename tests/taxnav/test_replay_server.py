"""The replay server: Content API URL layout over ../shared/corpus, faults, page changes."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from taxnav.replay_server import Fault, ReplayServer
from tests.conftest import EIM

ROOT = f"/api/content/hmrc-internal-manuals/{EIM}"


def test_serves_root_and_sections_in_content_api_layout(replay_server: ReplayServer) -> None:
    root = httpx.get(replay_server.base_url + ROOT).json()
    assert root["document_type"] == "hmrc_manual"
    assert root["details"]["child_section_groups"][0]["child_sections"][0]["section_id"] == "EIM00100"
    page = httpx.get(replay_server.base_url + ROOT + "/eim31240").json()
    assert page["details"]["section_id"] == "EIM31240"
    # Section ids in any case map to the lower-case file, as on GOV.UK.
    assert httpx.get(replay_server.base_url + ROOT + "/EIM31240").json()["title"] == page["title"]


@pytest.mark.parametrize("path", [ROOT + "/eim99999", "/api/content/hmrc-internal-manuals/no-such-manual", "/elsewhere", ROOT + "/../x"])
def test_unknown_paths_are_404(replay_server: ReplayServer, path: str) -> None:
    assert httpx.get(replay_server.base_url + path).status_code == 404


def test_faults_fire_the_given_number_of_times(corpus_dir) -> None:  # noqa: ANN001
    with ReplayServer(corpus_dir, faults=[Fault(EIM, "EIM31240", "status", status=500, times=2)]) as server:
        url = server.base_url + ROOT + "/eim31240"
        assert [httpx.get(url).status_code for _ in range(3)] == [500, 500, 200]
        server.add_fault(Fault(EIM, "EIM31240", "status", status=429, retry_after=3, times=1))
        limited = httpx.get(url)
        assert (limited.status_code, limited.headers["Retry-After"]) == (429, "3")
        server.add_fault(Fault(EIM, "EIM31240", "truncate", times=1))
        with pytest.raises(json.JSONDecodeError):
            json.loads(httpx.get(url).text)
        server.add_fault(Fault(EIM, "EIM31240", "slow", delay_s=0.3, times=1))
        started = time.monotonic()
        assert httpx.get(url).status_code == 200
        assert time.monotonic() - started >= 0.3
        assert server.hits[ROOT + "/eim31240"] == 6


def test_override_modify_remove_and_reset(corpus_dir) -> None:  # noqa: ANN001
    with ReplayServer(corpus_dir) as server:
        url = server.base_url + ROOT + "/eim31240"
        server.modify(EIM, "EIM31240", lambda doc: doc["details"].update(body="<p>changed</p>"))
        assert httpx.get(url).json()["details"]["body"] == "<p>changed</p>"
        server.remove(EIM, "EIM31240")
        assert httpx.get(url).status_code == 404
        with pytest.raises(KeyError):
            server.modify(EIM, "EIM31240", lambda doc: None)
        server.override(EIM, "EIM99990", {"title": "new page", "details": {"body": "<p>x</p>"}})
        assert httpx.get(server.base_url + ROOT + "/eim99990").json()["title"] == "new page"
        server.reset()
        assert "Section 230(2)" in httpx.get(url).json()["details"]["body"]
        # The corpus on disk was never touched.
        assert "Section 230(2)" in (corpus_dir / EIM / "eim31240.json").read_text()


def test_missing_corpus_dir_is_a_clear_error(tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(FileNotFoundError, match="corpus directory not found"):
        ReplayServer(tmp_path / "nope")
