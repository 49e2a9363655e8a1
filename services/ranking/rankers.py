"""The two trained rankers the service applies, each loaded once per model file and refused
unless it reads exactly the features its extractor computes (PAGE_EXTRACTOR in
page_features.py, UNIT_EXTRACTOR in passage_features.py): the one place the gateway, the
stages and training find them."""

from __future__ import annotations

from shared.config import Settings
from services.ranking.model import RankerModel, default_path, load_ranker
from services.ranking.page_features import PAGE_EXTRACTOR
from services.ranking.passage_features import UNIT_EXTRACTOR


def page_ranker(settings: Settings) -> RankerModel:
    """The page ranker the settings name (the repo's trained model by default)."""
    path = settings.selection.local.page_model or default_path("pages")
    return load_ranker(path, "pages", PAGE_EXTRACTOR.names)


def passage_model(settings: Settings) -> RankerModel:
    """The trained passage ranker (the path in the settings, or the one in the repo), refused
    unless it reads exactly the passage extractor's features."""
    return load_ranker(settings.stitching.local.passage_model or default_path("passages"), "passages", UNIT_EXTRACTOR.names)
