"""`taxnav ingest`: crawl manuals into the data dir (progress on stderr, summary on stdout)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from shared.cli_common import Exit
from shared.config import Settings
from shared.contracts.ingest_runs import RunStart


def register(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "ingest",
        parents=parents,
        help="crawl HMRC manuals into indexes and the cross-reference graph",
        description="Crawl manuals from the GOV.UK Content API (or a directory laid out like it) into a new "
        "index generation and swap it in atomically. Re-runs are incremental. Progress goes to stderr, one "
        "phase at a time (crawl, parse, embed, index): a live bar on a terminal, plain lines in a pipe or log; "
        "the summary goes to stdout.",
        epilog="examples:\n"
        "  taxnav ingest --source ../shared/corpus                      the EIM from a local corpus copy\n"
        "  taxnav ingest --source ../shared/corpus/business-income-manual   one manual's own folder\n"
        "  taxnav ingest --source ../shared/corpus --manual all         every manual in the folder\n"
        "exit codes: 0 done, 1 a manual failed (its error on stderr), 2 usage error (bad --source, unknown --manual)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--manual",
        action="append",
        default=None,
        help="manual slug, repeatable, or 'all' (every manual in a --source directory); default: settings.ingest.manuals",
    )
    parser.add_argument(
        "--source",
        default=None,
        help="https base URL, a directory like ../shared/corpus, or one manual's folder in it (default: settings.ingest.source)",
    )
    parser.add_argument("--limit", type=int, default=None, help="ingest only the first N sections (quick runs)")
    parser.add_argument("--force", action="store_true", help="let a --limit run replace a whole serving index")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress on stderr (a bar on a terminal, plain lines otherwise)")
    parser.add_argument("--schedule", action="store_true", help="run the scheduled re-ingest (Celery worker with beat) in the foreground")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    # Deferred, heavy: the index, embedding and Celery stacks (`taxnav --help` stays quick).
    import redis  # noqa: PLC0415

    from ingest_worker.ingest import IngestError  # noqa: PLC0415
    from ingest_worker.runs import recorded_ingest  # noqa: PLC0415
    from ingest_worker.tasks import locked_recorded_ingest, serve_schedule  # noqa: PLC0415
    from shared.embeddings import EmbeddingError  # noqa: PLC0415
    from shared.stores import uses_servers  # noqa: PLC0415
    from shared.stores.bm25 import Bm25Error  # noqa: PLC0415
    from shared.stores.vectors import VectorStoreError  # noqa: PLC0415

    expected = (IngestError, EmbeddingError, Bm25Error, VectorStoreError, ValidationError, OSError)

    if args.schedule:
        return serve_schedule(settings)
    if args.limit is not None and args.limit < 1:
        print("taxnav ingest: --limit must be at least 1", file=sys.stderr)
        return Exit.USAGE
    try:
        source, manuals = resolve_source(args.source or settings.ingest.source, args.manual, list(settings.ingest.manuals))
    except SourceError as exc:
        print(f"taxnav ingest: {exc}", file=sys.stderr)
        return Exit.USAGE
    summaries = []
    status = Exit.OK
    # Shared OpenSearch/Qdrant servers may be written from several machines: take the
    # manual's Redis lock as scheduled runs do (the data dir's file lock is always taken).
    ingest = locked_recorded_ingest if uses_servers(settings) else recorded_ingest
    for manual in manuals:
        start = RunStart(manual=manual, source=source, trigger="cli")
        try:  # every run, ok, failed or refused, lands in <data_dir>/ingest_runs.jsonl
            run, summary = ingest(settings, start, limit=args.limit, force=args.force, progress=not args.no_progress and not args.json)
        except (*expected, redis.exceptions.RedisError) as exc:
            print(f"taxnav ingest: {manual}: {exc}", file=sys.stderr)
            status = Exit.ERROR
            continue
        if summary is None:
            print(f"taxnav ingest: {manual}: {run.message}", file=sys.stderr)
            status = Exit.ERROR
            continue
        summaries.append(summary)
        if not args.json:
            print(_describe(summary))
    if args.json:
        payload = [s.model_dump(mode="json") for s in summaries]
        print(json.dumps(payload[0] if len(payload) == 1 else payload, indent=1))
    return status


class SourceError(ValueError):
    """--source and --manual do not name manuals that exist."""


def resolve_source(source: str, asked: list[str] | None, default: list[str]) -> tuple[str, list[str]]:
    """The corpus root and the manuals to ingest. ``source`` may be the root (a folder of
    manuals) or one manual's own folder (it holds ``_manual.json``: its parent is the root).
    In a directory, every manual asked for must be there: the error lists the ones that are."""
    from ingest_worker.crawler import DirSource, is_url  # noqa: PLC0415  (httpx, lxml: `taxnav ask` starts without them)

    folder = Path(source)
    if is_url(source):  # a server's manuals cannot be listed: one missing fails as a run
        return source, default if asked is None else list(asked)
    if not folder.is_dir():  # a usage error, as --help says: nothing to start a run on
        raise SourceError(f"--source {source} is neither an http(s) URL nor a directory")
    if (folder / "_manual.json").is_file():  # one manual's folder
        own = folder.resolve().name
        if asked is not None and set(asked) - {own, "all"}:
            raise SourceError(f"--source {source} holds only the manual {own}; --manual asks for {', '.join(asked)}")
        return str(folder.resolve().parent), [own]
    available = DirSource(folder).manuals()
    if not available:
        raise SourceError(f"no manuals at {source} (a manual's folder holds _manual.json)")
    manuals = default if asked is None else list(asked)
    if "all" in manuals:
        return source, available
    unknown = [m for m in manuals if m not in available]
    if unknown:
        raise SourceError(f"no manual {', '.join(unknown)} at {source}; manuals there: {', '.join(available)} (or --manual all)")
    return source, manuals


def _describe(summary) -> str:  # noqa: ANN001 (IngestSummary; imported lazily)
    problems = []
    for name in ("gone", "failed", "malformed", "blocked"):
        items = getattr(summary, name)
        if items:
            problems.append(f"{len(items)} {name} ({', '.join(items[:5])}{', ...' if len(items) > 5 else ''})")
    lines = [
        f"{summary.manual}: generation {summary.generation} serving",
        f"  pages {summary.pages}  chunks {summary.chunks}  xref edges {summary.xref_edges}  sibling edges {summary.sibling_edges}",
        f"  changed {len(summary.changed_pages)}  removed {summary.removed}  reparsed {summary.reparsed}"
        f"  re-embedded {summary.reembedded} (model ran on {summary.model_embedded})  {summary.seconds:.1f}s",
    ]
    if problems:
        lines.append("  problems: " + "; ".join(problems))
    return "\n".join(lines)
