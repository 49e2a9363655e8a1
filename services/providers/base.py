"""The Provider interface: what selection, stitching and verification ask of a model.

A provider gets typed requests and answers with the pipeline's own messages. The question's
embedding travels in the request (retrieval computed it; it crosses worker hops in the
envelope), so no provider embeds the question again or keeps it in a module-level cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, Field

from shared.contracts.api import Sentence
from shared.contracts.corpus import Paragraph
from shared.contracts.pipeline import Draft, Query, RollupResult, SelectionResult

if TYPE_CHECKING:
    from shared.index import CorpusIndex


class SelectRequest(BaseModel):
    query: Query
    rollup: RollupResult
    query_vector: list[float] = Field(default_factory=list, description="the question's embedding; empty when retrieval had none")
    carried: list[str] = Field(default_factory=list, description="a follow-up's subject: the pages the conversation's earlier turns answered from")
    linked: list[str] = Field(default_factory=list, description="a follow-up's subject: the pages one link from those")


class StitchRequest(BaseModel):
    query: Query
    selection: SelectionResult
    query_vector: list[float] = Field(default_factory=list, description="the question's embedding; empty when retrieval had none")


class VerifyRequest(BaseModel):
    query: Query
    draft: Draft
    selection: SelectionResult
    checked: list[Sentence] = Field(description="the deterministic check's verdicts, one per drafted sentence")


class Provider(Protocol):
    """Built once per process with its settings; each call gets the question's request and the
    index generation the question is answered from (a model that reads no index ignores it)."""

    def select(self, request: SelectRequest, index: CorpusIndex) -> SelectionResult: ...

    def stitch(self, request: StitchRequest, index: CorpusIndex) -> Draft: ...

    def verify(self, request: VerifyRequest) -> list[Sentence]:
        """The provider's verdicts, one per drafted sentence (the stage holds them to ``checked``)."""
        ...


# A verdict's rank from best to worst: a provider's verdict is never better than the check's.
_RANK = {"supported": 0, "partially_supported": 1, "unsupported": 2, "contradicted": 3}


def paragraphs_of(selection: SelectionResult) -> dict[str, Paragraph]:
    """Every paragraph of the selected pages by id: what a citation may resolve to."""
    return {p.id: p for page in selection.pages for chunk in page.chunks for p in chunk.paragraphs}


def enforce(given: list[Sentence], checked: list[Sentence]) -> list[Sentence]:
    """Hold a provider's verdicts to the deterministic check: never better than check_claim."""
    return [c if _RANK[c.verdict] > _RANK[g.verdict] else g for g, c in zip(given, checked, strict=True)]
