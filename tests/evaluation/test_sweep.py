"""`taxnav eval --sweep`: questions built from page titles, scored by whether the answer part
cites the page asked about; end to end over the session's ingested slice."""

from __future__ import annotations

import json

import pytest

from shared.contracts.api import Answer, QuestionResult, Refusal, Sentence, StageTrace
from taxnav.cli import main
from taxnav.evaluation.sweep import SweepError, SweepQuestion, SweepRun, aggregate_sweep, render_sweep_markdown, score_sweep, sweep_questions
from tests.conftest import SLICE_SECTIONS


def test_sweep_questions_take_every_nth_page_in_section_order_with_entities_decoded():
    titles = {"EIM00300": "C", "EIM00100": "Tips &amp; gratuities:  summary", "EIM00200": "B", "EIM00400": "D"}
    every_one = sweep_questions(titles)
    assert [q.section_id for q in every_one] == ["EIM00100", "EIM00200", "EIM00300", "EIM00400"]
    assert every_one[0].question == "What are the rules on Tips & gratuities: summary?"
    assert [q.section_id for q in sweep_questions(titles, every=3)] == ["EIM00100", "EIM00400"]
    with pytest.raises(SweepError, match="at least 1"):
        sweep_questions(titles, every=0)


def test_sweep_questions_from_an_offset_are_a_disjoint_slice_and_mark_pages_without_text():
    titles = {f"EIM0{n}00": f"Page {n}" for n in range(1, 8)}
    first, second = sweep_questions(titles, every=3), sweep_questions(titles, every=3, offset=1)
    assert [q.section_id for q in first] == ["EIM0100", "EIM0400", "EIM0700"]
    assert [q.section_id for q in second] == ["EIM0200", "EIM0500"]
    marked = sweep_questions(titles, every=3, offset=1, without_text=frozenset({"EIM0500"}))
    assert [q.has_text for q in marked] == [True, False]
    titles["EIM0800"] = "page  2"  # another page asked in the same words (any case, any spacing)
    assert [q.namesakes for q in sweep_questions(titles, every=3, offset=1)] == [["EIM0800"], [], ["EIM0200"]]
    for bad in (-1, 3):
        with pytest.raises(SweepError, match="--offset"):
            sweep_questions(titles, every=3, offset=bad)


def _answered(*sentences: Sentence) -> QuestionResult:
    return QuestionResult(id="x", question="q", status="answered", answer=Answer(sentences=list(sentences), faithfulness=1.0))


def test_score_sweep_counts_the_own_page_only_in_the_answer_part():
    question = SweepQuestion(section_id="EIM31240", title="t", question="What are the rules on t?")
    own_in_detail = _answered(
        Sentence(text="Other page says so.", citations=["EIM31230#c0.p0"], verdict="supported", reason="quoted"),
        Sentence(text="Own page detail here.", citations=["EIM31240#c2.p0"], verdict="supported", reason="quoted", role="detail"),
    )
    own_in_detail.trace = [
        StageTrace(stage="rollup", ms=1.0, candidate_ids=["EIM31230", "EIM31200", "EIM31240"]),
        StageTrace(stage="selection", ms=1.0, candidate_ids=["EIM31230", "EIM31240"]),
    ]
    outcome = score_sweep(question, own_in_detail, 5.0)
    assert (outcome.own_page_in_answer_part, outcome.own_page_cited) == (False, True)
    assert (outcome.rollup_rank, outcome.selection_rank) == (2, 1)
    assert (outcome.answer_words, outcome.reply_words) == (4, 8)
    own_first = _answered(Sentence(text="Car or van 45p.", citations=["EIM31240#c2.p0"], verdict="supported", reason="quoted"))
    assert score_sweep(question, own_first, 1.0).own_page_in_answer_part
    refused = QuestionResult(id="y", question="q", status="refused", refusal=Refusal(category="low_coverage", message="m"))
    r = score_sweep(question, refused, 2.0)
    assert (r.refusal, r.refusal_message, r.own_page_cited, r.answer_words) == ("low_coverage", "m", False, 0)
    assert (r.rollup_rank, r.selection_rank) == (None, None)

    m = aggregate_sweep([outcome, score_sweep(question, own_first, 1.0), r], every=1)
    assert (m.questions, m.refusals, m.refusals_by_category) == (3, 1, {"low_coverage": 1})
    assert m.false_refusal_rate == pytest.approx(1 / 3)
    assert m.own_page_in_answer_part == pytest.approx(1 / 3) and m.own_page_cited == pytest.approx(2 / 3)
    assert (m.answer_words_median, m.reply_words_median) == (4.0, 6.0)  # over the two answered: 4 and 4, 8 and 4

    # every claim's verdict is counted, and those not supported are kept to be read
    doubted = _answered(
        Sentence(text="Car or van 45p.", citations=["EIM31240#c2.p0"], verdict="supported", reason="quoted"),
        Sentence(text="Car or van 40p.", citations=["EIM31240#c2.p0"], verdict="contradicted", reason="45p in the cited text", role="detail"),
    )
    d = score_sweep(question, doubted, 1.0)
    assert d.verdicts == {"contradicted": 1, "supported": 1} and [c.text for c in d.not_supported] == ["Car or van 40p."]
    assert aggregate_sweep([d, score_sweep(question, own_first, 1.0), r], every=1).verdict_counts == {"contradicted": 1, "supported": 2}
    assert "Car or van 40p." in render_sweep_markdown(SweepRun(manual="m", generation="1", metrics=aggregate_sweep([d], every=1), outcomes=[d]))

    # a question whose title another page bears: citing that page answers it as well
    shared = SweepQuestion(section_id="EIM31240", title="t", question="What are the rules on t?", namesakes=["EIM31230"])
    twin = score_sweep(shared, own_in_detail, 5.0)
    assert (twin.own_page_in_answer_part, twin.namesake_in_answer_part) == (False, True)
    assert not outcome.namesake_in_answer_part
    m = aggregate_sweep([twin, outcome], every=1)
    assert (m.shared_titles, m.own_page_in_answer_part, m.title_page_in_answer_part) == (1, 0.0, 0.5)

    # a page with no text is still asked (its refusal counts) but left out of the own-page shares
    empty = SweepQuestion(section_id="EIM22700", title="t", question="What are the rules on t?", has_text=False)
    m = aggregate_sweep([outcome, score_sweep(empty, refused, 2.0)], every=2, offset=1)
    assert (m.questions, m.refusals, m.pages_without_text, m.offset) == (2, 1, 1, 1)
    assert (m.own_page_in_answer_part, m.own_page_cited) == (0.0, 1.0)


def test_sweep_end_to_end_over_the_slice(slice_data_dir, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["eval", "--data-dir", str(slice_data_dir), "--sweep", "--every", "4", "--offset", "1", "--out", str(out)]) == 0
    assert "sweep of " in capsys.readouterr().out
    data = json.loads((out / "sweep.json").read_text())
    expected = sorted(SLICE_SECTIONS)[1::4]
    assert [o["section_id"] for o in data["outcomes"]] == expected
    m = data["metrics"]
    assert m["questions"] == len(expected) and (m["every"], m["offset"]) == (4, 1)
    assert m["refusals"] == sum(o["status"] == "refused" for o in data["outcomes"])
    # the van benefit's and the beneficial loans' contents pages are published without a body
    assert {o["section_id"] for o in data["outcomes"] if not o["has_text"]} == {"EIM22700", "EIM26100"}
    assert m["pages_without_text"] == 2
    assert 0.0 <= m["own_page_in_answer_part"] <= m["own_page_cited"] <= 1.0
    # the slice's pages answer their own titles: most answers cite the page asked about
    assert m["own_page_cited"] >= 0.5
    assert all(o["selection_rank"] is not None for o in data["outcomes"] if o["own_page_in_answer_part"])
    assert all(o["latency_ms"] > 0 for o in data["outcomes"])
    md = (out / "sweep.md").read_text()
    assert "| false refusals |" in md and "| own page in the answer part |" in md and "(2 have none to cite)" in md
    assert sum(m["verdict_counts"].values()) == sum(sum(o["verdicts"].values()) for o in data["outcomes"]) > 0
    assert "| claims by verdict |" in md and "## Claims not marked supported" in md


def test_sweep_without_a_collection_or_with_every_but_no_sweep_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "--data-dir", str(tmp_path / "empty"), "--sweep", "--out", str(tmp_path / "o")]) == 2
    assert "no employment-income-manual collection" in capsys.readouterr().err
    assert main(["eval", "--data-dir", str(tmp_path / "empty"), "--every", "3", "--out", str(tmp_path / "o")]) == 2
    assert "--every and --offset need --sweep" in capsys.readouterr().err
    assert main(["eval", "--data-dir", str(tmp_path / "empty"), "--offset", "1", "--out", str(tmp_path / "o")]) == 2
    assert "--every and --offset need --sweep" in capsys.readouterr().err
    assert main(["eval", "--data-dir", str(tmp_path / "empty"), "--sweep", "--every", "3", "--offset", "3", "--out", str(tmp_path / "o")]) == 2
    assert "--offset must be from 0 to --every - 1 (2), got 3" in capsys.readouterr().err
