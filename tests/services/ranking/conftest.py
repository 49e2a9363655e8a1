"""Fixtures for the ranking tests: besides the session's slice (``slice_settings``), a few real
pages the slice lacks, ingested once per session (``other_pages_settings``): a page that opens
by saying its rule was withdrawn, one titled by a period that has ended, a contents page of
links, the official rate's table keyed by dates, a page titled by the years and the band it
applies to; and the small loans page to read against them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shared.config import Settings
from tests.conftest import EIM

OTHER_PAGES = frozenset(
    {
        "EIM15425",  # small lump sums: "... was withdrawn" in its opening
        "EIM22051",  # "Van benefit to 2004/05: general"
        "EIM42800",  # "Residence and domicile: table of contents": one link
        "EIM26104",  # "Amount of the official rate": a table of periods and rates
        "EIM24610",  # "Step 5, 2012/13 to 2014/15: cars with CO2 emissions between 1-75 g/km"
        "EIM26140",  # "Exemptions: small loans"
    }
)


@pytest.fixture(scope="session")
def other_pages_settings(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path, settings_for: Callable[..., Settings]) -> Settings:
    from ingest_worker.ingest import run_ingest  # noqa: PLC0415

    data_dir = tmp_path_factory.mktemp("ranking-pages")
    run_ingest(settings_for(data_dir), str(corpus_dir), EIM, sections=set(OTHER_PAGES))
    return settings_for(data_dir)
