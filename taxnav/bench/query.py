"""`taxnav bench query`: question latency (per stage and end to end, p50/p95), embedded and
distributed, and throughput with concurrent clients through the HTTP gateway.

Distributed mode starts its own Celery workers (one per stage queue) and gateway against
the Redis at settings.redis_url, under a fresh key prefix so nothing else's workers take
its tasks. Prints the figures and writes them as JSON.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import httpx

from services.api import answer
from services.api import MemoryStore, RedisStore
from services.api import WorkerPool, purge
from shared.config import Settings
from shared.contracts.api import QuestionRequest
from taxnav.bench import write_report
from taxnav.bench.common import WARMUP_QUESTIONS, WARMUP_TIMEOUT_S, load_questions, machine, summary, warm_gateway

TARGETS = {"embedded_p50_ms": 150, "embedded_p95_ms": 400, "distributed_overhead_p50_ms": 30, "distributed_qps": 15}


def measure_latency(questions: list[str], settings: Settings, store_factory, rounds: int) -> dict:  # noqa: ANN001
    """Each question answered one at a time: end-to-end ms, and each stage's ms from the trace."""
    total: list[float] = []
    piped: list[float] = []  # questions that went past the scope guard
    outside: list[float] = []  # their time outside the stages: dispatch, transport, waiting
    stages: dict[str, list[float]] = defaultdict(list)
    outcomes: dict[str, int] = defaultdict(int)
    for _ in range(rounds):
        for question in questions:
            started = time.perf_counter()
            result = answer(QuestionRequest(question=question), settings, store_factory())
            ms = (time.perf_counter() - started) * 1000
            total.append(ms)
            if result.trace:
                piped.append(ms)
                outside.append(ms - sum(trace.ms for trace in result.trace))
            for trace in result.trace:
                stages[trace.stage].append(trace.ms)
            outcomes[result.refusal.category if result.refusal else "answered"] += 1
    return {
        "end_to_end_ms": summary(total),
        "end_to_end_past_scope_guard_ms": summary(piped),
        "outside_stages_ms": summary(outside),
        "stage_ms": {name: summary(values) for name, values in stages.items()},
        "outcomes": dict(outcomes),
    }


def warm_up(questions: list[str], settings: Settings, store_factory) -> None:  # noqa: ANN001
    patient = settings.model_copy(update={"gateway": settings.gateway.model_copy(update={"wait_timeout_s": WARMUP_TIMEOUT_S})})
    for question in questions[:WARMUP_QUESTIONS]:
        answer(QuestionRequest(question=question), patient, store_factory())


def measure_throughput(base_url: str, questions: list[str], clients: int, requests: int) -> dict:
    """``clients`` threads POST questions (round robin over the file) until ``requests`` are done."""
    latencies: list[float] = []
    statuses: dict[int, int] = defaultdict(int)

    def client(worker: int) -> None:
        with httpx.Client(base_url=base_url, timeout=120) as http:
            for n in range(worker, requests, clients):
                started = time.perf_counter()
                response = http.post("/v1/questions", json={"question": questions[n % len(questions)]})
                latencies.append((time.perf_counter() - started) * 1000)
                statuses[response.status_code] += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    seconds = time.perf_counter() - started
    return {
        "clients": clients,
        "requests": requests,
        "seconds": round(seconds, 2),
        "questions_per_s": round(requests / seconds, 2),
        "latency_ms": summary(latencies),
        "http_statuses": {str(k): v for k, v in statuses.items()},
    }


def gateway_throughput(env: dict[str, str], data_dir: str, questions: list[str], clients: int, requests: int) -> dict:
    with warm_gateway(data_dir, env, questions) as (base_url, _):
        return measure_throughput(base_url, questions, clients, requests)


def run(args: argparse.Namespace, settings: Settings) -> int:
    questions = load_questions(args.questions)
    clients, rounds = args.clients, args.rounds
    requests = args.requests or max(200, len(questions) * 4)
    data_dir = str(settings.data_dir)
    report: dict = {
        "machine": machine(),
        "questions": len(questions),
        "rounds": rounds,
        "targets": TARGETS,
    }

    embedded = settings.model_copy(update={"mode": "embedded"})
    warm_up(questions, embedded, MemoryStore)
    report["embedded"] = measure_latency(questions, embedded, MemoryStore, rounds)
    print_latency("embedded", report["embedded"])

    # Distributed mode reads the same stores as the embedded run did (on-disk unless servers
    # are configured explicitly), so the difference between the two is the Celery path.
    backend = "local" if settings.stores.backend == "auto" else settings.stores.backend
    prefix = f"bench-{uuid.uuid4().hex[:8]}:"
    env = {"TAXNAV_MODE": "distributed", "TAXNAV_STORES__BACKEND": backend, "TAXNAV_CELERY__KEY_PREFIX": prefix, "TAXNAV_DATA_DIR": data_dir}
    distributed = settings.model_copy(deep=True)
    distributed.mode = "distributed"
    distributed.stores.backend = backend
    distributed.celery.key_prefix = prefix
    report["stores_backend"] = backend
    try:
        with WorkerPool(env) as workers:
            workers.start_all()
            store = RedisStore(distributed)
            warm_up(questions, distributed, lambda: store)
            report["distributed"] = measure_latency(questions, distributed, lambda: store, rounds)
            print_latency("distributed", report["distributed"])
            report["distributed"]["overhead_p50_ms"] = round(
                report["distributed"]["end_to_end_past_scope_guard_ms"]["p50"] - report["embedded"]["end_to_end_past_scope_guard_ms"]["p50"], 2
            )
            report["distributed"]["throughput"] = gateway_throughput(env, data_dir, questions, clients, requests)
    finally:
        purge(distributed)  # this run's queues, worker bindings and question records
    report["embedded"]["throughput"] = gateway_throughput({"TAXNAV_MODE": "embedded", "TAXNAV_DATA_DIR": data_dir}, data_dir, questions, clients, requests)
    print_throughput(report)

    write_report(report, getattr(args, "out", None) or "reports/bench-query.json")
    return 0


def print_latency(mode: str, figures: dict) -> None:
    e2e, piped = figures["end_to_end_ms"], figures["end_to_end_past_scope_guard_ms"]
    print(f"\n{mode}: end to end p50 {e2e['p50']:.1f} ms, p95 {e2e['p95']:.1f} ms over {e2e['n']} questions "
          f"(past the scope guard: p50 {piped['p50']:.1f}, p95 {piped['p95']:.1f}, n={piped['n']})")  # fmt: skip
    print(f"  outside the stages (dispatch, transport, waiting) p50 {figures['outside_stages_ms']['p50']:.1f} ms")
    for stage, values in figures["stage_ms"].items():
        print(f"  {stage:<13} p50 {values['p50']:7.1f} ms  p95 {values['p95']:7.1f} ms")
    print(f"  outcomes: {figures['outcomes']}")


def print_throughput(report: dict) -> None:
    print(f"\ndistributed overhead at p50: {report['distributed']['overhead_p50_ms']:.1f} ms (target <= {TARGETS['distributed_overhead_p50_ms']})")
    for mode in ("embedded", "distributed"):
        t = report[mode]["throughput"]
        print(f"{mode} throughput: {t['questions_per_s']:.1f} questions/s with {t['clients']} clients over HTTP "
              f"({t['requests']} requests, latency p50 {t['latency_ms']['p50']:.0f} ms, p95 {t['latency_ms']['p95']:.0f} ms)")  # fmt: skip
