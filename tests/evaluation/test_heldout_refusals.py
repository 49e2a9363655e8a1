"""The held-out refusal and cross-manual file (tests/evaluation/heldout_refusals.jsonl):
questions in our own words, the cross-manual ones written from Business Income Manual and
Self Assessment Manual pages. Checked against the corpus here so the file cannot drift."""

from __future__ import annotations

import json
from pathlib import Path

from taxnav.evaluation.questions import load_questions

HELDOUT = Path(__file__).with_name("heldout_refusals.jsonl")
OTHER_MANUALS = {"business-income-manual", "self-assessment-manual"}


def _lines() -> list[dict]:
    return [json.loads(line) for line in HELDOUT.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_file_loads_with_enough_refusals_and_cross_manual_questions() -> None:
    questions = load_questions(HELDOUT)  # the eval harness reads it like any eval file
    refusals = [q for q in questions if q.expect == "refuse"]
    assert len(refusals) >= 10
    assert {q.refusal for q in refusals} >= {"out_of_scope", "low_coverage", "stale", "malformed"}
    routed = [line for line in _lines() if line.get("route_manual")]
    assert len(routed) >= 5
    assert {line["route_manual"] for line in routed} == OTHER_MANUALS
    assert any(line["expect"] == "answer" for line in routed)  # a life event: answered, and the rest routed


def test_route_pages_are_real_pages_of_the_named_manual(corpus_dir: Path) -> None:
    for line in _lines():
        if line.get("route_manual"):
            assert line["route_sections"], line["id"]
            for section in line["route_sections"]:
                assert (corpus_dir / line["route_manual"] / f"{section.lower()}.json").is_file(), (line["id"], section)


def test_no_question_repeats_the_dev_sets_wording(corpus_dir: Path) -> None:
    dev = load_questions(corpus_dir.parent / "eval" / "questions.jsonl")
    dev_words = [set(q.question.lower().split()) for q in dev]
    for q in load_questions(HELDOUT):
        words = set(q.question.lower().split())
        assert q.id not in {d.id for d in dev}
        # no held-out question shares most of its words with a dev question
        assert all(len(words & d) / len(words) < 0.6 for d in dev_words), q.question


def test_answerable_lines_name_gold_pages_that_state_their_key_facts(corpus_dir: Path) -> None:
    from ingest_worker.parser import parse_body  # noqa: PLC0415
    from taxnav.evaluation.matching import key_fact_found  # noqa: PLC0415

    for q in load_questions(HELDOUT):
        if q.expect != "answer":
            continue
        assert q.gold_sections and q.key_facts, q.id
        texts = []
        for section in q.gold_sections:
            document = json.loads((corpus_dir / "employment-income-manual" / f"{section.lower()}.json").read_text(encoding="utf-8"))
            texts.append("\n".join(b.text for part in parse_body(document["details"]["body"]) for b in part.blocks))
        for fact in q.key_facts:
            assert any(key_fact_found(fact, t) for t in texts), (q.id, fact)
