"""Ask one question through a real gateway: start `taxnav serve` in a subprocess, wait until
it is ready, POST the question, print the answer (or the refusal), stop the server and say so
(with how to keep one running).

    python -m gateway.demo --data-dir data --port 8000 --question "..."
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time

import httpx
from rich.console import Console

from taxnav.ask import render, show
from shared.contracts.api import QuestionResult

READY_TIMEOUT_S = 180.0  # the first start loads the index and the embedder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(data_dir: str, port: int, env: dict[str, str] | None = None) -> subprocess.Popen:
    command = [sys.executable, "-m", "taxnav.cli", "serve", "--data-dir", data_dir, "--port", str(port)]
    return subprocess.Popen(command, env={**os.environ, **(env or {})})


def wait_ready(base_url: str, server: subprocess.Popen, timeout_s: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the gateway exited with code {server.returncode}")
        try:
            response = httpx.get(f"{base_url}/readyz", timeout=30)
            if response.status_code == 200:
                return
            last = response.text
        except httpx.HTTPError as exc:
            last = repr(exc)
        time.sleep(0.5)
    raise RuntimeError(f"the gateway was not ready within {timeout_s:.0f} s: {last}")


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def show_reply(body: dict, console: Console) -> None:
    """A QuestionResult (the `taxnav ask` rendering: answer, detail, sources) or an error body."""
    if "error" in body:
        console.print(f"Error ({body['error']['type']}): {body['error']['message']}", soft_wrap=True)
        return
    result = QuestionResult.model_validate(body)
    console.print(f"Q: {result.question}\n", soft_wrap=True)
    show(render(result), console)
    timings = ", ".join(f"{t.stage} {t.ms:.0f} ms" for t in result.trace)
    if timings:
        console.print(f"\nStages: {timings}", soft_wrap=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--question", required=True)
    args = parser.parse_args(argv)
    base_url = f"http://127.0.0.1:{args.port}"
    server = start_server(args.data_dir, args.port)
    try:
        wait_ready(base_url, server)
        print(f"Gateway ready at {base_url} (API docs: {base_url}/docs)\n")
        response = httpx.post(f"{base_url}/v1/questions", json={"question": args.question}, timeout=120)
        show_reply(response.json(), Console(highlight=False))
        return 0 if response.status_code == 200 else 1
    finally:
        stop_server(server)
        # Said plainly: the address printed above no longer answers once the demo returns.
        print(f"\nStopped the gateway at {base_url}: the demo ends with it. To keep one running: "
              f"make serve (taxnav serve --data-dir {args.data_dir} --port {args.port}).")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
