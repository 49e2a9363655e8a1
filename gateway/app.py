"""The gateway: a FastAPI app over the question pipeline, the corpus pages and the web page.

``create_app(settings)`` builds it; every module in gateway/api/routes/ contributes its
``router``. OpenAPI at /docs and /openapi.json.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

import gateway.api.routes as routes
from gateway.errors import ApiError, BodyLimit, install_error_handlers
from gateway.metrics import GatewayMetrics, RequestCounter
from services.results import make_store
from shared.config import Settings, get_settings

STATIC_DIR = Path(__file__).parent / "static"

DESCRIPTION = """Citation-grounded answers over HMRC's Employment Income Manual.

A question gets either an answer whose every sentence cites an EIM paragraph and carries its
verification verdict, or a typed refusal (`out_of_scope`, `low_coverage`, `conflict`, `stale`,
`malformed`) with its evidence. Errors (bad requests, timeouts) share one shape:
`{"error": {"type": ..., "message": ...}}`."""


def route_modules() -> list[str]:
    return sorted(f"{routes.__name__}.{m.name}" for m in pkgutil.iter_modules(routes.__path__))


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(title="Tax Policy Navigator", version="0.1.0", description=DESCRIPTION)
    app.state.settings = settings
    app.state.store = make_store(settings)
    app.state.metrics = GatewayMetrics()
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=settings.gateway.max_body_bytes)
    app.add_middleware(RequestCounter, metrics=app.state.metrics)  # outermost: sees 413s too
    for name in route_modules():
        app.include_router(importlib.import_module(name).router)

    @app.get("/", include_in_schema=False)
    def index_page() -> FileResponse:
        page = STATIC_DIR / "index.html"
        if not page.is_file():
            raise ApiError(404, "not_found", "The web page is not installed (gateway/static/index.html).")
        return FileResponse(page)

    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    return app
