"""What a question's stages report to the question store (services/runtime/question_store.py), across
processes: Celery workers write these events, the gateway and ``taxnav ask`` read them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from shared.contracts.api import QuestionResult, StageTrace


class ErrorInfo(BaseModel):
    """A typed pipeline failure as it travels (services/errors.py turns it back into one)."""

    type: str
    message: str


class QuestionEvent(BaseModel):
    kind: Literal["stage", "result", "error"]
    trace: StageTrace | None = None  # a finished stage: its name, ms and the candidate ids left
    result: QuestionResult | None = None
    error: ErrorInfo | None = None

    @property
    def terminal(self) -> bool:
        return self.kind != "stage"


def stage_event(trace: StageTrace) -> QuestionEvent:
    return QuestionEvent(kind="stage", trace=trace)
