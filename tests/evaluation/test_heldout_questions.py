"""The held-out eval file (tests/evaluation/heldout_questions.jsonl): questions in our own
wording on topics the 50 do not use, to see whether tuning on the 50 generalises. Its gold
pages and key facts are checked against the corpus here, so the file cannot drift from it."""

from __future__ import annotations

import json
from pathlib import Path

from ingest_worker.parser import parse_body
from taxnav.evaluation.matching import key_fact_found
from taxnav.evaluation.questions import load_questions

HELDOUT = Path(__file__).with_name("heldout_questions.jsonl")
EIM = "employment-income-manual"


def _page_text(corpus_dir: Path, section: str) -> str:
    document = json.loads((corpus_dir / EIM / f"{section.lower()}.json").read_text(encoding="utf-8"))
    return "\n".join(block.text for part in parse_body(document["details"]["body"]) for block in part.blocks)


def test_heldout_questions_are_grounded_in_the_corpus(corpus_dir):
    questions = load_questions(HELDOUT)
    assert 10 <= len(questions) <= 90  # hand-written and checked line by line: kept reviewable
    assert {q.expect for q in questions} == {"answer", "refuse"}
    for q in questions:
        for section in [*q.gold_sections, *q.also_ok]:
            assert (corpus_dir / EIM / f"{section.lower()}.json").is_file(), (q.id, section)
        if q.expect == "answer":
            assert q.gold_sections and q.key_facts, q.id
            texts = [_page_text(corpus_dir, g) for g in q.gold_sections]
            for fact in q.key_facts:
                assert any(key_fact_found(fact, t) for t in texts), (q.id, fact)


def test_heldout_questions_do_not_reuse_the_eval_sets_pages(corpus_dir):
    main_set = load_questions(corpus_dir.parent / "eval" / "questions.jsonl")
    used = {s for q in main_set for s in [*q.gold_sections, *q.also_ok]}
    heldout = load_questions(HELDOUT)
    assert not {q.id for q in heldout} & {q.id for q in main_set}
    assert not {s for q in heldout for s in q.gold_sections} & used
