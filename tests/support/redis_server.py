"""A private, real ``redis-server`` for fault tests: on a free port, in a temp directory, with
an append-only file so a stop and restart keeps its queues. Never the shared 6379 one."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import redis


class PrivateRedis:
    def __init__(self, directory: Path, maxmemory: str = "64mb") -> None:
        self.directory, self.maxmemory = directory, maxmemory
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory), "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--maxmemory", self.maxmemory, "--maxmemory-policy", "noeviction"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = self.client()
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def fill(self) -> int:
        """Write until Redis refuses (maxmemory reached, no eviction); then hold it above the
        limit so that no write fits, even after a queue is drained. Returns keys written."""
        client, written = self.client(), 0
        try:
            while True:
                client.set(f"ballast:{written}", b"x" * 20_000)
                written += 1
        except redis.exceptions.OutOfMemoryError:
            client.config_set("maxmemory", "1mb")
        return written

    def free(self) -> None:
        client = self.client()
        client.config_set("maxmemory", self.maxmemory)
        keys = list(client.scan_iter(match="ballast:*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])

    def __enter__(self) -> PrivateRedis:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
