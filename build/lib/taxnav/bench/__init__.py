"""`taxnav bench ingest|query|conversation|load|scale|screens`: benchmarks that print their figures and write them as JSON.

Each subcommand's module is imported only when it runs (the query benchmark pulls in the
question pipeline, the ingest one the embedder)."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

from shared.config import Settings
from taxnav.browser import CHROMIUM  # no playwright import: that waits until a page is driven


def register(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    bench = subparsers.add_parser("bench", help="run a benchmark (figures printed and written as JSON)")
    kinds = bench.add_subparsers(dest="bench_command", required=True)

    ingest = kinds.add_parser(  # no --data-dir: it always ingests into a fresh temporary one
        "ingest",
        help="full EIM ingest from a local replay server, then an unchanged and a 10-changed-pages re-ingest",
    )
    ingest.add_argument("--source", default="../shared/corpus", help="corpus directory to replay (default ../shared/corpus)")
    ingest.add_argument("--manual", default="employment-income-manual")
    ingest.add_argument("--out", default="reports/bench-ingest.json", help="where to write the JSON figures")
    ingest.add_argument("--changed", type=int, default=10, help="pages to change for the incremental run")
    ingest.add_argument("--keep", action="store_true", help="keep the temporary data dir (its path is printed)")
    ingest.set_defaults(func=_lazy("taxnav.bench.ingest", takes_settings=False))

    query = kinds.add_parser("query", parents=parents, help="question latency and throughput")
    query.add_argument("--out", default="reports/bench-query.json", help="where to write the JSON figures")
    query.add_argument("--questions", default="../shared/eval/questions.jsonl", help="questions file (JSONL)")
    query.add_argument("--clients", type=int, default=8, help="concurrent HTTP clients for the throughput run")
    query.add_argument("--rounds", type=int, default=2, help="passes over the questions for the latency figures")
    query.add_argument("--requests", type=int, default=None, help="requests in the throughput run (default 4 per question, >= 200)")
    query.set_defaults(func=_lazy("taxnav.bench.query"))

    conversation = kinds.add_parser("conversation", parents=parents, help="follow-up latency against first questions")
    conversation.add_argument("--out", default="reports/bench-conversation.json", help="where to write the JSON figures")
    conversation.add_argument("--dialogs", default="../shared/eval/dialogs.jsonl", help="dialogs file (JSONL)")
    conversation.add_argument("--rounds", type=int, default=3, help="passes over the dialogs")
    conversation.set_defaults(func=_lazy("taxnav.bench.conversation"))

    load = kinds.add_parser("load", parents=parents, help="the gateway under 1..128 closed-loop clients: q/s, p50/p95/p99, errors by type, RSS")
    load.add_argument("--out", default="reports/bench-load.json", help="where to write the JSON figures")
    load.add_argument("--questions", default="../shared/eval/questions.jsonl", help="questions file (JSONL)")
    load.add_argument("--mode", choices=["embedded", "distributed", "both"], default="both")
    load.add_argument("--clients", default="1,4,16,64,128", help="client counts, comma-separated")
    load.add_argument("--seconds", type=float, default=8.0, help="seconds per client count")
    load.set_defaults(func=_lazy("taxnav.bench.load"))

    scale = kinds.add_parser("scale", parents=parents, help="ingest 1x/3x/10x the manual (renamed copies) and measure index, RSS and query latency")
    scale.add_argument("--source", default="../shared/corpus", help="corpus directory (default ../shared/corpus)")
    scale.add_argument("--manual", default="employment-income-manual")
    scale.add_argument("--sizes", default="1,3,10", help="copies of the manual per run, comma-separated")
    scale.add_argument("--questions", default="../shared/eval/questions.jsonl", help="questions file (JSONL)")
    scale.add_argument("--limit-questions", type=int, default=20, help="questions asked at each size")
    scale.add_argument("--rounds", type=int, default=2, help="passes over the questions")
    scale.add_argument("--work-dir", default=None, help="where the corpora and data dirs go (default: the system temp dir)")
    scale.add_argument("--mode", choices=["embedded", "distributed", "both"], default="both", help="how each size is served")
    scale.add_argument("--keep", action="store_true", help="keep the work dir")
    scale.add_argument("--out", default="reports/bench-scale.json", help="where to write the JSON figures")
    scale.set_defaults(func=_lazy("taxnav.bench.scale"))

    screens = kinds.add_parser("screens", parents=parents, help="the page answering questions, photographed at desktop and phone width (PNGs and what each shows)")
    screens.add_argument("--question", action="append", required=True, help="a question to ask on the page (repeat for more)")
    screens.add_argument("--out", default="reports/screens", help="folder for the PNGs and screens.json")
    screens.add_argument("--chromium", default=str(CHROMIUM), help="the Chromium to drive (Debian's: make chromium)")
    screens.set_defaults(func=_lazy("taxnav.bench.screens"))


def _lazy(module: str, takes_settings: bool = True):  # noqa: ANN202
    def run(args: argparse.Namespace, settings: Settings) -> int:
        benchmark = importlib.import_module(module).run
        return int((benchmark(args, settings) if takes_settings else benchmark(args)) or 0)

    return run


def write_report(report: dict[str, Any], out: str | Path) -> Path:
    """A benchmark's figures as JSON at ``out`` (its folder made as needed)."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"written: {path}")
    return path
