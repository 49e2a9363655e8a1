"""`taxnav eval --sweep`: one question per page (or every Nth page), built mechanically from the
page's title, asked through the API's embedded code path.

Nobody can tune to it: the questions are "What are the rules on <title>?" for pages taken in
section-id order. Every question is answerable from its own page, so every refusal (by
category, conflicts included) is a false one. Reported: refusals by category, the share
whose answer part cites the page itself (and the share citing it anywhere), answer and reply
words, latency.
"""

from __future__ import annotations

import html
import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from services.results import MemoryStore
from shared.config import Settings
from shared.contracts.api import QuestionResult, RefusalCategory, Sentence
from shared.contracts.corpus import section_of
from taxnav.evaluation.harness import api_answer, has_collection
from taxnav.evaluation.scoring import word_count

QUESTION_TEMPLATE = "What are the rules on {title}?"


class SweepError(ValueError):
    """A sweep that cannot run (a bad --every, no collection to ask)."""


class SweepQuestion(BaseModel):
    section_id: str
    title: str
    question: str


class SweepOutcome(BaseModel):
    section_id: str
    question: str
    status: str
    refusal: RefusalCategory | None = None
    refusal_message: str = ""
    own_page_in_answer_part: bool = False
    own_page_cited: bool = False
    answer_words: int = 0
    reply_words: int = 0
    latency_ms: float


class SweepMetrics(BaseModel):
    questions: int
    every: int
    refusals: int
    false_refusal_rate: float
    refusals_by_category: dict[str, int]
    own_page_in_answer_part: float  # over all questions (a refusal does not cite its page)
    own_page_cited: float
    answer_words_median: float  # over answered questions
    reply_words_median: float
    median_latency_ms: float
    p90_latency_ms: float


class SweepRun(BaseModel):
    manual: str
    generation: str
    metrics: SweepMetrics
    outcomes: list[SweepOutcome] = Field(default_factory=list)


def sweep_questions(titles: dict[str, str], every: int = 1) -> list[SweepQuestion]:
    """Every ``every``-th page in section-id order, asked about by its title (entities decoded)."""
    if every < 1:
        raise SweepError(f"--every must be at least 1, got {every}")
    chosen = sorted(titles)[::every]
    out = []
    for section_id in chosen:
        title = " ".join(html.unescape(titles[section_id]).split())
        out.append(SweepQuestion(section_id=section_id, title=title, question=QUESTION_TEMPLATE.format(title=title)))
    return out


def _cites(sentences: list[Sentence], section_id: str) -> bool:
    return any(section_of(c) == section_id for s in sentences for c in s.citations)


def score_sweep(question: SweepQuestion, result: QuestionResult, latency_ms: float) -> SweepOutcome:
    sentences = result.answer.sentences if (result.status == "answered" and result.answer) else []
    answer_part = [s for s in sentences if s.role == "answer"]
    return SweepOutcome(
        section_id=question.section_id,
        question=question.question,
        status=result.status,
        refusal=result.refusal.category if result.refusal else None,
        refusal_message=result.refusal.message if result.refusal else "",
        own_page_in_answer_part=_cites(answer_part, question.section_id),
        own_page_cited=_cites(sentences, question.section_id),
        answer_words=sum(word_count(s.text) for s in answer_part),
        reply_words=sum(word_count(s.text) for s in sentences),
        latency_ms=latency_ms,
    )


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def aggregate_sweep(outcomes: list[SweepOutcome], every: int) -> SweepMetrics:
    n = len(outcomes)
    refused = [o for o in outcomes if o.status == "refused"]
    answered = [o for o in outcomes if o.status == "answered"]
    latencies = [o.latency_ms for o in outcomes]
    return SweepMetrics(
        questions=n,
        every=every,
        refusals=len(refused),
        false_refusal_rate=len(refused) / n if n else 0.0,
        refusals_by_category=dict(sorted(Counter(o.refusal for o in refused if o.refusal).items())),
        own_page_in_answer_part=sum(o.own_page_in_answer_part for o in outcomes) / n if n else 0.0,
        own_page_cited=sum(o.own_page_cited for o in outcomes) / n if n else 0.0,
        answer_words_median=statistics.median(o.answer_words for o in answered) if answered else 0.0,
        reply_words_median=statistics.median(o.reply_words for o in answered) if answered else 0.0,
        median_latency_ms=statistics.median(latencies) if latencies else 0.0,
        p90_latency_ms=_quantile(latencies, 0.9),
    )


def run_sweep(settings: Settings, every: int = 1) -> SweepRun:
    """Ask the sweep's questions in this process, through the gateway's embedded path."""
    from shared.index import CorpusIndex  # noqa: PLC0415  (heavy: the index stack; `taxnav --help` stays quick)

    if not has_collection(settings):
        raise SweepError(f"no {settings.manual} collection under {settings.data_dir}; ingest one first")
    index = CorpusIndex.open(settings, settings.manual)
    questions = sweep_questions({sid: page.title for sid, page in index.pages.items()}, every)
    store = MemoryStore(max_questions=64)  # results are scored as they come; none is read twice
    if questions:  # warm the index and the models so the first timed question is not an outlier
        api_answer(questions[0].question, settings, store)
    outcomes = []
    for question in questions:
        started = time.perf_counter()
        result = api_answer(question.question, settings, store)
        outcomes.append(score_sweep(question, result, (time.perf_counter() - started) * 1000))
    return SweepRun(
        manual=settings.manual, generation=str(index.generation), metrics=aggregate_sweep(outcomes, every), outcomes=outcomes
    )


def render_sweep_markdown(run: SweepRun) -> str:
    m = run.metrics
    lines = [
        f"# Sweep: {run.manual} (generation {run.generation})",
        "",
        f"{m.questions} questions, one per {'page' if m.every == 1 else f'{m.every}th page'} in section-id order, "
        f'each "{QUESTION_TEMPLATE.format(title="<page title>")}" through the embedded API path. Every one is '
        "answerable from its own page: every refusal is a false one.",
        "",
        "| metric | value | target |",
        "|---|---|---|",
        f"| false refusals | {m.refusals} ({m.false_refusal_rate:.1%}) | <= 1% |",
        f"| false conflicts | {m.refusals_by_category.get('conflict', 0)} | 0 |",
        f"| own page in the answer part | {m.own_page_in_answer_part:.1%} | >= 95% |",
        f"| own page cited anywhere | {m.own_page_cited:.1%} | |",
        f"| answer words (median) | {m.answer_words_median:.0f} | <= 120 |",
        f"| reply words (median) | {m.reply_words_median:.0f} | <= 350 |",
        f"| latency ms (median / p90) | {m.median_latency_ms:.1f} / {m.p90_latency_ms:.1f} | |",
        "",
        "## Refusals by category",
        "",
    ]
    lines += [f"- {cat}: {count}" for cat, count in m.refusals_by_category.items()] or ["None."]
    misses = [o for o in run.outcomes if not o.own_page_in_answer_part]
    lines += ["", f"## Questions whose answer part does not cite their page ({len(misses)})", ""]
    lines += [
        f"- {o.section_id}: {o.question.replace('|', '/')} -> "
        + (f"refused {o.refusal}: {o.refusal_message}" if o.status == "refused" else f"answered ({o.answer_words} words)")
        for o in misses
    ] or ["None."]
    return "\n".join(lines) + "\n"


def write_sweep(run: SweepRun, out_dir: Path) -> dict[str, Any]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = run.model_dump(mode="json")
    (out_dir / "sweep.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out_dir / "sweep.md").write_text(render_sweep_markdown(run), encoding="utf-8")
    return data
