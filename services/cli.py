"""`taxnav ask "question" [--json]`: answer one question from the command line.

Embedded mode needs no server (stages run in this process); with TAXNAV_MODE=distributed it
goes through Redis and the stage workers. ``--json`` prints the same result JSON as
``POST /v1/questions``.
"""

from __future__ import annotations

import argparse
import json
import sys

from shared.contracts.api import QuestionRequest, QuestionResult


def render(result: QuestionResult) -> str:
    """A reader's view: cited sentences with verdicts, or the refusal card."""
    lines: list[str] = []
    if result.status == "refused" and result.refusal:
        lines.append(f"REFUSED ({result.refusal.category}): {result.refusal.message}")
        for key, value in result.refusal.evidence.model_dump(mode="json", exclude={"category"}).items():
            lines.append(f"  {key}: {json.dumps(value, default=str)[:300]}")
        return "\n".join(lines)
    assert result.answer is not None
    for s in result.answer.sentences:
        lines.append(f"- {s.text} [{', '.join(s.citations)}] ({s.verdict})")
    lines.append(f"faithfulness: {result.answer.faithfulness:.2f}")
    lines.append("sources:")
    for c in result.citations:
        lines.append(f"  [{c.paragraph_id}] {c.title} - {c.url}")
    for r in result.routes:
        lines.append(f"routed to the {r.manual_title}: {r.part} -> " + ", ".join(p.section_id for p in r.pages))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from shared.config import get_settings  # noqa: PLC0415  (after --data-dir reached the env)
    from shared.index import CollectionNotFound  # noqa: PLC0415

    if args.conversation:
        from taxnav.chat import run_ask  # noqa: PLC0415

        return run_ask(args)
    settings = get_settings()
    request = QuestionRequest(question=args.question, manual=args.manual)
    try:
        if settings.mode == "distributed":
            from services.dispatch import answer_distributed  # noqa: PLC0415

            result = answer_distributed(request, settings)
        else:
            from services.pipeline import answer_question  # noqa: PLC0415

            result = answer_question(request, settings)
    except CollectionNotFound as exc:
        print(f"taxnav ask: {exc}", file=sys.stderr)
        return 2
    print(result.model_dump_json(indent=2) if args.json else render(result))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from taxnav.cli import common_options  # noqa: PLC0415

    parser = subparsers.add_parser("ask", parents=[common_options()], help="answer one question (embedded by default)")
    parser.add_argument("question", help="the question, in quotes")
    parser.add_argument("--json", action="store_true", help="print the result JSON (as the API returns it)")
    parser.add_argument("--manual", default=None, help="manual slug (default: settings.manual)")
    parser.add_argument("--conversation", default=None, metavar="ID", help="ask as the next turn of conversation ID ('new' starts one)")
    parser.add_argument("--condition", default=None, help="with --conversation: choose this option of the previous turn's conflict")
    parser.set_defaults(func=run)
