"""What the benchmarks share: the machine they ran on, the questions file, nearest-rank
percentiles and a real gateway started, warmed and stopped around a measurement."""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from gateway.demo import free_port, start_server, stop_server, wait_ready

WARMUP_TIMEOUT_S = 300.0  # first questions load the index and the embedder in every worker
WARMUP_QUESTIONS = 3  # asked untimed first, so no process's first load is measured


def machine() -> dict:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg_at_start": os.getloadavg()}


def load_questions(path: str) -> list[str]:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return [row["question"] for row in rows]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else 0.0


def percentiles(values: list[float], *qs: int, digits: int = 1) -> dict[str, float]:
    """``{"p50": ..., "p95": ...}`` for the given percentiles, rounded."""
    return {f"p{q}": round(percentile(values, q), digits) for q in qs}


def summary(values: list[float]) -> dict[str, float]:
    return {**percentiles(values, 50, 95, digits=2), "mean": round(statistics.fmean(values), 2) if values else 0.0, "n": len(values)}


def rss_mb(pid: int) -> float:
    """Resident memory of one process, from /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def child_pids(pid: int) -> list[int]:
    """A process's children (embedded worker processes, multiprocessing's resource tracker), from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


@contextmanager
def warm_gateway(data_dir: str, env: dict[str, str], questions: list[str]) -> Iterator[tuple[str, subprocess.Popen]]:
    """A real gateway (`taxnav serve` in a subprocess, ``env`` over this environment) on a free
    port: ready, asked the first questions untimed, stopped at exit. Yields its URL and process."""
    port = free_port()
    server = start_server(data_dir, port, env)
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_ready(base_url, server, timeout_s=WARMUP_TIMEOUT_S)
        with httpx.Client(base_url=base_url, timeout=WARMUP_TIMEOUT_S) as http:
            for question in questions[:WARMUP_QUESTIONS]:
                http.post("/v1/questions", json={"question": question})
        yield base_url, server
    finally:
        stop_server(server)
