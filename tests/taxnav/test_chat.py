"""`taxnav chat` and `taxnav ask --conversation` on the real slice: one conversation read from
stdin lines, stored in the data directory, continued by `ask --conversation`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from shared.config import Settings
from taxnav.chat import chat
from taxnav.cli import main
from tests.gateway.test_conversation_conflict import choice_settings  # noqa: F401  (the fixture)

MILEAGE = "How much can my employer pay me per mile, tax free, when I drive my own car on business trips?"


@pytest.fixture()
def data_dir(slice_settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "collections").symlink_to(Path(slice_settings.data_dir) / "collections")
    monkeypatch.setenv("TAXNAV_DATA_DIR", str(tmp_path))  # what `taxnav` reads without --data-dir
    if slice_settings.ingest.embedding_cache_dir:
        monkeypatch.setenv("TAXNAV_INGEST__EMBEDDING_CACHE_DIR", str(slice_settings.ingest.embedding_cache_dir))
    return tmp_path


def stored(data_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((data_dir / "conversations").glob("*.json"))]


def test_chat_reads_each_line_as_a_turn_of_one_conversation(data_dir: Path):
    out = io.StringIO()
    lines = io.StringIO(f"{MILEAGE}\n\nAnd if I cycle instead?\n/choose 1\n")
    assert chat(lines, out, Settings()) == 0
    text = out.getvalue()
    assert "[turn 1, first]" in text and "[turn 2, follow up]" in text
    assert "no option 1: the last turn offers 0" in text  # the last turn was no conflict: nothing asked
    (conversation,) = stored(data_dir)
    assert [t["question"] for t in conversation["turns"]] == [MILEAGE, "And if I cycle instead?"]
    assert conversation["id"] in text.splitlines()[-1]


def test_ask_with_conversation_continues_it_and_unknown_ids_fail_cleanly(data_dir: Path, capsys: pytest.CaptureFixture):
    assert main(["ask", "--conversation", "new", MILEAGE, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["turn"] == 1
    cid = first["conversation_id"]
    assert main(["ask", "--conversation", cid, "And what about a motorcycle?"]) == 0
    out = capsys.readouterr().out
    assert "[turn 2, follow up]" in out and cid in out
    assert len(stored(data_dir)[0]["turns"]) == 2
    assert main(["ask", "--conversation", "no-such-id", "And for a van?"]) == 2
    assert "No conversation no-such-id" in capsys.readouterr().err


def test_chat_chooses_a_conflict_option_by_number(choice_settings, tmp_path: Path):  # noqa: F811
    from tests.gateway.test_conversation_conflict import QUESTION  # noqa: PLC0415

    settings = choice_settings.model_copy(deep=True)
    settings.conversations.dir = tmp_path
    out = io.StringIO()
    assert chat(io.StringIO(f"{QUESTION}\n/choose 3\n/choose 1\n"), out, settings) == 0
    text = out.getvalue()
    assert "Refused: conflict" in text and "/choose 2:" in text
    assert "no option 3: the last turn offers 2" in text
    first_option = text.split("/choose 1: ", 1)[1].split(" -> ", 1)[0]
    (conversation,) = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert [t["condition"] for t in conversation["turns"]] == [None, first_option]
    assert conversation["turns"][1]["status"] == "answered"
