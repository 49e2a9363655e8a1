"""`python -m gateway.demo` (what `make demo` runs) and `taxnav serve`: a real uvicorn
server in a subprocess, a real HTTP request, the answer printed readably, the server stopped."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from gateway.demo import free_port, start_server, stop_server, wait_ready

MILEAGE = "how much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?"


def demo(data_dir: Path, question: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gateway.demo", "--data-dir", str(data_dir), "--port", str(free_port()), "--question", question]
    return subprocess.run(command, capture_output=True, text=True, timeout=240)


def test_demo_prints_cited_sentences_with_verdicts(slice_data_dir):
    run = demo(slice_data_dir, MILEAGE)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "Gateway ready" in out and f"Q: {MILEAGE}" in out
    assert re.search(r"^Answer$", out, re.M)
    assert re.search(r"\[1\].* (supported|partially supported|unsupported|contradicted)$", out, re.M)
    assert re.search(r"^\s+\[1\].* EIM\d+ .*https://www\.gov\.uk/", out, re.M)  # the source resolves
    assert "faithfulness" in out and "Stages: retrieval" in out


def test_demo_prints_a_refusal(slice_data_dir):
    run = demo(slice_data_dir, "What's the VAT registration threshold for my small business?")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Refused: out_of_scope" in run.stdout
    # The server it announced is gone: it says so, and how to keep one.
    assert re.search(r"Stopped the gateway at http://127\.0\.0\.1:\d+: the demo ends with it\. To keep one running: make serve", run.stdout)


def test_serve_stops_cleanly_and_leaves_the_port_free(slice_data_dir):
    port = free_port()
    server = start_server(str(slice_data_dir), port)
    try:
        wait_ready(f"http://127.0.0.1:{port}", server, timeout_s=120)
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json() == {"status": "ok"}
    finally:
        stop_server(server)
    assert server.returncode is not None
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


def test_serve_prints_the_address_it_listens_on(tmp_path):
    """Before any ingest too: the address comes once the socket is bound, and it answers there."""
    port = free_port()
    command = [sys.executable, "-m", "taxnav.cli", "serve", "--data-dir", str(tmp_path), "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()  # blocks until the announcement (or the process ends)
        match = re.search(r"listening on (http://127\.0\.0\.1:(\d+))", line)
        assert match and int(match.group(2)) == port, line
        assert httpx.get(match.group(1) + "/healthz", timeout=5).json() == {"status": "ok"}
        assert "/docs" in server.stdout.readline()
    finally:
        stop_server(server)
        server.stdout.close()


def test_serve_on_a_busy_port_fails_with_exit_1(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "taxnav.cli", "serve", "--data-dir", str(tmp_path), "--port", str(port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert run.returncode == 1
    assert "listening on" not in run.stdout and "address already in use" in run.stderr
