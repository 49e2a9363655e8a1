"""The report writer on a hand-made run: report.json keys and ranges, report.md tables, the chart."""

from __future__ import annotations

import json

from services.text.figures import checkable_facts
from shared.contracts.api import Answer, Citation, QuestionResult, Refusal, Sentence, StageTrace
from taxnav.evaluation.harness import EvalRun, VariantRun
from taxnav.evaluation.peer import PeerResult, RetrievalRow, RetrievalSide
from taxnav.evaluation.report import write_report
from taxnav.evaluation.metrics import aggregate
from taxnav.evaluation.questions import EvalQuestion
from taxnav.evaluation.scoring import score_result

STAGES = ["retrieval", "expansion", "rollup", "selection"]
# report.json's strict headline keys (fractions in [0, 1]); pinned here, not read from the code.
REQUIRED = (
    "strict_accuracy",
    "refusal_precision",
    "lead_facts",
    "key_facts_in_reply_window",
    "claim_precision",
    "first_sentence_fact",
)
# the earlier figures, kept as diagnostics
DIAGNOSTIC = ("verdict_accuracy", "citation_gold_recall", "key_fact_coverage", "groundedness", "mean_faithfulness")


def _run() -> EvalRun:
    questions = [
        EvalQuestion(id="Q1", question="Per mile | rate?", expect="answer", gold_sections=["EIM31240"], key_facts=["45p"]),
        EvalQuestion(id="Q2", question="VAT threshold?", expect="refuse", refusal="out_of_scope"),
    ]
    trace = [StageTrace(stage=s, ms=1.0, candidate_ids=["EIM31240#c1"]) for s in STAGES]
    answered = QuestionResult(
        id="x",
        question="q",
        status="answered",
        answer=Answer(
            sentences=[
                Sentence(text="Cars get 45p a mile.", citations=["EIM31240#c1.p1"], verdict="supported", reason="ok"),
                Sentence(text="Vans get 50p a mile.", citations=["EIM31240#c1.p1"], verdict="contradicted", reason="50p"),
            ],
            faithfulness=0.5,
        ),
        citations=[
            Citation(
                paragraph_id="EIM31240#c1.p1",
                section_id="EIM31240",
                title="t",
                heading_path=[],
                text="Car or van 45p",
                url="https://www.gov.uk/x",
                public_updated_at="2014-09-08T00:00:00Z",
            )
        ],
        trace=trace,
    )
    wrong = QuestionResult(id="y", question="q", status="refused", refusal=Refusal(category="low_coverage", message="m"))
    refused = QuestionResult(id="z", question="q", status="refused", refusal=Refusal(category="out_of_scope", message="VAT"))
    full = [score_result(questions[0], answered, 10.0, checkable_facts), score_result(questions[1], refused, 1.0, checkable_facts)]
    bad = [score_result(questions[0], wrong, 5.0, checkable_facts), score_result(questions[1], refused, 1.0, checkable_facts)]
    side = RetrievalSide(
        name="x", recall_at_k=1.0, median_retrieval_ms=1.0, questions=[RetrievalRow(id=q.id, sections=["EIM31240"], recall=1.0 if q.gold_sections else None, retrieval_ms=1.0) for q in questions]
    )
    return EvalRun(
        manual="employment-income-manual",
        generation="g1",
        questions=questions,
        stages=STAGES,
        variants=[
            VariantRun(name="full", overrides={}, outcomes=full, metrics=aggregate(full, STAGES)),
            VariantRun(name="no_graph", overrides={"expansion.enabled": False}, outcomes=bad, metrics=aggregate(bad, STAGES)),
            VariantRun(name="hybrid", overrides={}, same_as="full", outcomes=full, metrics=aggregate(full, STAGES)),
        ],
        peer=PeerResult(top_k=12, documents=3, ours=side, peer=side.model_copy(update={"name": "haystack", "recall_at_k": 0.0})),
    )


def test_write_report(tmp_path):
    report = write_report(_run(), tmp_path, questions_file="q.jsonl")
    on_disk = json.loads((tmp_path / "report.json").read_text())
    assert on_disk == report
    for key in (*REQUIRED, "recall_by_stage", "variants", "peer", "questions"):
        assert key in on_disk, key
    for key in REQUIRED:
        assert 0.0 <= on_disk[key] <= 1.0
    for key in DIAGNOSTIC:
        assert 0.0 <= on_disk["diagnostics"][key] <= 1.0
    assert on_disk["diagnostics"]["verdict_accuracy"] == 1.0 and on_disk["diagnostics"]["groundedness"] == 0.5
    # Q1 answered from its gold page with its one key fact first: strictly right
    assert (on_disk["strict_correct"], on_disk["strict_accuracy"], on_disk["answerable_ok"]) == (2, 1.0, 1)
    assert on_disk["claim_precision"] == 1.0 and on_disk["lead_facts"] == 1.0
    assert (on_disk["answer_words_median"], on_disk["reply_words_median"]) == (10, 10)
    assert on_disk["targets"]["answer_words_median"]["met"] is True  # a "<=" target
    assert on_disk["recall_by_stage"]["no_graph"]["citations"] == 0.0
    assert on_disk["targets"]["recall_at_12_vs_peer"]["met"] is True
    assert on_disk["failures"] == [
        {"id": "Q1", "reasons": ["ungrounded claim 2: not in cited text: 50p"]}
    ]
    assert (tmp_path / "recall_by_stage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    md = (tmp_path / "report.md").read_text()
    assert "| strict_accuracy | 100.0% (2/2; answerable 1/1) | >= 44/50 | yes |" in md
    assert "| answer_words_median | 10 | <= 120 | yes |" in md
    assert "| verdict_accuracy | 100.0% (2/2) |" in md  # diagnostics table
    assert "| `no_graph` | expansion.enabled=False |" in md
    assert "same settings as full" in md
    # per-question row: question (pipe escaped), each claim with its citation and verdict, latency
    assert "| Q1 | Per mile \\| rate? | answer | answer | yes | 1/1 | 10/10 | 10.0 |" in md
    assert "2. Vans get 50p a mile. [EIM31240#c1.p1: contradicted; NOT grounded: 50p]" in md
    assert "| Q2 | VAT threshold? | refuse: out_of_scope | refuse: out_of_scope | yes |" in md
