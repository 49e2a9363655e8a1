"""The dialog eval (taxnav eval --dialogs): files of the dialogs shape, turn-by-turn strict
scoring with follow-ups apart from first turns, and the no-conversation baseline, run on the
real slice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taxnav.evaluation.dialogs import load_dialogs, render_markdown, run_dialogs, summarise
from taxnav.evaluation.questions import QuestionsFileError

HERE = Path(__file__).parent
DEV_DIALOGS = HERE.parents[1].parent / "shared" / "eval" / "dialogs.jsonl"


def test_the_dialog_files_load_with_an_id_for_every_turn():
    heldout = load_dialogs(HERE / "heldout_dialogs.jsonl")
    assert len(heldout) >= 4 and all(t.id.startswith(d.id + ".") for d in heldout for t in d.turns)
    # Held-out dialogs are written on pages the dev dialogs never use.
    dev_pages = {p for d in load_dialogs(DEV_DIALOGS) for t in d.turns for p in [*t.gold_sections, *t.also_ok]}
    heldout_pages = {p for d in heldout for t in d.turns for p in [*t.gold_sections, *t.also_ok]}
    assert heldout_pages and not heldout_pages & dev_pages


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "no dialogs"),
        ("{not json\n", ":1: not JSON"),
        ('{"id": "X", "turns": []}\n', ":1: turns"),
        ('{"id": "X", "turns": [{"question": "q", "expect": "refuse"}]}\n', "needs a refusal category"),
    ],
)
def test_bad_dialog_files_name_the_line_and_the_problem(tmp_path: Path, content: str, problem: str):
    path = tmp_path / "dialogs.jsonl"
    path.write_text(content)
    with pytest.raises(QuestionsFileError, match=problem):
        load_dialogs(path)


def test_turns_are_scored_strictly_with_follow_ups_apart_and_a_baseline(slice_settings, tmp_path: Path):
    (tmp_path / "collections").symlink_to(Path(slice_settings.data_dir) / "collections")
    settings = slice_settings.model_copy(update={"data_dir": tmp_path})
    path = tmp_path / "dialogs.jsonl"
    turns = [
        {"question": "How much can my employer pay me per mile, tax free, when I drive my own car on business trips?", "expect": "answer", "gold_sections": ["EIM31240"], "key_facts": ["45p"]},
        {"question": "And if I cycle instead?", "expect": "answer", "gold_sections": ["EIM31240"], "key_facts": ["20p"]},
        {"question": "And can the company reclaim the VAT on those payments?", "expect": "refuse", "refusal": "out_of_scope"},
        # An expectation the pipeline cannot meet: the scorer must mark it wrong.
        {"question": "And for a lorry?", "expect": "answer", "gold_sections": ["EIM99999"], "key_facts": ["99p"]},
    ]
    path.write_text(json.dumps({"id": "T1", "turns": turns}) + "\n")
    report = run_dialogs(load_dialogs(path), settings)
    by_turn = {t["turn"]: t for t in report["turns"]}
    assert by_turn[1]["follow_up"]["kind"] == "first" and by_turn[1]["alone"] is None
    assert by_turn[2]["follow_up"]["kind"] == "follow_up" and by_turn[2]["alone"] is not None
    assert by_turn[3]["outcome"]["refusal"] == "out_of_scope" and by_turn[3]["outcome"]["strict_correct"]
    assert not by_turn[4]["outcome"]["strict_correct"]
    summary = report["summary"]
    assert summary["first_turns"]["n"] == 1 and summary["follow_ups"]["n"] == 3
    assert summary["refused_follow_ups"] == {"n": 1, "right_category": 1, "share": 1.0}
    assert summary["baseline_follow_ups_alone"]["n"] == 3
    assert summary["follow_ups"]["strict_correct"] == sum(by_turn[n]["outcome"]["strict_correct"] for n in (2, 3, 4))
    assert summary["latency_ms"]["first_p50"] > 0 and summary["latency_ms"]["follow_up_p50"] > 0
    markdown = render_markdown(report, "dialogs.jsonl")
    assert "| T1.4 | follow_up | answer |" in markdown and "follow-ups strictly correct" in markdown
    assert not (tmp_path / "conversations").exists()  # the eval's conversations stay out of the data dir


def test_summary_of_no_follow_ups_reports_none_rather_than_dividing_by_zero():
    assert summarise([])["follow_ups"]["share"] is None
