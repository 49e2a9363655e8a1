"""The Makefile's `test-deps` steps, run for real: each starts or installs what the tests need
only when it is missing, so `make test` alone works on a fresh machine and costs nothing on a
ready one."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]


def make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=120)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server installed")
def test_redis_step_starts_one_when_none_answers_and_only_then() -> None:
    port = free_port()  # never the shared 6379: a Redis of this test's own
    client = redis.Redis(port=port, socket_connect_timeout=1)
    try:
        first = make("redis", f"REDIS_PORT={port}")
        assert first.returncode == 0, first.stderr
        assert f"starting redis-server on 127.0.0.1:{port}" in first.stdout
        assert client.ping()
        pid = client.info("server")["process_id"]
        again = make("redis", f"REDIS_PORT={port}")
        assert again.returncode == 0 and "starting" not in again.stdout
        assert client.info("server")["process_id"] == pid  # the same server, not a second one
    finally:
        try:
            client.shutdown(nosave=True)
        except redis.ConnectionError:
            pass  # shutting down closes the connection


def test_chromium_step_is_a_no_op_when_chromium_is_there() -> None:
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip("chromium is not installed here: the step would install it")
    done = make("chromium")
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_ci_runs_the_readme_test_command_and_make_test_installs_its_needs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert [line for line in ci.splitlines() if line.startswith("make")] == ["make test"]
    plan = make("-n", "test")
    assert plan.returncode == 0
    assert "apt-get install -y -qq chromium chromium-driver" in plan.stdout and "redis-server --daemonize yes" in plan.stdout
    assert plan.stdout.index("chromium-driver") < plan.stdout.index("pytest")
