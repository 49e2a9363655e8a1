"""`taxnav serve`: run the gateway with uvicorn."""

from __future__ import annotations

import argparse
import socket

import uvicorn
from starlette.types import ASGIApp

from gateway.protocol import GatewayProtocol
from shared.cli_common import Exit
from shared.config import GatewaySettings, Settings


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


class AnnouncingServer(uvicorn.Server):
    """Says where it listens once the socket is bound (uvicorn itself runs at warning level)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            from rich.console import Console  # noqa: PLC0415

            host, port = self.config.host, self.config.port
            shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104  (what a browser on this machine opens)
            everywhere = f" (all interfaces, {host})" if shown != host else ""
            Console(highlight=False).print(
                f"Tax Policy Navigator gateway listening on http://{shown}:{port}{everywhere}\n"
                f"  page http://{shown}:{port}/   API docs http://{shown}:{port}/docs   Ctrl+C to stop",
                soft_wrap=True,
                markup=False,
            )


def build_server(app: ASGIApp, gateway: GatewaySettings, host: str, port: int) -> AnnouncingServer:
    """uvicorn over h11 with the gateway's connection limits: how long and how large a
    request's headers may be, how long a kept-alive connection may idle (gateway/protocol.py)."""
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning",
        http=GatewayProtocol.configured(gateway.header_read_timeout_s),
        h11_max_incomplete_event_size=gateway.max_header_bytes,
        timeout_keep_alive=gateway.keep_alive_timeout_s,  # type: ignore[arg-type]  (a float works: it is a call_later delay)
    )  # fmt: skip
    return AnnouncingServer(config)


def serve(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.app import create_app  # noqa: PLC0415  (heavy: the whole pipeline; `taxnav --help` stays quick)

    server = build_server(create_app(settings), settings.gateway, args.host or settings.gateway.host, args.port or settings.gateway.port)
    try:
        server.run()
    except SystemExit:  # uvicorn exits with its own code when it cannot bind; ours is "failed"
        return Exit.ERROR
    return Exit.OK if server.started else Exit.ERROR
