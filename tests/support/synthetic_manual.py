"""A small manual written for a test in the Content API layout (invented text, not corpus
files), ingested into its own data directory."""

from __future__ import annotations

import json
from pathlib import Path

from ingest_worker.ingest import run_ingest
from shared.config import Settings

MANUAL = "employment-income-manual"
BASE = f"/hmrc-internal-manuals/{MANUAL}"
STAMP = "2014-09-08T00:00:00+00:00"

Pages = dict[str, tuple[str, str]]  # section id -> (title, HTML body)


def content_item(section: str, title: str, body: str) -> dict:
    return {
        "base_path": f"{BASE}/{section.lower()}", "title": title, "description": "", "document_type": "hmrc_manual_section",
        "schema_name": "hmrc_manual_section", "locale": "en", "public_updated_at": STAMP, "updated_at": STAMP,
        "details": {"section_id": section, "body": body, "manual": {"base_path": BASE}, "breadcrumbs": [], "child_section_groups": []},
    }  # fmt: skip


def write_manual(root: Path, pages: Pages) -> Path:
    """The manual's folder under ``root``: one JSON file per page and the manual's root."""
    folder = root / MANUAL
    folder.mkdir()
    for section, (title, body) in pages.items():
        (folder / f"{section.lower()}.json").write_text(json.dumps(content_item(section, title, body)))
    children = [{"base_path": f"{BASE}/{s.lower()}", "section_id": s, "title": t, "description": ""} for s, (t, _) in pages.items()]
    manual = {
        "base_path": BASE, "title": "Employment Income Manual", "description": "", "document_type": "hmrc_manual",
        "schema_name": "manual", "locale": "en", "public_updated_at": STAMP, "updated_at": STAMP,
        "details": {"child_section_groups": [{"title": None, "child_sections": children}]},
    }  # fmt: skip
    (folder / "_manual.json").write_text(json.dumps(manual))
    return folder


def ingest_manual(pages: Pages, corpus_root: Path, settings: Settings) -> Settings:
    """Write ``pages`` as a manual under ``corpus_root`` and ingest it with ``settings``."""
    write_manual(corpus_root, pages)
    run_ingest(settings, str(corpus_root), MANUAL)
    return settings
