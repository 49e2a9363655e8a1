"""The question pipeline: one ordered table of stages, run in process (embedded) or as a
Celery chain (distributed, services/runtime/tasks.py). Both modes, and the eval, run the one loop
``run_stages``; a question is asked through services/runtime/dispatch.py (``answer``, or ``submit``
and ``wait_result``).

Every stage step takes the ``PipelineState`` envelope and returns it with its own typed
output filled in, and what it found that may refuse the question (``state.findings``); after
each stage the refusal module decides whether that refuses (services/answering/refusals/
decide.py), and once ``refusal`` is set, later stages pass the state through.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from services import deadline as question_deadline
from services.answering import scope
from services.answering.refusals import decide
from services.providers.base import Provider
from services.text.tables import header_rows, rows_of
from services.providers.registry import provider_for
from services.answering.stages import expansion, follow_up, marks, retrieval, rollup, selection, stitching, verification
from shared.config import Settings
from shared.contracts.api import MAX_ALTERNATIVES, Alternative, Answer, Citation, QuestionRequest, QuestionResult, StageTrace
from shared.contracts.corpus import chunk_of, section_of
from shared.contracts.pipeline import PipelineState, Query
from shared.contracts.refusals import Findings, cited_paragraphs
from shared.generation import ingested_manuals
from shared.index import CorpusIndex

StageStep = Callable[[PipelineState, Settings], PipelineState]
ModelStep = Callable[[PipelineState, Settings, Provider], PipelineState]


def with_provider(step: ModelStep) -> StageStep:
    """A stage that asks a model, given the provider its settings name (built once per
    settings, services/providers/registry.py) rather than looking one up itself."""

    def run(state: PipelineState, settings: Settings) -> PipelineState:
        return step(state, settings, provider_for(settings))

    return run


def always(state: PipelineState) -> bool:
    del state
    return True


@dataclass(frozen=True)
class Stage:
    name: str
    queue: str  # the Celery queue (one worker service per queue)
    step: StageStep
    applies: Callable[[PipelineState], bool] = always  # a stage for some questions only (a conversation's) leaves no trace on others


def run_stage(stage: Stage, state: PipelineState, settings: Settings) -> PipelineState:
    """Run one stage with timing; the trace records the candidate ids it left behind."""
    if state.refusal is not None or state.result is not None or not stage.applies(state):
        return state
    started = time.perf_counter()
    state = stage.step(state, settings)
    state.refusal = decide.refusal(state, settings)  # the stage said what it found; this says whether it refuses
    state.trace.append(
        StageTrace(stage=stage.name, ms=(time.perf_counter() - started) * 1000, candidate_ids=candidate_ids(stage.name, state))
    )
    return state


def candidate_ids(stage_name: str, state: PipelineState) -> list[str]:
    """Ids left after a stage: chunk ids after retrieval/expansion, section ids after
    rollup/selection, cited paragraph ids after stitching/verification."""
    if stage_name == "retrieval" and state.retrieval:
        return [h.chunk_id for h in state.retrieval.hits]
    if stage_name == "expansion" and state.expansion:
        return [h.chunk_id for h in state.expansion.hits]
    if stage_name in ("rollup", "condition") and state.rollup:
        return [p.section_id for p in state.rollup.pages]
    if stage_name == "selection" and state.selection:
        return [p.section_id for p in state.selection.pages]
    if stage_name in ("stitching", "follow_up") and state.draft:
        return list(dict.fromkeys(c for s in state.draft.sentences for c in s.citations))
    if stage_name == "verification" and state.verification:
        return list(dict.fromkeys(c for s in state.verification.sentences for c in s.citations))
    return []


STAGES: tuple[Stage, ...] = (
    Stage("retrieval", "retrieval", retrieval.step),
    Stage("expansion", "graph", expansion.step),
    Stage("rollup", "graph", rollup.step),
    Stage("condition", "graph", follow_up.condition_step, applies=follow_up.chose_condition),
    Stage("selection", "selection", with_provider(selection.step)),
    Stage("stitching", "stitching", with_provider(stitching.step)),
    Stage("follow_up", "stitching", follow_up.follow_up_step, applies=follow_up.is_follow_up),
    Stage("marks", "stitching", marks.step),
    Stage("verification", "verification", with_provider(verification.step)),
)

# The stages every question runs (the others apply to a conversation turn only).
EVERY_QUESTION: tuple[Stage, ...] = tuple(stage for stage in STAGES if stage.applies is always)


def stages_through(name: str) -> tuple[Stage, ...]:
    """The stages from the first to the one named, in order (a slice of the pipeline)."""
    names = [stage.name for stage in STAGES]
    return STAGES[: names.index(name) + 1]


# The stage queues in pipeline order (a queue may hold several consecutive stages): the one
# list of them, for the Celery routes, the workers and the compose services.
STAGE_QUEUES: tuple[str, ...] = tuple(dict.fromkeys(stage.queue for stage in STAGES))


def sections_named(state: PipelineState) -> list[str]:
    """The pages a state's candidates sit on, best first."""
    found: dict[str, None] = {}
    if state.retrieval:
        found.update(dict.fromkeys(section_of(h.chunk_id) for h in state.retrieval.hits))
    if state.expansion:
        found.update(dict.fromkeys(section_of(h.chunk_id) for h in state.expansion.hits))
    for bundles in (state.rollup, state.selection):
        if bundles:
            found.update(dict.fromkeys(p.section_id for p in bundles.pages))
    return list(found)


# Cross-reference hops from the current pages a stage may score chunks on.
PREFETCH_HOPS = {"expansion": 2}


def prefetch_vectors(stage: Stage, state: PipelineState, settings: Settings) -> None:
    """One vector fetch per stage for every chunk it may score, instead of one per chunk
    (a round trip each with a Qdrant server)."""
    if state.refusal is not None or not settings.retrieval.use_vectors:
        return
    sections = sections_named(state)
    if not sections:
        return
    index = CorpusIndex.open(settings, state.query.manual)
    if index.vectors_remote:  # held in memory, a vector costs nothing to read where it is used
        index.chunk_vectors(index.pages_in_play(sections, PREFETCH_HOPS.get(stage.name, 0)))


def run_stages(
    stages: Sequence[Stage],
    state: PipelineState,
    settings: Settings,
    on_trace: Callable[[StageTrace], None],
    deadline: float | None = None,
) -> PipelineState:
    """The one stage loop (embedded, each Celery queue's task, the eval): ``on_trace`` hears
    each stage that ran. Past ``deadline`` (epoch s) no stage starts (PipelineTimeout), and
    a model call inside one waits no longer than the deadline (services/deadline.py)."""
    with question_deadline.until(deadline):
        for stage in stages:
            if state.refusal is None and state.result is None:
                question_deadline.check(f"stage {stage.name} not started")
            prefetch_vectors(stage, state, settings)
            done = len(state.trace)
            state = run_stage(stage, state, settings)
            if len(state.trace) > done:  # skipped stages (after a refusal) leave no trace
                on_trace(state.trace[-1])
    return state


def new_state(request: QuestionRequest, settings: Settings) -> PipelineState:
    """A question's envelope; the scope guard runs here (on the text as sent, before any
    retrieval), so it may already carry a refusal."""
    query = Query(id=uuid.uuid4().hex, question=request.question.strip(), manual=request.manual or settings.manual, focus=request.focus)
    state = PipelineState(query=query, findings=Findings(scope=scope.check(request.question, ingested_others(settings, query.manual))))
    state.refusal = decide.refusal(state, settings)
    return state


def ingested_others(settings: Settings, home: str) -> frozenset[str]:
    """The other manuals with a serving collection in the data dir (a file check, no index load)."""
    return frozenset(m for m in ingested_manuals(settings) if m != home)


def _citations(paragraph_ids: list[str], settings: Settings, manual: str) -> list[Citation]:
    index = CorpusIndex.open(settings, manual)
    out = []
    for pid in paragraph_ids:
        page = index.pages.get(section_of(pid))
        chunk = index.chunks.get(chunk_of(pid))
        if page is None or chunk is None:
            continue
        paragraph = index.paragraph(pid)
        out.append(
            Citation(
                paragraph_id=pid,
                section_id=page.section_id,
                title=page.title,
                heading_path=chunk.heading_path,
                text=paragraph.text,
                url=page.url,
                public_updated_at=page.public_updated_at,
                kind=paragraph.kind,
                header_rows=header_rows(rows_of(paragraph))[1] if paragraph.kind == "table" else 0,
            )
        )
    return out


def alternatives(state: PipelineState, settings: Settings) -> list[Alternative]:
    """The pages selection offers beside the answer's own (none the answer part already
    quotes), with their titles and links; for an answer that may not answer, the other kept
    pages too, most likely first: where the reader may find it instead."""
    if state.selection is None or state.verification is None:
        return []
    offered = list(state.selection.alternatives)
    if state.draft is not None and state.draft.may_not_answer:
        offered = list(dict.fromkeys([*offered, *(p.section_id for p in state.selection.pages)]))
    if not offered:
        return []
    quoted = {section_of(c) for s in state.verification.sentences if s.role == "answer" for c in s.citations}
    index = CorpusIndex.open(settings, state.query.manual)
    probability = {p.section_id: p.score for p in state.selection.pages}
    return [
        Alternative(section_id=sid, title=page.title, url=page.url, confidence=round(probability.get(sid, 0.0), 2))
        for sid in offered
        if sid not in quoted and (page := index.pages.get(sid)) is not None
    ][:MAX_ALTERNATIVES]


def finish(state: PipelineState, settings: Settings) -> QuestionResult:
    """The client's view of a finished (or refused) pipeline state."""
    # A conversation turn shows the person's own words, not the question as searched.
    question = state.context.asked if state.context is not None else state.query.asked or state.query.question
    base = {"id": state.query.id, "question": question, "trace": state.trace}
    if state.refusal is not None:
        # conflict and stale refusals point at paragraphs: the reader can open them.
        shown = cited_paragraphs(state.refusal.evidence)
        citations = _citations(shown, settings, state.query.manual) if shown else []
        return QuestionResult(status="refused", refusal=state.refusal, citations=citations, **base)
    if state.verification is None:
        raise ValueError("finish() needs a verified or refused state")
    sentences = state.verification.sentences
    cited = list(dict.fromkeys(c for s in sentences for c in s.citations))
    result = QuestionResult(
        status="answered",
        answer=Answer(
            sentences=sentences,
            faithfulness=state.verification.faithfulness,
            alternatives=alternatives(state, settings),
            confidence=state.draft.confidence if state.draft else None,
            may_not_answer=bool(state.draft and state.draft.may_not_answer),
        ),
        citations=_citations(cited, settings, state.query.manual),
        routes=state.routes,
        **base,
    )
    # How old the answer's figures are: the newest update of the pages it cites.
    result.answer.as_of = max((c.public_updated_at for c in result.citations), default=None)
    return result
