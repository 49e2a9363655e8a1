"""The units of one chunk made of the given paragraphs (the unit and stitching tests build on it)."""

from __future__ import annotations

from services.text.units import Unit, chunk_units
from shared.config import LocalStitchingSettings
from shared.contracts.corpus import Chunk, Paragraph


def units_of(*paragraphs: Paragraph, page_rank: int = 0) -> list[Unit]:
    chunk = Chunk(id="EIM1#c0", section_id="EIM1", manual="m", position=0, heading_path=[], paragraphs=list(paragraphs), content_hash="h")
    return chunk_units(chunk, page_rank, LocalStitchingSettings())
