"""Stitching composed: the answer part and the detail on a real slice of the manual, within the answer shape (services/providers/local/stitching.py)."""

from __future__ import annotations

from services.runtime.dispatch import answer
from shared.config import AnswerShape, LocalStitchingSettings, Settings
from shared.contracts.api import QuestionRequest
from taxnav.evaluation.matching import reads_alone as claim_reads_alone

TUNING = LocalStitchingSettings()  # the defaults the tests run with
SHAPE = AnswerShape()


def test_composed_answer_on_real_pages_is_short_leads_with_the_figure_and_never_ends_on_a_colon(slice_settings) -> None:  # noqa: ANN001
    for question in (
        "How much can my employer pay me per mile for using my own car without tax?",
        "Is there a tax charge on a works van I take home at weekends?",
        "What counts as a long service award?",
    ):
        result = answer(QuestionRequest(question=question), slice_settings)
        assert result.status == "answered", (question, result.refusal)
        claims = [s for s in result.answer.sentences if s.role == "answer"]
        detail = [s for s in result.answer.sentences if s.role == "detail"]
        words = [len(s.text.split()) for s in claims]
        assert 1 <= len(claims) <= SHAPE.claims and sum(words) <= SHAPE.words_cap, (question, words)
        assert sum(words) + sum(len(s.text.split()) for s in detail) <= TUNING.reply_words
        assert len({s.text for s in claims}) == len(claims)  # no claim repeats another
        assert not claims[-1].text.rstrip().endswith(":")  # a list intro never stands alone
        fragments = [s.text for s in result.answer.sentences if not claim_reads_alone(s.text)]
        assert not fragments, (question, fragments)  # a split sentence, a list item: quoted whole
        assert {s.verdict for s in claims} <= {"supported", "partially_supported"}
    mileage = answer(QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?"), slice_settings)
    first = [s for s in mileage.answer.sentences if s.role == "answer"][0]
    assert "45p" in first.text or "25p" in first.text, first.text  # a figure question: the figure first


def test_the_answer_shape_comes_from_settings(slice_settings: Settings) -> None:
    question = QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?")
    tight = slice_settings.model_copy(deep=True)
    tight.stitching.shape.claims, tight.stitching.local.reply_words = 1, 60
    usual, short = answer(question, slice_settings), answer(question, tight)
    assert len([s for s in usual.answer.sentences if s.role == "answer"]) > 1
    assert len([s for s in short.answer.sentences if s.role == "answer"]) == 1
    assert sum(len(s.text.split()) for s in short.answer.sentences if s.role == "detail") < sum(
        len(s.text.split()) for s in usual.answer.sentences if s.role == "detail"
    )


def test_the_answer_shape_is_one_setting_for_every_provider() -> None:
    settings = Settings()
    assert settings.stitching.shape == AnswerShape(claims=6, words=120, words_cap=180)
    # no second copy in the local tuning: the follow-up stage reads the shape too
    assert not {"answer_claims", "answer_words", "answer_words_cap"} & set(settings.stitching.local.model_dump())
    other = Settings.model_validate({"stitching": {"shape": {"claims": 3}}})
    assert other.stitching.shape.claims == 3
