"""The gateway: a FastAPI app over the question pipeline, the corpus pages and the web page.

``create_app(settings)`` builds it with the routes gateway/api/main.py lists. OpenAPI at /docs
and /openapi.json.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

from gateway.api.main import api_router
from gateway.deps import open_index
from gateway.errors import ApiError, BodyLimit, WellFormedHead, install_error_handlers
from gateway.metrics import GatewayMetrics, RequestCounter
from gateway.security import ApiKeys, SecurityHeaders, TypedCORS
from services.api import WARM_UP_QUESTION, answer, answers_model, make_conversation_store, make_store, page_ranker, passage_model
from shared import __version__, heap
from shared.config import Settings, get_settings
from shared.contracts.api import QuestionRequest

STATIC_DIR = Path(__file__).parent / "static"
DOCS_ASSETS = "/docs/assets"  # Swagger UI's files, from the swagger-ui-bundle package: /docs works offline
log = logging.getLogger(__name__)

DESCRIPTION = """Citation-grounded answers over HMRC's Employment Income Manual.

A question gets either an answer whose every sentence cites an EIM paragraph and carries its
verification verdict, or a typed refusal (`out_of_scope`, `low_coverage`, `conflict`, `stale`,
`malformed`) with its evidence. Errors (bad requests, timeouts) share one shape:
`{"error": {"type": ..., "message": ...}}`."""


# The API explorer: Swagger UI from local files, its start-up in a script file (no inline script,
# so a strict Content-Security-Policy can apply to it as to the navigator page).
DOCS_PAGE = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tax Policy Navigator API</title>
<link rel="stylesheet" href="{DOCS_ASSETS}/swagger-ui.css">
<link rel="icon" type="image/png" href="{DOCS_ASSETS}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<noscript><p>The API explorer needs JavaScript. The API description itself is
<a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p></noscript>
<script src="{DOCS_ASSETS}/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
"""
DOCS_INIT = """window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
"""


def warm_up(settings: Settings, done: threading.Event) -> None:
    """Load what the first question would otherwise wait for: the index and, in embedded mode,
    everything the stages load lazily (one question through the pipeline), then freeze it out
    of the garbage collector's sight. /readyz says "warming up" until this ends."""
    try:
        open_index(settings)
        if settings.mode == "embedded" and settings.models.provider == "local":
            answer(QuestionRequest(question=WARM_UP_QUESTION), settings)
    except Exception as exc:  # noqa: BLE001  (a missing index is reported by /readyz and each request)
        log.warning("warm-up skipped: %s", exc)
    finally:
        heap.freeze()  # what is loaded now lives as long as the process (shared/heap.py)
        done.set()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        sys.setswitchinterval(settings.gateway.switch_interval_ms / 1000)  # process-wide: the server's process
        if settings.models.provider == "local":
            page_ranker(settings)  # a model trained on other features than we compute stops start-up (RankerModelError)
            passage_model(settings)
        if settings.stitching.assured:  # every provider's answers are marked by it
            answers_model(settings)  # the model that says how sure an answer is, refused likewise
        # Now, not at the first conversation: where they are kept (a read-only data directory's
        # fallback) is said at start-up.
        app.state.conversations = make_conversation_store(settings)
        threading.Thread(target=warm_up, args=(settings, app.state.warm), name="warm-up", daemon=True).start()
        yield

    app = FastAPI(
        title="Tax Policy Navigator",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served below from local files instead of a CDN
        redoc_url=None,  # ReDoc ships only from a CDN
    )
    app.state.settings = settings
    app.state.warm = threading.Event()
    app.state.store = make_store(settings)
    app.state.metrics = GatewayMetrics()
    install_error_handlers(app)
    gateway = settings.gateway
    app.add_middleware(BodyLimit, max_bytes=gateway.max_body_bytes, timeout_s=gateway.body_read_timeout_s)
    app.add_middleware(
        ApiKeys, keys=gateway.api_keys, per_minute=gateway.rate_limit_per_minute, guesses_per_minute=gateway.key_failures_per_minute
    )
    app.add_middleware(WellFormedHead, max_bytes=gateway.max_header_bytes)
    if gateway.cors_origins:  # outside the key check: a browser's preflight carries no key
        app.add_middleware(TypedCORS, allow_origins=gateway.cors_origins, allow_methods=["GET", "POST"], allow_headers=["*"])
    app.add_middleware(SecurityHeaders)
    app.add_middleware(RequestCounter, metrics=app.state.metrics)  # outermost: sees 413s too
    app.include_router(api_router)

    @app.get("/", include_in_schema=False)
    def index_page() -> FileResponse:
        page = STATIC_DIR / "index.html"
        if not page.is_file():
            raise ApiError(404, "not_found", "The web page is not installed (gateway/static/index.html).")
        return FileResponse(page)

    @app.get("/docs", include_in_schema=False)
    def api_docs() -> HTMLResponse:
        return HTMLResponse(DOCS_PAGE)

    @app.get("/docs/init.js", include_in_schema=False)
    def api_docs_init() -> PlainTextResponse:
        return PlainTextResponse(DOCS_INIT, media_type="text/javascript")

    app.mount(DOCS_ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    return app
