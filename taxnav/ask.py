"""`taxnav ask "question" [--json]`: answer one question from the command line.

Embedded mode needs no server (stages run in this process); with TAXNAV_MODE=distributed it
goes through Redis and the stage workers. ``--json`` prints the same result JSON as
``POST /v1/questions``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from services.errors import PipelineError
from shared.cli_common import Exit
from shared.config import Settings
from shared.contracts.api import Citation, QuestionRequest, QuestionResult
from shared.generation import InvalidManualName, UnknownManual, ingested_manuals, listed, requested_manual

ROLE_HEADINGS = {"answer": "Answer", "detail": "Detail"}
RELEVANCE_MARKS = {"answering": ("(answers)", "bold"), "background": ("(background)", "dim")}
VERDICT_STYLES = {"supported": "green", "partially_supported": "yellow", "unsupported": "red", "contradicted": "bold red"}


Line = tuple[int, Text]  # (indent level, text)


def render(result: QuestionResult) -> list[Line]:
    """A reader's view: the answer, then its detail, each sentence with its source numbers and
    verdict, then the numbered sources; or the refusal with all its evidence."""
    if result.status == "refused" and result.refusal:
        refusal = result.refusal
        lines: list[Line] = [(0, Text.assemble(("Refused: ", "bold red"), (refusal.category, "bold"))), (0, Text(refusal.message))]
        evidence = refusal.evidence.model_dump(mode="json", exclude={"category"})
        if evidence:
            lines.append((0, Text("Evidence", style="bold")))
            lines.extend(_evidence(evidence, indent=1))
        return lines
    assert result.answer is not None
    number = {c.paragraph_id: n for n, c in enumerate(result.citations, start=1)}
    lines = []
    if result.answer.may_not_answer:  # said first: the reader should not take it as the answer
        lines.append((0, Text("This may not answer your question: the closest passages found, not a confirmed answer.", style="bold yellow")))
    for role, heading in ROLE_HEADINGS.items():
        sentences = [s for s in result.answer.sentences if s.role == role]
        if not sentences:
            continue
        lines.append((0, Text(heading, style="bold")))
        for s in sentences:
            markers = "".join(f"[{number.get(c, c)}]" for c in s.citations)
            verdict = (s.verdict.replace("_", " "), VERDICT_STYLES.get(s.verdict, ""))
            mark = RELEVANCE_MARKS.get(s.relevance or "")
            lines.append((1, Text.assemble(s.text, " ", (markers, "cyan"), " ", *((mark, " ") if mark else ()), verdict)))
    lines.append((0, Text(f"faithfulness {result.answer.faithfulness:.2f}", style="dim")))
    if result.answer.alternatives:
        # pages about another subject the question may mean: `--focus ID` answers from one
        lines.append((0, Text("The answer may be on one of these pages" if result.answer.may_not_answer else "Or did you mean", style="bold")))
        lines += [(1, Text.assemble(f"{a.section_id} {a.title} ", (f"(--focus {a.section_id})", "dim"))) for a in result.answer.alternatives]
    lines.append((0, Text("Sources", style="bold")))
    pages: dict[str, list[Citation]] = {}  # one line per page, with the numbers of its paragraphs
    for c in result.citations:
        pages.setdefault(c.section_id, []).append(c)
    for section_id, cited in pages.items():
        markers = "".join(f"[{number[c.paragraph_id]}]" for c in cited)
        page = cited[0]
        updated = f"(updated {page.public_updated_at:%Y-%m-%d}) "
        lines.append((1, Text.assemble((markers + " ", "cyan"), f"{section_id} {page.title} ", (updated, "dim"), page.url)))
    for r in result.routes:
        lines.append((0, Text(f"Routed to the {r.manual_title}: {r.part} -> " + ", ".join(p.section_id for p in r.pages))))
    return lines


def show(lines: list[Line], console: Console) -> None:
    """On a terminal, wrapped with hanging indents; in a pipe or file, one line per item."""
    for indent, text in lines:
        if console.is_terminal:
            console.print(Padding(text, (0, 0, 0, 2 * indent), expand=False))
        else:
            console.print(Text("  " * indent) + text, soft_wrap=True)


def _evidence(value: Any, indent: int) -> list[Line]:
    """Evidence of any shape, whole: scalars inline, lists and mappings one item a line."""
    lines: list[Line] = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        label = f"{key}:" if isinstance(value, dict) else "-"
        if isinstance(item, dict) and _is_page(item):
            lines.append((indent, Text(f"{label} {_page_line(item)}")))
        elif isinstance(item, (dict, list)) and item:
            lines.append((indent, Text(label)))
            lines.extend(_evidence(item, indent + 1))
        else:
            shown = json.dumps(item, default=str) if isinstance(item, (dict, list)) else item
            lines.append((indent, Text(f"{label} {shown}")))
    return lines


def _is_page(item: dict[str, Any]) -> bool:
    return "section_id" in item and all(not isinstance(v, (dict, list)) for v in item.values())


def _page_line(page: dict[str, Any]) -> str:
    """A page of the evidence on one line: id, title, date, link, then any other fields."""
    rest = {k: v for k, v in page.items() if k not in ("section_id", "title", "url", "public_updated_at", "manual")}
    date = str(page.get("public_updated_at") or "")[:10]
    words = [page["section_id"], str(page.get("title") or ""), f"(updated {date})" if date else "", str(page.get("url") or "")]
    words += [f"{k}={v}" for k, v in rest.items()]
    return " ".join(w for w in words if w)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from services.api import answer  # noqa: PLC0415  (heavy: the stages, Celery)
    from shared.index import CollectionNotFound, CorpusIndex, IndexMismatch  # noqa: PLC0415  (heavy, as above)

    if args.conversation:  # a conversation's turn: the handler `taxnav chat` registered (taxnav/chat.py)
        return args.conversation_turn(args, settings)
    try:  # read as the API reads `manual` (its 422 invalid_manual, 404 unknown_manual)
        manual = requested_manual(settings, args.manual)
    except InvalidManualName as exc:
        print(f"taxnav ask: invalid_manual: {exc}; ingested: {listed(ingested_manuals(settings))}", file=sys.stderr)
        return Exit.USAGE
    except UnknownManual as exc:
        print(f"taxnav ask: unknown_manual: {exc}", file=sys.stderr)
        return Exit.USAGE
    available = ingested_manuals(settings)
    if manual not in available:  # the configured manual, not ingested yet
        have = f"ingested here: {', '.join(available)}" if available else "none is ingested yet"
        print(f"taxnav ask: no index for manual {manual!r} in {settings.data_dir} ({have}); run `taxnav ingest` first", file=sys.stderr)
        return Exit.USAGE
    try:
        request = QuestionRequest(question=args.question, manual=manual, focus=args.focus)
    except ValidationError:
        print(f"taxnav ask: --focus {args.focus!r} is not a page id such as EIM31240", file=sys.stderr)
        return Exit.USAGE
    if args.focus and args.focus not in CorpusIndex.open(settings, manual).pages:
        print(f"taxnav ask: unknown_page: {args.focus} is not a page of {manual}", file=sys.stderr)
        return Exit.USAGE
    try:
        result = answer(request, settings)  # in this process or the Celery chain, per settings.mode
    except PipelineError as exc:
        print(f"taxnav ask: {exc.kind}: {exc}", file=sys.stderr)
        return Exit.ERROR
    except CollectionNotFound as exc:  # removed between the check above and the question
        print(f"taxnav ask: {exc}", file=sys.stderr)
        return Exit.USAGE
    except IndexMismatch as exc:  # asked with another embedder than the index was built with
        print(f"taxnav ask: {exc} (or set TAXNAV_MODELS__PROVIDER to the provider it was built with)", file=sys.stderr)
        return Exit.ERROR
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        show(render(result), Console(highlight=False))
    return Exit.REFUSED if result.status == "refused" else Exit.OK


def register(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "ask",
        parents=parents,
        help="answer one question (embedded by default)",
        description="Answer one question from the index in the data directory: the answer's sentences, each "
        "with its source numbers and verification verdict, then the detail and the sources; or a typed "
        "refusal with its evidence. Runs the pipeline in this process (TAXNAV_MODE=distributed: "
        "through Redis and the stage workers). Each run loads the index and the models first (about 3 s "
        "of CPU, most of it the manual's term statistics); to ask many questions, start `taxnav serve` "
        "once and ask it over HTTP (POST /v1/questions: 0.1-0.5 s a question) or use `taxnav chat`.",
        epilog=f"exit codes: {Exit.OK} answered, {Exit.REFUSED} refused (category and evidence printed), "
        f"{Exit.USAGE} usage error or no index for the manual, {Exit.ERROR} failed (model, Redis or timeout).",
    )
    parser.add_argument("question", help="the question, in quotes")
    parser.add_argument("--json", action="store_true", help="print the result JSON (as the API returns it)")
    parser.add_argument("--manual", default=None, help="an ingested manual's slug, any case (default: settings.manual, the EIM)")
    parser.add_argument("--conversation", default=None, metavar="ID", help="ask as the next turn of conversation ID ('new' starts one)")
    parser.add_argument("--condition", default=None, help="with --conversation: choose this option of the previous turn's conflict")
    parser.add_argument("--focus", default=None, metavar="PAGE", help="answer from this page first (one of an answer's 'Or did you mean' pages, e.g. EIM21690)")
    parser.set_defaults(func=run)
