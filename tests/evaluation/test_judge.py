"""`taxnav eval --judge mistral`: the second-opinion judge per claim, through the real mistralai
SDK against the local STAND-IN for the Mistral API (tests/support/mistral_standin.py)."""

from __future__ import annotations

import json
import re

import pytest

from services.errors import ProviderError
from services.providers import mistral
from shared.config import ModelSettings, Settings
from shared.contracts.api import Answer, Citation, QuestionResult, Refusal, Sentence
from taxnav.cli import main
from taxnav.evaluation.judge import judge_metrics, judge_result
from tests.evaluation.test_harness_e2e import QUESTIONS, _questions_file

ROW = "Car or van | First 10,000After that | 45p25p"


@pytest.fixture
def settings(standin, monkeypatch) -> Settings:
    monkeypatch.setattr(mistral, "RETRY_BACKOFF_S", 0.0)
    models = ModelSettings(mistral_api_key=standin.api_key, mistral_server_url=standin.base_url, timeout_s=2.0, max_retries=1)
    return Settings(models=models)  # answers by the local provider; only the judge calls the model


def _result() -> QuestionResult:
    citation = Citation(
        paragraph_id="EIM31240#c2.p0", section_id="EIM31240", title="t", heading_path=[], text=ROW,
        url="https://www.gov.uk/x", public_updated_at="2014-09-08T00:00:00Z",
    )  # fmt: skip
    sentences = [
        Sentence(text="Car or van: 45p for the first 10,000 business miles.", citations=["EIM31240#c2.p0"], verdict="supported", reason="rendered"),
        Sentence(text="Car or van: 40p for the first 10,000 business miles.", citations=["EIM31240#c2.p0"], verdict="contradicted", reason="40p"),
    ]
    return QuestionResult(id="r", question="q", status="answered", answer=Answer(sentences=sentences, faithfulness=0.5), citations=[citation])


def test_judge_sends_each_claim_with_its_cited_text_and_reads_one_judgement_per_claim(standin, settings):
    reply = {"claims": [
        {"index": 1, "correct": False, "grounded": False, "reason": "the table says 45p"},
        {"index": 0, "correct": True, "grounded": True, "reason": "stated in the row"},
    ]}  # fmt: skip
    standin.chat_replies.append(json.dumps(reply))
    judged = judge_result("How much per mile?", _result(), settings)
    assert [(j.index, j.correct, j.grounded) for j in judged] == [(0, True, True), (1, False, False)]
    (request,) = standin.chat_requests()
    user = request["messages"][1]["content"]
    assert "Question: How much per mile?" in user and "Claim 1: Car or van: 40p" in user and f"[EIM31240#c2.p0] {ROW}" in user


def test_a_judge_reply_missing_a_claim_is_retried_then_a_typed_error(standin, settings):
    standin.chat_handler = lambda body: json.dumps({"claims": [{"index": 0, "correct": True, "grounded": True, "reason": "ok"}]})
    with pytest.raises(ProviderError, match="judging failed after 2 attempts"):
        judge_result("q", _result(), settings)
    assert "exactly one judgement for each claim" in standin.chat_requests()[1]["messages"][-1]["content"]


def test_a_refusal_costs_no_judge_call(standin, settings):
    refused = QuestionResult(id="r", question="q", status="refused", refusal=Refusal(category="out_of_scope", message="m"))
    assert judge_result("q", refused, settings) == []
    assert standin.chat_requests() == []


def test_agreement_counts_supported_as_grounded_and_anything_else_as_not():
    rows = [("supported", True, True), ("contradicted", False, False), ("partially_supported", True, True), ("supported", True, False)]
    m = judge_metrics("mistral", rows)
    assert (m.claims, m.correct, m.grounded, m.agreement) == (4, 0.75, 0.5, 0.5)
    assert judge_metrics("mistral", []).agreement == 0.0


def _judge_every_claim(body: dict) -> str:
    """The stand-in judge: a claim is grounded when its text has a figure, correct always."""
    user = body["messages"][1]["content"]
    claims = re.findall(r"^Claim (\d+): (.*)$", user, flags=re.M)
    return json.dumps({"claims": [
        {"index": int(n), "correct": True, "grounded": bool(re.search(r"\d", text)), "reason": "stand-in"} for n, text in claims
    ]})  # fmt: skip


def test_eval_with_the_judge_end_to_end_over_the_slice(slice_data_dir, standin, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mistral, "RETRY_BACKOFF_S", 0.0)
    monkeypatch.setenv("TAXNAV_MODELS__MISTRAL_API_KEY", standin.api_key)
    monkeypatch.setenv("TAXNAV_MODELS__MISTRAL_SERVER_URL", standin.base_url)
    standin.chat_handler = _judge_every_claim
    questions = _questions_file(tmp_path / "q.jsonl", QUESTIONS)
    out = tmp_path / "r"
    args = ["eval", "--data-dir", str(slice_data_dir), "--questions", str(questions), "--variants", "full", "--judge", "mistral"]
    assert main([*args, "--out", str(out)]) == 0
    assert "judge agreement" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    claims = [c for q in report["questions"] for c in q["claims"]]
    assert claims and all(c["judge_reason"] == "stand-in" for c in claims)
    assert all(c["judge_grounded"] == bool(re.search(r"\d", c["text"])) for c in claims)
    answered = sum(q["status"] == "answered" for q in report["questions"])
    assert len(standin.chat_requests()) == answered  # one judge call per answer, none per refusal
    agree = sum((c["verdict"] == "supported") == c["judge_grounded"] for c in claims) / len(claims)
    assert report["judge"]["claims"] == len(claims) and report["judge"]["agreement"] == pytest.approx(agree, abs=1e-4)
    assert "## Second-opinion judge (mistral)" in (out / "report.md").read_text()


def test_eval_judge_without_a_key_is_a_clear_error(slice_data_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TAXNAV_MODELS__MISTRAL_API_KEY", "")
    questions = _questions_file(tmp_path / "q.jsonl", QUESTIONS[:1])
    args = ["eval", "--data-dir", str(slice_data_dir), "--questions", str(questions), "--variants", "full", "--judge", "mistral"]
    assert main([*args, "--out", str(tmp_path / "o")]) == 2
    assert "MISTRAL_API_KEY is not set" in capsys.readouterr().err
    assert main(["eval", "--sweep", "--judge", "mistral", "--out", str(tmp_path / "o")]) == 2
    assert "not to --sweep" in capsys.readouterr().err
