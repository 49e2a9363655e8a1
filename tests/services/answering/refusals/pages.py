"""Hand-made pages for the refusal checks' tests."""

from __future__ import annotations

from datetime import datetime, timezone

from shared.contracts.corpus import Page


def page(section: str, when: str) -> Page:
    return Page(
        section_id=section,
        manual="employment-income-manual",
        title=section,
        base_path=f"/hmrc-internal-manuals/employment-income-manual/{section.lower()}",
        public_updated_at=datetime.fromisoformat(when).replace(tzinfo=timezone.utc),
    )


PAGES_2014 = [page("EIM22790", "2014-09-08"), page("EIM22915", "2014-03-01")]
