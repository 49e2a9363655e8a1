"""The question pipeline: one ordered table of stages, run in process (embedded) or as a
Celery chain (distributed, services/runtime/tasks.py). Both modes, and the eval, run the one loop
``Answering.run``; a question is asked through services/runtime/dispatch.py (``answer``, or
``submit`` and ``wait_result``).

Each stage is a component (a class per job, as haystack's): what it depends on (the settings,
the provider, which holds the rankers) is given once, when the process builds its
``Answering`` (``answering_for``); what varies per question comes to its ``run(state,
index)``: the question's envelope and the index generation it is answered from, opened once
per question (once per Celery hop in distributed mode) by ``Answering.open``. A re-ingest
swaps generations between questions, never under one.

Every stage returns the ``PipelineState`` envelope with its own typed output filled in, and
what it found that may refuse the question (``state.findings``); after each stage the refusal
module decides whether that refuses (services/answering/refusals/decide.py), and once
``refusal`` is set, later stages pass the state through.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from services import deadline as question_deadline
from services.answering import scope
from services.answering.refusals import decide
from services.providers.base import Provider
from services.text.reading import new_query
from services.text.tables import header_rows, rows_of
from services.text.terms import corpus_stats
from services.providers.registry import make_provider
from services.answering.stages import expansion, follow_up, marks, retrieval, rollup, selection, stitching, verification
from shared.config import Settings
from shared.contracts.api import MAX_ALTERNATIVES, Alternative, Answer, Citation, QuestionRequest, QuestionResult, StageTrace
from shared.contracts.corpus import chunk_of, section_of
from shared.contracts.pipeline import PipelineState
from shared.contracts.refusals import Findings, cited_paragraphs
from shared.generation import ingested_manuals
from shared.index import CorpusIndex


class StageComponent(Protocol):
    """A stage as the loop runs it: built once with what it depends on, run per question."""

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState: ...


@dataclass(frozen=True)
class Parts:
    """What the stage components are built with, once per process (per settings)."""

    settings: Settings
    provider: Provider  # what a model decides: selection, stitching, verification (services/providers)


def always(state: PipelineState) -> bool:
    del state
    return True


@dataclass(frozen=True)
class Stage:
    name: str
    queue: str  # the Celery queue (one worker service per queue)
    build: Callable[[Parts], StageComponent]  # the stage's component, given what it depends on
    applies: Callable[[PipelineState], bool] = always  # a stage for some questions only (a conversation's) leaves no trace on others

    def skips(self, state: PipelineState) -> bool:
        """Whether the stage passes this state through: refused, finished, or not its kind."""
        return state.refusal is not None or state.result is not None or not self.applies(state)


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
    Stage("retrieval", "retrieval", lambda parts: retrieval.Retrieval(parts.settings)),
    Stage("expansion", "graph", lambda parts: expansion.Expansion(parts.settings)),
    Stage("rollup", "graph", lambda parts: rollup.Rollup(parts.settings)),
    Stage("condition", "graph", lambda parts: follow_up.Condition(), applies=follow_up.chose_condition),
    Stage("selection", "selection", lambda parts: selection.Selection(parts.settings, parts.provider)),
    Stage("stitching", "stitching", lambda parts: stitching.Stitching(parts.settings, parts.provider)),
    Stage("follow_up", "stitching", lambda parts: follow_up.FollowUp(parts.settings), applies=follow_up.is_follow_up),
    Stage("marks", "stitching", lambda parts: marks.Marks(parts.settings)),
    Stage("verification", "verification", lambda parts: verification.Verification(parts.settings, parts.provider)),
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


def prefetch_vectors(stage: Stage, state: PipelineState, settings: Settings, index: CorpusIndex) -> None:
    """One vector fetch per stage for every chunk it may score, instead of one per chunk
    (a round trip each with a Qdrant server)."""
    if state.refusal is not None or not settings.retrieval.use_vectors:
        return
    sections = sections_named(state)
    if not sections:
        return
    if index.vectors_remote:  # held in memory, a vector costs nothing to read where it is used
        index.chunk_vectors(index.pages_in_play(sections, PREFETCH_HOPS.get(stage.name, 0)))


class Answering:
    """The stages built once per process (per settings) with what they depend on: the provider
    (built from the settings, holding the trained rankers it loads once) and the settings; the
    one loop runs them on a question with its index generation, opened once.

        answering = answering_for(settings)       # at worker start: the components, once
        answering.warm_up()                        # the index, the embedder, the models
        result = answering.answer(state, on_trace, deadline)   # per question: STAGES, then finish
    """

    def __init__(self, settings: Settings, provider: Provider | None = None) -> None:
        self.settings = settings
        self.provider = make_provider(settings) if provider is None else provider
        parts = Parts(settings, self.provider)
        self.components: dict[str, StageComponent] = {stage.name: stage.build(parts) for stage in STAGES}

    def open(self, manual: str) -> CorpusIndex:
        """The manual's serving index generation: what one question (or one Celery hop of it)
        is answered from, start to finish."""
        return CorpusIndex.open(self.settings, manual)

    def warm_up(self, queues: frozenset[str] | set[str] = frozenset(STAGE_QUEUES)) -> None:
        """Load before the first question what the stages of ``queues`` would otherwise load
        on it: the index; the embedder (retrieval); the chunk vectors, the corpus term
        statistics and the provider's models (selection and stitching score with them)."""
        index = self.open(self.settings.manual)
        if "retrieval" in queues and self.settings.models.provider == "local":
            index.embed_query("warm up")
        if queues & {"selection", "stitching"} and index.chunks:
            corpus_stats(index)
            if self.settings.retrieval.use_vectors:
                index.chunk_vector(next(iter(index.chunks)))
            warm = getattr(self.provider, "warm_up", None)
            if warm is not None:
                warm()

    def run_stage(self, stage: Stage, state: PipelineState, index: CorpusIndex) -> PipelineState:
        """Run one stage with timing; the trace records the candidate ids it left behind."""
        if stage.skips(state):
            return state
        started = time.perf_counter()
        state = self.components[stage.name].run(state, index)
        state.refusal = decide.refusal(state, self.settings)  # the stage said what it found; this says whether it refuses
        state.trace.append(
            StageTrace(stage=stage.name, ms=(time.perf_counter() - started) * 1000, candidate_ids=candidate_ids(stage.name, state))
        )
        return state

    def answer(self, state: PipelineState, on_trace: Callable[[StageTrace], None], deadline: float | None = None) -> QuestionResult:
        """A question in this process: every stage, then its result, from one index generation."""
        state, index = self._run(STAGES, state, on_trace, deadline, None)
        return self.finish(state, index)

    def run(
        self,
        stages: Sequence[Stage],
        state: PipelineState,
        on_trace: Callable[[StageTrace], None],
        deadline: float | None = None,
        index: CorpusIndex | None = None,
    ) -> PipelineState:
        """The one stage loop (embedded, each Celery queue's task, the eval): ``on_trace`` hears
        each stage that ran. The question's index is opened when its first stage runs (a
        refused question opens none), unless the caller opened it (a Celery hop, to rebuild
        the state it received). Past ``deadline`` (epoch s) no stage starts (PipelineTimeout),
        and a model call inside one waits no longer than the deadline (services/deadline.py)."""
        return self._run(stages, state, on_trace, deadline, index)[0]

    def _run(
        self,
        stages: Sequence[Stage],
        state: PipelineState,
        on_trace: Callable[[StageTrace], None],
        deadline: float | None,
        index: CorpusIndex | None,
    ) -> tuple[PipelineState, CorpusIndex | None]:
        with question_deadline.until(deadline):
            for stage in stages:
                if state.refusal is None and state.result is None:
                    question_deadline.check(f"stage {stage.name} not started")
                if not stage.skips(state) and index is None:
                    index = self.open(state.query.manual)
                if index is not None:
                    prefetch_vectors(stage, state, self.settings, index)
                done = len(state.trace)
                state = self.run_stage(stage, state, index)  # type: ignore[arg-type]  (None only for a stage it skips)
                if len(state.trace) > done:  # skipped stages (after a refusal) leave no trace
                    on_trace(state.trace[-1])
        return state, index

    def finish(self, state: PipelineState, index: CorpusIndex | None = None) -> QuestionResult:
        """The client's view of a finished (or refused) state, its citations read from the
        question's index (opened here only for a state whose stages ran elsewhere)."""
        return finish(state, self.settings, index)


# The components for the settings a process serves, built on first use: a process serves one
# settings object (get_settings(), or the eval's variants, each its own object), read and never
# changed once questions are asked with it. Kept by identity, so a question looks its Answering
# up without serialising the settings; what the components are built from (the provider, the
# ranker files) is compared as well, in case a caller changed those in place.
_ANSWERING: dict[int, tuple[Settings, tuple[object, ...], Answering]] = {}
_ANSWERING_KEPT = 16
_ANSWERING_LOCK = threading.Lock()


def _built_from(settings: Settings) -> tuple[object, ...]:
    return (settings.models.provider, settings.selection.local.page_model, settings.stitching.local.passage_model)


def answering_for(settings: Settings) -> Answering:
    """This process's ``Answering`` for ``settings`` (built once)."""
    found = _ANSWERING.get(id(settings))
    if found is not None and found[0] is settings and found[1] == _built_from(settings):
        return found[2]
    with _ANSWERING_LOCK:
        found = _ANSWERING.get(id(settings))
        if found is not None and found[0] is settings and found[1] == _built_from(settings):
            return found[2]
        answering = Answering(settings)
        _ANSWERING.pop(id(settings), None)
        while len(_ANSWERING) >= _ANSWERING_KEPT:
            _ANSWERING.pop(next(iter(_ANSWERING)))
        _ANSWERING[id(settings)] = (settings, _built_from(settings), answering)
        return answering


def run_stage(stage: Stage, state: PipelineState, settings: Settings, index: CorpusIndex | None = None) -> PipelineState:
    """One stage on a state (the loop's step; tests and the eval's retrieval-only runs call it
    alone, ``index`` then opened here when the stage runs)."""
    answering = answering_for(settings)
    if index is None:
        if stage.skips(state):
            return state
        index = answering.open(state.query.manual)
    return answering.run_stage(stage, state, index)


def run_stages(
    stages: Sequence[Stage],
    state: PipelineState,
    settings: Settings,
    on_trace: Callable[[StageTrace], None],
    deadline: float | None = None,
    index: CorpusIndex | None = None,
) -> PipelineState:
    """``Answering.run`` with the process's components for ``settings``."""
    return answering_for(settings).run(stages, state, on_trace, deadline, index)


def new_state(request: QuestionRequest, settings: Settings) -> PipelineState:
    """A question's envelope; the scope guard runs here (on the text as sent, before any
    retrieval), so it may already carry a refusal."""
    query = new_query(id=uuid.uuid4().hex, question=request.question.strip(), manual=request.manual or settings.manual, focus=request.focus)
    state = PipelineState(query=query, findings=Findings(scope=scope.check(request.question, ingested_others(settings, query.manual))))
    state.refusal = decide.refusal(state, settings)
    return state


def ingested_others(settings: Settings, home: str) -> frozenset[str]:
    """The other manuals with a serving collection in the data dir (a file check, no index load)."""
    return frozenset(m for m in ingested_manuals(settings) if m != home)


def _citations(paragraph_ids: list[str], index: CorpusIndex) -> list[Citation]:
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


def alternatives(state: PipelineState, index: CorpusIndex) -> list[Alternative]:
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
    probability = {p.section_id: p.score for p in state.selection.pages}
    return [
        Alternative(section_id=sid, title=page.title, url=page.url, confidence=round(probability.get(sid, 0.0), 2))
        for sid in offered
        if sid not in quoted and (page := index.pages.get(sid)) is not None
    ][:MAX_ALTERNATIVES]


def finish(state: PipelineState, settings: Settings, index: CorpusIndex | None = None) -> QuestionResult:
    """The client's view of a finished (or refused) pipeline state; ``index``: the generation
    its stages read (opened here when they ran in another process, or none ran)."""
    # A conversation turn shows the person's own words, not the question as searched.
    question = state.context.asked if state.context is not None else state.query.asked or state.query.question
    base = {"id": state.query.id, "question": question, "trace": state.trace}

    def opened() -> CorpusIndex:
        return index if index is not None else answering_for(settings).open(state.query.manual)

    if state.refusal is not None:
        # conflict and stale refusals point at paragraphs: the reader can open them.
        shown = cited_paragraphs(state.refusal.evidence)
        citations = _citations(shown, opened()) if shown else []
        return QuestionResult(status="refused", refusal=state.refusal, citations=citations, **base)
    if state.verification is None:
        raise ValueError("finish() needs a verified or refused state")
    sentences = state.verification.sentences
    cited = list(dict.fromkeys(c for s in sentences for c in s.citations))
    index = opened()
    result = QuestionResult(
        status="answered",
        answer=Answer(
            sentences=sentences,
            faithfulness=state.verification.faithfulness,
            alternatives=alternatives(state, index),
            confidence=state.draft.confidence if state.draft else None,
            may_not_answer=bool(state.draft and state.draft.may_not_answer),
        ),
        citations=_citations(cited, index),
        routes=state.routes,
        **base,
    )
    # How old the answer's figures are: the newest update of the pages it cites.
    result.answer.as_of = max((c.public_updated_at for c in result.citations), default=None)
    return result
