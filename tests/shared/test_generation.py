"""The ingested manuals' listing (shared/generation.py): with no reuse window, a swap of a
manual's ``current`` link or a manual added shows at once (reuse: tests/shared/test_manual_names.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from shared.config import Settings
from shared.generation import COLLECTIONS, CURRENT, GENERATIONS, MANIFEST, ingested_manuals


def _generation(root: Path, manual: str, name: str, manifest: bool = True) -> None:
    folder = root / manual / GENERATIONS / name
    folder.mkdir(parents=True)
    if manifest:
        (folder / MANIFEST).write_text("{}")


def _point(root: Path, manual: str, name: str) -> None:
    link = root / manual / CURRENT
    staging = root / manual / ".staging"
    staging.symlink_to(Path(GENERATIONS) / name)
    os.replace(staging, link)


def _age(root: Path, seconds: float) -> int:
    """Set the collections directory's mtime ``seconds`` in the past (out of the racy window)."""
    stamp = time.time_ns() - int(seconds * 1e9)
    os.utime(root, ns=(stamp, stamp))
    return stamp


def test_the_listing_follows_swaps_and_new_manuals(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    settings.stores.listing_cache_s = 0
    assert ingested_manuals(settings) == []  # no collections directory yet
    root = tmp_path / COLLECTIONS
    _generation(root, "a-manual", "g1")
    _point(root, "a-manual", "g1")
    _age(root, 60)
    assert ingested_manuals(settings) == ["a-manual"]
    _generation(root, "a-manual", "g2", manifest=False)
    _point(root, "a-manual", "g2")  # swapped to a generation that cannot serve
    assert ingested_manuals(settings) == []
    _point(root, "a-manual", "g1")
    assert ingested_manuals(settings) == ["a-manual"]
    _generation(root, "b-manual", "g1")  # a new manual, listed at once (its mtime is fresh)
    _point(root, "b-manual", "g1")
    assert ingested_manuals(settings) == ["a-manual", "b-manual"]
