"""`taxnav eval`: run an eval file through the pipeline and write report.json, report.md and a
chart; or, with --sweep, ask one question per page built from its title and write sweep.json
and sweep.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from services.errors import ProviderError
from shared.cli_common import Exit
from shared.config import Settings
from taxnav.evaluation.dialogs import run_cli as run_dialogs
from taxnav.evaluation.harness import VARIANTS, VariantError, run_eval
from taxnav.evaluation.report import write_report
from taxnav.evaluation.judge import JUDGES
from taxnav.evaluation.matching import REPLY_WINDOW_WORDS
from taxnav.evaluation.questions import QuestionsFileError, load_questions
from taxnav.evaluation.sweep import SweepError, run_sweep, write_sweep

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_QUESTIONS = REPO_ROOT.parent / "shared" / "eval" / "questions.jsonl"  # ../shared/eval
DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "corpus"  # ../shared/corpus


def register(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "eval",
        parents=parents,
        help="score the pipeline on an eval file (variants + Haystack peer)",
        description=__doc__,
    )
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS, help="eval JSONL file (default ../shared/eval/questions.jsonl)")
    parser.add_argument("--out", type=Path, required=True, help="directory for report.json, report.md, the chart")
    parser.add_argument(
        "--source",
        default=str(DEFAULT_SOURCE),
        help="where to ingest from when the data dir has no collection of the manual: corpus dir or "
        "Content API URL (default ../shared/corpus)",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=list(VARIANTS),
        default=None,
        help="settings variants to run (default: all; 'full' always runs, it is the headline)",
    )
    parser.add_argument(
        "--judge",
        choices=list(JUDGES),
        default=None,
        help="a second opinion on every claim of the headline variant from this model (needs its API key)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help='ask "What are the rules on <title>?" for every page (see --every) instead of the eval file',
    )
    parser.add_argument("--every", type=int, default=1, metavar="N", help="with --sweep: every Nth page (default 1)")
    parser.add_argument(
        "--offset", type=int, default=0, metavar="K", help="with --sweep: start at the Kth page from 0, below --every (default 0): another slice to confirm a figure on"
    )
    parser.add_argument(
        "--dialogs", type=Path, default=None, help="score a dialogs JSONL file turn by turn instead (taxnav/evaluation/dialogs.py)"
    )
    parser.set_defaults(func=run)


def run_sweep_command(args: argparse.Namespace, settings: Settings) -> int:
    try:
        sweep = run_sweep(settings, args.every, args.offset)
    except SweepError as exc:
        print(f"taxnav eval: {exc}", file=sys.stderr)
        return Exit.USAGE
    write_sweep(sweep, args.out)
    m = sweep.metrics
    print(
        f"sweep of {m.questions} pages (every {m.every}, offset {m.offset}): false refusals {m.refusals} ({m.false_refusal_rate:.1%}) "
        f"{m.refusals_by_category}, own page in the answer part {m.own_page_in_answer_part:.1%}, "
        f"answer words {m.answer_words_median:.0f} (reply {m.reply_words_median:.0f}), "
        f"median {m.median_latency_ms:.0f} ms; report in {args.out}"
    )
    return Exit.OK


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.dialogs is not None:
        return run_dialogs(args.dialogs, args.out, settings)
    if args.sweep and args.judge:
        print("taxnav eval: --judge applies to the eval file's answers, not to --sweep", file=sys.stderr)
        return Exit.USAGE
    if args.sweep:
        return run_sweep_command(args, settings)
    if args.every != 1 or args.offset != 0:
        print("taxnav eval: --every and --offset need --sweep", file=sys.stderr)
        return Exit.USAGE
    from ingest_worker.ingest import IngestError  # noqa: PLC0415  (heavy: the index stack; `taxnav --help` stays quick)

    try:
        questions = load_questions(args.questions)
        run_result = run_eval(
            questions, settings, args.variants, source=args.source, progress=sys.stderr.isatty(), judge=args.judge
        )
    except (QuestionsFileError, VariantError, FileNotFoundError, IngestError, ProviderError) as exc:
        print(f"taxnav eval: {exc}", file=sys.stderr)
        return Exit.USAGE
    report = write_report(run_result, args.out, questions_file=args.questions.name)
    print(
        f"{report['n_questions']} questions; strict {report['strict_correct']}/{report['n_questions']} "
        f"(answerable {report['answerable_ok']}/{report['answerable']}), refusal precision {report['refusal_precision']:.1%}, "
        f"lead facts {report['lead_facts']:.1%}, facts in {REPLY_WINDOW_WORDS} words {report['key_facts_in_reply_window']:.1%}, "
        f"claim precision {report['claim_precision']:.1%}, answer words {report['answer_words_median']:.0f} "
        f"(reply {report['reply_words_median']:.0f}); diagnostic verdict accuracy {report['diagnostics']['verdict_accuracy']:.1%}, "
        f"recall@12 ours {report['peer']['ours_recall_at_12']:.1%} vs peer {report['peer']['recall_at_12']:.1%}; "
        + (f"judge agreement {report['judge']['agreement']:.1%}; " if "judge" in report else "")
        + f"{len(report['failures'])} failing; report in {args.out}"
    )
    return 0
