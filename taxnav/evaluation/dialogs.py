"""`taxnav eval --dialogs FILE`: multi-turn conversations scored turn by turn.

Each turn is asked in its conversation, the way ``POST /v1/conversations/{id}/questions``
asks it (a conversation store of the eval's own, services/conversations/store.py; embedded
dispatch with an in-process question store), and scored with the strict definitions of
taxnav/evaluation/scoring.py. First turns and follow-ups are reported apart; every follow-up is also asked
WITHOUT its conversation, the baseline that shows what the conversation adds.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from services.api import MemoryStore
from services.text.figures import checkable_facts
from shared.config import Settings
from shared.contracts.conversation import ConversationQuestion, FollowUpInfo
from taxnav.evaluation.harness import api_answer
from taxnav.evaluation.matching import FactsFn
from taxnav.evaluation.outcomes import QuestionOutcome
from taxnav.evaluation.questions import EvalQuestion, QuestionsFileError, read_jsonl
from taxnav.evaluation.scoring import score_result


class Dialog(BaseModel):
    id: str = Field(min_length=1)
    topic: str = ""
    turns: list[EvalQuestion] = Field(min_length=1)


def _turn_ids(raw: Any, number: int) -> Any:
    """A turn without an id gets ``<dialog id>.<turn number>``."""
    for i, turn in enumerate(raw.get("turns", []) if isinstance(raw, dict) else [], start=1):
        if isinstance(turn, dict):
            turn.setdefault("id", f"{raw.get('id', number)}.{i}")
    return raw


def load_dialogs(path: Path) -> list[Dialog]:
    return read_jsonl(path, Dialog, "dialogs", _turn_ids)


class TurnOutcome(BaseModel):
    dialog: str
    turn: int
    follow_up: FollowUpInfo
    outcome: QuestionOutcome  # asked in its conversation
    alone: QuestionOutcome | None = None  # a follow-up asked without its conversation (the baseline)


def ask_dialog(dialog: Dialog, settings: Settings, facts: FactsFn, store: Any, conversations: Any, baseline: bool = True) -> list[TurnOutcome]:
    """The dialog's turns asked in one conversation of ``conversations`` (a ConversationStore)
    as the API asks them, each scored; with ``baseline``, each follow-up also asked alone."""
    conversation_id = conversations.create().id
    outcomes = []
    for number, question in enumerate(dialog.turns, start=1):
        request = ConversationQuestion(question=question.question, manual=settings.manual)
        started = time.perf_counter()
        turn = conversations.finish(conversation_id, conversations.start(conversation_id, request, settings, store), store)
        latency_ms = (time.perf_counter() - started) * 1000
        alone = None
        if baseline and number > 1:
            started = time.perf_counter()
            alone_result = api_answer(question.question, settings, store)
            alone = score_result(question, alone_result, (time.perf_counter() - started) * 1000, facts)
        outcomes.append(
            TurnOutcome(dialog=dialog.id, turn=number, follow_up=turn.follow_up, outcome=score_result(question, turn, latency_ms, facts), alone=alone)
        )
    return outcomes


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def summarise(turns: list[TurnOutcome]) -> dict[str, Any]:
    first = [t.outcome for t in turns if t.turn == 1]
    follow = [t for t in turns if t.turn > 1]
    refused = [t.outcome for t in follow if t.outcome.expect == "refuse"]
    alone = [t.alone for t in follow if t.alone is not None]

    def p50(outcomes: list[QuestionOutcome]) -> float | None:
        return statistics.median(o.latency_ms for o in outcomes) if outcomes else None

    return {
        "turns": len(turns),
        "first_turns": {"n": len(first), "strict_correct": sum(o.strict_correct for o in first), "share": _share(sum(o.strict_correct for o in first), len(first))},
        "follow_ups": {
            "n": len(follow),
            "strict_correct": sum(t.outcome.strict_correct for t in follow),
            "share": _share(sum(t.outcome.strict_correct for t in follow), len(follow)),
            "answerable": sum(t.outcome.expect == "answer" for t in follow),
            "answerable_ok": sum(t.outcome.answer_ok for t in follow),
            "read_as_follow_up": sum(t.follow_up.kind == "follow_up" for t in follow),
        },
        "refused_follow_ups": {
            "n": len(refused),
            "right_category": sum(o.refusal == o.expected_refusal for o in refused),
            "share": _share(sum(o.refusal == o.expected_refusal for o in refused), len(refused)),
        },
        "baseline_follow_ups_alone": {
            "n": len(alone),
            "strict_correct": sum(o.strict_correct for o in alone),
            "share": _share(sum(o.strict_correct for o in alone), len(alone)),
        },
        "latency_ms": {"first_p50": p50(first), "follow_up_p50": p50([t.outcome for t in follow])},
    }


def run_dialogs(dialogs: list[Dialog], settings: Settings, baseline: bool = True) -> dict[str, Any]:

    from services.api import FileStore  # noqa: PLC0415  (heavy: the pipeline and the index; `taxnav --help` stays quick)

    store = MemoryStore()
    with tempfile.TemporaryDirectory(prefix="taxnav-eval-conversations-") as folder:
        # the conversations are the eval's own: never written into the data directory
        settings = settings.model_copy(deep=True, update={"mode": "embedded"})
        settings.conversations.dir = Path(folder)
        api_answer(dialogs[0].turns[0].question, settings, store)  # warm: the first timed turn is not an outlier
        conversations = FileStore(settings)
        turns = [t for dialog in dialogs for t in ask_dialog(dialog, settings, checkable_facts, store, conversations, baseline)]
    return {"summary": summarise(turns), "turns": [t.model_dump(mode="json") for t in turns]}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def render_markdown(report: dict[str, Any], source: str) -> str:
    s = report["summary"]
    lines = [
        f"# Dialog eval: {source}",
        "",
        "Strict: answered, a gold (or also_ok) page cited by an answer-part claim, and at least half the key "
        "facts within the reply's first 350 words; a turn to refuse is right when refused with its category.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| first turns strictly correct | {s['first_turns']['strict_correct']}/{s['first_turns']['n']} ({_pct(s['first_turns']['share'])}) |",
        f"| follow-ups strictly correct | {s['follow_ups']['strict_correct']}/{s['follow_ups']['n']} ({_pct(s['follow_ups']['share'])}) |",
        f"| refused follow-ups, right category | {s['refused_follow_ups']['right_category']}/{s['refused_follow_ups']['n']} ({_pct(s['refused_follow_ups']['share'])}) |",
        f"| baseline: follow-ups asked alone | {s['baseline_follow_ups_alone']['strict_correct']}/{s['baseline_follow_ups_alone']['n']} ({_pct(s['baseline_follow_ups_alone']['share'])}) |",
        f"| follow-ups read as follow-ups | {s['follow_ups']['read_as_follow_up']}/{s['follow_ups']['n']} |",
        f"| latency p50 first / follow-up (ms) | {s['latency_ms']['first_p50'] or 0:.0f} / {s['latency_ms']['follow_up_p50'] or 0:.0f} |",
        "",
        "| turn | kind | expect | got | strict | alone | question |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in report["turns"]:
        o, alone = t["outcome"], t["alone"]
        got = o["status"] if o["status"] == "answered" else f"refused {o['refusal']}"
        lines.append(
            f"| {t['dialog']}.{t['turn']} | {t['follow_up']['kind']} | {o['expect']} | {got} | {'yes' if o['strict_correct'] else 'no'} "
            f"| {'' if alone is None else ('yes' if alone['strict_correct'] else 'no')} | {o['question'].replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"


def write_dialog_report(dialogs_file: Path, settings: Settings, out_dir: Path, baseline: bool = True) -> dict[str, Any]:
    report = run_dialogs(load_dialogs(dialogs_file), settings, baseline)
    report["dialogs_file"] = dialogs_file.name
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "dialogs.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    (out_dir / "dialogs.md").write_text(render_markdown(report, dialogs_file.name), encoding="utf-8")
    return report


def run_cli(dialogs_file: Path, out_dir: Path, settings: Settings) -> int:
    """`taxnav eval --dialogs FILE --out DIR`: dialogs.json and dialogs.md in DIR."""
    from shared.index import CollectionNotFound  # noqa: PLC0415  (heavy: the index stack)

    try:
        report = write_dialog_report(dialogs_file, settings, out_dir)
    except (QuestionsFileError, CollectionNotFound) as exc:
        print(f"taxnav eval: {exc}", file=sys.stderr)
        return 2
    s = report["summary"]
    print(
        f"{s['turns']} turns; first turns {s['first_turns']['strict_correct']}/{s['first_turns']['n']}, "
        f"follow-ups {s['follow_ups']['strict_correct']}/{s['follow_ups']['n']} strictly correct "
        f"(alone, without the conversation: {s['baseline_follow_ups_alone']['strict_correct']}/{s['baseline_follow_ups_alone']['n']}), "
        f"refused follow-ups right category {s['refused_follow_ups']['right_category']}/{s['refused_follow_ups']['n']}; "
        f"latency p50 first {s['latency_ms']['first_p50'] or 0:.0f} ms, follow-up {s['latency_ms']['follow_up_p50'] or 0:.0f} ms; "
        f"report in {out_dir}"
    )
    return 0
