"""The mistral provider through the real mistralai SDK, against a local STAND-IN server that
speaks Mistral's chat wire format (tests/support/mistral_standin.py): the real API is not
reachable here."""

from __future__ import annotations

import json
import socket
import time

import pytest

from services import deadline as question_deadline
from services.errors import PipelineTimeout, ProviderError
from services.providers import mistral
from services.providers.base import SelectRequest, StitchRequest, VerifyRequest
from services.providers.mistral import MistralProvider
from services.answering.stages.verification import verify as check_deterministically
from shared.config import AnswerShape, ModelSettings, Settings
from shared.contracts.corpus import Chunk, Paragraph
from shared.contracts.api import Sentence
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, RollupResult, SelectionResult
from services.text.reading import new_query
from tests.support.mistral_standin import Reply

QUERY = new_query(id="q1", question="What mileage rate is tax free for my own car?", manual="employment-income-manual")


def chunk(section: str, texts: list[str]) -> Chunk:
    cid = f"{section}#c0"
    paragraphs = [Paragraph(id=f"{cid}.p{i}", text=t) for i, t in enumerate(texts)]
    return Chunk(id=cid, section_id=section, manual="employment-income-manual", position=0,
                 heading_path=["Employment Income Manual", f"{section} title"], paragraphs=paragraphs, content_hash=section)  # fmt: skip


RATES = chunk("EIM90001", ["The approved amount for cars is 45p a mile for the first 10,000 business miles.", "After that it is 25p a mile."])
OTHER = chunk("EIM90002", ["Gifts to employees at Christmas are taxable unless trivial."])
ROLLUP = RollupResult(pages=[PageBundle(section_id="EIM90001", score=1.0, chunks=[RATES]), PageBundle(section_id="EIM90002", score=0.5, chunks=[OTHER])])
SELECTION = SelectionResult(pages=ROLLUP.pages[:1], dropped=["EIM90002"])


@pytest.fixture
def settings(standin, monkeypatch) -> Settings:
    monkeypatch.setattr(mistral, "RETRY_BACKOFF_S", 0.0)  # retries at once: no timing in tests
    models = ModelSettings(provider="mistral", mistral_api_key=standin.api_key, mistral_server_url=standin.base_url,
                           mistral_chat_model="mistral-small-test", timeout_s=2.0, max_retries=2)  # fmt: skip
    return Settings(models=models)


def verify(settings: Settings, draft: Draft) -> list[Sentence]:
    """The model's verdicts through the provider protocol, given the deterministic check as the stage gives it."""
    checked = check_deterministically(QUERY, draft, SELECTION, settings)
    return MistralProvider(settings).verify(VerifyRequest(query=QUERY, draft=draft, selection=SELECTION, checked=checked))


def messages(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"])


def test_select_keeps_the_pages_the_model_names_and_sends_a_json_request(standin, settings):
    standin.chat_replies.append(json.dumps({"keep": ["EIM90001"]}))
    result = MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))
    assert [p.section_id for p in result.pages] == ["EIM90001"] and result.dropped == ["EIM90002"]
    (request,) = standin.chat_requests()
    assert request["model"] == "mistral-small-test" and request["response_format"] == {"type": "json_object"}
    assert request["messages"][0]["role"] == "system" and "recall-greedy" in request["messages"][0]["content"]
    assert QUERY.question in messages(request) and "EIM90002" in messages(request) and "45p a mile" in messages(request)


def test_malformed_replies_are_retried_with_the_reason_then_accepted(standin, settings):
    standin.chat_replies.extend(["this is not JSON", json.dumps({"keep": ["EIM12345"]}), json.dumps({"keep": ["EIM90002"]})])
    result = MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))
    assert [p.section_id for p in result.pages] == ["EIM90002"]
    requests = standin.chat_requests()
    assert len(requests) == 3
    assert "EIM12345" in requests[2]["messages"][-1]["content"]  # the retry says what was wrong


def test_a_reply_that_stays_malformed_becomes_a_typed_error(standin, settings):
    standin.chat_handler = lambda body: json.dumps({"pages": "all"})
    with pytest.raises(ProviderError, match="selection failed after 3 attempts"):
        MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))
    assert len(standin.chat_requests()) == 3


def test_http_errors_are_retried_then_typed(standin, settings):
    standin.chat_replies.extend([Reply(status=500, raw='{"message": "overloaded"}'), Reply(status=429, raw="{}"), json.dumps({"keep": []})])
    assert MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP)).pages == []
    standin.chat_handler = lambda body: Reply(status=503, raw='{"message": "down"}')
    with pytest.raises(ProviderError, match="request failed"):
        MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))


def test_a_slow_model_hits_the_timeout_and_fails_typed(standin, settings):
    settings.models.timeout_s = 0.3
    settings.models.max_retries = 0
    standin.chat_handler = lambda body: Reply(content=json.dumps({"keep": []}), delay_s=1.5)
    started = time.monotonic()
    with pytest.raises(ProviderError):
        MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))
    assert time.monotonic() - started < 1.5


def test_a_model_call_never_outlives_the_questions_deadline(standin, settings):
    """The provider's own timeout is 2 s with 2 retries; 0.5 s before the question's deadline the
    call is cut there, is a timeout (not a provider failure), and is not retried."""
    standin.chat_replies.append(json.dumps({"keep": ["EIM90001"]}))
    MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))  # the SDK loaded, outside the timing
    standin.chat_handler = lambda body: Reply(content=json.dumps({"keep": []}), delay_s=1.5)
    started = time.perf_counter()
    with question_deadline.until(time.time() + 0.5), pytest.raises(PipelineTimeout):
        MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))
    assert time.perf_counter() - started < 1.2
    assert len(standin.chat_requests()) == 2


def test_no_model_call_is_made_past_the_deadline(standin, settings):
    with question_deadline.until(time.time() - 0.01), pytest.raises(PipelineTimeout):
        MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))
    assert standin.chat_requests() == []


def test_unreachable_server_and_missing_key_are_typed_errors(settings):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    settings.models.mistral_server_url = f"http://127.0.0.1:{closed}"
    settings.models.max_retries = 0
    with pytest.raises(ProviderError, match="request failed"):
        MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))
    settings.models.mistral_api_key = ""
    with pytest.raises(ProviderError, match="MISTRAL_API_KEY"):
        MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=ROLLUP))


def test_stitch_returns_cited_sentences_from_selected_paragraphs(standin, settings):
    reply = {"sentences": [{"text": "Cars get 45p a mile for the first 10,000 business miles.", "citations": ["EIM90001#c0.p0"]}]}
    standin.chat_replies.append(json.dumps(reply))
    draft = MistralProvider(settings).stitch(StitchRequest(query=QUERY, selection=SELECTION))
    assert draft.sentences == [DraftSentence(**reply["sentences"][0])]
    assert "[EIM90001#c0.p0]" in messages(standin.chat_requests()[0])
    assert "EIM90002" not in messages(standin.chat_requests()[0])  # only selected pages are offered


@pytest.mark.parametrize(
    "bad",
    [
        {"sentences": [{"text": "Cars get 45p.", "citations": []}]},  # uncited
        {"sentences": [{"text": "Gifts are taxable.", "citations": ["EIM90002#c0.p0"]}]},  # not a selected page
        {"sentences": [{"text": "  ", "citations": ["EIM90001#c0.p0"]}]},  # empty
    ],
)
def test_stitch_never_returns_an_uncited_or_foreign_sentence(standin, settings, bad):
    standin.chat_handler = lambda body: json.dumps(bad)
    with pytest.raises(ProviderError, match="stitching failed"):
        MistralProvider(settings).stitch(StitchRequest(query=QUERY, selection=SELECTION))


def test_verify_holds_model_verdicts_to_the_deterministic_figure_check(standin, settings):
    draft = Draft(sentences=[
        DraftSentence(text="The approved amount for cars is 45p a mile for the first 10,000 business miles.", citations=["EIM90001#c0.p0"]),
        DraftSentence(text="The approved amount for cars is 60p a mile for the first 10,000 business miles.", citations=["EIM90001#c0.p0"]),
        DraftSentence(text="After that it is 25p a mile.", citations=["EIM90001#c0.p1"]),
    ])  # fmt: skip
    verdicts = [
        {"index": 0, "verdict": "supported", "reason": "stated"},
        {"index": 1, "verdict": "supported", "reason": "the model is wrong here"},
        {"index": 2, "verdict": "unsupported", "reason": "the model is strict here"},
    ]
    standin.chat_replies.append(json.dumps({"verdicts": verdicts}))
    sentences = verify(settings, draft)
    assert [s.verdict for s in sentences][0] == "supported"
    assert sentences[1].verdict != "supported" and "60p" in sentences[1].reason  # 60p is not in the cited text
    assert sentences[2].verdict == "unsupported" and sentences[2].reason == "the model is strict here"
    assert "Claim 1: The approved amount for cars is 60p" in messages(standin.chat_requests()[0])


def test_verify_needs_one_verdict_per_claim(standin, settings):
    draft = Draft(sentences=[DraftSentence(text="After that it is 25p a mile.", citations=["EIM90001#c0.p1"])] * 2)
    standin.chat_handler = lambda body: json.dumps({"verdicts": [{"index": 0, "verdict": "supported", "reason": "ok"}]})
    with pytest.raises(ProviderError, match="verification failed"):
        verify(settings, draft)
    standin.chat_handler = lambda body: json.dumps({"verdicts": [{"index": i, "verdict": "maybe", "reason": "?"} for i in range(2)]})
    with pytest.raises(ProviderError):
        verify(settings, draft)


def test_nothing_to_select_or_stitch_costs_no_model_call(standin, settings):
    assert MistralProvider(settings).select(SelectRequest(query=QUERY, rollup=RollupResult(pages=[]))).pages == []
    assert MistralProvider(settings).stitch(StitchRequest(query=QUERY, selection=SelectionResult(pages=[]))).sentences == []
    assert verify(settings, Draft(sentences=[])) == []
    assert standin.chat_requests() == []




# ---------------------------------------------------------------- answer shape and the clamp


def test_stitch_asks_for_the_answer_shape_and_clamps_a_long_reply(standin, settings):
    long = {"sentences": [{"text": f"Sentence {n}: the approved amount for cars is 45p a mile.", "citations": ["EIM90001#c0.p0"]} for n in range(9)]}
    standin.chat_replies.append(json.dumps(long))
    draft = MistralProvider(settings).stitch(StitchRequest(query=QUERY, selection=SELECTION))
    assert [s.text.split(":")[0] for s in draft.sentences] == [f"Sentence {n}" for n in range(6)]
    assert all(s.role == "answer" for s in draft.sentences)
    system = standin.chat_requests()[0]["messages"][0]["content"]
    assert "Answer first" in system and "At most\nsix short plain sentences" in system and "120 words" in system


def test_stitch_clamps_an_answer_past_the_word_cap(standin, settings):
    wordy = " ".join(["the approved amount for cars"] * 20)  # 100 words a sentence
    reply = {"sentences": [{"text": f"{wordy} is 45p.", "citations": ["EIM90001#c0.p0"]}] * 3}
    standin.chat_replies.append(json.dumps(reply))
    assert len(MistralProvider(settings).stitch(StitchRequest(query=QUERY, selection=SELECTION)).sentences) == 1  # 102 words; a second would make 204 > 180


def test_the_clamp_is_the_answer_shape_every_provider_keeps(standin, settings):
    reply = {"sentences": [{"text": f"Sentence {n}: the approved amount for cars is 45p a mile.", "citations": ["EIM90001#c0.p0"]} for n in range(5)]}
    standin.chat_replies.append(json.dumps(reply))
    settings.stitching.shape.claims = 2  # the shape the local provider's answer part keeps too
    assert len(MistralProvider(settings).stitch(StitchRequest(query=QUERY, selection=SELECTION)).sentences) == 2
    sentences = [DraftSentence(text="one two three", citations=["a"]), DraftSentence(text="four five", citations=["a"])]
    assert [s.text for s in mistral.clamped(sentences, AnswerShape(words_cap=4))] == ["one two three"]
    assert len(mistral.clamped(sentences[:1], AnswerShape(words_cap=1))) == 1  # the first always stays


def _paraphrase_run(standin, settings, text: str, model_verdict: str = "supported"):
    """A paraphrased reply from the stand-in, stitched then verified (the model approves it)."""
    standin.chat_replies.append(json.dumps({"sentences": [{"text": text, "citations": ["EIM90001#c0.p0"]}]}))
    draft = MistralProvider(settings).stitch(StitchRequest(query=QUERY, selection=SELECTION))
    standin.chat_replies.append(json.dumps({"verdicts": [{"index": 0, "verdict": model_verdict, "reason": "model"}]}))
    [sentence] = verify(settings, draft)
    return sentence


def test_a_paraphrase_keeping_figures_and_key_terms_is_supported(standin, settings):
    # reordered and shortened: not a quote, but every figure and term is in the cited paragraph
    sentence = _paraphrase_run(standin, settings, "For cars, the approved amount for the first 10,000 business miles is 45p a mile.")
    assert sentence.verdict == "supported" and sentence.reason == "model"


def test_a_paraphrase_that_swaps_a_key_term_is_held_to_partially_supported(standin, settings):
    # six of its seven terms are in the cited text (over 80% of the words): the old clamp passed
    # it; "vans" is a key term the paragraph does not state
    sentence = _paraphrase_run(standin, settings, "For vans, the approved amount for the first 10,000 business miles is 45p a mile.")
    assert sentence.verdict == "partially_supported" and "van" in sentence.reason


def test_a_paraphrase_that_changes_a_figure_is_held_to_contradicted(standin, settings):
    sentence = _paraphrase_run(standin, settings, "For cars, the approved amount for the first 12,000 business miles is 45p a mile.")
    assert sentence.verdict == "contradicted" and "12000" in sentence.reason and "10000" in sentence.reason


def test_a_paraphrase_with_a_figure_the_paragraph_lacks_is_unsupported(standin, settings):
    sentence = _paraphrase_run(standin, settings, "For cars, the approved amount for the first 10,000 business miles is 45p a mile from 2016.")
    assert sentence.verdict in {"unsupported", "contradicted"} and "2016" in sentence.reason
