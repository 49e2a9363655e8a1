"""The uvicorn server `taxnav serve` runs (gateway/cli.py imports it only to serve)."""

from __future__ import annotations

import socket

import uvicorn
from starlette.types import ASGIApp

from gateway.protocol import GatewayProtocol
from shared.config import GatewaySettings


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
