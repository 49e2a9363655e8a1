"""The offline provider: deterministic selection (selection.py), extractive stitching
(stitching.py: the answer part in answer_part.py, the detail in detail.py, over the units
ranked.py scores, readable.py says what each needs beside it, claims.py makes claims of) over
quotable units (services/text/units.py, tables.py) scored for what the question asks;
verification is the deterministic check alone (services.answering.stages.verification)."""

from __future__ import annotations

from functools import cached_property

from shared.config import Settings
from shared.contracts.api import Sentence
from shared.contracts.pipeline import Draft, SelectionResult
from shared.index import CorpusIndex
from services.providers.base import SelectRequest, StitchRequest, VerifyRequest
from services.providers.local import selection, stitching
from services.ranking.model import RankerModel
from services.ranking.page_features import ConversationSubject
from services.ranking.rankers import page_ranker, passage_model


class LocalProvider:
    """Built once per process with its settings; its two trained rankers are loaded once, on
    first use or in ``warm_up`` (a model file that does not read the extractor's features is
    refused then, services/ranking/rankers.py)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @cached_property
    def page_model(self) -> RankerModel:
        return page_ranker(self.settings)

    @cached_property
    def passage_model(self) -> RankerModel:
        return passage_model(self.settings)

    def warm_up(self) -> None:
        self.page_model, self.passage_model  # noqa: B018  (loaded now, not on the first question)

    def select(self, request: SelectRequest, index: CorpusIndex) -> SelectionResult:
        subject = ConversationSubject(frozenset(request.carried), frozenset(request.linked))
        return selection.select(request.query, request.rollup, self.settings, index, self.page_model, request.query_vector, subject)

    def stitch(self, request: StitchRequest, index: CorpusIndex) -> Draft:
        return stitching.stitch(request.query, request.selection, self.settings, index, self.passage_model, request.query_vector)

    def verify(self, request: VerifyRequest) -> list[Sentence]:
        return request.checked  # no model to ask: the deterministic check is the verdict
