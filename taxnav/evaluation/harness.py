"""Ask every eval question through the API's embedded code path (``services.runtime.dispatch.answer``
with an in-process question store, as ``POST /v1/questions`` runs it), once per named settings
variant, and score the results; then run the Haystack peer over the same index in the same
process."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from services.api import MemoryStore, QuestionStore
from services.text.figures import checkable_facts
from services.text.reading import new_query
from shared.config import Settings
from shared.contracts.api import QuestionRequest, QuestionResult
from shared.contracts.pipeline import PipelineState
from shared.generation import serving_path
from taxnav.evaluation.judge import JudgeMetrics, judge_metrics, judge_result
from taxnav.evaluation.peer import PeerResult, run_peer
from taxnav.evaluation.matching import FactsFn, facts_in_texts
from taxnav.evaluation.metrics import VariantMetrics, aggregate
from taxnav.evaluation.outcomes import QuestionOutcome
from taxnav.evaluation.questions import EvalQuestion
from taxnav.evaluation.scoring import score_result

HEADLINE_VARIANT = "full"
RETRIEVAL_STAGE = "retrieval"
SELECTION_STAGE = "selection"
# Stages whose trace holds candidates (chunks or pages) before the answer is written; gold
# recall is measured after each of these and among the final citations.
RECALL_STAGES = ("retrieval", "expansion", "rollup", "selection")

# Named ablations: dotted Settings paths -> value. "hybrid" is the full pipeline's retrieval,
# listed so the retrieval comparison reads bm25_only / vectors_only / hybrid (each alone: no title list either).
VARIANTS: dict[str, dict[str, Any]] = {
    "full": {},
    "first_approach": {"rollup.whole_page": False, "selection.strategy": "strict", "expansion.enabled": False},
    "bm25_only": {"retrieval.use_bm25": True, "retrieval.use_vectors": False, "retrieval.use_titles": False},
    "vectors_only": {"retrieval.use_bm25": False, "retrieval.use_vectors": True, "retrieval.use_titles": False},
    "hybrid": {"retrieval.use_bm25": True, "retrieval.use_vectors": True},
    "no_graph": {"expansion.enabled": False},
}
# What each ablation is compared against in the report.
COMPARISONS: tuple[tuple[str, ...], ...] = (
    ("first_approach", "full"),
    ("bm25_only", "vectors_only", "hybrid"),
    ("no_graph", "full"),
)


class VariantError(ValueError):
    """An unknown variant name or a settings override that does not fit Settings."""


def with_overrides(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """A copy of ``settings`` with ``{"section.field": value}`` applied (deeper paths such as
    ``"selection.local.keep_ratio"`` too), each value validated."""
    sections: dict[str, dict[str, Any]] = {}
    for path, value in overrides.items():
        section, *fields = path.split(".")
        node = getattr(settings, section, None)
        if not fields or not isinstance(node, BaseModel):
            raise VariantError(f"unknown settings field {path!r}")
        target = sections.setdefault(section, node.model_dump())
        for depth, field in enumerate(fields):
            if not isinstance(node, BaseModel) or field not in type(node).model_fields:
                raise VariantError(f"unknown settings field {path!r}")
            node = getattr(node, field)
            if depth < len(fields) - 1:
                target = target[field]
        target[fields[-1]] = value
    updates = {}
    for section, fields in sections.items():
        try:
            updates[section] = type(getattr(settings, section)).model_validate(fields)
        except ValueError as exc:
            raise VariantError(f"bad override for {section}: {exc}") from exc
    return settings.model_copy(update=updates)


def resolve_variants(names: Sequence[str] | None) -> list[str]:
    """Requested variant names in table order, the headline variant always first."""
    requested = list(VARIANTS) if not names else list(names)
    unknown = [n for n in requested if n not in VARIANTS]
    if unknown:
        raise VariantError(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    return [HEADLINE_VARIANT, *[n for n in VARIANTS if n in requested and n != HEADLINE_VARIANT]]


class VariantRun(BaseModel):
    name: str
    overrides: dict[str, Any]
    same_as: str | None = None  # an earlier variant with identical settings whose answers are reused
    outcomes: list[QuestionOutcome]
    metrics: VariantMetrics


class EvalRun(BaseModel):
    manual: str
    generation: str
    questions: list[EvalQuestion]
    stages: list[str]
    variants: list[VariantRun]
    peer: PeerResult
    ingested: dict[str, Any] | None = None  # the ingest summary when the run had to ingest
    judge: JudgeMetrics | None = None  # the second opinion on the headline variant's claims


def api_answer(question: str, settings: Settings, store: QuestionStore) -> QuestionResult:
    """One question as the gateway answers it in embedded mode: scope guard, stages, finish."""
    from services.api import answer  # noqa: PLC0415  (imports the stages and the index)

    # the same settings object question after question: the process builds its stages for it once
    embedded = settings if settings.mode == "embedded" else settings.model_copy(update={"mode": "embedded"})
    return answer(QuestionRequest(question=question, manual=settings.manual), embedded, store)


def ask_all(
    questions: Sequence[EvalQuestion],
    settings: Settings,
    facts: FactsFn,
    page_text: Callable[[str], str],
    judge: str | None = None,
) -> list[QuestionOutcome]:
    """Every question through the API's embedded code path, timed end to end, scored; with a
    ``judge``, each answer's claims also get the judge's second opinion (outside the timing)."""
    store = MemoryStore()
    outcomes = []
    for question in questions:
        started = time.perf_counter()
        result = api_answer(question.question, settings, store)
        latency_ms = (time.perf_counter() - started) * 1000
        outcome = score_result(question, result, latency_ms, facts, RETRIEVAL_STAGE)
        selected = outcome.sections_by_stage.get(SELECTION_STAGE, [])
        outcome.key_facts_in_selection = facts_in_texts(outcome.key_facts_missing, map(page_text, selected))
        if judge:
            for claim, judgement in zip(outcome.claims, judge_result(question.question, result, settings), strict=True):
                claim.judge_correct, claim.judge_grounded, claim.judge_reason = judgement.correct, judgement.grounded, judgement.reason
        outcomes.append(outcome)
    return outcomes


def has_collection(settings: Settings) -> bool:
    return serving_path(settings, settings.manual) is not None


def ensure_ingested(settings: Settings, source: str, progress: bool = False) -> dict[str, Any] | None:
    """Ingest the manual from ``source`` unless the data dir already serves a collection of it."""
    if has_collection(settings):
        return None
    from ingest_worker.ingest import run_ingest  # noqa: PLC0415  (only when there is no index)

    return run_ingest(settings, source=source, manual=settings.manual, progress=progress).model_dump(mode="json")


def run_eval(
    questions: Sequence[EvalQuestion],
    settings: Settings,
    variant_names: Sequence[str] | None = None,
    source: str | None = None,
    progress: bool = False,
    judge: str | None = None,
) -> EvalRun:
    from services.answering.pipeline import STAGES, run_stage  # noqa: PLC0415  (heavy: the pipeline and the index; `taxnav --help` stays quick)
    from ingest_worker.chunker import chunk_embed_text  # noqa: PLC0415  (heavy, likewise)
    from shared.index import CorpusIndex  # noqa: PLC0415  (heavy, likewise)

    names = resolve_variants(variant_names)
    ingested = ensure_ingested(settings, source, progress) if source else None
    if not has_collection(settings):
        raise FileNotFoundError(
            f"no {settings.manual} collection under {settings.data_dir}; pass --source to ingest one"
        )
    index = CorpusIndex.open(settings, settings.manual)

    def page_text(section_id: str) -> str:
        # headings included: some key facts are a heading's words ("SMP is taxable")
        page = index.pages[section_id]
        return "\n".join(chunk_embed_text(chunk, page) for chunk in index.page_chunks(section_id))

    stages = [s.name for s in STAGES if s.name in RECALL_STAGES]
    # Warm the index, the embedder and the stage imports so the first timed question is not an outlier.
    api_answer(questions[0].question, settings, MemoryStore())

    runs: list[VariantRun] = []
    by_settings: dict[str, VariantRun] = {}
    for name in names:
        variant_settings = with_overrides(settings, VARIANTS[name])
        key = variant_settings.model_dump_json()
        if key in by_settings:
            earlier = by_settings[key]
            runs.append(earlier.model_copy(update={"name": name, "overrides": VARIANTS[name], "same_as": earlier.name}))
            continue
        outcomes = ask_all(questions, variant_settings, checkable_facts, page_text, judge if name == HEADLINE_VARIANT else None)
        run = VariantRun(name=name, overrides=VARIANTS[name], outcomes=outcomes, metrics=aggregate(outcomes, stages))
        by_settings[key] = run
        runs.append(run)

    retrieval_stage = next(s for s in STAGES if s.name == RETRIEVAL_STAGE)

    def our_retrieval(question: str) -> list[str]:
        # The retrieval stage alone, on a bare state (no scope guard), so every question is timed.
        state = PipelineState(query=new_query(id="eval", question=question, manual=settings.manual))
        return run_stage(retrieval_stage, state, settings).trace[-1].candidate_ids

    peer = run_peer(index, questions, settings.retrieval.top_k, our_retrieval, f"ours ({HEADLINE_VARIANT} retrieval stage)")
    headline = next(r for r in runs if r.name == HEADLINE_VARIANT)
    judged = [
        (c.verdict, bool(c.judge_correct), c.judge_grounded)
        for o in headline.outcomes
        for c in o.claims
        if c.judge_grounded is not None
    ]
    return EvalRun(
        judge=judge_metrics(judge, judged) if judge else None,
        manual=settings.manual,
        generation=str(index.generation),
        questions=list(questions),
        stages=stages,
        variants=runs,
        peer=peer,
        ingested=ingested,
    )
