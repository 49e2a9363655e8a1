"""How sure an answer is (services/ranking/assurance.py) and the marks stage that applies it:
below the answers model's threshold an answer says it may not answer and no claim is marked as
answering; above it the page ranker's marks stand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.answering.stages import marks
from services.ranking.assurance import ANSWER_EXTRACTOR, AnswerContext, answer_features, answers_model
from services.ranking.model import RankerModel, RankerModelError
from shared.config import Settings
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, PipelineState, SelectionResult
from services.text.reading import new_query
from shared.index import CorpusIndex

QUESTION = "My employer pays me 50p a mile for business trips in my own car. Is any of that taxable?"


def _selection(best: float, second: float) -> SelectionResult:
    return SelectionResult(pages=[PageBundle(section_id="EIM31240", score=best, chunks=[]), PageBundle(section_id="EIM31230", score=second, chunks=[])], answering_threshold=0.3)


def _draft() -> Draft:
    return Draft(sentences=[
        DraftSentence(text="Mileage allowance payments up to the approved amount are not taxable.", citations=["EIM31240#c0.p0"]),
        DraftSentence(text="Car or van: first 10,000 business miles 45p.", citations=["EIM31230#c0.p0"], role="detail"),
    ])  # fmt: skip


def _model_on_best_page(tmp_path: Path, threshold: float) -> Path:
    """An answers model whose probability rises with the best page's (sigmoid(10 * (p - 0.5)))."""
    names = list(ANSWER_EXTRACTOR.names)
    weights = [10.0 if n == "best_page_probability" else 0.0 for n in names]
    mean = [0.5 if n == "best_page_probability" else 0.0 for n in names]
    model = RankerModel(kind="answers", features=names, mean=mean, scale=[1.0] * len(names), weights=weights, answering_threshold=threshold)
    path = tmp_path / "answers.json"
    path.write_text(model.model_dump_json())
    return path


def test_the_signals_read_what_the_question_asks_apart_from_its_story(slice_settings: Settings) -> None:
    index = CorpusIndex.open(slice_settings, slice_settings.manual)
    query = new_query(id="q", question=QUESTION, manual=slice_settings.manual)
    context = AnswerContext.read(query, _selection(0.9, 0.45), _draft(), index, slice_settings)
    assert context.best == 0.9 and context.second == 0.45 and context.kept == 2 and context.claims == 1
    assert context.story_share > 0.5  # most of the question is the asker's situation
    assert 0 < context.ask_covered <= 1 and context.lead_on_best
    row = answer_features(query, _selection(0.9, 0.45), _draft(), index, slice_settings)
    assert row[ANSWER_EXTRACTOR.names.index("second_page_ratio")] == pytest.approx(0.5)


@pytest.mark.parametrize(("best", "unsure"), [(0.9, False), (0.2, True)])
def test_below_the_threshold_an_answer_may_not_answer_and_no_claim_says_it_does(slice_settings: Settings, tmp_path: Path, best: float, unsure: bool) -> None:
    settings = slice_settings.model_copy(deep=True)
    settings.stitching.answers_model = _model_on_best_page(tmp_path, threshold=0.5)
    state = PipelineState(query=new_query(id="q", question=QUESTION, manual=settings.manual), selection=_selection(best, 0.1), draft=_draft())
    state = marks.Marks(settings).run(state, CorpusIndex.open(settings, settings.manual))
    assert state.draft.may_not_answer is unsure
    assert state.draft.confidence == pytest.approx(1 / (1 + np.exp(-10 * (best - 0.5))), abs=0.01)
    lead = state.draft.sentences[0]
    # the page ranker alone marks the lead answering (its page is above the ranker's 0.3)
    assert lead.relevance == ("background" if unsure else "answering")


def test_an_answers_model_reading_other_signals_is_refused(tmp_path: Path) -> None:
    path = _model_on_best_page(tmp_path, 0.5)
    model = RankerModel.model_validate_json(path.read_text())
    path.write_text(model.model_copy(update={"features": [*model.features[:-1], "gut_feeling"]}).model_dump_json())
    settings = Settings(data_dir=tmp_path)
    settings.stitching.answers_model = path
    with pytest.raises(RankerModelError, match="gut_feeling"):
        answers_model(settings)


def test_a_missing_answers_model_is_refused_when_marks_are_on_and_not_read_when_off(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    settings.stitching.answers_model = tmp_path / "no-such-model.json"
    with pytest.raises(RankerModelError, match="no-such-model"):
        marks.Marks(settings)
    settings.stitching.assured = False
    assert marks.Marks(settings).model is None
