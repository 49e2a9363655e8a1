"""The question pipeline: one ordered table of stages, run in process (embedded) or as a
Celery chain (distributed, services/tasks.py). Both modes call the same ``run_stage``.

Every stage step takes the ``PipelineState`` envelope and returns it with its own typed
output filled in; once any stage sets ``refusal``, later stages pass the state through.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from shared.config import Settings
from shared.contracts.pipeline import PipelineState

StageStep = Callable[[PipelineState, Settings], PipelineState]


@dataclass(frozen=True)
class Stage:
    name: str
    queue: str  # the Celery queue (one worker service per queue)
    step: StageStep


def run_stage(stage: Stage, state: PipelineState, settings: Settings) -> PipelineState:
    """Run one stage with timing; the trace records the candidate ids it left behind."""
    if state.refusal is not None or state.result is not None:
        return state
    started = time.perf_counter()
    state = stage.step(state, settings)
    from shared.contracts.api import StageTrace  # noqa: PLC0415  (kept local: tiny)

    state.trace.append(
        StageTrace(stage=stage.name, ms=(time.perf_counter() - started) * 1000, candidate_ids=candidate_ids(stage.name, state))
    )
    return state


def candidate_ids(stage_name: str, state: PipelineState) -> list[str]:
    """Ids left after a stage (chunk ids after retrieval/expansion; section ids after rollup/selection)."""
    raise NotImplementedError  # filled in with the stages (issue 3)


STAGES: tuple[Stage, ...] = ()  # filled in with the stages (issue 3)
