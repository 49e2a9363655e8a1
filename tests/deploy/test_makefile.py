"""The Makefile's `test-deps` steps, run for real: each starts or installs what the tests need
only when it is missing, so `make test` alone works on a fresh machine and costs nothing on a
ready one."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]


def make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=120, env=env)


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
    assert [line for line in ci.splitlines() if line.startswith("make")] == ["make test", "make stack-check"]
    plan = make("-n", "test")
    assert plan.returncode == 0
    assert "apt-get install -y -qq chromium chromium-driver" in plan.stdout and "redis-server --daemonize yes" in plan.stdout
    assert plan.stdout.index("chromium-driver") < plan.stdout.index("pytest")


# --- The compose stack's targets: Docker's compose plugin, else the test extra's binary -------

def docker_cli(tmp_path: Path, *, plugin: bool) -> dict[str, str]:
    """An environment whose `docker` has the compose plugin or (as a stock docker CLI without
    it) answers "unknown command", and whose Docker daemon is unreachable."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    docker = bin_dir / "docker"
    body = "exit 0" if plugin else 'echo "docker: unknown command: docker $1" >&2; exit 1'
    docker.write_text(f"#!/bin/sh\n{body}\n")
    docker.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "DOCKER_HOST": f"unix://{tmp_path}/no-daemon.sock"}


def compose_command(env: dict[str, str], python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "deploy" / "compose.sh"), python], capture_output=True, text=True, timeout=30, env=env)


def test_compose_command_is_the_plugin_else_the_test_extras_binary(tmp_path: Path) -> None:
    from tests.deploy.compose_cli import compose_binary

    with_plugin = compose_command(docker_cli(tmp_path, plugin=True))
    assert with_plugin.returncode == 0 and with_plugin.stdout.strip() == "docker compose"
    without = compose_command(docker_cli(tmp_path, plugin=False))
    assert without.returncode == 0 and without.stdout.strip() == str(compose_binary())
    neither = compose_command(docker_cli(tmp_path, plugin=False), python="/bin/false")
    assert neither.returncode == 1 and "make setup" in neither.stderr and not neither.stdout


def test_make_config_runs_without_the_compose_plugin(tmp_path: Path) -> None:
    done = make("config", f"PY={sys.executable}", env=docker_cli(tmp_path, plugin=False))
    assert done.returncode == 0, done.stderr
    assert "docker-compose.yml is valid (profile local;" in done.stdout


def test_make_up_without_a_daemon_says_what_it_needs(tmp_path: Path) -> None:
    """A stock docker CLI, no compose plugin, no daemon (DOCKER_HOST points nowhere, so this
    starts nothing even where Docker runs): what `up` needs, not "unknown command"."""
    for target in ("up", "down"):
        done = make(target, f"PY={sys.executable}", env=docker_cli(tmp_path, plugin=False))
        assert done.returncode != 0
        assert f"make {target} needs a running Docker daemon" in done.stderr and "make config" in done.stderr
        assert "unknown command" not in done.stderr, done.stderr
