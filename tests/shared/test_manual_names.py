"""A manual's name is canonicalised before it becomes a path or a cache key, and a serving
link that leads out of the manual's collection is never followed."""

from __future__ import annotations

import os
import shutil

import pytest

from shared.config import Settings
from shared.generation import InvalidManualName, UnknownManual, canonical_manual, ingested_manuals, requested_manual
from shared.index import CollectionNotFound, CorpusIndex

EIM = "employment-income-manual"


@pytest.mark.parametrize("spelling", [EIM, EIM.upper(), f" {EIM}\n", "Employment-Income-Manual"])
def test_spellings_of_a_name_canonicalise_to_one(spelling):
    assert canonical_manual(spelling) == EIM


@pytest.mark.parametrize("name", ["../../evil", "./x", "x/", ".../.", "", "-x", "x--y", "x_y", "a\u00e9", "x" * 101, "x\x00"])
def test_names_that_could_leave_the_collections_directory_are_refused(name):
    with pytest.raises(InvalidManualName):
        canonical_manual(name)


def test_a_requested_manual_is_the_configured_one_or_an_ingested_one_in_any_case(slice_data_dir):
    """What the API's `manual` and `taxnav ask --manual` both go through."""
    settings = Settings(data_dir=slice_data_dir)
    assert requested_manual(settings, None) == requested_manual(settings, EIM.upper()) == EIM
    with pytest.raises(InvalidManualName):
        requested_manual(settings, "employment/income")
    with pytest.raises(UnknownManual, match=f"No ingested manual business-income-manual; ingested: {EIM}.") as unknown:
        requested_manual(settings, "Business-Income-Manual")
    assert unknown.value.available == [EIM]


def test_open_refuses_a_bad_name_and_a_link_out_of_the_collection(tmp_path, slice_data_dir):
    settings = Settings(data_dir=tmp_path)
    with pytest.raises(InvalidManualName):
        CorpusIndex.open(settings, "../" + EIM)
    # A collection whose `current` points at a generation outside it (here: the slice's).
    outside = (slice_data_dir / "collections" / EIM / "current").resolve()
    evil = tmp_path / "collections" / "evil-manual"
    evil.mkdir(parents=True)
    os.symlink(outside, evil / "current")
    with pytest.raises(CollectionNotFound):
        CorpusIndex.open(settings, "evil-manual")
    # Copied inside, the same generation serves.
    generation = evil / "generations" / outside.name
    shutil.copytree(outside, generation)
    (evil / "current").unlink()
    os.symlink(generation, evil / "current")
    assert CorpusIndex.open(settings, "Evil-Manual").manual == "evil-manual"
    assert ingested_manuals(settings) == ["evil-manual"]


def serving(data_dir, manual: str, generation_dir) -> None:  # noqa: ANN001
    collection = data_dir / "collections" / manual
    shutil.copytree(generation_dir, collection / "generations" / generation_dir.name)
    os.symlink(collection / "generations" / generation_dir.name, collection / "current")


def test_the_listing_is_reused_for_its_time_and_dropped_by_an_ingest(tmp_path, slice_data_dir, corpus_dir, settings_for):
    from ingest_worker.ingest import run_ingest  # noqa: PLC0415

    generation = (slice_data_dir / "collections" / EIM / "current").resolve()
    settings = settings_for(tmp_path)
    settings.stores.listing_cache_s = 60
    serving(tmp_path, "first-manual", generation)
    assert ingested_manuals(settings) == ["first-manual"]
    serving(tmp_path, "second-manual", generation)  # another process's ingest, as this one sees it
    assert ingested_manuals(settings) == ["first-manual"]  # the listing is reused
    fresh = settings.model_copy(deep=True)
    fresh.stores.listing_cache_s = 0
    assert ingested_manuals(fresh) == ["first-manual", "second-manual"]  # ... only for its time
    assert ingested_manuals(settings) == ["first-manual", "second-manual"]
    run_ingest(settings, str(corpus_dir), EIM, sections={"EIM31240"})  # an ingest in this process
    assert ingested_manuals(settings) == [EIM, "first-manual", "second-manual"]  # seen at once
