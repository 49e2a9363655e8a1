"""The deadline of the question this thread is working on, for the code deep in a stage that
waits on something slow (a model call): it never waits past the moment its client stops
waiting. Set by the stage loop (services/answering/pipeline.py ``run_stages``), in both modes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from services.errors import PipelineTimeout

_deadline: ContextVar[float | None] = ContextVar("question_deadline", default=None)


@contextmanager
def until(deadline: float | None) -> Iterator[None]:
    """Work done inside belongs to a question whose client waits until ``deadline`` (epoch s)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining_s() -> float | None:
    """Seconds left before the current question's deadline (None: no deadline, e.g. the eval)."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.time()


def check(what: str) -> None:
    """Raise PipelineTimeout when the current question's deadline has passed: ``what`` (a
    stage, a model call) is not started for a client that has stopped waiting."""
    left = remaining_s()
    if left is not None and left <= 0:
        raise PipelineTimeout(f"{what}: the question is past its deadline")
