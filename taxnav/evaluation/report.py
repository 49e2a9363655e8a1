"""Turn an EvalRun into report.json, report.md and recall_by_stage.png.

Everything but the fields ending in ``_ms`` (and the ingest summary, present only when the run
had to ingest) is a function of the data and the settings, so two runs compare line by line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from taxnav.evaluation.harness import COMPARISONS, HEADLINE_VARIANT, EvalRun
from taxnav.evaluation import scoring
from taxnav.evaluation.metrics import failure_reasons
from taxnav.evaluation.outcomes import CITATIONS_STAGE

# (report key, target, how the target reads, whether higher is better)
TARGETS: tuple[tuple[str, float, str, bool], ...] = (
    ("strict_accuracy", 44 / 50, ">= 44/50", True),
    ("refusal_precision", 1.0, "= 100%", True),
    ("lead_facts", 0.55, ">= 55%", True),
    ("key_facts_in_reply_window", 0.80, ">= 80%", True),
    ("claim_precision", 0.75, ">= 75%", True),
    ("answer_words_median", 120, "<= 120", False),
    ("reply_words_median", 350, "<= 350", False),
)
# The strict measures: what the reader gets.
HEADLINE_KEYS = (
    "strict_accuracy",
    "refusal_precision",
    "refusal_recall",
    "lead_facts",
    "key_facts_in_reply_window",
    "claim_precision",
    "first_sentence_fact",
    "answer_words_median",
    "reply_words_median",
)
# Figures to locate a failure: whether the lead's page or its sentence misses, then the earlier
# figures (any answer counts, any cited page counts).
DIAGNOSTIC_KEYS = (
    "lead_on_point",
    "lead_facts_when_on_point",
    "verdict_accuracy",
    "citation_gold_recall",
    "citation_gold_complete",
    "key_fact_coverage",
    "key_fact_coverage_answer_part",
    "groundedness",
    "mean_faithfulness",
    "claims_per_answer",
    "answer_claims_per_answer",
)
WORD_KEYS = ("answer_words_median", "reply_words_median")
CHART_NAME = "recall_by_stage.png"


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def build_report(run: EvalRun, questions_file: str) -> dict[str, Any]:
    headline = next(v for v in run.variants if v.name == HEADLINE_VARIANT)
    metrics = headline.metrics.model_dump()
    ours_recall = run.peer.ours.recall_at_k
    failures = [
        {"id": o.id, "reasons": reasons}
        for o in headline.outcomes
        if (reasons := failure_reasons(o, run.stages))
    ]
    targets = {
        key: {"target": t, "reads": reads, "value": metrics[key], "met": metrics[key] >= t if higher else metrics[key] <= t}
        for key, t, reads, higher in TARGETS
    }
    targets["recall_at_12_vs_peer"] = {
        "target": run.peer.peer.recall_at_k,
        "reads": ">= the peer's",
        "value": ours_recall,
        "met": ours_recall >= run.peer.peer.recall_at_k,
    }
    report: dict[str, Any] = {
        "manual": run.manual,
        "generation": run.generation,
        "questions_file": questions_file,
        "n_questions": len(run.questions),
        "answerable": sum(q.expect == "answer" for q in run.questions),
        "to_refuse": sum(q.expect == "refuse" for q in run.questions),
        "headline_variant": HEADLINE_VARIANT,
        "strict_correct": metrics["strict_correct"],
        "answerable_ok": metrics["answerable_ok"],
        "correct": metrics["correct"],
        **{key: metrics[key] for key in HEADLINE_KEYS},
        "diagnostics": {key: metrics[key] for key in DIAGNOSTIC_KEYS},
        "verdict_counts": metrics["verdict_counts"],
        "refusal_by_category": metrics["refusal_by_category"],
        "targets": targets,
        "stages": [*run.stages, CITATIONS_STAGE],
        "recall_by_stage": {v.name: v.metrics.recall_by_stage for v in run.variants},
        "variants": {
            v.name: {"overrides": v.overrides, "same_as": v.same_as, **v.metrics.model_dump()} for v in run.variants
        },
        "comparisons": [list(group) for group in COMPARISONS if all(any(v.name == n for v in run.variants) for n in group)],
        "peer": {
            "name": run.peer.peer.name,
            "top_k": run.peer.top_k,
            "documents": run.peer.documents,
            "recall_at_12": run.peer.peer.recall_at_k,
            "median_retrieval_ms": run.peer.peer.median_retrieval_ms,
            "ours_name": run.peer.ours.name,
            "ours_recall_at_12": ours_recall,
            "ours_median_retrieval_ms": run.peer.ours.median_retrieval_ms,
            "questions": [
                {"id": o.id, "ours_sections": o.sections, "ours_recall": o.recall, "ours_ms": o.retrieval_ms,
                 "peer_sections": p.sections, "peer_recall": p.recall, "peer_ms": p.retrieval_ms}
                for o, p in zip(run.peer.ours.questions, run.peer.peer.questions, strict=True)
            ],
        },
        "questions": [
            {**o.model_dump(), "failures": failure_reasons(o, run.stages)} for o in headline.outcomes
        ],
        "failures": failures,
        "definitions": scoring.__doc__,
    }
    if run.ingested is not None:
        report["ingest"] = run.ingested
    if run.judge is not None:
        report["judge"] = run.judge.model_dump()
    return _round(report)


# ---------------------------------------------------------------- markdown


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def render_markdown(report: dict[str, Any]) -> str:
    stages = report["stages"]
    lines = [
        f"# Eval report: {report['manual']} (generation {report['generation']})",
        "",
        f"{report['n_questions']} questions from `{report['questions_file']}` "
        f"({report['answerable']} to answer, {report['to_refuse']} to refuse); headline variant "
        f"`{report['headline_variant']}`.",
        "",
        "## Headline (strict)",
        "",
        "| metric | value | target | met |",
        "|---|---|---|---|",
    ]
    targets = report["targets"]
    for key in HEADLINE_KEYS:
        t = targets.get(key)
        value = f"{report[key]:.0f}" if key in WORD_KEYS else _pct(report[key])
        if key == "strict_accuracy":
            value += f" ({report['strict_correct']}/{report['n_questions']}; answerable {report['answerable_ok']}/{report['answerable']})"
        lines.append(
            f"| {key} | {value} | "
            f"{t['reads'] if t else ''} | {('yes' if t['met'] else 'NO') if t else ''} |"
        )
    vs_peer = targets["recall_at_12_vs_peer"]
    lines.append(
        f"| recall@12 (retrieval) vs peer | {_pct(vs_peer['value'])} vs {_pct(vs_peer['target'])} | "
        f"{vs_peer['reads']} | {'yes' if vs_peer['met'] else 'NO'} |"
    )
    lines += ["", "Diagnostics (the earlier, looser figures):", "", "| metric | value |", "|---|---|"]
    for key, v in report["diagnostics"].items():
        value = f"{v:.2f}" if key.endswith("claims_per_answer") else _pct(v)
        if key == "verdict_accuracy":
            value += f" ({report['correct']}/{report['n_questions']})"
        lines.append(f"| {key} | {value} |")
    counts = ", ".join(f"{k}: {v}" for k, v in report["verdict_counts"].items()) or "none"
    lines += ["", f"Verifier verdicts over all claims: {counts}.", ""]

    if "judge" in report:
        j = report["judge"]
        lines += [
            f"## Second-opinion judge ({j['judge']})",
            "",
            f"Over {j['claims']} claims of the headline variant: correct {_pct(j['correct'])}, grounded in the cited "
            f"paragraph {_pct(j['grounded'])}; agrees with the verifier (supported = grounded) on {_pct(j['agreement'])}.",
            "",
        ]
    lines += ["## Variants (diagnostic)", ""]
    header = ["variant", "overrides", "strict", "lead facts", "claim P", "answer words", "verdict acc", "refusal P", "refusal R"]
    header += [f"recall {s}" for s in stages]
    header += ["key facts", "grounded", "faithfulness", "claims/answer", "median ms"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, v in report["variants"].items():
        overrides = ", ".join(f"{k}={v2}" for k, v2 in v["overrides"].items()) or "defaults"
        if v["same_as"]:
            overrides += f" (same settings as {v['same_as']})"
        row = [
            f"`{name}`", overrides, _pct(v["strict_accuracy"]), _pct(v["lead_facts"]), _pct(v["claim_precision"]),
            f"{v['answer_words_median']:.0f}", _pct(v["verdict_accuracy"]), _pct(v["refusal_precision"]), _pct(v["refusal_recall"]),
        ]
        row += [_pct(v["recall_by_stage"].get(s)) for s in stages]
        row += [
            _pct(v["key_fact_coverage"]),
            _pct(v["groundedness"]),
            _pct(v["mean_faithfulness"]),
            f"{v['claims_per_answer']:.2f}",
            _ms(v["median_latency_ms"]),
        ]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for group in report["comparisons"]:
        parts = [
            f"`{n}` citations {_pct(report['variants'][n]['citation_gold_recall'])}, "
            f"retrieval {_pct(report['variants'][n]['recall_by_stage'].get(stages[0]))}, "
            f"key facts {_pct(report['variants'][n]['key_fact_coverage'])}"
            for n in group
        ]
        lines.append("- " + " vs ".join(parts))
    lines += ["", f"![gold-section recall by stage]({CHART_NAME})", ""]

    peer = report["peer"]
    lines += [
        "## Peer (same chunks, same embeddings, same process)",
        "",
        "| system | recall@12 | median retrieval ms |",
        "|---|---|---|",
        f"| {peer['ours_name']} | {_pct(peer['ours_recall_at_12'])} | "
        f"{_ms(peer['ours_median_retrieval_ms'])} |",
        f"| {peer['name']} | {_pct(peer['recall_at_12'])} | {_ms(peer['median_retrieval_ms'])} |",
        "",
        f"Both over the same {peer['documents']} chunks (same text, same stored vectors), each query embedded by our "
        "embedder inside the timed call, measured question by question in one loop after the variants ran.",
        "",
    ]

    lines += ["## Refusals by category", "", "| category | expected | refused | correct | precision | recall |", "|---|---|---|---|---|---|"]
    for cat, c in report["refusal_by_category"].items():
        lines.append(f"| {cat} | {c['expected']} | {c['refused']} | {c['correct']} | {_pct(c['precision'])} | {_pct(c['recall'])} |")
    lines.append("")

    lines += ["## Failing questions", ""]
    if not report["failures"]:
        lines.append("None.")
    for f in report["failures"]:
        lines.append(f"- **{f['id']}**: " + "; ".join(_cell(r) for r in f["reasons"]))
    lines.append("")

    lines += [
        "## Per question",
        "",
        "| id | question | expected | actual | strict ok | lead facts | words (answer/reply) | latency ms | claims (citation: verdict) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for q in report["questions"]:
        expected = q["expect"] if q["expect"] == "answer" else f"refuse: {q['expected_refusal']}"
        actual = "answer" if q["status"] == "answered" else f"refuse: {q['refusal']}"
        claims = "<br>".join(
            f"{n}. {'(detail) ' if c['role'] == 'detail' else ''}{_cell(c['text'])} [{', '.join(c['citations'])}: {c['verdict']}"
            f"{'' if c['grounded'] else '; NOT grounded: ' + ', '.join(c['missing'])}]"
            for n, c in enumerate(q["claims"], start=1)
        ) or _cell(q["refusal_message"])
        lines.append(
            f"| {q['id']} | {_cell(q['question'])} | {expected} | {actual} | {'yes' if q['strict_correct'] else 'NO'} | "
            f"{len(q['lead_facts'])}/{len(q['key_facts_found']) + len(q['key_facts_missing'])} | "
            f"{q['answer_words']}/{q['reply_words']} | {_ms(q['latency_ms'])} | {claims} |"
        )
    lines += ["", "## Definitions", "", report["definitions"].strip(), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- chart


def render_chart(report: dict[str, Any], path: Path) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    stages = report["stages"]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for name, recall in report["recall_by_stage"].items():
        same_as = report["variants"][name]["same_as"]
        ax.plot(
            stages,
            [recall.get(s, 0.0) for s in stages],
            marker="o",
            linestyle="--" if same_as else "-",
            label=f"{name} (= {same_as})" if same_as else name,
        )
    ax.plot([stages[0]], [report["peer"]["recall_at_12"]], marker="*", markersize=14, linestyle="none", color="black", label="haystack peer @12")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("gold-section recall")
    ax.set_title("Gold-section recall by stage")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})  # no version stamp: same data, same bytes
    plt.close(fig)


def write_report(run: EvalRun, out_dir: Path, questions_file: str) -> dict[str, Any]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = build_report(run, questions_file)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out_dir / "report.md").write_text(render_markdown(report), encoding="utf-8")
    render_chart(report, out_dir / CHART_NAME)
    return report
