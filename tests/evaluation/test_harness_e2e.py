"""`taxnav eval` end to end: a small questions file through the real pipeline over the
session's ingested slice (and, once, over a data dir it has to ingest itself)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.config import Settings
from taxnav.cli import main
from taxnav.evaluation.harness import run_eval
from taxnav.evaluation.questions import load_questions
from tests.evaluation.test_report import REQUIRED

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"  # ../shared/corpus
MANUAL = "employment-income-manual"
QUESTIONS = [
    {
        "id": "T1",
        "question": "How much can my employer pay me per mile for using my own car for business journeys without tax?",
        "expect": "answer",
        "gold_sections": ["EIM31240"],
        "also_ok": ["EIM31230", "EIM31355"],
        "key_facts": ["45p", "25p"],
    },
    {
        "id": "T2",
        "question": "What is the VAT registration threshold for my small business?",
        "expect": "refuse",
        "refusal": "out_of_scope",
    },
    {"id": "T3", "question": "asdf ;; qwerty ?? 7#k", "expect": "refuse", "refusal": "malformed"},
    {
        "id": "T4",
        "question": "What is the approved mileage rate per mile for a passenger carried in my car on business trips?",
        "expect": "answer",
        "gold_sections": ["EIM31405"],
        "also_ok": ["EIM31400", "EIM31410"],
        "key_facts": ["5p"],
    },
]


def _questions_file(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _without_latencies(value):
    if isinstance(value, dict):
        return {k: _without_latencies(v) for k, v in value.items() if not k.endswith("_ms")}
    if isinstance(value, list):
        return [_without_latencies(v) for v in value]
    return value


def _eval(*args: str) -> int:
    return main(["eval", *args])


@pytest.fixture(scope="module")
def slice_questions(tmp_path_factory) -> Path:
    return _questions_file(tmp_path_factory.mktemp("questions") / "small.jsonl", QUESTIONS)


def test_eval_end_to_end_over_the_slice(slice_data_dir, slice_questions, tmp_path, capsys):
    out1, out2 = tmp_path / "r1", tmp_path / "r2"
    args = ["--data-dir", str(slice_data_dir), "--questions", str(slice_questions), "--variants", "full", "no_graph"]
    assert _eval(*args, "--out", str(out1)) == 0
    assert "4 questions; strict " in capsys.readouterr().out

    report = json.loads((out1 / "report.json").read_text())
    for key in (*REQUIRED, "recall_by_stage", "variants", "peer", "questions"):
        assert key in report, key
    for key in REQUIRED:
        assert 0.0 <= report[key] <= 1.0, key
    assert "ingest" not in report  # the slice was reused, not re-ingested
    assert list(report["variants"]) == ["full", "no_graph"]
    assert set(report["recall_by_stage"]["full"]) == {"retrieval", "expansion", "rollup", "selection", "citations"}
    assert report["variants"]["no_graph"]["overrides"] == {"expansion.enabled": False}

    rows = {q["id"]: q for q in report["questions"]}
    # the scope guard's refusals are typed and need no retrieval
    assert (rows["T2"]["status"], rows["T2"]["refusal"], rows["T2"]["correct"]) == ("refused", "out_of_scope", True)
    assert (rows["T3"]["status"], rows["T3"]["refusal"], rows["T3"]["correct"]) == ("refused", "malformed", True)
    assert rows["T2"]["sections_by_stage"] == {"citations": []}
    # the answerable question went through every stage; the trace's candidates were recorded
    t1 = rows["T1"]
    assert t1["sections_by_stage"]["retrieval"] and t1["latency_ms"] > 0
    if t1["status"] == "answered":
        assert t1["claims"] and all(c["citations"] for c in t1["claims"])
        cited = {c.split("#")[0] for claim in t1["claims"] for c in claim["citations"]}
        assert set(t1["sections_by_stage"]["citations"]) == cited

    # the peer ran over the same chunks, same questions
    peer = report["peer"]
    assert peer["documents"] > 0 and peer["top_k"] == 12
    assert [q["id"] for q in peer["questions"]] == ["T1", "T2", "T3", "T4"]
    assert 0.0 <= peer["recall_at_12"] <= 1.0 and 0.0 <= peer["ours_recall_at_12"] <= 1.0
    assert len(peer["questions"][0]["peer_sections"]) >= 1
    # ours measured beside the peer agrees with the retrieval stage inside the pipeline
    assert peer["questions"][0]["ours_sections"] == t1["sections_by_stage"]["retrieval"]

    md = (out1 / "report.md").read_text()
    assert "## Per question" in md and "| T2 |" in md and "`no_graph`" in md
    assert (out1 / "recall_by_stage.png").read_bytes()[:4] == b"\x89PNG"

    # deterministic: the same data and settings give the same report, latencies aside
    assert _eval(*args, "--out", str(out2)) == 0
    again = json.loads((out2 / "report.json").read_text())
    assert _without_latencies(again) == _without_latencies(report)


def test_eval_rejects_a_bad_questions_file(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "X", "question": "q", "expect": "refuse"}\n')
    assert _eval("--data-dir", str(tmp_path / "data"), "--questions", str(bad), "--out", str(tmp_path / "o")) == 2
    assert "bad.jsonl:1: expect='refuse' needs a refusal category" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_eval_rejects_an_unknown_variant(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        _eval("--out", str(tmp_path / "o"), "--variants", "fastest")
    assert exc.value.code == 2 and "invalid choice: 'fastest'" in capsys.readouterr().err


def test_run_eval_without_a_collection_or_source_is_a_clear_error(tmp_path, slice_questions):
    settings = Settings(data_dir=tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match=f"no {MANUAL} collection under"):
        run_eval(load_questions(slice_questions), settings, ["full"], source=None)


def test_eval_ingests_when_the_data_dir_has_no_collection(tmp_path, monkeypatch, embedding_cache):
    monkeypatch.setenv("TAXNAV_INGEST__EMBEDDING_CACHE_DIR", str(embedding_cache))  # the slice's vectors
    # A three-page manual: a hand-made root pointing at three real pages (linked, not copied).
    source = tmp_path / "corpus" / MANUAL
    source.mkdir(parents=True)
    sections = ["EIM31230", "EIM31240", "EIM31405"]
    for section in sections:
        (source / f"{section.lower()}.json").symlink_to(CORPUS / MANUAL / f"{section.lower()}.json")
    root = json.loads((CORPUS / MANUAL / "_manual.json").read_text())
    root["details"]["child_section_groups"] = [
        {
            "title": None,
            "child_sections": [
                {"section_id": s, "base_path": f"/hmrc-internal-manuals/{MANUAL}/{s.lower()}", "title": s} for s in sections
            ],
        }
    ]
    (source / "_manual.json").write_text(json.dumps(root))
    questions = _questions_file(tmp_path / "q.jsonl", QUESTIONS[:2])
    data = tmp_path / "data"

    args = ["--data-dir", str(data), "--source", str(tmp_path / "corpus"), "--questions", str(questions), "--variants", "full"]
    assert _eval(*args, "--out", str(tmp_path / "r1")) == 0
    first = json.loads((tmp_path / "r1" / "report.json").read_text())
    assert first["ingest"]["pages"] == 3 and first["peer"]["documents"] >= 3
    assert _eval(*args, "--out", str(tmp_path / "r2")) == 0  # second run reuses the index
    assert "ingest" not in json.loads((tmp_path / "r2" / "report.json").read_text())
