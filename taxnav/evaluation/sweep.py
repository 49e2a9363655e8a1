"""`taxnav eval --sweep`: one question per page (or every Nth page), built mechanically from the
page's title, asked through the API's embedded code path.

Nobody can tune to it: the questions are "What are the rules on <title>?" for pages taken in
section-id order (``--offset`` starts the every-Nth run elsewhere: a figure tuned on one slice
is confirmed on another). Every question is answerable from the manual, so every refusal (by
category, conflicts included) is a false one. Reported: refusals by category, the share
whose answer part cites the page itself (and the share citing it anywhere), answer and reply
words, latency, and the verdicts of every claim: each quotes or renders a page of the manual,
so a claim not marked supported is a rendering or a verifier defect, listed for reading. A
page the corpus gives no text (a contents list or flowchart published as an empty body) has
nothing to cite: it is still asked, but the own-page shares count only the pages with text,
and the pages without are counted apart.
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

from services.api import MemoryStore
from shared.config import Settings
from shared.contracts.api import QuestionResult, RefusalCategory, Sentence
from shared.contracts.corpus import section_of
from taxnav.evaluation.harness import api_answer, has_collection
from taxnav.evaluation.matching import reads_alone, word_count

QUESTION_TEMPLATE = "What are the rules on {title}?"


class SweepError(ValueError):
    """A sweep that cannot run (a bad --every or --offset, no collection to ask)."""


class SweepQuestion(BaseModel):
    section_id: str
    title: str
    question: str
    has_text: bool = True  # False: the page has no text to cite (an empty contents page)
    # other pages with the same title: the question asks about them in the very same words
    namesakes: list[str] = Field(default_factory=list)


class SweepOutcome(BaseModel):
    section_id: str
    question: str
    status: str
    has_text: bool = True
    namesakes: list[str] = Field(default_factory=list)
    refusal: RefusalCategory | None = None
    refusal_message: str = ""
    own_page_in_answer_part: bool = False
    own_page_cited: bool = False
    namesake_in_answer_part: bool = False  # the answer part cites the page or a page with its title
    # where the page stood (from 0) among the rolled-up candidates and the selected pages
    # (None: not there): a miss is a retrieval, a selection or a stitching one
    rollup_rank: int | None = None
    selection_rank: int | None = None
    answer_words: int = 0
    reply_words: int = 0
    verdicts: dict[str, int] = Field(default_factory=dict)  # the claims' verdicts, counted
    not_supported: list[Sentence] = Field(default_factory=list)  # the claims not marked supported
    fragments: list[str] = Field(default_factory=list)  # claims that cannot be read alone
    latency_ms: float


class SweepMetrics(BaseModel):
    questions: int
    every: int
    offset: int = 0
    refusals: int
    false_refusal_rate: float
    refusals_by_category: dict[str, int]
    pages_without_text: int = 0  # asked, but left out of the own-page shares: nothing on them to cite
    own_page_in_answer_part: float  # over the pages with text (a refusal does not cite its page)
    own_page_cited: float
    shared_titles: int = 0  # questions whose title other pages bear too
    title_page_in_answer_part: float = 0.0  # the page or one with the same title: the question cannot tell them apart
    answer_words_median: float  # over answered questions
    reply_words_median: float
    verdict_counts: dict[str, int] = Field(default_factory=dict)  # over every claim of every answer
    fragments: int = 0  # claims of every answer that cannot be read alone
    median_latency_ms: float
    p90_latency_ms: float


class SweepRun(BaseModel):
    manual: str
    generation: str
    metrics: SweepMetrics
    outcomes: list[SweepOutcome] = Field(default_factory=list)


def check_stride(every: int, offset: int) -> None:
    """A slice the sweep can take: every Nth page from the Kth, K below N."""
    if every < 1:
        raise SweepError(f"--every must be at least 1, got {every}")
    if not 0 <= offset < every:
        raise SweepError(f"--offset must be from 0 to --every - 1 ({every - 1}), got {offset}")


def _asked_title(title: str) -> str:
    """A title as the question spells it: entities decoded, spaces collapsed."""
    return " ".join(html.unescape(title).split())


def sweep_questions(titles: dict[str, str], every: int = 1, offset: int = 0, without_text: frozenset[str] = frozenset()) -> list[SweepQuestion]:
    """Every ``every``-th page in section-id order from the ``offset``-th, asked about by its
    title (entities decoded), with the other pages bearing that title (any case); the pages in
    ``without_text`` are marked as having nothing to cite."""
    check_stride(every, offset)
    asked = {sid: _asked_title(title) for sid, title in titles.items()}
    bearers: dict[str, list[str]] = {}
    for section_id in sorted(asked):
        bearers.setdefault(asked[section_id].casefold(), []).append(section_id)
    out = []
    for section_id in sorted(titles)[offset::every]:
        title = asked[section_id]
        out.append(
            SweepQuestion(
                section_id=section_id,
                title=title,
                question=QUESTION_TEMPLATE.format(title=title),
                has_text=section_id not in without_text,
                namesakes=[s for s in bearers[title.casefold()] if s != section_id],
            )
        )
    return out


def _cites(sentences: list[Sentence], *section_ids: str) -> bool:
    return any(section_of(c) in section_ids for s in sentences for c in s.citations)


def _rank(result: QuestionResult, stage: str, section_id: str) -> int | None:
    """The page's place (from 0) among a stage's candidate pages; None when it is not among them."""
    ids = next((t.candidate_ids for t in result.trace if t.stage == stage), [])
    return ids.index(section_id) if section_id in ids else None


def score_sweep(question: SweepQuestion, result: QuestionResult, latency_ms: float) -> SweepOutcome:
    sentences = result.answer.sentences if (result.status == "answered" and result.answer) else []
    answer_part = [s for s in sentences if s.role == "answer"]
    return SweepOutcome(
        section_id=question.section_id,
        question=question.question,
        status=result.status,
        has_text=question.has_text,
        namesakes=question.namesakes,
        refusal=result.refusal.category if result.refusal else None,
        refusal_message=result.refusal.message if result.refusal else "",
        own_page_in_answer_part=_cites(answer_part, question.section_id),
        own_page_cited=_cites(sentences, question.section_id),
        namesake_in_answer_part=_cites(answer_part, question.section_id, *question.namesakes),
        rollup_rank=_rank(result, "rollup", question.section_id),
        selection_rank=_rank(result, "selection", question.section_id),
        answer_words=sum(word_count(s.text) for s in answer_part),
        reply_words=sum(word_count(s.text) for s in sentences),
        verdicts=dict(sorted(Counter(s.verdict for s in sentences).items())),
        not_supported=[s for s in sentences if s.verdict != "supported"],
        fragments=[s.text for s in sentences if not reads_alone(s.text)],
        latency_ms=latency_ms,
    )


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def aggregate_sweep(outcomes: list[SweepOutcome], every: int, offset: int = 0) -> SweepMetrics:
    n = len(outcomes)
    refused = [o for o in outcomes if o.status == "refused"]
    answered = [o for o in outcomes if o.status == "answered"]
    citable = [o for o in outcomes if o.has_text]
    latencies = [o.latency_ms for o in outcomes]
    return SweepMetrics(
        questions=n,
        every=every,
        offset=offset,
        refusals=len(refused),
        false_refusal_rate=len(refused) / n if n else 0.0,
        refusals_by_category=dict(sorted(Counter(o.refusal for o in refused if o.refusal).items())),
        pages_without_text=n - len(citable),
        own_page_in_answer_part=sum(o.own_page_in_answer_part for o in citable) / len(citable) if citable else 0.0,
        own_page_cited=sum(o.own_page_cited for o in citable) / len(citable) if citable else 0.0,
        shared_titles=sum(bool(o.namesakes) for o in outcomes),
        title_page_in_answer_part=sum(o.namesake_in_answer_part for o in citable) / len(citable) if citable else 0.0,
        answer_words_median=statistics.median(o.answer_words for o in answered) if answered else 0.0,
        reply_words_median=statistics.median(o.reply_words for o in answered) if answered else 0.0,
        verdict_counts=dict(sorted(sum((Counter(o.verdicts) for o in outcomes), Counter()).items())),
        fragments=sum(len(o.fragments) for o in outcomes),
        median_latency_ms=statistics.median(latencies) if latencies else 0.0,
        p90_latency_ms=_quantile(latencies, 0.9),
    )


def run_sweep(settings: Settings, every: int = 1, offset: int = 0) -> SweepRun:
    """Ask the sweep's questions in this process, through the gateway's embedded path."""
    from shared.index import CorpusIndex  # noqa: PLC0415  (heavy: the index stack; `taxnav --help` stays quick)

    check_stride(every, offset)
    if not has_collection(settings):
        raise SweepError(f"no {settings.manual} collection under {settings.data_dir}; ingest one first")
    index = CorpusIndex.open(settings, settings.manual)
    without_text = frozenset(sid for sid, page in index.pages.items() if not page.chunk_ids)
    questions = sweep_questions({sid: page.title for sid, page in index.pages.items()}, every, offset, without_text)
    store = MemoryStore(max_questions=64)  # results are scored as they come; none is read twice
    if questions:  # warm the index and the models so the first timed question is not an outlier
        api_answer(questions[0].question, settings, store)
    outcomes = []
    for question in questions:
        started = time.perf_counter()
        result = api_answer(question.question, settings, store)
        outcomes.append(score_sweep(question, result, (time.perf_counter() - started) * 1000))
    return SweepRun(
        manual=settings.manual, generation=str(index.generation), metrics=aggregate_sweep(outcomes, every, offset), outcomes=outcomes
    )


def _place(rank: int | None) -> str:
    return "-" if rank is None else str(rank + 1)


def render_sweep_markdown(run: SweepRun) -> str:
    m = run.metrics
    stride = "page" if m.every == 1 else f"{m.every}th page" + (f" from the {m.offset + 1}th" if m.offset else "")
    lines = [
        f"# Sweep: {run.manual} (generation {run.generation})",
        "",
        f"{m.questions} questions, one per {stride} in section-id order, "
        f'each "{QUESTION_TEMPLATE.format(title="<page title>")}" through the embedded API path. Every one is '
        "answerable from the manual: every refusal is a false one. The own-page shares count the "
        f"{m.questions - m.pages_without_text} pages with text ({m.pages_without_text} have none to cite).",
        "",
        "| metric | value | target |",
        "|---|---|---|",
        f"| false refusals | {m.refusals} ({m.false_refusal_rate:.1%}) | <= 1% |",
        f"| false conflicts | {m.refusals_by_category.get('conflict', 0)} | 0 |",
        f"| own page in the answer part | {m.own_page_in_answer_part:.1%} | >= 95% |",
        f"| own page cited anywhere | {m.own_page_cited:.1%} | |",
        f"| own page or a page of the same title in the answer part ({m.shared_titles} titles shared) | {m.title_page_in_answer_part:.1%} | |",
        f"| answer words (median) | {m.answer_words_median:.0f} | <= 120 |",
        f"| reply words (median) | {m.reply_words_median:.0f} | <= 350 |",
        f"| claims by verdict | {', '.join(f'{v} {n}' for v, n in m.verdict_counts.items()) or 'none'} | all supported |",
        f"| claims that cannot be read alone | {m.fragments} | 0 |",
        f"| latency ms (median / p90) | {m.median_latency_ms:.1f} / {m.p90_latency_ms:.1f} | |",
        "",
        "## Refusals by category",
        "",
    ]
    lines += [f"- {cat}: {count}" for cat, count in m.refusals_by_category.items()] or ["None."]
    misses = [o for o in run.outcomes if o.has_text and not o.own_page_in_answer_part]
    lines += [
        "",
        f"## Questions whose answer part does not cite their page ({len(misses)})",
        "",
        "The page's place among the rolled-up candidates and among the selected pages ('-': not there).",
        "",
    ]
    lines += [
        f"- {o.section_id} (rollup {_place(o.rollup_rank)}, selection {_place(o.selection_rank)}): {o.question.replace('|', '/')} -> "
        + (f"refused {o.refusal}: {o.refusal_message}" if o.status == "refused" else f"answered ({o.answer_words} words)")
        for o in misses
    ] or ["None."]
    doubtful = [(o, c) for o in run.outcomes for c in o.not_supported]
    lines += [
        "",
        f"## Claims not marked supported ({len(doubtful)})",
        "",
        "Each claim quotes or renders a page, so each of these is a rendering or a verifier defect.",
        "",
    ]
    lines += [
        f"- {o.section_id}: {c.verdict} ({c.reason.replace('|', '/')}): {c.text.replace('|', '/')} [{', '.join(c.citations)}]" for o, c in doubtful
    ] or ["None."]
    return "\n".join(lines) + "\n"


def write_sweep(run: SweepRun, out_dir: Path) -> dict[str, Any]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = run.model_dump(mode="json")
    (out_dir / "sweep.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out_dir / "sweep.md").write_text(render_sweep_markdown(run), encoding="utf-8")
    return data
