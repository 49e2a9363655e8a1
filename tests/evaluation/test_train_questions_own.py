"""The ranker's own training questions (tests/evaluation/train_questions_own.jsonl): everyday
wording on pages no other set uses. Gold pages and key facts are checked against the corpus,
and the pages against every other set, so training never sees a page another set scores."""

from __future__ import annotations

from pathlib import Path

from taxnav.evaluation.matching import key_fact_found
from taxnav.evaluation.questions import load_questions
from tests.evaluation.test_heldout_questions import EIM, _page_text

OWN = Path(__file__).with_name("train_questions_own.jsonl")


def test_the_training_questions_are_grounded_in_the_corpus(corpus_dir: Path) -> None:
    questions = load_questions(OWN)
    assert len(questions) >= 150 and {q.expect for q in questions} == {"answer", "refuse"}
    for q in questions:
        for section in [*q.gold_sections, *q.also_ok]:
            assert (corpus_dir / EIM / f"{section.lower()}.json").is_file(), (q.id, section)
        if q.expect == "answer":
            texts = [_page_text(corpus_dir, g) for g in q.gold_sections]
            assert all(any(key_fact_found(f, t) for t in texts) for f in q.key_facts) and q.key_facts, q.id


def test_the_training_questions_use_no_other_sets_pages(corpus_dir: Path) -> None:
    others = [
        corpus_dir.parent / "eval" / "questions.jsonl",
        corpus_dir.parent / "eval" / "train_questions.jsonl",
        OWN.with_name("heldout_questions.jsonl"),
        OWN.with_name("heldout_refusals.jsonl"),
    ]
    used = {s for path in others for q in load_questions(path) for s in [*q.gold_sections, *q.also_ok]}
    own = load_questions(OWN)
    assert not {s for q in own for s in [*q.gold_sections, *q.also_ok]} & used
