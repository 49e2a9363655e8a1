"""The offline provider: deterministic selection (selection.py), extractive stitching
(stitching.py: the answer part in answer_part.py, the detail in detail.py, over the units
ranked.py scores, readable.py says what each needs beside it, claims.py makes claims of) over
quotable units (services/text/units.py, tables.py) scored for what the question asks;
verification is the deterministic check alone (services.answering.stages.verification)."""

from __future__ import annotations

from shared.config import Settings
from shared.contracts.api import Sentence
from shared.contracts.pipeline import Draft, SelectionResult
from services.providers.base import SelectRequest, StitchRequest, VerifyRequest
from services.providers.local import selection, stitching
from services.ranking.page_features import ConversationSubject


class LocalProvider:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def select(self, request: SelectRequest) -> SelectionResult:
        subject = ConversationSubject(frozenset(request.carried), frozenset(request.linked))
        return selection.select(request.query, request.rollup, self.settings, request.query_vector, request.asked, subject)

    def stitch(self, request: StitchRequest) -> Draft:
        return stitching.stitch(request.query, request.selection, self.settings, request.query_vector)

    def verify(self, request: VerifyRequest) -> list[Sentence]:
        return request.checked  # no model to ask: the deterministic check is the verdict
