"""Container healthchecks that need more than the image ships (no curl in python:slim).

    python deploy/healthcheck.py http URL   # exit 0 when URL answers 2xx
    python deploy/healthcheck.py redis      # exit 0 when TAXNAV_REDIS_URL answers PING

Exit 1 with a one-line reason on stderr otherwise, as Docker's HEALTHCHECK expects.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request

TIMEOUT_S = 5.0


def check_http(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:  # noqa: S310 (our own URL)
            return None if 200 <= response.status < 300 else f"{url} answered {response.status}"
    except (urllib.error.URLError, OSError) as exc:
        return f"{url}: {exc}"


def check_redis() -> str | None:
    import redis

    from shared.config import Settings

    url = Settings().redis_url
    try:
        redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S).ping()
    except redis.RedisError as exc:
        return f"{url}: {exc}"
    return None


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "http":
        problem = check_http(argv[1])
    elif argv == ["redis"]:
        problem = check_redis()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
