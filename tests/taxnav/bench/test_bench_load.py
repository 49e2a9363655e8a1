"""`taxnav bench load`'s level runner against a real embedded gateway on the slice: the
closed-loop clients' replies are counted by status, and the scope-guard refusals asked on the
side come from a process of their own (so their latency is the gateway's, not this process's
GIL shared with the client threads). Nothing here is timed."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from gateway.demo import free_port, start_server, stop_server, wait_ready
from taxnav.bench.common import child_pids, rss_mb
from taxnav.bench.load import run_level

QUESTION = "how much can my employer pay me per mile for my own car?"


def test_a_level_counts_replies_and_times_refusals_from_another_process(slice_data_dir):
    port = free_port()
    server = start_server(str(slice_data_dir), port, {"TAXNAV_MODE": "embedded"})
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_ready(base_url, server)
        row = run_level(base_url, [QUESTION], clients=2, seconds=1.5, timeout_s=60)
    finally:
        stop_server(server)
    assert row["replies"].get("200", 0) >= 1 and set(row["replies"]) <= {"200", "503:overloaded+retry-after"}
    assert row["refusal_ms"]["n"] >= 1 and 0 < row["refusal_ms"]["p50"] <= row["refusal_ms"]["max"]


def test_with_worker_processes_the_gateway_answers_its_workers_are_found_and_die_with_it(slice_data_dir):
    port = free_port()
    server = start_server(str(slice_data_dir), port, {"TAXNAV_MODE": "embedded", "TAXNAV_GATEWAY__EMBEDDED_PROCESSES": "1"})
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_ready(base_url, server)
        reply = httpx.post(f"{base_url}/v1/questions", json={"question": QUESTION}, timeout=60)
        workers = [pid for pid in child_pids(server.pid) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
        rss = [rss_mb(pid) for pid in workers]
        server.kill()  # no clean shutdown: its worker must not be left behind
        server.wait()
        deadline = time.monotonic() + 15
        while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        orphans = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    finally:
        stop_server(server)
    assert reply.status_code == 200 and reply.json()["status"] == "answered"
    assert len(workers) == 1 and rss[0] > 0  # the worker process, beside multiprocessing's resource tracker
    assert orphans == []
