"""`taxnav serve`: run the gateway with uvicorn."""

from __future__ import annotations

import argparse

from shared.cli_common import Exit
from shared.config import Settings


def register(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        parents=parents,
        help="start the gateway (HTTP API and web page)",
        description="Serve the HTTP API (/v1/...), the navigator page (/), the API documentation (/docs, "
        "works offline), /healthz, /readyz and /metrics. Prints the address once it listens; Ctrl+C stops it. "
        "Questions before the first `taxnav ingest` get a typed 503 (index_unavailable).",
    )
    parser.add_argument("--host", default=None, help="interface to bind (settings.gateway.host, default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (settings.gateway.port, default 8000)")
    parser.set_defaults(func=serve)


def serve(args: argparse.Namespace, settings: Settings) -> int:
    # heavy (the whole pipeline, uvicorn): `taxnav --help` and the other commands stay quick
    from gateway.app import create_app  # noqa: PLC0415
    from gateway.server import build_server  # noqa: PLC0415

    server = build_server(create_app(settings), settings.gateway, args.host or settings.gateway.host, args.port or settings.gateway.port)
    try:
        server.run()
    except SystemExit:  # uvicorn exits with its own code when it cannot bind; ours is "failed"
        return Exit.ERROR
    return Exit.OK if server.started else Exit.ERROR
