"""`taxnav chat`: one conversation in the terminal, a question per line of stdin; and
`taxnav ask --conversation ID|new`: one turn of a stored conversation.

Each line is a turn: follow-ups are read with the turns before them (services/conversations/reading.py).
After a conflict refusal, `/choose N` picks its option N; `/new` starts a new conversation.
Conversations are stored where the gateway keeps them (the data directory in embedded mode,
Redis in distributed mode), so `taxnav ask --conversation ID` and the page (`/?c=ID`) reopen them.
"""

from __future__ import annotations

import argparse
import sys
from io import StringIO
from typing import TextIO

from rich.console import Console

from taxnav.ask import render, show
from services.errors import PipelineError
from services.api import make_store
from shared.cli_common import Exit
from shared.config import Settings
from shared.contracts.conversation import ConversationQuestion

NEW = "new"


def render_turn(turn) -> str:  # noqa: ANN001  (a TurnResult)
    from services.api import conflict_options  # noqa: PLC0415  (heavy: the pipeline)

    head = f"[turn {turn.turn}, {turn.follow_up.kind.replace('_', ' ')}]"
    body = StringIO()  # the ask command's plain rendering (no terminal: no colours, one item a line)
    show(render(turn), Console(file=body, highlight=False, no_color=True, width=10_000))
    lines = [head, body.getvalue().rstrip("\n")]
    for number, option in enumerate(conflict_options(turn), start=1):
        lines.append(f"  /choose {number}: {option.condition} -> {option.value} [{option.paragraph_id}]")
    return "\n".join(lines)


def stores(settings: Settings):  # noqa: ANN201  (the conversation store and the question store)
    from services.api import make_conversation_store  # noqa: PLC0415  (heavy: the pipeline)

    return make_conversation_store(settings), make_store(settings)


def ask_turn(settings: Settings, conversations, questions, conversation_id: str, question: str, condition: str | None = None, manual: str | None = None):  # noqa: ANN001, ANN201  (the two stores of ``stores``)
    from services.api import ask  # noqa: PLC0415  (heavy: the pipeline)

    if conversation_id == NEW:
        conversation_id = conversations.create().id
    request = ConversationQuestion(question=question, condition=condition, manual=manual)
    return ask(conversations, conversation_id, request, settings, questions)


def chat(lines: TextIO, out: TextIO, settings: Settings, manual: str | None = None) -> int:
    from services.api import conflict_options  # noqa: PLC0415  (heavy: the pipeline)

    conversations, questions = stores(settings)  # once for the whole conversation, not per turn
    cid = conversations.create().id
    print(f"conversation {cid} (one question per line; /choose N after a conflict; /new; Ctrl-D ends)", file=out)
    last = None
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line == "/new":
            cid, last = conversations.create().id, None
            print(f"conversation {cid}", file=out)
            continue
        condition = None
        if line.startswith("/choose"):
            options = conflict_options(last) if last is not None else []
            choice = line.removeprefix("/choose").strip()
            if not choice.isdigit() or not 1 <= int(choice) <= len(options):
                print(f"no option {choice or '?'}: the last turn offers {len(options)}", file=out)
                continue
            condition = options[int(choice) - 1].condition
            line = condition
        try:
            last = ask_turn(settings, conversations, questions, cid, line, condition, manual)
        except PipelineError as exc:
            print(f"error ({exc.kind}): {exc}", file=out)
            continue
        print(render_turn(last), file=out, flush=True)
    print(f"conversation {cid}: reopen it with `taxnav ask --conversation {cid} \"...\"` or /?c={cid}", file=out)
    return 0


def run_chat(args: argparse.Namespace, settings: Settings) -> int:
    return chat(sys.stdin, sys.stdout, settings, args.manual)


def run_ask(args: argparse.Namespace, settings: Settings) -> int:
    """`taxnav ask --conversation ID|new "question"` (taxnav/ask.py hands over here)."""
    from shared.index import CollectionNotFound  # noqa: PLC0415  (heavy: the index stack)

    try:
        turn = ask_turn(settings, *stores(settings), args.conversation, args.question, args.condition, args.manual)
    except (PipelineError, CollectionNotFound) as exc:
        print(f"taxnav ask: {exc}", file=sys.stderr)
        return Exit.USAGE
    print(turn.model_dump_json(indent=2) if args.json else render_turn(turn) + f"\n(conversation {turn.conversation_id})")
    return Exit.OK


def register(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("chat", parents=parents, help="one conversation in the terminal (stdin lines)")
    parser.add_argument("--manual", default=None, help="manual slug (default: settings.manual)")
    parser.set_defaults(func=run_chat)
    # `taxnav ask --conversation` runs a turn here (taxnav/ask.py cannot import this module).
    subparsers.choices["ask"].set_defaults(conversation_turn=run_ask)
