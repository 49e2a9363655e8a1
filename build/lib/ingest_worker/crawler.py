"""Crawl one HMRC manual from the GOV.UK Content API (or a directory laid out like it).

The crawl starts at ``/api/content/hmrc-internal-manuals/<manual>`` and follows
``details.child_section_groups`` level by level, so the page order is the manual's own order
and ``limit`` takes "the first N sections" deterministically. Every page fetch ends in one
outcome: ok, removed (404/410), malformed (not a Content API JSON page), failed (retries
exhausted) or blocked (a link off the allow-list); nothing here raises for one bad page.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

import httpx
from pydantic import BaseModel, Field

from shared.config import IngestSettings

API_PREFIX = "/api/content"
MANUALS_PATH = "/hmrc-internal-manuals/"
RETRY_STATUSES = {429, 500, 502, 503, 504}
GONE_STATUSES = {404, 410}
MAX_REDIRECTS = 3
MAX_RETRY_AFTER_S = 30.0

Outcome = Literal["ok", "removed", "malformed", "failed", "blocked"]


class CrawlError(RuntimeError):
    """The crawl cannot produce a manual at all (its root page is unavailable)."""


class Fetched(BaseModel):
    outcome: Outcome
    document: dict[str, Any] | None = None
    error: str = ""


class CrawlResult(BaseModel):
    manual: str
    root: dict[str, Any]
    pages: dict[str, dict[str, Any]] = Field(default_factory=dict)  # section id -> document, crawl order
    titles: dict[str, str] = Field(default_factory=dict)  # every title seen, incl. breadcrumb-only pages
    removed: list[str] = Field(default_factory=list)
    malformed: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    blocked: list[str] = Field(default_factory=list)
    errors: dict[str, str] = Field(default_factory=dict)  # section id -> what went wrong

    @property
    def title(self) -> str:
        return str(self.root.get("title") or self.manual)


def section_path(manual: str, section: str | None) -> str:
    return f"{MANUALS_PATH}{manual}" + (f"/{section.lower()}" if section else "")


def validate_page(document: Any, section: str | None) -> str:
    """Why ``document`` is not a usable Content API page ('' when it is)."""
    if not isinstance(document, dict):
        return "not a JSON object"
    details = document.get("details")
    if not isinstance(details, dict):
        return "no details object"
    if not isinstance(document.get("title", ""), str):
        return "title is not a string"
    if section is not None and not isinstance(details.get("body", ""), (str, type(None))):
        return "details.body is not a string"
    if not isinstance(details.get("child_section_groups", []), (list, type(None))):
        return "details.child_section_groups is not a list"
    return ""


def children(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Child section entries (with ``section_id``, ``base_path``, ``title``) in manual order."""
    found = []
    for group in document.get("details", {}).get("child_section_groups") or []:
        for child in (group or {}).get("child_sections") or []:
            if isinstance(child, dict) and child.get("section_id"):
                found.append(child)
    return found


class DirSource:
    """Pages read from ``<dir>/<manual>/<section>.json`` (the layout of ../shared/corpus)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def manuals(self) -> list[str]:
        return sorted(p.parent.name for p in self.root.glob("*/_manual.json"))

    async def fetch(self, manual: str, section: str | None, base_path: str | None = None) -> Fetched:
        name = f"{section.lower()}.json" if section else "_manual.json"
        path = self.root / manual / name
        if not path.is_file():
            return Fetched(outcome="removed", error=f"no file {path}")
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return Fetched(outcome="malformed", error=f"invalid JSON: {exc}")
        problem = validate_page(document, section)
        return Fetched(outcome="malformed", error=problem) if problem else Fetched(outcome="ok", document=document)

    async def aclose(self) -> None:
        pass


class HttpSource:
    """Pages fetched over HTTP from a server with the Content API's URL layout."""

    def __init__(self, base_url: str, settings: IngestSettings):
        self.base_url = base_url.rstrip("/")
        self.settings = settings
        # The operator chose the source, so its host is allowed alongside the configured list.
        self.allowed_hosts = {h.lower() for h in settings.allowed_hosts} | {urlsplit(self.base_url).netloc.lower()}
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.timeout_s),
            limits=httpx.Limits(max_connections=settings.concurrency, max_keepalive_connections=settings.concurrency),
            follow_redirects=False,  # redirects are followed by hand, through the allow-list
            headers={"User-Agent": "taxnav-ingest/0.1", "Accept": "application/json"},
        )
        self._slots = asyncio.Semaphore(settings.concurrency)

    def allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in {"http", "https"} and parts.netloc.lower() in self.allowed_hosts

    def url_for(self, manual: str, section: str | None, base_path: str | None) -> str:
        path = base_path or section_path(manual, section)
        if path.startswith(("http://", "https://")):
            parts = urlsplit(path)
            return f"{parts.scheme}://{parts.netloc}{API_PREFIX}{parts.path}"
        return f"{self.base_url}{API_PREFIX}{path}"

    async def fetch(self, manual: str, section: str | None, base_path: str | None = None) -> Fetched:
        url = self.url_for(manual, section, base_path)
        if not self.allowed(url):
            return Fetched(outcome="blocked", error=f"host not on the allow-list: {url}")
        async with self._slots:
            return await self._fetch_with_retries(url, section)

    async def _fetch_with_retries(self, url: str, section: str | None) -> Fetched:
        error = ""
        for attempt in range(self.settings.max_retries + 1):
            wait = self.settings.backoff_base_s * (2**attempt) * (1 + random.random() / 4)
            try:
                response = await self._get_following_redirects(url)
            except _Blocked as exc:
                return Fetched(outcome="blocked", error=str(exc))
            except httpx.TimeoutException as exc:
                error = f"timeout: {type(exc).__name__}"
            except httpx.TransportError as exc:
                error = f"transport error: {exc!r}"
            else:
                if response.status_code == 200:
                    return self._decode(response, section)
                if response.status_code in GONE_STATUSES:
                    return Fetched(outcome="removed", error=f"HTTP {response.status_code}")
                if response.status_code not in RETRY_STATUSES:
                    return Fetched(outcome="failed", error=f"HTTP {response.status_code}")
                error = f"HTTP {response.status_code}"
                retry_after = response.headers.get("Retry-After", "")
                if retry_after.isdigit():
                    wait = max(wait, min(float(retry_after), MAX_RETRY_AFTER_S))
            if attempt < self.settings.max_retries:
                await asyncio.sleep(wait)
        return Fetched(outcome="failed", error=f"{error} after {self.settings.max_retries + 1} attempts")

    async def _get_following_redirects(self, url: str) -> httpx.Response:
        for _ in range(MAX_REDIRECTS + 1):
            response = await self.client.get(url)
            if not response.is_redirect:
                return response
            url = urljoin(url, response.headers.get("Location", ""))
            if not self.allowed(url):
                raise _Blocked(f"redirect off the allow-list: {url}")
        raise _Blocked(f"more than {MAX_REDIRECTS} redirects")

    @staticmethod
    def _decode(response: httpx.Response, section: str | None) -> Fetched:
        try:
            document = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return Fetched(outcome="malformed", error=f"invalid JSON: {exc}")
        problem = validate_page(document, section)
        return Fetched(outcome="malformed", error=problem) if problem else Fetched(outcome="ok", document=document)

    async def aclose(self) -> None:
        await self.client.aclose()


class _Blocked(Exception):
    pass


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def open_source(source: str, settings: IngestSettings) -> DirSource | HttpSource:
    if is_url(source):
        return HttpSource(source, settings)
    if not Path(source).is_dir():
        raise CrawlError(f"--source is neither an http(s) URL nor a directory: {source}")
    return DirSource(source)


ProgressFn = Callable[[int, int], None]  # (pages done, pages known)


async def crawl(
    source: DirSource | HttpSource,
    manual: str,
    limit: int | None = None,
    sections: set[str] | None = None,
    on_progress: ProgressFn | None = None,
) -> CrawlResult:
    """Fetch a manual's root and its sections (all, the first ``limit``, or only ``sections``)."""
    root = await source.fetch(manual, None)
    if root.outcome != "ok" or root.document is None:
        raise CrawlError(f"cannot read the root of {manual}: {root.outcome} {root.error}".strip())
    result = CrawlResult(manual=manual, root=root.document)
    for child in children(root.document):
        result.titles[str(child["section_id"]).upper()] = str(child.get("title") or "")
    done = 0
    seen: set[str] = set()

    async def fetch_one(entry: dict[str, Any]) -> tuple[str, Fetched]:
        nonlocal done
        section = str(entry["section_id"]).upper()
        base_path = entry.get("base_path")
        if isinstance(base_path, str) and not _inside_manual(base_path, manual):
            fetched = Fetched(outcome="blocked", error=f"link outside {manual}: {base_path}")
        else:
            fetched = await source.fetch(manual, section, base_path if isinstance(base_path, str) else None)
        done += 1
        if on_progress:
            known = len(seen) if limit is None else min(len(seen), limit)
            on_progress(done, max(done, known))
        return section, fetched

    def record(section: str, fetched: Fetched) -> dict[str, Any] | None:
        if fetched.outcome == "ok" and fetched.document is not None:
            result.pages[section] = fetched.document
            result.titles[section] = str(fetched.document.get("title") or result.titles.get(section, ""))
            return fetched.document
        getattr(result, fetched.outcome).append(section)
        result.errors[section] = fetched.error
        return None

    if sections is not None:
        wanted = [{"section_id": s.upper()} for s in sorted(sections)]
        seen.update(s.upper() for s in sections)
        for section, fetched in await asyncio.gather(*(fetch_one(e) for e in wanted)):
            record(section, fetched)
        await _fetch_breadcrumb_titles(source, manual, result)
        return result

    level = _unseen(children(root.document), seen)
    while level:
        if limit is not None:
            level = level[: max(0, limit - len(result.pages) - _failures(result))]
        next_level: list[dict[str, Any]] = []
        for section, fetched in await asyncio.gather(*(fetch_one(e) for e in level)):
            document = record(section, fetched)
            if document is not None:
                kids = _unseen(children(document), seen)
                for kid in kids:
                    result.titles.setdefault(str(kid["section_id"]).upper(), str(kid.get("title") or ""))
                next_level.extend(kids)
        level = next_level
    return result


async def _fetch_breadcrumb_titles(source: DirSource | HttpSource, manual: str, result: CrawlResult) -> None:
    """A slice still needs its ancestors' titles for the chunks' heading paths."""
    missing = {
        str(crumb.get("section_id", "")).upper()
        for document in result.pages.values()
        for crumb in document["details"].get("breadcrumbs") or []
        if isinstance(crumb, dict)
    } - set(result.titles) - {""}
    fetched = await asyncio.gather(*(source.fetch(manual, section) for section in sorted(missing)))
    for section, outcome in zip(sorted(missing), fetched, strict=True):
        if outcome.document is not None:
            result.titles[section] = str(outcome.document.get("title") or "")


def _unseen(entries: list[dict[str, Any]], seen: set[str]) -> list[dict[str, Any]]:
    fresh = []
    for entry in entries:
        section = str(entry["section_id"]).upper()
        if section not in seen:
            seen.add(section)
            fresh.append(entry)
    return fresh


def _failures(result: CrawlResult) -> int:
    return len(result.removed) + len(result.malformed) + len(result.failed) + len(result.blocked)


def _inside_manual(base_path: str, manual: str) -> bool:
    path = urlsplit(base_path).path if base_path.startswith(("http://", "https://")) else base_path
    return path.startswith(f"{MANUALS_PATH}{manual}/")


def run_crawl(
    source: str,
    manual: str,
    settings: IngestSettings,
    limit: int | None = None,
    sections: set[str] | None = None,
    on_progress: ProgressFn | None = None,
) -> CrawlResult:
    """Synchronous entry point: open the source, crawl, close."""

    async def go() -> CrawlResult:
        opened = open_source(source, settings)
        try:
            return await crawl(opened, manual, limit=limit, sections=sections, on_progress=on_progress)
        finally:
            await opened.aclose()

    return asyncio.run(go())
