"""The detail after the answer part (services/providers/local/detail.py)."""

from __future__ import annotations

from services.providers.local.detail import cut_from_answer
from services.runtime.dispatch import answer
from shared.config import Settings
from shared.contracts.api import QuestionRequest
from shared.contracts.corpus import Paragraph
from taxnav.evaluation.matching import reads_alone as claim_reads_alone
from tests.services.text.paragraphs import units_of


def test_the_detail_reaches_down_to_its_own_floor_and_the_answer_part_does_not_move(slice_settings: Settings) -> None:
    question = QuestionRequest(question="How much can my employer pay me per mile for using my own car without tax?")

    def with_floor(floor: float) -> list:  # noqa: ANN202
        local = slice_settings.stitching.local.model_copy(update={"detail_floor": floor})
        settings = slice_settings.model_copy(update={"stitching": slice_settings.stitching.model_copy(update={"local": local})})
        return answer(question, settings).answer.sentences

    high, low = with_floor(slice_settings.stitching.local.relative_floor), with_floor(0.05)
    assert [s.text for s in high if s.role == "answer"] == [s.text for s in low if s.role == "answer"]
    words = [sum(len(s.text.split()) for s in reply if s.role == "detail") for reply in (high, low)]
    assert words[0] < words[1] and sum(len(s.text.split()) for s in low) <= slice_settings.stitching.local.reply_words


def test_the_detail_never_quotes_an_item_of_a_list_the_answer_part_quotes_apart_from_its_lead_in(slice_settings: Settings) -> None:
    # EIM31400 lists its exemption's conditions over two chunks: the answer part quotes the
    # lead-in with its first items; a later item in the detail would read as a fragment
    for question in ("How much can my employer pay me per mile for using my own car without tax?", "Can my employer pay me extra for carrying colleagues as passengers?"):
        result = answer(QuestionRequest(question=question), slice_settings)
        quoted = [s for s in result.answer.sentences if s.role == "detail"]
        assert quoted and all(claim_reads_alone(s.text) for s in quoted), [s.text for s in quoted if not claim_reads_alone(s.text)]


def test_an_item_or_the_rest_of_a_line_the_answer_part_quotes_is_cut_from_it() -> None:
    units = units_of(
        Paragraph(id="EIM1#c0.p0", text="The maximum amounts are:"),
        Paragraph(id="EIM1#c0.p1", kind="li", text="five pounds a night in the UK"),
        Paragraph(id="EIM1#c0.p2", kind="li", text="ten pounds a night outside the UK"),
        Paragraph(id="EIM1#c0.p3", text="A rule of its own."),
    )
    assert cut_from_answer(units, 2, {0: units[0], 1: units[1]})  # an item of a list the answer quotes
    assert not cut_from_answer(units, 2, {3: units[3]})
    assert not cut_from_answer(units, 3, {0: units[0], 1: units[1], 2: units[2]})  # a sentence of its own
