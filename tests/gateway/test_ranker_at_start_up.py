"""The gateway refuses to start with a page ranker trained on other features than it computes."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from services.ranking.page_features import PAGE_FEATURES
from services.ranking.passage_features import UNIT_FEATURES
from services.ranking.model import RankerModelError, default_path, load_ranker
from shared.config import Settings


def test_a_model_with_a_feature_the_service_does_not_compute_stops_start_up(tmp_path: Path) -> None:
    model = load_ranker(default_path("pages"), "pages", PAGE_FEATURES)
    renamed = tmp_path / "pages.json"
    renamed.write_text(model.model_copy(update={"features": ["bm25_headings", *model.features[1:]]}).model_dump_json())
    settings = Settings(data_dir=tmp_path / "data")
    settings.selection.local.page_model = renamed
    with pytest.raises(RankerModelError, match="bm25_headings"), TestClient(create_app(settings)):
        pass


def test_a_passage_model_trained_on_other_features_stops_start_up(tmp_path: Path) -> None:
    model = load_ranker(default_path("passages"), "passages", UNIT_FEATURES)
    shorter = tmp_path / "passages.json"
    shorter.write_text(model.model_copy(update={"features": model.features[:-1], "mean": model.mean[:-1], "scale": model.scale[:-1], "weights": model.weights[:-1]}).model_dump_json())
    settings = Settings(data_dir=tmp_path / "data")
    settings.stitching.local.passage_model = shorter
    with pytest.raises(RankerModelError, match=UNIT_FEATURES[-1]), TestClient(create_app(settings)):
        pass


def test_the_repos_model_lets_the_gateway_start(tmp_path: Path) -> None:
    with TestClient(create_app(Settings(data_dir=tmp_path / "data"))) as client:
        assert client.get("/healthz").status_code == 200


def test_an_answers_model_reading_other_signals_stops_start_up(tmp_path: Path) -> None:
    from services.ranking.assurance import ANSWER_EXTRACTOR  # noqa: PLC0415

    model = load_ranker(default_path("answers"), "answers", ANSWER_EXTRACTOR.names)
    other = tmp_path / "answers.json"
    other.write_text(model.model_copy(update={"features": ["cross_encoder_score", *model.features[1:]]}).model_dump_json())
    settings = Settings(data_dir=tmp_path / "data")
    settings.stitching.answers_model = other
    with pytest.raises(RankerModelError, match="cross_encoder_score"), TestClient(create_app(settings)):
        pass
