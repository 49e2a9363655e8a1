"""The Provider interface: what selection, stitching and verification ask of a model.

A provider gets typed requests and answers with the pipeline's own messages. The question's
embedding travels in the request (retrieval computed it; it crosses worker hops in the
envelope), so no provider embeds the question again or keeps it in a module-level cache.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from pydantic import BaseModel, Field

from shared.contracts.api import Sentence
from shared.contracts.pipeline import Draft, Query, RollupResult, SelectionResult
from shared.index import CorpusIndex


class SelectRequest(BaseModel):
    query: Query
    rollup: RollupResult
    query_vector: list[float] = Field(default_factory=list, description="the question's embedding; empty when retrieval had none")
    asked: str = Field("", description="the person's own words this turn when the query reads more (a follow-up read with its subject); empty: the query's question")
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
    def select(self, request: SelectRequest) -> SelectionResult: ...

    def stitch(self, request: StitchRequest) -> Draft: ...

    def verify(self, request: VerifyRequest) -> list[Sentence]:
        """The provider's verdicts, one per drafted sentence (the stage holds them to ``checked``)."""
        ...


def question_vector(index: CorpusIndex, question: str, carried: list[float]) -> np.ndarray:
    """The question's embedding: the one the request carries, else computed."""
    return np.asarray(carried if carried else index.embed_query(question), dtype=np.float32)

