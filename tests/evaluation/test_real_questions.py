"""Real people's questions harvested from public forums (tests/evaluation/real_questions_harvested.jsonl,
RH*): quoted in the askers' words with their source, labelled against the 2014 EIM. Each gold page
exists and states the question's key facts; no question appears twice across the labelled files."""

from __future__ import annotations

import json
import re
from pathlib import Path

from taxnav.evaluation.scoring import key_fact_found, load_questions
from tests.evaluation.test_heldout_questions import EIM, _page_text

HARVESTED = Path(__file__).with_name("real_questions_harvested.jsonl")


def _words(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def test_the_real_questions_are_sourced_and_grounded_in_the_corpus(corpus_dir: Path) -> None:
    questions = load_questions(HARVESTED)
    sources = {(line := json.loads(raw))["id"]: line.get("source_url", "") for raw in HARVESTED.read_text(encoding="utf-8").splitlines() if raw.strip()}
    assert len(questions) >= 150 and {q.expect for q in questions} == {"answer", "refuse"}
    for q in questions:
        assert sources[q.id].startswith("http"), q.id
        for section in [*q.gold_sections, *q.also_ok]:
            assert (corpus_dir / EIM / f"{section.lower()}.json").is_file(), (q.id, section)
        if q.expect == "answer":
            texts = [_page_text(corpus_dir, g) for g in q.gold_sections]
            assert q.key_facts and all(any(key_fact_found(f, t) for t in texts) for f in q.key_facts), q.id
        else:
            assert q.refusal in {"out_of_scope", "low_coverage", "stale"} and not q.gold_sections, q.id


def test_no_real_question_is_asked_twice_across_the_labelled_files(corpus_dir: Path) -> None:
    files = [
        corpus_dir.parent / "eval" / "questions.jsonl",
        corpus_dir.parent / "eval" / "train_questions.jsonl",
        corpus_dir.parent / "eval" / "real_train_questions.jsonl",
        *sorted(HARVESTED.parent.glob("*questions*.jsonl")),
    ]
    seen: dict[str, str] = {}
    for path in files:
        for q in load_questions(path):
            key = _words(q.question)[:120]
            assert key not in seen, (q.id, seen.get(key))
            seen[key] = q.id
