"""`taxnav bench load`: the gateway under closed-loop load over real HTTP, embedded and
distributed, at 1/4/16/64/128 clients.

Each level runs for a fixed time: every client asks a question, waits for the reply, asks the
next. Reported per level: answered questions per second, latency p50/p95/p99 of the admitted
(200) replies, replies by status and error type (503 ``overloaded`` is admission control
shedding load, with Retry-After, which the clients honour), the latency of a scope-guard refusal asked on the side while
the level runs (it must not wait behind the pipeline), and the resident memory of the
gateway (and, distributed, of the workers). Writes the table as JSON (default
reports/bench-load.json) and prints it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import threading
import time
import uuid
from collections import Counter
from multiprocessing.connection import Connection
from concurrent.futures import ThreadPoolExecutor

import httpx

from services.api import WorkerPool, purge
from shared.config import Settings
from taxnav.bench import write_report
from taxnav.bench.common import child_pids, load_questions, machine, percentiles, rss_mb, warm_gateway

LEVELS = (1, 4, 16, 64, 128)
REFUSAL = "What's the VAT registration threshold for my small business?"  # out_of_scope at the scope guard
TARGETS = {"p95_at_128_over_p95_at_16": 2.0, "refusal_ms_while_full": 100, "5xx_other_than_overloaded": 0}


def probe_refusals(base_url: str, seconds: float, timeout_s: float, results: Connection) -> None:
    """A scope-guard refusal every 0.25 s for ``seconds``, from a process of its own; sends
    "ready" once up, then the latencies (ms) of the refusals answered."""
    latencies: list[float] = []
    with httpx.Client(base_url=base_url, timeout=timeout_s) as http:
        results.send("ready")
        stop_at = time.perf_counter() + seconds
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            response = http.post("/v1/questions", json={"question": REFUSAL})
            if response.status_code == 200:
                latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(0.25)
    results.send(latencies)


def run_level(base_url: str, questions: list[str], clients: int, seconds: float, timeout_s: float) -> dict:
    """``clients`` closed-loop clients for ``seconds``; a refusal asked on the side every 0.25 s."""
    admitted: list[float] = []
    outcomes: Counter[str] = Counter()
    shed: list[float] = []  # latency of the 503s that shed load
    lock = threading.Lock()

    # One client shared by every thread, made before the clock starts: making one per thread
    # (an SSL context each) costs the load generator seconds of CPU at 128 clients.
    # Idle connections are dropped before uvicorn's 5 s keep-alive would close them under a request.
    limits = httpx.Limits(max_connections=clients + 1, max_keepalive_connections=clients + 1, keepalive_expiry=2.0)
    shared = httpx.Client(base_url=base_url, timeout=timeout_s, limits=limits)

    def client(worker: int) -> None:
        n = worker
        while time.perf_counter() < stop_at:
            question = questions[n % len(questions)]
            n += clients
            started = time.perf_counter()
            try:
                response = shared.post("/v1/questions", json={"question": question})
            except httpx.HTTPError as exc:
                with lock:
                    outcomes[f"client:{type(exc).__name__}"] += 1
                continue
            ms = (time.perf_counter() - started) * 1000
            with lock:
                if response.status_code == 200:
                    admitted.append(ms)
                    outcomes["200"] += 1
                    continue
                kind = response.json().get("error", {}).get("type", "?") if "json" in response.headers.get("content-type", "") else "?"
                retry = "+retry-after" if "retry-after" in response.headers else ""
                outcomes[f"{response.status_code}:{kind}{retry}"] += 1
            if retry:  # shed: a client honours Retry-After, as the contract asks
                with lock:
                    shed.append(ms)
                time.sleep(float(response.headers["retry-after"]))

    # The refusals are asked from a process of their own: from a thread of this one they would
    # also time this process's GIL, shared with up to 128 client threads.
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    side = context.Process(target=probe_refusals, args=(base_url, seconds, timeout_s, sender), daemon=True)
    side.start()
    receiver.recv()  # the prober is up (interpreter started, client made): start the clock
    started = time.perf_counter()
    stop_at = started + seconds
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    refusals = receiver.recv() if receiver.poll(timeout_s) else []
    side.join(timeout_s)
    elapsed = time.perf_counter() - started
    shared.close()
    return {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "answered_per_s": round(len(admitted) / elapsed, 2),
        "latency_ms": percentiles(admitted, 50, 95, 99),
        "replies": dict(sorted(outcomes.items())),
        "refusal_ms": {**percentiles(refusals, 50, 95), "max": round(max(refusals, default=0.0), 1), "n": len(refusals)},
        "shed_ms": {**percentiles(shed, 50, 95), "n": len(shed)},
    }


def run_mode(mode: str, settings: Settings, questions: list[str], levels: tuple[int, ...], seconds: float) -> dict:
    data_dir = str(settings.data_dir)
    env = {"TAXNAV_MODE": mode, "TAXNAV_DATA_DIR": data_dir}
    workers: WorkerPool | None = None
    distributed = settings.model_copy(deep=True)
    if mode == "distributed":
        backend = "local" if settings.stores.backend == "auto" else settings.stores.backend
        prefix = f"bench-load-{uuid.uuid4().hex[:8]}:"
        env |= {"TAXNAV_STORES__BACKEND": backend, "TAXNAV_CELERY__KEY_PREFIX": prefix}
        distributed.celery.key_prefix = prefix
        workers = WorkerPool(env)
        workers.start_all()
    rows = []
    try:
        with warm_gateway(data_dir, env, questions) as (base_url, server):
            timeout_s = settings.gateway.wait_timeout_s + 30
            for clients in levels:
                row = run_level(base_url, questions, clients, seconds, timeout_s)
                row["gateway_rss_mb"] = rss_mb(server.pid)
                # Distributed: the Celery workers; embedded: the gateway's worker processes, if any.
                worker_pids = [p.pid for p in workers.processes.values()] if workers is not None else child_pids(server.pid)
                if worker_pids:
                    row["workers_rss_mb"] = round(sum(rss_mb(pid) for pid in worker_pids), 1)
                rows.append(row)
                print_row(mode, row)
    finally:
        if workers is not None:
            workers.stop()
            purge(distributed)
    gateway = settings.gateway
    return {"levels": rows, "max_in_flight": gateway.max_in_flight, "embedded_threads": gateway.embedded_threads, "embedded_processes": gateway.embedded_processes}


def verdicts(rows: list[dict]) -> dict:
    by_clients = {row["clients"]: row for row in rows}
    out: dict = {}
    if 16 in by_clients and 128 in by_clients and by_clients[16]["latency_ms"]["p95"]:
        out["p95_at_128_over_p95_at_16"] = round(by_clients[128]["latency_ms"]["p95"] / by_clients[16]["latency_ms"]["p95"], 2)
    out["refusal_ms_max"] = max((row["refusal_ms"]["max"] for row in rows), default=0.0)
    out["refusal_ms_p95_worst_level"] = max((row["refusal_ms"]["p95"] for row in rows), default=0.0)
    out["5xx_other_than_overloaded"] = sum(
        n for row in rows for reply, n in row["replies"].items() if reply[:1] == "5" and not reply.startswith("503:overloaded")
    )
    out["client_errors"] = sum(n for row in rows for reply, n in row["replies"].items() if reply.startswith("client:"))
    return out


def print_row(mode: str, row: dict) -> None:
    latency = row["latency_ms"]
    memory = f"gateway {row['gateway_rss_mb']:.0f} MB" + (f", workers {row['workers_rss_mb']:.0f} MB" if "workers_rss_mb" in row else "")
    print(
        f"{mode:<11} {row['clients']:>4} clients  {row['answered_per_s']:6.1f} q/s  p50 {latency['p50']:7.1f}  p95 {latency['p95']:7.1f}  "
        f"p99 {latency['p99']:7.1f} ms  refusal p50/p95/max {row['refusal_ms']['p50']:.0f}/{row['refusal_ms']['p95']:.0f}/{row['refusal_ms']['max']:.0f} ms  503 p95 {row['shed_ms']['p95']:6.1f} ms  {memory}  {row['replies']}"
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    questions = load_questions(args.questions)
    levels = tuple(int(n) for n in args.clients.split(","))
    report: dict = {
        "machine": machine(),
        "seconds_per_level": args.seconds,
        "questions": len(questions),
        "targets": TARGETS,
    }
    modes = ["embedded", "distributed"] if args.mode == "both" else [args.mode]
    for mode in modes:
        report[mode] = run_mode(mode, settings, questions, levels, args.seconds)
        report[mode]["verdicts"] = verdicts(report[mode]["levels"])
        print(f"{mode}: {report[mode]['verdicts']}")
    write_report(report, args.out)
    return 0
