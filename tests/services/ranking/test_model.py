"""The ranker model file: applied as standardised features times weights, calibrated into a
probability, and refused when its feature list is not the one the service computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.ranking.page_features import PAGE_FEATURES
from services.ranking.model import RankerModel, RankerModelError, default_path, load_ranker


def _model(features: list[str], kind: str = "pages") -> RankerModel:
    n = len(features)
    return RankerModel(kind=kind, features=features, mean=[1.0] * n, scale=[2.0] * n, weights=[float(i + 1) for i in range(n)], calibration_a=2.0, calibration_b=-1.0)


def test_a_score_is_the_standardised_features_times_the_weights_and_its_probability_the_calibrated_sigmoid() -> None:
    model = _model(["a", "b"])
    scores = model.score(np.array([[1.0, 1.0], [3.0, 5.0]]))
    assert scores.tolist() == pytest.approx([0.0, 1.0 * 1 + 2.0 * 2])
    assert model.probability(scores).tolist() == pytest.approx([1 / (1 + np.exp(1.0)), 1 / (1 + np.exp(-9.0))])


def test_the_repos_page_model_loads_with_exactly_the_features_the_service_computes() -> None:
    model = load_ranker(default_path("pages"), "pages", PAGE_FEATURES)
    assert model.features == list(PAGE_FEATURES)
    assert model.trained.get("questions", 0) >= 100  # trained, not a placeholder


@pytest.mark.parametrize(
    ("features", "kind", "says"),
    [
        (list(PAGE_FEATURES[:-1]), "pages", f"not in the model: ['{PAGE_FEATURES[-1]}']"),
        ([*PAGE_FEATURES, "bm25_body"], "pages", "not computed: ['bm25_body']"),
        (list(reversed(PAGE_FEATURES)), "pages", "order differs"),
        (list(PAGE_FEATURES), "passages", "ranks passages, not pages"),
    ],
)
def test_a_model_trained_on_other_features_or_for_other_candidates_is_refused(tmp_path: Path, features: list[str], kind: str, says: str) -> None:
    path = tmp_path / "model.json"
    path.write_text(_model(features, kind).model_dump_json())
    with pytest.raises(RankerModelError, match="retrain|ranks") as raised:
        load_ranker(path, "pages", PAGE_FEATURES)
    assert says in str(raised.value)


def test_an_unreadable_or_inconsistent_model_file_is_a_typed_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "pages", "features": ["a"], "mean": [], "scale": [1], "weights": [1]}')
    with pytest.raises(RankerModelError, match="cannot read"):
        load_ranker(broken, "pages", ("a",))
    with pytest.raises(RankerModelError, match="cannot read"):
        load_ranker(tmp_path / "missing.json", "pages", ("a",))


def test_the_model_files_ship_with_the_package() -> None:
    """A non-editable install (the image's `pip install .`) must carry the trained model."""
    import fnmatch
    import tomllib

    root = Path(__file__).resolve().parents[3]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["services"]
    shipped = str(default_path("pages").relative_to(root / "services"))
    assert any(fnmatch.fnmatch(shipped, p) for p in patterns), (shipped, patterns)
