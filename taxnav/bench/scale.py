"""`taxnav bench scale`: how cost grows with the corpus, embedded and distributed.

At each size (default 1x, 3x, 10x the EIM) a synthetic corpus is laid out like the Content
API: the manual itself plus renamed copies of every page (``EIM31240`` -> ``EIM31240X2``: ids,
paths, breadcrumbs and children renamed; titles and bodies unchanged, so the embedding cache
serves the copies and the benchmark measures the index, not the embedder). Each is ingested for
real into a data directory of its own, then served by a real gateway (embedded; distributed:
with a real Celery worker per stage queue over Redis) and asked the questions one at a time.
Reported per size: pages, chunks, ingest seconds, index bytes, gateway (and workers') RSS after
the questions, query p50/p95 over HTTP. Writes JSON (default reports/bench-scale.json).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from ingest_worker.ingest import run_ingest
from services.api import WorkerPool, purge
from shared.config import Settings
from shared.embeddings import base_embedder
from shared.generation import serving_path
from taxnav.bench import write_report
from taxnav.bench.common import WARMUP_TIMEOUT_S, load_questions, machine, percentiles, rss_mb, warm_gateway

TARGETS = {"p50_at_10x_over_p50_at_1x": 2.0, "rss_growth_over_index_growth": 1.0}


def renamed(value: Any, copy: int, manual: str) -> Any:
    """A page document with every page id and path of ``manual`` given the copy's suffix."""
    if isinstance(value, list):
        return [renamed(v, copy, manual) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key == "section_id" and isinstance(item, str) and item:
            out[key] = f"{item}X{copy}"
        elif key == "base_path" and isinstance(item, str) and item.rstrip("/").split("/")[-2:-1] == [manual]:
            out[key] = f"{item.rstrip('/')}x{copy}"
        else:
            out[key] = renamed(item, copy, manual)
    return out


def scaled_corpus(source: Path, manual: str, copies: int, dest: Path) -> Path:
    """``source``'s manual and ``copies - 1`` renamed copies of it, as one manual under ``dest``."""
    origin, target = source / manual, dest / manual
    target.mkdir(parents=True)
    root = json.loads((origin / "_manual.json").read_text(encoding="utf-8"))
    groups = root["details"]["child_section_groups"]
    root["details"]["child_section_groups"] = groups + [g for k in range(2, copies + 1) for g in renamed(groups, k, manual)]
    (target / "_manual.json").write_text(json.dumps(root), encoding="utf-8")
    for page in origin.glob("*.json"):
        if page.name == "_manual.json":
            continue
        (target / page.name).symlink_to(page.resolve())
        if copies > 1:
            document = json.loads(page.read_text(encoding="utf-8"))
            for k in range(2, copies + 1):
                (target / f"{page.stem}x{k}.json").write_text(json.dumps(renamed(document, k, manual)), encoding="utf-8")
    return dest


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def modes(args: argparse.Namespace) -> list[str]:
    return ["embedded", "distributed"] if args.mode == "both" else [args.mode]


def serve_and_ask(mode: str, env: dict[str, str], settings: Settings, questions: list[str], rounds: int) -> dict:
    """A real gateway on the data dir (distributed: with one real Celery worker per stage queue,
    over Redis, under a key prefix of its own, reading the on-disk index as the workers of
    the fault suite do), asked the questions one at a time: query p50/p95 over HTTP and RSS."""
    env = env | {"TAXNAV_MODE": mode}
    workers: WorkerPool | None = None
    distributed = settings.model_copy(deep=True)
    if mode == "distributed":
        prefix = f"bench-scale-{uuid.uuid4().hex[:8]}:"
        backend = "local" if settings.stores.backend == "auto" else settings.stores.backend
        env |= {"TAXNAV_STORES__BACKEND": backend, "TAXNAV_CELERY__KEY_PREFIX": prefix, "TAXNAV_REDIS_URL": settings.redis_url}
        distributed.celery.key_prefix = prefix
        workers = WorkerPool(env)
        workers.start_all()
    latencies: list[float] = []
    try:
        with warm_gateway(env["TAXNAV_DATA_DIR"], env, questions) as (base_url, server), httpx.Client(base_url=base_url, timeout=WARMUP_TIMEOUT_S) as http:
            for _ in range(rounds):
                for question in questions:
                    t = time.perf_counter()
                    response = http.post("/v1/questions", json={"question": question})
                    response.raise_for_status()
                    latencies.append((time.perf_counter() - t) * 1000)
            figures: dict[str, Any] = {"gateway_rss_mb": rss_mb(server.pid)}
            if workers is not None:
                figures["workers_rss_mb"] = round(sum(rss_mb(p.pid) for p in workers.processes.values()), 1)
    finally:
        if workers is not None:
            workers.stop()
            purge(distributed)
    figures["query_ms"] = {**percentiles(latencies, 50, 95), "n": len(latencies)}
    return figures


def measure_size(copies: int, args: argparse.Namespace, settings: Settings, work: Path, questions: list[str]) -> dict:
    corpus = scaled_corpus(Path(args.source), args.manual, copies, work / f"corpus-{copies}x")
    data_dir = work / f"data-{copies}x"
    sized = settings.model_copy(deep=True)
    sized.data_dir = data_dir
    sized.mode = "embedded"
    sized.ingest.embedding_cache_dir = work / "embeddings"
    started = time.perf_counter()
    summary = run_ingest(sized, str(corpus), args.manual)
    ingest_s = time.perf_counter() - started
    shutil.rmtree(corpus)
    index_bytes = directory_bytes(serving_path(sized, args.manual))

    env = {"TAXNAV_DATA_DIR": str(data_dir), "TAXNAV_INGEST__EMBEDDING_CACHE_DIR": str(work / "embeddings")}
    served = {mode: serve_and_ask(mode, env, sized, questions, args.rounds) for mode in modes(args)}
    row = {
        "copies": copies,
        "pages": summary.pages,
        "chunks": summary.chunks,
        "ingest_s": round(ingest_s, 1),
        "model_embedded": summary.model_embedded,
        "index_mb": round(index_bytes / 2**20, 1),
    }
    # Embedded figures stay at the row's top level (as before the distributed run existed).
    row |= served.pop("embedded", {})
    if "distributed" in served:
        row["distributed"] = served["distributed"]
    for mode, figures in ({"embedded": row} | served).items():
        if "query_ms" in figures:
            workers = f"  workers RSS {figures['workers_rss_mb']:7.1f} MB" if "workers_rss_mb" in figures else ""
            print(
                f"{copies:>3}x {mode:<11} pages {row['pages']:>6}  chunks {row['chunks']:>6}  ingest {row['ingest_s']:7.1f} s"
                f"  index {row['index_mb']:7.1f} MB  gateway RSS {figures['gateway_rss_mb']:7.1f} MB{workers}"
                f"  query p50 {figures['query_ms']['p50']:6.1f} ms  p95 {figures['query_ms']['p95']:6.1f} ms"
            )
    if not args.keep:
        shutil.rmtree(data_dir)
    return row


def growth(small: dict, large: dict, small_copies: int, large_copies: int) -> dict:
    """How query latency and memory (gateway, plus workers when there are) grew between two sizes."""
    memory = [sum(f.get(k, 0.0) for k in ("gateway_rss_mb", "workers_rss_mb")) for f in (small, large)]
    return {
        f"p50_at_{large_copies}x_over_p50_at_{small_copies}x": round(large["query_ms"]["p50"] / small["query_ms"]["p50"], 2),
        "rss_growth": round(memory[1] / memory[0], 2),
    }


def run(args: argparse.Namespace, settings: Settings) -> int:
    questions = load_questions(args.questions)[: args.limit_questions]
    sizes = [int(n) for n in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="taxnav-scale-", dir=args.work_dir))
    cache = Path(settings.ingest.embedding_cache_dir or Path(settings.data_dir) / "embeddings")
    if cache.is_dir():  # a copy: the source data directory stays untouched
        shutil.copytree(cache, work / "embeddings")
    report: dict = {
        "machine": machine(),
        "questions": len(questions),
        "rounds": args.rounds,
        "targets": TARGETS,
        "sizes": [],
    }
    if settings.models.provider == "local":
        base_embedder(settings).embed(["warm up"])  # load the model once, outside the first size's ingest time
    try:
        for copies in sizes:
            report["sizes"].append(measure_size(copies, args, settings, work, questions))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept: {work}")
    rows = {row["copies"]: row for row in report["sizes"]}
    smallest, largest = rows[min(rows)], rows[max(rows)]
    if smallest is not largest:
        report["verdicts"] = {"index_growth": round(largest["index_mb"] / smallest["index_mb"], 2)}
        for mode, small, large in (("embedded", smallest, largest), ("distributed", smallest.get("distributed"), largest.get("distributed"))):
            if small and large and "query_ms" in small and "query_ms" in large:
                report["verdicts"][mode] = growth(small, large, smallest["copies"], largest["copies"])
        report["verdicts"] |= report["verdicts"].pop("embedded", {})  # embedded verdicts at the top, as before
        print(report["verdicts"])
    write_report(report, args.out)
    return 0

