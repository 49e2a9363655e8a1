"""`taxnav bench ingest`: ingest throughput and incremental re-ingest, from a local server.

Starts the replay server over the corpus directory, then runs three ingests of the manual as
separate `taxnav ingest` processes (so each one's peak RSS is its own) into a fresh temporary
data dir with an empty embedding cache:

1. full: everything crawled over HTTP, parsed, embedded and indexed;
2. unchanged: the same manual again (nothing to re-parse or re-embed);
3. changed: ``--changed`` pages modified through the replay server first.

Prints the figures against the targets and writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from taxnav.bench import write_report
from taxnav.replay_server import ReplayServer

TARGETS = {"full_wall_s": 360.0, "unchanged_wall_s": 15.0, "changed_wall_s": 10.0, "peak_rss_mb": 2048.0}


def _ingest(data_dir: Path, source: str, manual: str) -> dict[str, Any]:
    """One `taxnav ingest --json` child process: its summary, wall time and peak RSS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAXNAV_")}  # the bench's own settings only
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "taxnav.cli", "ingest", "--data-dir", str(data_dir), "--source", source, "--manual", manual, "--json"],
        stdout=subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"taxnav ingest exited {child.returncode}")
    summary = json.loads(output)
    return {
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux reports KiB
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "pages": summary["pages"],
        "chunks": summary["chunks"],
        "chunks_per_s": round(summary["chunks"] / wall, 2),
        "reparsed": summary["reparsed"],
        "reembedded": summary["reembedded"],
        "model_embedded": summary["model_embedded"],
        "changed_pages": len(summary["changed_pages"]),
        "xref_edges": summary["xref_edges"],
        "sibling_edges": summary["sibling_edges"],
    }


def _pages_to_change(corpus: Path, manual: str, count: int) -> list[str]:
    """``count`` pages with a body, spread evenly over the manual (deterministic)."""
    with_body = []
    for path in sorted((corpus / manual).glob("*.json")):
        if path.name == "_manual.json":
            continue
        document = json.loads(path.read_text(encoding="utf-8"))
        if (document.get("details") or {}).get("body"):
            with_body.append(document["details"]["section_id"])
    step = max(1, len(with_body) // max(1, count))
    return with_body[::step][:count]


def run(args: argparse.Namespace) -> int:
    corpus = Path(args.source)
    if not (corpus / args.manual / "_manual.json").is_file():
        print(f"taxnav bench ingest: no {args.manual} in {corpus}", file=sys.stderr)
        return 2
    data_dir = Path(tempfile.mkdtemp(prefix="taxnav-bench-ingest-"))
    results: dict[str, Any] = {
        "benchmark": "ingest",
        "manual": args.manual,
        "started_at": datetime.now(UTC).isoformat(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg_at_start": os.getloadavg()},
        "targets": TARGETS,
    }
    try:
        with ReplayServer(corpus) as server:
            print(f"replay server {server.base_url}; data dir {data_dir}", file=sys.stderr)
            print("1/3 full ingest (empty embedding cache) ...", file=sys.stderr)
            results["full"] = _ingest(data_dir, server.base_url, args.manual)
            print("2/3 unchanged re-ingest ...", file=sys.stderr)
            results["unchanged"] = _ingest(data_dir, server.base_url, args.manual)
            changed = _pages_to_change(corpus, args.manual, args.changed)
            for section in changed:
                server.modify(args.manual, section, lambda doc, s=section: doc["details"].update(body=doc["details"]["body"] + f"<p>Benchmark change to {s}.</p>"))
            print(f"3/3 re-ingest with {len(changed)} changed pages ...", file=sys.stderr)
            results["changed"] = _ingest(data_dir, server.base_url, args.manual)
            results["changed"]["pages_modified"] = changed
    finally:
        if args.keep:
            print(f"kept {data_dir}", file=sys.stderr)
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    peak = max(results[k]["peak_rss_mb"] for k in ("full", "unchanged", "changed"))
    results["checks"] = {
        "full_wall_s": results["full"]["wall_s"] <= TARGETS["full_wall_s"],
        "unchanged_wall_s": results["unchanged"]["wall_s"] <= TARGETS["unchanged_wall_s"],
        "changed_wall_s": results["changed"]["wall_s"] <= TARGETS["changed_wall_s"],
        "peak_rss_mb": peak <= TARGETS["peak_rss_mb"],
    }
    results["load_avg_at_end"] = os.getloadavg()
    print(_table(results))
    write_report(results, args.out)
    return 0


def _table(results: dict[str, Any]) -> str:
    rows = [f"{'run':<10} {'wall s':>8} {'target':>7} {'pages':>6} {'chunks':>7} {'chunks/s':>9} {'re-embedded':>12} {'peak RSS MB':>12}"]
    for name, target in (("full", "full_wall_s"), ("unchanged", "unchanged_wall_s"), ("changed", "changed_wall_s")):
        r = results[name]
        mark = "ok" if results["checks"][target] else "MISS"
        rows.append(
            f"{name:<10} {r['wall_s']:>8.1f} {TARGETS[target]:>5.0f}{mark:>3} {r['pages']:>6} {r['chunks']:>7} {r['chunks_per_s']:>9.1f}"
            f" {r['reembedded']:>12} {r['peak_rss_mb']:>12.0f}"
        )
    rows.append(f"peak RSS target {TARGETS['peak_rss_mb']:.0f} MB: {'ok' if results['checks']['peak_rss_mb'] else 'MISS'}")
    rows.append(f"load average at start {results['machine']['load_avg_at_start'][0]:.1f}, at end {results['load_avg_at_end'][0]:.1f} ({results['machine']['cpus']} cpus)")
    return "\n".join(rows)
