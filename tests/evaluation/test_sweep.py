"""`taxnav eval --sweep`: questions built from page titles, scored by whether the answer part
cites the page asked about; end to end over the session's ingested slice."""

from __future__ import annotations

import json

import pytest

from shared.contracts.api import Answer, QuestionResult, Refusal, Sentence
from taxnav.cli import main
from taxnav.evaluation.sweep import SweepError, SweepQuestion, aggregate_sweep, score_sweep, sweep_questions
from tests.conftest import SLICE_SECTIONS


def test_sweep_questions_take_every_nth_page_in_section_order_with_entities_decoded():
    titles = {"EIM00300": "C", "EIM00100": "Tips &amp; gratuities:  summary", "EIM00200": "B", "EIM00400": "D"}
    every_one = sweep_questions(titles)
    assert [q.section_id for q in every_one] == ["EIM00100", "EIM00200", "EIM00300", "EIM00400"]
    assert every_one[0].question == "What are the rules on Tips & gratuities: summary?"
    assert [q.section_id for q in sweep_questions(titles, every=3)] == ["EIM00100", "EIM00400"]
    with pytest.raises(SweepError, match="at least 1"):
        sweep_questions(titles, every=0)


def _answered(*sentences: Sentence) -> QuestionResult:
    return QuestionResult(id="x", question="q", status="answered", answer=Answer(sentences=list(sentences), faithfulness=1.0))


def test_score_sweep_counts_the_own_page_only_in_the_answer_part():
    question = SweepQuestion(section_id="EIM31240", title="t", question="What are the rules on t?")
    own_in_detail = _answered(
        Sentence(text="Other page says so.", citations=["EIM31230#c0.p0"], verdict="supported", reason="quoted"),
        Sentence(text="Own page detail here.", citations=["EIM31240#c2.p0"], verdict="supported", reason="quoted", role="detail"),
    )
    outcome = score_sweep(question, own_in_detail, 5.0)
    assert (outcome.own_page_in_answer_part, outcome.own_page_cited) == (False, True)
    assert (outcome.answer_words, outcome.reply_words) == (4, 8)
    own_first = _answered(Sentence(text="Car or van 45p.", citations=["EIM31240#c2.p0"], verdict="supported", reason="quoted"))
    assert score_sweep(question, own_first, 1.0).own_page_in_answer_part
    refused = QuestionResult(id="y", question="q", status="refused", refusal=Refusal(category="low_coverage", message="m"))
    r = score_sweep(question, refused, 2.0)
    assert (r.refusal, r.refusal_message, r.own_page_cited, r.answer_words) == ("low_coverage", "m", False, 0)

    m = aggregate_sweep([outcome, score_sweep(question, own_first, 1.0), r], every=1)
    assert (m.questions, m.refusals, m.refusals_by_category) == (3, 1, {"low_coverage": 1})
    assert m.false_refusal_rate == pytest.approx(1 / 3)
    assert m.own_page_in_answer_part == pytest.approx(1 / 3) and m.own_page_cited == pytest.approx(2 / 3)
    assert (m.answer_words_median, m.reply_words_median) == (4.0, 6.0)  # over the two answered: 4 and 4, 8 and 4


def test_sweep_end_to_end_over_the_slice(slice_data_dir, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["eval", "--data-dir", str(slice_data_dir), "--sweep", "--every", "4", "--out", str(out)]) == 0
    assert "sweep of " in capsys.readouterr().out
    data = json.loads((out / "sweep.json").read_text())
    expected = sorted(SLICE_SECTIONS)[::4]
    assert [o["section_id"] for o in data["outcomes"]] == expected
    m = data["metrics"]
    assert m["questions"] == len(expected) and m["every"] == 4
    assert m["refusals"] == sum(o["status"] == "refused" for o in data["outcomes"])
    assert 0.0 <= m["own_page_in_answer_part"] <= m["own_page_cited"] <= 1.0
    # the slice's pages answer their own titles: most answers cite the page asked about
    assert m["own_page_cited"] >= 0.5
    assert all(o["latency_ms"] > 0 for o in data["outcomes"])
    md = (out / "sweep.md").read_text()
    assert "| false refusals |" in md and "| own page in the answer part |" in md


def test_sweep_without_a_collection_or_with_every_but_no_sweep_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--data-dir", str(tmp_path / "empty"), "--sweep", "--out", str(tmp_path / "o")]) == 2
    assert "no employment-income-manual collection" in capsys.readouterr().err
    assert main(["eval", "--data-dir", str(tmp_path / "empty"), "--every", "3", "--out", str(tmp_path / "o")]) == 2
    assert "--every needs --sweep" in capsys.readouterr().err
