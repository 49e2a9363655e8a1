"""Reading the eval set (taxnav/evaluation/questions.py)."""

from __future__ import annotations

import json

import pytest

from taxnav.evaluation.questions import QuestionsFileError, load_questions


def test_load_questions_reads_the_eval_shape(tmp_path):
    path = tmp_path / "q.jsonl"
    rows = [
        {"id": "A", "question": "q?", "expect": "answer", "gold_sections": ["EIM1"], "extra_field": 1},
        {"id": "B", "question": "VAT?", "expect": "refuse", "refusal": "out_of_scope"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    questions = load_questions(path)
    assert [q.id for q in questions] == ["A", "B"]
    assert questions[1].refusal == "out_of_scope" and questions[0].key_facts == []


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "A", "question": "q", "expect": "answer"}', "{not json"], ":2: not JSON"),
        (['{"id": "A", "question": "q", "expect": "refuse"}'], "needs a refusal category"),
        (['{"id": "A", "question": "q", "expect": "refuse", "refusal": "nonsense"}'], "refusal"),
        (['{"id": "A", "question": "q", "expect": "maybe"}'], "expect"),
        (['{"id": "A", "question": "q", "expect": "answer"}'] * 2, "duplicate question id 'A'"),
        ([], "no questions"),
    ],
)
def test_load_questions_rejects_bad_files_with_the_line(tmp_path, lines, message):
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(QuestionsFileError, match=message):
        load_questions(path)


def test_load_questions_missing_file(tmp_path):
    with pytest.raises(QuestionsFileError, match="cannot read"):
        load_questions(tmp_path / "absent.jsonl")
