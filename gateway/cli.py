"""`taxnav serve`: run the gateway with uvicorn."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from taxnav.cli import common_options  # noqa: PLC0415  (taxnav.cli imports this module)

    parser = subparsers.add_parser("serve", parents=[common_options()], help="start the gateway (HTTP API and web page)")
    parser.add_argument("--host", default=None, help="interface to bind (settings.gateway.host, default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (settings.gateway.port, default 8000)")
    parser.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> int:
    import uvicorn  # noqa: PLC0415

    from gateway.app import create_app  # noqa: PLC0415
    from shared.config import get_settings  # noqa: PLC0415

    settings = get_settings()
    host = args.host or settings.gateway.host
    port = args.port or settings.gateway.port
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")
    return 0
