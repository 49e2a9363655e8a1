"""`taxnav bench conversation`: what reading a question with its conversation costs.

Every dialog of the file is asked turn by turn through the conversation store, as
``POST /v1/conversations/{id}/questions`` runs it in embedded mode (turn read with the
earlier turns, scope guard, stages, the turn stored), ``--rounds`` times after a warm-up.
First turns and follow-ups are timed apart; the target is follow-up p50 <= first p50 + 20 ms.
Conversations are written to a temporary directory (the data directory is only read).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from services.api import FileStore, ask  # this module is loaded only when its benchmark runs
from services.api import MemoryStore
from shared.config import Settings
from shared.contracts.conversation import ConversationQuestion
from taxnav.bench import write_report
from taxnav.bench.common import summary
from taxnav.evaluation.dialogs import load_dialogs

TARGET_EXTRA_MS = 20.0


def run(args: argparse.Namespace, settings: Settings) -> int:
    dialogs = load_dialogs(Path(args.dialogs))
    with tempfile.TemporaryDirectory(prefix="taxnav-bench-conversations-") as folder:
        settings = settings.model_copy(deep=True)
        settings.mode = "embedded"
        settings.conversations.dir = Path(folder)
        store, questions = FileStore(settings), MemoryStore()

        def one_pass(timed: dict[str, list[float]] | None) -> None:
            for dialog in dialogs:
                cid = store.create().id
                for number, turn in enumerate(dialog.turns, start=1):
                    started = time.perf_counter()
                    ask(store, cid, ConversationQuestion(question=turn.question), settings, questions)
                    if timed is not None:
                        timed["first" if number == 1 else "follow_up"].append((time.perf_counter() - started) * 1000)

        one_pass(None)  # warm-up: the index, the embedder, the stages' lazy loads
        timed: dict[str, list[float]] = {"first": [], "follow_up": []}
        for _ in range(args.rounds):
            one_pass(timed)
    first, follow = summary(timed["first"]), summary(timed["follow_up"])
    report = {
        "dialogs_file": Path(args.dialogs).name,
        "rounds": args.rounds,
        "first_turn_ms": first,
        "follow_up_ms": follow,
        "follow_up_p50_minus_first_p50_ms": follow["p50"] - first["p50"],
        "target": f"follow-up p50 <= first p50 + {TARGET_EXTRA_MS:.0f} ms",
        "target_met": follow["p50"] <= first["p50"] + TARGET_EXTRA_MS,
    }
    print(f"first turns ({len(timed['first'])}): p50 {first['p50']:.1f} ms, p95 {first['p95']:.1f} ms")
    print(f"follow-ups ({len(timed['follow_up'])}): p50 {follow['p50']:.1f} ms, p95 {follow['p95']:.1f} ms")
    print(f"follow-up p50 - first p50: {report['follow_up_p50_minus_first_p50_ms']:+.1f} ms (target <= +{TARGET_EXTRA_MS:.0f}: {'met' if report['target_met'] else 'NOT met'})")
    write_report(report, args.out)
    return 0
